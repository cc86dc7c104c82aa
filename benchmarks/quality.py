"""Mask quality of bpvideo at its defaults against OpenCV's MOG2, KNN and GSOC and
BGSLibrary's LOBSTER, SuBSENSE, PAWCS and ViBe, in one run.

For every sequence with ground truth in ``../shared/data`` (changedetection.net layout,
see its README) this runs ``bpvideo.separate`` at the defaults (or with ``--set``
overrides), OpenCV's MOG2 and KNN subtractors at their defaults, when
``--gsoc-python`` names a Python with ``opencv-contrib-python(-headless)`` GSOC at its
defaults and, when ``--pybgs-python`` names a Python with BGSLibrary's ``pybgs``, its
LOBSTER, SuBSENSE, PAWCS and ViBe at their defaults (each in a child process in a
temporary folder, where BGSLibrary writes its ``config/``); every method's masks are
scored by :func:`bpvideo.evaluate`
(changedetection.net rules: 50 = shadow counts as background, 85 and 170 ignored,
ROI.bmp and temporalROI.txt where present; Wallflower: the single hand-segmented frame).
OpenCV's subtractors see every frame in order, in colour; their shadow label (127) counts
as background. ``--synthetic`` adds the scenes of :mod:`bpvideo.synthetic.hard` and
:mod:`bpvideo.synthetic.adverse` (the hard classes, with known masks; cast shadows count
as background) as sequences ``synthetic_<class>``, scored on every
pixel of every frame; they count in the mean and the worst.

Usage::

    python benchmarks/quality.py --gsoc-python /path/to/venv-contrib/bin/python \\
        --pybgs-python /path/to/venv-pybgs/bin/python --synthetic --json scores.json
    python benchmarks/quality.py --gsoc-python ... --bgs-python ... --synthetic \
        --peer-cache /work/cache-peers       # the peers scored once, reused after
    python benchmarks/quality.py --only bpvideo --set threshold_k=5 --set shadows=keep
    python benchmarks/quality.py --only bpvideo --set masks.thresholds.MIN_AUTO_THRESHOLD=10

A ``--set`` key with a dot names a constant of a bpvideo module (as in
``select_defaults.py``). With ``--json`` the scores are saved after every run, and
(method, sequence) pairs already in the file (same ``--set``) are not run again.

Prints, as Markdown on stdout, the F-measure table (methods as rows, sequences as
columns), the mean and worst over the sequences with per-frame ground truth, and
whether bpvideo reaches the better of MOG2 and KNN on each. Progress goes to stderr.
``--json PATH`` saves every score (recall, precision, seconds ...).

``--peer-cache DIR`` keeps the peers' scores (every method but bpvideo) in
``DIR/peers.json``, keyed by method, sequence and a hash of the frames it was fed, so a
run that changes only bpvideo (``--set``, new code) scores the peers once: a changed
synthetic scene has new frames, hence a new key; with ``--cached-peers-only`` a peer
not in the cache is not run (its cell shows ``-``). ``--bgs-python`` is ``--pybgs-python``.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from _sequences import (
    DATA,
    PYBGS_METHODS,
    SYNTHETIC_CLASSES,
    Sequence,
    discover,
    per_frame_truth,
    run_bpvideo,
    run_gsoc,
    run_opencv,
    run_pybgs,
)
from select_defaults import constants

log = logging.getLogger("quality")


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``NAME=VALUE`` pairs; values parsed as YAML scalars (``5``, ``true``, ``auto``)."""
    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set {item!r}: expected NAME=VALUE")
        out[name.strip().replace("-", "_")] = yaml.safe_load(value)
    return out


def markdown_table(
    scores: dict[str, dict[str, float]], sequences: list[str], full: list[str]
) -> str:
    """F-measure table with the mean and worst over ``full`` (per-frame ground truth)."""
    short = [s.split("_", 1)[-1] for s in sequences]
    lines = [
        "| method | " + " | ".join(short) + f" | mean ({len(full)}) | worst ({len(full)}) |",
        "|---|" + "---|" * (len(sequences) + 2),
    ]
    for method, per_seq in scores.items():
        cells = [f"{per_seq[s]:.3f}" if s in per_seq else "-" for s in sequences]
        values = [per_seq[s] for s in full if s in per_seq]
        done = len(values) == len(full) and values
        mean = f"{np.mean(values):.3f}" if done else "-"
        worst = f"{min(values):.3f}" if done else "-"
        lines.append(f"| {method} | " + " | ".join(cells) + f" | {mean} | {worst} |")
    return "\n".join(lines)


def beats_peers(
    scores: dict[str, dict[str, float]], ours: str, sequences: list[str], peers: tuple[str, ...]
) -> str:
    """One line per sequence: bpvideo against the best of ``peers`` (and which one)."""
    lines = []
    for s in sequences:
        have = {m: scores[m][s] for m in peers if s in scores.get(m, {})}
        if not have or s not in scores[ours]:
            continue
        best = max(have, key=have.__getitem__)
        margin = scores[ours][s] - have[best]
        lines.append(f"- {s}: {scores[ours][s]:.3f} vs {best} {have[best]:.3f} ({margin:+.3f})")
    return "\n".join(lines)


