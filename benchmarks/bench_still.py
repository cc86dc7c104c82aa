"""The cost of ``background.png``: the grey median (:class:`~bpvideo.records.Still`) and,
for a colour input solved on grey, its colour (:class:`~bpvideo.sinks.colour.Chroma`).

Random frames and masks (10 % foreground) at 320x240 and 1280x720, offered 16 at a time
as the blocks of a run come, for 300 and 3000 frames; each timing is the median of
``--repeat`` runs (the two take turns, so a shared machine's load weighs on both alike).

Usage::

    python benchmarks/bench_still.py --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bpvideo.records import Still
from bpvideo.sinks.colour import Chroma

BLOCK = 16


def _time(make: type, frames: np.ndarray, masks: np.ndarray, n: int) -> float:
    """Seconds to offer ``n`` frames (in blocks) to a new ``make()`` and finish it."""
    t = time.perf_counter()
    still = make()
    for _ in range(0, n, BLOCK):
        if isinstance(still, Chroma):
            still.add(frames, masks)
        else:
            still.add(frames[..., 0])
    if isinstance(still, Chroma):
        still.colour(frames[0, ..., 0])
    else:
        still.median()
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print("| size | frames | grey median (s) | colour of it (s) |\n|---|---|---|---|")
    for w, h in ((320, 240), (1280, 720)):
        frames = rng.integers(0, 256, (BLOCK, h, w, 3), dtype=np.uint8)
        masks = rng.random((BLOCK, h, w)) < 0.1
        for n in (300, 3000):
            runs: dict[type, list[float]] = {Still: [], Chroma: []}
            for _ in range(args.repeat):
                for make in runs:
                    runs[make].append(_time(make, frames, masks, n))
            grey, colour = (statistics.median(runs[m]) for m in (Still, Chroma))
            print(f"| {w}x{h} | {n} | {grey:.3f} | {colour:.3f} |", flush=True)


if __name__ == "__main__":
    main()
