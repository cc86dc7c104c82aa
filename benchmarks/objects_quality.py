"""Objects and counting lines against tracks linked from the ground truth; the default
event mode by leave-one-sequence-out.

For each sequence of ``../shared/data`` with per-frame ground truth, ``bpvideo separate``
runs once at its defaults (``--no-video``; the sequence's ``ROI.bmp`` as ``--roi``; cached,
the same runs as ``events_quality.py``'s when ``--cache`` is shared). On the frames of
``temporalROI.txt``:

* **Ground-truth tracks**: connected components of ``gt == 255`` (inside the ROI) linked
  by overlap between consecutive frames, one to one (the pairs of largest overlap first:
  where two blobs merge the larger overlap keeps its track, where one splits the larger
  part keeps it and the other starts a new track); those of at least 10 frames count.
* **Objects**: :class:`bpvideo.events.objects.ObjectTracker` on the run's masks, as
  ``separate`` makes ``objects.csv`` (at its defaults).
* **On the ground truth**: objects whose box holds ground-truth foreground on at least
  half of their frames (the others are false detections: swaying leaves, say).
* **Counting line** (``--line``, cdnet_highway): crossings of the ground-truth tracks'
  box centres and the objects' counts, per direction.
* **Event mode**: frame-level activity F1 (as ``events_quality.py`` scores it) of the
  activity events (the run's ``events.csv``) and of the object events (``--events
  objects``); leave one sequence out: the mode with the best worst F1 on the other
  sequences, scored on the one left out; over every sequence (a mode can miss active
  frames, so the busy sequences count here) and over the idle ones only (the event
  defaults' procedure, ``events_quality.py``).

Usage::

    python benchmarks/objects_quality.py [--cache DIR]
    python benchmarks/objects_quality.py --candidate "deep4 masks.shadows.DEEP=4" \\
        --sequences sbi_HighwayI cdnet_highway

``--candidate "NAME KEY=VALUE ..."`` (as in ``select_defaults.py``; values are YAML
scalars) runs everything under a changed setting instead of the defaults: keys with a dot
are module constants of ``bpvideo`` (``masks.shadows.DEEP``, ``events.objects.MERGED``),
set for the whole run (``separate`` and the tracker) and restored after; other keys are
keywords of :func:`bpvideo.separate_file`. Its runs are cached under ``DIR/NAME``.

Markdown on stdout, progress on stderr.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import logging
import sys
from pathlib import Path

import cv2
import numpy as np
import yaml
from _sequences import DATA, discover, per_frame_truth
from events_quality import run as run_separate
from events_quality import truth_activity
from select_defaults import constants, parse_candidate

from bpvideo.events.objects import MIN_OBJECT_SECONDS, CountLine, ObjectTracker, object_events

log = logging.getLogger("objects_quality")
FPS = 25.0
MIN_TRUTH_FRAMES = 10
#: The share of an object's frames whose box must hold ground-truth foreground for it to
#: count as on the ground truth (:func:`on_truth`).
ON_TRUTH = 0.5
#: The counting line on cdnet_highway: across both lanes, below the far merge.
HIGHWAY_LINE = "0,140 320,140"
#: The event modes compared (ties go to the first: the default as it was).
MODES = ("activity", "objects")
#: ``--sweep``: the tracker's constants varied (module constants of
#: bpvideo/events/objects.py), every combination.
SWEEP = {"events.objects.LOST_FRAMES": (3, 5, 8, 12), "events.objects.MATCH_IOU": (0.2, 0.3),
         "events.objects.MERGED": (0.0, 0.5)}  # fmt: skip


def _frames(root: Path) -> tuple[int, int]:
    lo, hi = 0, 10**9
    if (root / "temporalROI.txt").exists():
        lo, hi = (int(v) for v in (root / "temporalROI.txt").read_text().split()[:2])
    return lo, hi


def _roi(root: Path) -> np.ndarray | None:
    if not (root / "ROI.bmp").exists():
        return None
    return cv2.imread(str(root / "ROI.bmp"), cv2.IMREAD_GRAYSCALE) > 0


def _link(labels: np.ndarray, previous: np.ndarray | None, prev_ids: np.ndarray,
          n: int, next_id: int) -> tuple[np.ndarray, int]:  # fmt: skip
    """Track ids of the components ``1..n-1`` of ``labels``: one to one with those of
    ``previous`` by largest overlap first; new ids for the rest."""
    ids = np.zeros(n, dtype=np.int64)
    if previous is not None and n > 1:
        both = (labels > 0) & (previous > 0)
        pairs, counts = np.unique(np.stack([labels[both], previous[both]], 1), axis=0,
                                  return_counts=True)  # fmt: skip
        taken: set[int] = set()
        for i in np.argsort(-counts, kind="stable"):
            a, b = (int(v) for v in pairs[i])
            if ids[a] == 0 and b not in taken:
                ids[a] = prev_ids[b]
                taken.add(b)
    for c in range(1, n):
        if ids[c] == 0:
            ids[c], next_id = next_id, next_id + 1
    return ids, next_id


def truth_tracks(root: Path, band: bool = False) -> dict[int, list[tuple[float, float]]]:
    """Ground-truth track id -> box centres, one per frame (temporalROI frames only).
    ``band``: components of ``gt == 255`` joined through the 170 ("unknown") band that
    CDnet draws along outlines (a diagnostic: docs/events.md)."""
    lo, hi = _frames(root)
    roi = _roi(root)
    tracks: dict[int, list[tuple[float, float]]] = {}
    previous, prev_ids, next_id = None, np.zeros(1, np.int64), 1
    for f in sorted((root / "groundtruth").glob("gt*.png")):
        if not lo <= int(f.stem[2:]) <= hi:
            continue
        grey = cv2.imread(str(f), cv2.IMREAD_GRAYSCALE)
        gt = grey == 255
        if roi is not None:
            gt &= roi
        joined = gt | (grey == 170) if band else gt
        n, labels, stats, _ = cv2.connectedComponentsWithStats(joined.view(np.uint8), 8)
        labels[~gt] = 0  # the band joins; only foreground is linked and counted
        present = np.bincount(labels.ravel(), minlength=n) > 0
        ids, next_id = _link(labels, previous, prev_ids, n, next_id)
        for c in np.flatnonzero(present[1:]) + 1:
            x, y, w, h = stats[c, :4]
            tracks.setdefault(int(ids[c]), []).append((x + w / 2.0, y + h / 2.0))
        previous, prev_ids = labels, ids
    return {k: v for k, v in tracks.items() if len(v) >= MIN_TRUTH_FRAMES}


def truth_crossings(tracks: dict[int, list[tuple[float, float]]], line: CountLine) -> dict:
    counts = {"left_to_right": 0, "right_to_left": 0}
    for centres in tracks.values():
        for p, q in itertools.pairwise(centres):
            way = line.crossing(p, q)
            if way is not None:
                counts[way] += 1
    return counts


def objects_of(run: Path, root: Path, lines: list[CountLine]) -> ObjectTracker:
    """The tracker fed the run's masks of the temporalROI frames (``objects.csv``'s
    objects, at the defaults); its objects and counts."""
    lo, hi = _frames(root)
    files = [f for f in sorted((run / "masks").glob("bin*.png")) if lo <= int(f.stem[3:]) <= hi]
    first = cv2.imread(str(files[0]), cv2.IMREAD_GRAYSCALE)
    roi = _roi(root)
    tracker = ObjectTracker(FPS, first.shape, round(MIN_OBJECT_SECONDS * FPS), lines,
                            area=None if roi is None else int(roi.sum()))  # fmt: skip
    ended, rows = [], []
    for f in files:
        number = int(f.stem[3:])
        mask = cv2.imread(str(f), cv2.IMREAD_GRAYSCALE)[None] > 0
        made, gone = tracker.add([number], [(number - 1) / FPS], mask)
        rows += made
        ended += gone
    tracker.ended = ended + tracker.finish()  # type: ignore[attr-defined]
    tracker.rows = rows  # type: ignore[attr-defined]
    return tracker


def on_truth(root: Path, rows: list[dict]) -> int:
    """Objects whose box holds ground-truth foreground (``gt == 255``) on at least
    :data:`ON_TRUTH` of their rows of ``tracks.csv`` (``rows``): the objects that are
    something the ground truth marks, not a false detection (swaying leaves)."""
    hits: dict[int, list[bool]] = {}
    truth: dict[int, np.ndarray | None] = {}
    for row in rows:
        number = int(row["frame"])
        if number not in truth:
            truth[number] = cv2.imread(str(root / "groundtruth" / f"gt{number:06d}.png"),
                                       cv2.IMREAD_GRAYSCALE)  # fmt: skip
        gt = truth[number]
        if gt is None:
            continue
        x, y, w, h = (int(row[k]) for k in ("x", "y", "w", "h"))
        hits.setdefault(int(row["object"]), []).append(
            bool((gt[y : y + h, x : x + w] == 255).any())
        )
    return sum(np.mean(h) >= ON_TRUTH for h in hits.values())


def _errors(counts: dict[str, int], truth: dict[str, int], names: list[str]) -> list[float]:
    """Relative count errors of ``names``, largest first (compared in this order)."""
    return sorted((abs(counts[n] - truth[n]) / max(1, truth[n]) for n in names), reverse=True)


def sweep(names: list[str], cache: Path, grid: dict[str, tuple]) -> None:
    """Every combination of ``grid`` (module constants of ``bpvideo``, :data:`SWEEP` unless
    ``--grid``): objects per sequence; leave one sequence out (the combination whose errors
    on the others, largest first, are smallest, scored on the one left out; ties go to the
    first). Markdown on stdout."""
    truth = {n: len(truth_tracks(DATA / n)) for n in names}
    counts: dict[tuple, dict[str, int]] = {}
    for values in itertools.product(*grid.values()):
        with constants(dict(zip(grid, values, strict=True))):
            counts[values] = {n: objects_of(cache / n, DATA / n, []).objects for n in names}
        log.info("%s %s", values, counts[values])
    short = [n.split("_", 1)[1][:8] for n in names]
    keys = ", ".join(k.rpartition(".")[2] for k in grid)
    print(f"\n| {keys} | " + " | ".join(short) + " | worst |")
    print("|---" * (len(names) + 2) + "|")
    print(f"| ground truth | {' | '.join(str(truth[n]) for n in names)} | |")
    for values, row in counts.items():
        worst = _errors(row, truth, names)[0]
        print(f"| {', '.join(map(str, values))} | {' | '.join(str(row[n]) for n in names)} | "
              f"{100 * worst:.0f} % |")  # fmt: skip
    print("\n| left out | chosen on the others | its objects | its error |\n|---|---|---|---|")
    for name in names:
        others = [n for n in names if n != name]
        pick = min(counts, key=lambda v: _errors(counts[v], truth, others))
        error = (counts[pick][name] - truth[name]) / max(1, truth[name])
        print(f"| {name} | {', '.join(map(str, pick))} | {counts[pick][name]} | "
              f"{100 * error:+.0f} % |")  # fmt: skip


def f1_of_events(events, numbers: np.ndarray, truth: np.ndarray) -> float:
    """Frame-level F1 of the frames inside ``events`` (start_frame..end_frame)."""
    pred = np.zeros(len(numbers), dtype=bool)
    for start, end in events:
        pred |= (numbers >= start) & (numbers <= end)
    tp, fp, fn = int(np.sum(pred & truth)), int(np.sum(pred & ~truth)), int(np.sum(~pred & truth))
    return 2 * tp / max(1, 2 * tp + fp + fn)


def activity_events(run: Path) -> list[tuple[int, int]]:
    with open(run / "events.csv", newline="") as handle:
        return [(int(r["start_frame"]), int(r["end_frame"])) for r in csv.DictReader(handle)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/bpvideo-events-quality"))
    parser.add_argument("--line", default=HIGHWAY_LINE, help="the counting line on cdnet_highway")
    parser.add_argument("--sweep", action="store_true", help="also vary the tracker (SWEEP)")
    parser.add_argument(
        "--candidate",
        metavar="'NAME KEY=VALUE ...'",
        help="run under changed constants or options (cached under DIR/NAME)",
    )
    parser.add_argument("--sequences", nargs="+", metavar="NAME", help="these sequences only")
    parser.add_argument(
        "--grid",
        metavar="'KEY=V1,V2 ...'",
        help="--sweep over these module constants instead of SWEEP (implies --sweep)",
    )
    args = parser.parse_args()
    name, changed = parse_candidate(args.candidate) if args.candidate else ("", {})
    consts = {k: v for k, v in changed.items() if "." in k}
    options = {k: v for k, v in changed.items() if "." not in k}
    with constants(consts):
        cache = args.cache / name if name else args.cache
        grid = SWEEP
        if args.grid:
            grid = {k: tuple(yaml.safe_load(f"[{v}]")) for k, _, v in
                    (pair.partition("=") for pair in args.grid.split())}  # fmt: skip
        report(cache, args.line, grid if args.sweep or args.grid else None, options,
               args.sequences)  # fmt: skip


def report(cache: Path, line_text: str, grid: dict[str, tuple] | None, options: dict,
           only: list[str] | None) -> None:  # fmt: skip
    """The tables on stdout: objects and counts, the counting line, the event mode."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    names = [n for n in discover() if per_frame_truth(n) and (not only or n in only)]
    if not names:
        raise SystemExit(f"no sequences with per-frame ground truth in {DATA}")
    line = CountLine(line_text, *(tuple(map(float, p.split(","))) for p in line_text.split()))
    print("| sequence | ground-truth tracks | objects | error | on the ground truth | "
          "F1 activity | F1 objects | tracks, 170 band joining |\n"
          "|---|---|---|---|---|---|---|---|")  # fmt: skip
    scores, crossing = {}, None
    for name in names:
        root = DATA / name
        run_separate(name, cache, **options)  # frames.csv, events.csv, masks (cached)
        run = cache / name
        tracks = truth_tracks(root)
        tracker = objects_of(run, root, [line] if name == "cdnet_highway" else [])
        numbers, truth = truth_activity(root)
        spans = [(e.start_frame, e.end_frame) for e in object_events(tracker.ended)]
        scores[name] = {"activity": f1_of_events(activity_events(run), numbers, truth),
                        "objects": f1_of_events(spans, numbers, truth),
                        "idle": not truth.all()}  # fmt: skip
        error = (tracker.objects - len(tracks)) / max(1, len(tracks))
        print(f"| {name} | {len(tracks)} | {tracker.objects} | {100 * error:+.0f} % | "
              f"{on_truth(root, tracker.rows)} | {scores[name]['activity']:.3f} | "
              f"{scores[name]['objects']:.3f} | "
              f"{len(truth_tracks(root, band=True))} |")  # fmt: skip
        if name == "cdnet_highway":
            crossing = (truth_crossings(tracks, line), tracker.counts.total[line.name])
    if crossing is not None:
        print(f"\nCounting line `{line.name}` on cdnet_highway: ground-truth tracks "
              f"{crossing[0]}, objects {crossing[1]}.")  # fmt: skip
    idle = [n for n in names if scores[n]["idle"]]
    for label, pool in (("every sequence", names), ("the idle sequences", idle)):
        if not pool:
            continue
        print(f"\nLeave one out over {label}:\n\n| left out | mode chosen on the others | "
              "its F1 on the one left out |\n|---|---|---|")  # fmt: skip
        for name in pool:
            others = [n for n in pool if n != name] or pool
            pick = max(MODES, key=lambda m: min(scores[n][m] for n in others))
            print(f"| {name} | {pick} | {scores[name][pick]:.3f} |")
        worst = {m: min(scores[n][m] for n in pool) for m in MODES}
        print(f"\nWorst F1 over {label}: " + ", ".join(f"{m} {v:.3f}" for m, v in worst.items()))
    if grid:
        sweep(names, cache, grid)


if __name__ == "__main__":
    main()
