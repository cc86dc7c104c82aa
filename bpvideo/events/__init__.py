"""Events, regions and the per-frame table of foreground masks (no file I/O).

:func:`~bpvideo.events.table.frame_rows` gives one row per mask (share of foreground,
blobs, bounding box), :func:`~bpvideo.events.detect.detect_events` the stretches of
frames with foreground, :mod:`~bpvideo.events.regions` the reported region of
``--roi`` / ``--exclude``; :class:`~bpvideo.events.recorder.EventRecorder` does it block
by block. The files (``events.csv``, ``frames.csv``, the overlay, clips and report) are
written by :mod:`bpvideo.sinks.events`.
"""

from __future__ import annotations

from bpvideo.events.detect import EVENT_COLUMNS, Event, active_runs, detect_events, spans
from bpvideo.events.recorder import EventRecorder
from bpvideo.events.regions import (
    Polygon,
    parse_region,
    rasterise_polygon,
    region_of,
    reported_region,
)
from bpvideo.events.table import FrameTable, check_fps, check_times, frame_rows, timecode

__all__ = [
    "EVENT_COLUMNS",
    "Event",
    "EventRecorder",
    "FrameTable",
    "Polygon",
    "active_runs",
    "check_fps",
    "check_times",
    "detect_events",
    "frame_rows",
    "parse_region",
    "rasterise_polygon",
    "region_of",
    "reported_region",
    "spans",
    "timecode",
]
