"""Mask quality of bpvideo at its defaults against OpenCV's MOG2, KNN and GSOC, in one run.

For every sequence with ground truth in ``../shared/data`` (changedetection.net layout,
see its README) this runs ``bpvideo.separate`` at the defaults (or with ``--set``
overrides), OpenCV's MOG2 and KNN subtractors at their defaults and, when
``--gsoc-python`` names a Python with ``opencv-contrib-python(-headless)``, GSOC at its
defaults; every method's masks are scored by :func:`bpvideo.evaluate`
(changedetection.net rules: 50 = shadow counts as background, 85 and 170 ignored,
ROI.bmp and temporalROI.txt where present; Wallflower: the single hand-segmented frame).
OpenCV's subtractors see every frame in order, in colour; their shadow label (127) counts
as background.

Usage::

    python benchmarks/quality.py --gsoc-python /path/to/venv-contrib/bin/python
    python benchmarks/quality.py --only bpvideo --set threshold_k=5 --set shadows=keep

Prints, as Markdown on stdout, the F-measure table (methods as rows, sequences as
columns), the mean and worst over the sequences with per-frame ground truth, and
whether bpvideo reaches the better of MOG2 and KNN on each. Progress goes to stderr.
``--json PATH`` saves every score (recall, precision, seconds ...).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from _sequences import DATA, Sequence, discover, per_frame_truth, run_bpvideo, run_gsoc, run_opencv

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


def beats_peers(scores: dict[str, dict[str, float]], ours: str, sequences: list[str]) -> str:
    """One line per sequence: bpvideo against the better of MOG2 and KNN."""
    lines = []
    for s in sequences:
        peers = [scores[m][s] for m in ("MOG2", "KNN") if s in scores.get(m, {})]
        if not peers or s not in scores[ours]:
            continue
        margin = scores[ours][s] - max(peers)
        lines.append(f"- {s}: {scores[ours][s]:.3f} vs {max(peers):.3f} ({margin:+.3f})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder of sequences")
    parser.add_argument("--sequences", nargs="+", help="default: every one with ground truth")
    parser.add_argument("--gsoc-python", help="a Python with opencv-contrib (for GSOC)")
    parser.add_argument("--only", nargs="+", choices=("bpvideo", "MOG2", "KNN", "GSOC"))
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--json", type=Path, help="save every score as JSON here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s", stream=sys.stderr)
    sequences = args.sequences or discover(args.data)
    if not sequences:
        raise SystemExit(f"{args.data}: no sequence with ground truth (pass --data)")
    overrides = parse_overrides(args.set)
    ours = "bpvideo" + (f" ({', '.join(args.set)})" if args.set else " (defaults)")
    methods = ["bpvideo", "MOG2", "KNN"] + (["GSOC"] if args.gsoc_python else [])
    methods = [m for m in methods if not args.only or m in args.only]
    scores: dict[str, dict[str, dict[str, Any]]] = {m: {} for m in methods}
    for name in sequences:
        seq = Sequence.load(name, args.data)
        for method in methods:
            if method == "bpvideo":
                result = run_bpvideo(seq, overrides)
            elif method == "GSOC":
                result = run_gsoc(seq, args.gsoc_python)
            else:
                result = run_opencv(seq, method)
            scores[method][name] = result
            log.info(
                "%s %s: F %.3f (recall %.3f, precision %.3f) in %.1fs",
                name, method, result["f_measure"], result["recall"], result["precision"],
                result["seconds"],
            )  # fmt: skip
    full = [s for s in sequences if per_frame_truth(s, args.data)]
    f = {(ours if m == "bpvideo" else m): {s: r["f_measure"] for s, r in v.items()}
         for m, v in scores.items()}  # fmt: skip
    print(markdown_table(f, sequences, full))
    if ours in f and "MOG2" in f and "KNN" in f:
        print("\nbpvideo against the better of MOG2 and KNN:\n" + beats_peers(f, ours, sequences))
    if args.json:
        args.json.write_text(json.dumps({"settings": overrides, "scores": scores}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
