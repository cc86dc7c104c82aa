"""Choose defaults by a procedure: leave one sequence out, and look at the worst case.

Every candidate (a named set of ``separate`` options, or of module constants) is run
through ``bpvideo.separate`` on every sequence with per-frame ground truth in
``../shared/data``, and scored (changedetection.net F-measure, :func:`bpvideo.evaluate`).
Then, for each sequence in turn, the candidate that is best on the *other* sequences
(by their mean, and by the rule of worst cases: :func:`better`) is scored on the one left
out. A default generalises
when its leave-one-out scores stay close to its in-sample ones; the report gives both,
and every candidate's worst sequence.

Usage::

    python benchmarks/select_defaults.py                      # the built-in candidates
    python benchmarks/select_defaults.py --candidate "k5 threshold_k=5" \\
        --candidate "still20 background.tuning.STILL_FRAMES_FRACTION=0.2"
    python benchmarks/select_defaults.py --json scores.json   # keeps (and reuses) scores
    python benchmarks/select_defaults.py --all --synthetic    # Wallflower and synthetic too

A key with a dot names a constant of a bpvideo module (``background.tuning.MOTION_BOX``),
set for that candidate's runs; other keys are options of ``separate``. Markdown on
stdout, progress on stderr. With ``--json`` the scores are saved, and candidates already
scored there are not run again.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from _sequences import (
    DATA,
    SYNTHETIC_CLASSES,
    Sequence,
    discover,
    per_frame_truth,
    run_bpvideo,
)

log = logging.getLogger("select")
#: Worst cases closer than this are a tie, decided by the next worst (:func:`better`).
TIE = 0.01

#: The candidates behind today's defaults (docs/quality.md): each changes one default.
CANDIDATES = {
    "defaults": {},
    "sparsity=0.1": {"sparsity": 0.1},
    "sparsity=0.05": {"sparsity": 0.05},
    "auto<=0.15": {"background.tuning.AUTO_SPARSITY_BOUNDS": (0.05, 0.15)},
    "threshold_k=5": {"threshold_k": 5.0},
    "threshold_k=7": {"threshold_k": 7.0},
    "noise=global": {"noise": "global"},
    "shadows=keep": {"shadows": "keep"},
    "background_from=none": {"background_from": "none"},
}


def parse_candidate(text: str) -> tuple[str, dict[str, Any]]:
    """``"NAME KEY=VALUE ..."`` -> (NAME, {KEY: VALUE}); values are YAML scalars."""
    name, *pairs = text.split()
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--candidate {text!r}: expected KEY=VALUE, got {pair!r}")
        options[key] = yaml.safe_load(value)
    return name, options


@contextmanager
def constants(overrides: dict[str, Any]):
    """Set module constants (keys with a dot) for the duration; restore them after."""
    saved = []
    try:
        for key, value in overrides.items():
            module_name, _, attr = key.rpartition(".")
            module = importlib.import_module(f"bpvideo.{module_name}")
            saved.append((module, attr, getattr(module, attr)))
            setattr(module, attr, value)
        yield
    finally:
        for module, attr, value in reversed(saved):
            setattr(module, attr, value)


def run(candidates: dict[str, dict[str, Any]], sequences: list[str], data: Path,
        scores: dict[str, dict[str, float]], save) -> None:  # fmt: skip
    """Fill ``scores[candidate][sequence]`` with F-measures, sequence by sequence."""
    for name in sequences:
        todo = [c for c in candidates if name not in scores.get(c, {})]
        if not todo:
            continue
        synthetic = name.startswith("synthetic_")
        seq = Sequence.synthetic(name) if synthetic else Sequence.load(name, data)
        for cand in todo:
            options = {k: v for k, v in candidates[cand].items() if "." not in k}
            consts = {k: v for k, v in candidates[cand].items() if "." in k}
            with constants(consts):
                result = run_bpvideo(seq, options)
            scores.setdefault(cand, {})[name] = result["f_measure"]
            log.info("%s %s: F %.3f in %.1fs", name, cand, result["f_measure"], result["seconds"])
            save()


def better(a: list[float], b: list[float]) -> bool:
    """Whether scores ``a`` beat ``b`` by the rule of worst cases: sorted from the worst,
    the first pair further apart than :data:`TIE` decides."""
    for x, y in zip(sorted(a), sorted(b), strict=True):
        if abs(x - y) > TIE:
            return x > y
    return False


def choose(scores: dict[str, dict[str, float]], sequences: list[str]) -> str:
    """The best candidate on ``sequences`` by :func:`better` (the first listed wins a full
    tie)."""
    best = None
    for cand, per in scores.items():
        if best is None or better([per[s] for s in sequences],
                                  [scores[best][s] for s in sequences]):  # fmt: skip
            best = cand
    assert best is not None
    return best


def leave_one_out(scores: dict[str, dict[str, float]], sequences: list[str], crit: str):
    """For each sequence: the candidate best on the others (``crit``: mean, or worst by
    :func:`better`; the defaults win a tie)."""
    first = dict(sorted(scores.items(), key=lambda item: item[0] != "defaults"))
    rows = []
    for held in sequences:
        rest = [s for s in sequences if s != held]
        if crit == "mean":
            best = max(first, key=lambda c: np.mean([first[c][s] for s in rest]))
        else:
            best = choose(first, rest)
        rows.append((held, best, scores[best][held]))
    return rows


def report(scores: dict[str, dict[str, float]], sequences: list[str]) -> str:
    """The candidate table and the two leave-one-out tables, as Markdown."""
    short = [s.split("_", 1)[-1] for s in sequences]
    lines = ["| candidate | " + " | ".join(short) + " | mean | worst |",
             "|---|" + "---|" * (len(sequences) + 2)]  # fmt: skip
    for cand, per in scores.items():
        values = [per[s] for s in sequences]
        cells = " | ".join(f"{v:.3f}" for v in values)
        lines.append(f"| {cand} | {cells} | {np.mean(values):.3f} | {min(values):.3f} |")
    for crit in ("mean", "worst"):
        rows = leave_one_out(scores, sequences, crit)
        held = [f for _, _, f in rows]
        how = "mean" if crit == "mean" else f"worst (ties within {TIE} to the next worst)"
        lines += ["", f"Leave one sequence out, choosing by the {how} of the others:", "",
                  "| left out | chosen on the others | F left out | F of defaults |",
                  "|---|---|---|---|"]  # fmt: skip
        for seq, best, f in rows:
            lines.append(f"| {seq} | {best} | {f:.3f} | {scores['defaults'][seq]:.3f} |")
        lines.append(f"| **mean / worst** | | {np.mean(held):.3f} / {min(held):.3f} | "
                     f"{np.mean([scores['defaults'][s] for s in sequences]):.3f} / "
                     f"{min(scores['defaults'][s] for s in sequences):.3f} |")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--candidate", action="append", default=[], metavar="'NAME K=V ...'")
    parser.add_argument("--json", type=Path, help="scores file (read, then updated)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run these candidates only")
    parser.add_argument("--all", action="store_true",
                        help="also sequences with one ground-truth frame (Wallflower)")  # fmt: skip
    parser.add_argument("--synthetic", action="store_true",
                        help="also the synthetic classes (synthetic.hard, .adverse)")  # fmt: skip
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s", stream=sys.stderr)
    candidates = dict(CANDIDATES)
    candidates.update(parse_candidate(c) for c in args.candidate)
    if args.only:
        unknown = sorted(set(args.only) - set(candidates))
        if unknown:
            parser.error(f"--only: no candidate named {', '.join(unknown)}")
        candidates = {name: candidates[name] for name in args.only}
    sequences = [s for s in discover(args.data) if args.all or per_frame_truth(s, args.data)]
    if args.synthetic:
        sequences += [f"synthetic_{c}" for c in SYNTHETIC_CLASSES]
    if not sequences:
        raise SystemExit(f"{args.data}: no sequence with per-frame ground truth (pass --data)")
    scores: dict[str, dict[str, float]] = {}
    if args.json and args.json.exists():
        scores = json.loads(args.json.read_text())

    def save() -> None:
        if args.json:
            args.json.write_text(json.dumps(scores, indent=1))

    run(candidates, sequences, args.data, scores, save)
    print(report({c: scores[c] for c in candidates}, sequences))
    return 0


if __name__ == "__main__":
    sys.exit(main())
