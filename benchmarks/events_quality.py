"""Choose the event defaults by a procedure: frame-level activity F1 against ground truth.

For each sequence of ``../shared/data`` with per-frame ground truth, ``bpvideo separate``
runs once at its defaults (``--no-video``; the sequence's ``ROI.bmp`` as ``--roi``) and
its ``frames.csv`` is kept. A frame is *active* in the ground truth when it has a 255
pixel inside the ROI (frames outside temporalROI.txt are not scored), and active in the
events when it lies inside an event of ``events.csv`` (padding included). Every candidate
of a grid (threshold, min event, gap, pad) is scored by frame-level F1 on each sequence.

The defaults are chosen on the sequences with idle stretches (inactive ground-truth
frames; the others are all active, where any detector that fires scores ~1): the
candidate whose worst F1 over them is highest, averaged over the candidate and its grid
neighbours (one step on one axis), so that a value next to a cliff is not chosen (ties:
its own worst F1, then the fewest events, i.e. the fewest fragments for the same frames,
then the candidate listed first). Leave one sequence out checks that choice: for
each idle sequence, the candidate chosen on the other idle sequences is scored on it.

Usage::

    python benchmarks/events_quality.py                 # runs separate where not cached
    python benchmarks/events_quality.py --cache DIR     # where the runs are kept

Markdown on stdout, progress on stderr.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import logging
import sys
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from _sequences import DATA, discover, per_frame_truth

from bpvideo import separate_file
from bpvideo.events import FrameTable, detect_events

log = logging.getLogger("events_quality")
FPS = 25.0  # folders of frames: bpvideo's rate for them
THRESHOLDS = (0.0, 1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03)
MIN_EVENTS = ("0.04s", "0.2s", "0.5s", "1s", "2s")
GAPS = ("0s", "0.5s", "1s", "2s", "4s")
PADS = ("0s", "0.2s", "0.5s", "1s")


def truth_activity(root: Path) -> tuple[np.ndarray, np.ndarray]:
    """(numbers, active) of the ground-truth frames within temporalROI.txt."""
    roi = (
        cv2.imread(str(root / "ROI.bmp"), cv2.IMREAD_GRAYSCALE)
        if (root / "ROI.bmp").exists()
        else None
    )
    lo, hi = 0, 10**9
    if (root / "temporalROI.txt").exists():
        lo, hi = (int(v) for v in (root / "temporalROI.txt").read_text().split()[:2])
    numbers, active = [], []
    for f in sorted((root / "groundtruth").glob("gt*.png")):
        n = int(f.stem[2:])
        if not lo <= n <= hi:
            continue
        gt = cv2.imread(str(f), cv2.IMREAD_GRAYSCALE)
        inside = gt == 255 if roi is None else (gt == 255) & (roi > 0)
        numbers.append(n)
        active.append(bool(inside.any()))
    return np.array(numbers), np.array(active)


def run(name: str, cache: Path, **options: Any) -> FrameTable:
    """The frame table of ``bpvideo separate`` on a sequence (cached; ``options``: more
    keywords of :func:`bpvideo.separate_file`)."""
    root, out = DATA / name, cache / name
    if not (out / "frames.csv").exists():
        log.info("separate %s", name)
        roi = [str(root / "ROI.bmp")] if (root / "ROI.bmp").exists() else []
        separate_file(root / "input", out, no_video=True, overwrite=True, roi=roi, **options)
    with open(out / "frames.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    col = lambda k, t: np.array([t(r[k]) for r in rows])  # noqa: E731
    boxes = np.stack([col(k, int) for k in "xywh"], axis=1)
    return FrameTable(col("frame", int), col("seconds", float), col("share", float),
                      col("blobs", int), boxes)  # fmt: skip


def predicted(table: FrameTable, numbers: np.ndarray, params: tuple) -> np.ndarray:
    """(n,) bool: the scored frames inside an event under ``params``."""
    threshold, min_event, gap, pad = params
    events = detect_events(table, fps=FPS, threshold=threshold, min_event=min_event, gap=gap,
                           pad=pad)  # fmt: skip
    inside = np.zeros(len(table), dtype=bool)
    for e in events:
        inside[e.first : e.last + 1] = True
    by_number = dict(zip(table.numbers.tolist(), inside.tolist(), strict=True))
    return np.array([by_number.get(int(n), False) for n in numbers])


def f1(table: FrameTable, numbers: np.ndarray, truth: np.ndarray, params: tuple) -> float:
    """Frame-level activity F1 of the events under ``params`` on the scored frames."""
    pred = predicted(table, numbers, params)
    tp = int(np.sum(pred & truth))
    fp, fn = int(np.sum(pred & ~truth)), int(np.sum(~pred & truth))
    return 2 * tp / max(1, 2 * tp + fp + fn)


AXES = (THRESHOLDS, MIN_EVENTS, GAPS, PADS)


def neighbours(p: tuple) -> list[tuple]:
    """``p`` and the candidates one grid step away from it on one axis."""
    out = [p]
    for i, values in enumerate(AXES):
        j = values.index(p[i])
        for k in (j - 1, j + 1):
            if 0 <= k < len(values):
                out.append((*p[:i], values[k], *p[i + 1 :]))
    return out


def choose(scores: dict[tuple, dict[str, float]], names: list[str]) -> tuple:
    """The candidate whose neighbourhood has the best worst F1 over ``names``, on average
    (a value on a knife edge, next to one that fails a sequence, loses to a steadier one;
    ties: the best worst F1 of its own, then the fewest events over ``names``, then the
    first listed)."""
    worst = {p: min(scores[p][n] for n in names) for p in scores}
    return max(scores, key=lambda p: (np.mean([worst[q] for q in neighbours(p)]), worst[p],
                                      -sum(scores[p][f"events:{n}"] for n in names)))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/bpvideo-events-quality"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    names = [n for n in discover() if per_frame_truth(n)]
    if not names:
        raise SystemExit(f"no sequences with per-frame ground truth in {DATA}")
    data = {}
    for name in names:
        numbers, truth = truth_activity(DATA / name)
        data[name] = (run(name, args.cache), numbers, truth)
    idle = [n for n in names if not data[n][2].all()]
    grid = list(itertools.product(THRESHOLDS, MIN_EVENTS, GAPS, PADS))
    scores = {p: {n: f1(*data[n], p) for n in names} for p in grid}
    for p in grid:  # fewer rows for the same F1: fragments merged
        for n in names:
            table = data[n][0]
            scores[p][f"events:{n}"] = len(
                detect_events(table, fps=FPS, threshold=p[0], min_event=p[1], gap=p[2], pad=p[3])
            )
    best = choose(scores, idle)
    print(
        "| sequence | scored frames | idle | F1, chosen defaults | idle frames found idle | "
        "F1, left out (its pick) | F1, every frame active |\n|---|---|---|---|---|---|---|"
    )
    for name in names:
        table, numbers, truth = data[name]
        held = ""
        if name in idle and len(idle) > 1:
            others = [n for n in idle if n != name]
            pick = choose(scores, others)
            held = f"{scores[pick][name]:.3f} ({', '.join(map(str, pick))})"
        everything = 2 * truth.sum() / (truth.sum() + len(truth))
        quiet = ~predicted(table, numbers, best)[~truth]
        found = f"{int(quiet.sum())} of {len(quiet)}" if len(quiet) else ""
        print(
            f"| {name} | {len(truth)} | {int((~truth).sum())} | {scores[best][name]:.3f} | "
            f"{found} | {held} | {everything:.3f} |"
        )
    worst = min(scores[best][n] for n in idle)
    print(
        f"\nChosen on {', '.join(idle)}: event_threshold={best[0]}, min_event={best[1]}, "
        f"event_gap={best[2]}, event_pad={best[3]}; worst F1 {worst:.3f} "
        f"({len(grid)} candidates)."
    )
    print("\nWorst F1 over the idle sequences as one value moves, the others as chosen:\n")
    for i, (label, values) in enumerate(
        (
            ("event_threshold", THRESHOLDS),
            ("min_event", MIN_EVENTS),
            ("event_gap", GAPS),
            ("event_pad", PADS),
        )
    ):
        cells = []
        for v in values:
            p = (*best[:i], v, *best[i + 1 :])
            cells.append(f"{v}: {min(scores[p][n] for n in idle):.3f}")
        print(f"- {label}: " + ", ".join(cells))


if __name__ == "__main__":
    main()