def run_method(seq: Sequence, method: str, args: argparse.Namespace, overrides: dict[str, Any]):
    """One method's scores on one sequence."""
    if method == "bpvideo":
        options = {k: v for k, v in overrides.items() if "." not in k}
        with constants({k: v for k, v in overrides.items() if "." in k}):
            return run_bpvideo(seq, options)
    if method == "GSOC":
        return run_gsoc(seq, args.gsoc_python)
    if method in PYBGS_METHODS:
        return run_pybgs(seq, args.pybgs_python, method)
    return run_opencv(seq, method)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder of sequences")
    parser.add_argument("--sequences", nargs="+", help="default: every one with ground truth")
    parser.add_argument("--gsoc-python", help="a Python with opencv-contrib (for GSOC)")
    parser.add_argument("--pybgs-python", "--bgs-python", help="a Python with pybgs (BGSLibrary)")
    parser.add_argument("--peer-cache", type=Path, help="folder of the peers' cached scores")
    parser.add_argument("--cached-peers-only", action="store_true",
                        help="run no peer: show the cached scores, '-' where none")  # fmt: skip
    parser.add_argument("--synthetic", nargs="*", choices=SYNTHETIC_CLASSES, metavar="CLASS",
                        help="add synthetic scenes (all classes when none named)")  # fmt: skip
    parser.add_argument(
        "--only", nargs="+", choices=("bpvideo", "MOG2", "KNN", "GSOC", *PYBGS_METHODS)
    )
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--json", type=Path, help="save every score as JSON here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s", stream=sys.stderr)
    sequences = args.sequences or discover(args.data)
    if args.synthetic is not None:
        sequences += [f"synthetic_{c}" for c in args.synthetic or SYNTHETIC_CLASSES]
    if not sequences:
        raise SystemExit(f"{args.data}: no sequence with ground truth (pass --data)")
    overrides = parse_overrides(args.set)
    ours = "bpvideo" + (f" ({', '.join(args.set)})" if args.set else " (defaults)")
    methods = ["bpvideo", "MOG2", "KNN"] + (["GSOC"] if args.gsoc_python else [])
    methods += list(PYBGS_METHODS) if args.pybgs_python else []
    methods = [m for m in methods if not args.only or m in args.only]
    scores: dict[str, dict[str, dict[str, Any]]] = {m: {} for m in methods}
    if args.json and args.json.exists():
        saved = json.loads(args.json.read_text())
        if saved.get("settings") == overrides:
            for m, per_seq in saved["scores"].items():  # kept, and shown, with this run's
                scores.setdefault(m, {}).update(per_seq)
    for name in sequences:
        todo = [m for m in methods if name not in scores[m]]
        if not todo:
            continue
        if name.startswith("synthetic_"):
            seq = Sequence.synthetic(name)
        else:
            seq = Sequence.load(name, args.data)
        cache = PeerCache(args.peer_cache, seq) if args.peer_cache else None
        for method in todo:
            result = cache.get(method) if cache and method != "bpvideo" else None
            if result is None and args.cached_peers_only and method != "bpvideo":
                continue
            if result is None:
                result = run_method(seq, method, args, overrides)
                if cache and method != "bpvideo":
                    cache.put(method, result)
            scores[method][name] = result
            if args.json:
                _save(args.json, overrides, scores)
            log.info(
                "%s %s: F %.3f (recall %.3f, precision %.3f) in %.1fs",
                name, method, result["f_measure"], result["recall"], result["precision"],
                result["seconds"],
            )  # fmt: skip
    full = [s for s in sequences if s.startswith("synthetic_") or per_frame_truth(s, args.data)]
    f = {(ours if m == "bpvideo" else m): {s: r["f_measure"] for s, r in v.items()}
         for m, v in scores.items()}  # fmt: skip
    print(markdown_table(f, sequences, full))
    for label, peers in (("MOG2, KNN and GSOC", ("MOG2", "KNN", "GSOC")),
                         ("BGSLibrary's methods", PYBGS_METHODS)):  # fmt: skip
        if ours in f and any(m in f for m in peers):
            print(
                f"\nbpvideo against the best of {label}:\n" + beats_peers(f, ours, sequences, peers)
            )
    if args.json:
        _save(args.json, overrides, scores)
    return 0


class PeerCache:
    """The peers' scores on one sequence, in ``folder/peers.json``, keyed by
    ``method|sequence|sha1 of the frames``."""

    def __init__(self, folder: Path, seq: Sequence) -> None:
        self.path = folder / "peers.json"
        self.key = f"{seq.name}|{hashlib.sha1(np.ascontiguousarray(seq.frames)).hexdigest()}"

    def _all(self) -> dict[str, Any]:
        return json.loads(self.path.read_text()) if self.path.exists() else {}

    def get(self, method: str) -> dict[str, Any] | None:
        """The cached scores of ``method`` on these frames, or None."""
        return self._all().get(f"{method}|{self.key}")

    def put(self, method: str, result: dict[str, Any]) -> None:
        """Add ``method``'s scores (written under a temporary name and renamed)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name("peers.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # runs side by side add to one file
            entries = self._all()
            entries[f"{method}|{self.key}"] = result
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(entries, indent=1, sort_keys=True))
            tmp.replace(self.path)


def _save(path: Path, overrides: dict[str, Any], scores: dict[str, Any]) -> None:
    """Every score so far, written under a temporary name and renamed."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"settings": overrides, "scores": scores}, indent=2))
    tmp.replace(path)


if __name__ == "__main__":
    sys.exit(main())
