"""``bpvideo events OUTDIR`` against the ``separate`` run that wrote OUTDIR.

A 600-frame 320x240 synthetic street clip (:func:`bpvideo.synthetic.make_scene`, H.264)
is separated at the defaults (videos, masks, events, report), then its events are found
again from the masks with other options (``bpvideo events``: masks read, tables, report
and summary rewritten). Medians of ``--repeat`` runs of each, in this process.

With ``--objects``: the run tracks objects too (``events="objects"`` and a counting line
across the street), and ``bpvideo events`` tracks them again from the masks.

With ``--stream N``: the memory of the event outputs instead, N frames of 64x48 masks
(bursts of a moving square) through :class:`~bpvideo.sinks.event_stream.EventStream`, the
peak resident memory printed as they go (it stays flat).

Usage::

    python benchmarks/bench_events.py [--frames 600] [--repeat 3] [--objects]
    python benchmarks/bench_events.py --stream 192000

Markdown on stdout, progress on stderr.
"""

from __future__ import annotations

import argparse
import logging
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bpvideo import separate_file
from bpvideo.settings import SeparateSettings
from bpvideo.sinks.event_stream import EventStream
from bpvideo.sinks.rederive import rederive
from bpvideo.sinks.writers import write_video
from bpvideo.synthetic import make_scene


def stream(frames: int) -> None:
    """Masks through an :class:`EventStream`, 64 at a time; peak memory as it goes."""
    settings = SeparateSettings.from_mapping({})
    blank = np.zeros((64, 48, 64, 3), np.uint8)
    print("| frames | peak resident memory (MiB) | events so far |\n|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="bpvideo-bench-events-") as tmp:
        events = EventStream(Path(tmp) / "frames.csv", 25.0, None, settings)
        blocks = frames // 64
        for b in range(blocks):
            masks = np.zeros((64, 48, 64), bool)
            if (b // 3) % 2:  # bursts of three blocks, a square moving along
                masks[:, 10:20, 10 + b % 30 : 20 + b % 30] = True
            events.add(np.arange(b * 64 + 1, b * 64 + 65), masks, blank)
            if b + 1 in (blocks // 10, blocks // 2, blocks):
                peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                print(f"| {(b + 1) * 64} | {peak:.0f} | {len(events.online.events)} |")
        events.finish()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--stream", type=int, default=None, metavar="N")
    parser.add_argument("--objects", action="store_true", help="track objects too")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if args.stream:
        stream(args.stream)
        return
    with tempfile.TemporaryDirectory(prefix="bpvideo-bench-events-") as tmp:
        clip = Path(tmp) / "street.mp4"
        scene = make_scene(320, 240, args.frames)
        write_video(clip, scene.frames, 25.0)
        separate, again = [], []
        tracked = {"events": "objects", "count_line": ["160,0 160,239"]} if args.objects else {}
        for i in range(args.repeat):
            out = Path(tmp) / f"out{i}"
            t = time.perf_counter()
            separate_file(clip, out, **tracked)
            separate.append(time.perf_counter() - t)
            t = time.perf_counter()
            summary = rederive(out, event_gap="1s", event_threshold=0.002)
            again.append(time.perf_counter() - t)
            print(f"run {i + 1}: separate {separate[-1]:.2f}s, events {again[-1]:.3f}s "
                  f"({len(summary['events'])} events, {summary.get('objects')} objects)",
                  file=sys.stderr)  # fmt: skip
    s, e = statistics.median(separate), statistics.median(again)
    what = f"{args.frames} at 320x240{', objects' if args.objects else ''}"
    print("| frames | separate (s) | bpvideo events (s) | ratio |\n|---|---|---|---|")
    print(f"| {what} | {s:.2f} | {e:.3f} | {100 * e / s:.1f} % |")


if __name__ == "__main__":
    main()
