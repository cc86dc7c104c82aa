"""Live inputs: the ``Live`` section of the option table.

Each field is one option of ``bpvideo separate`` (see :mod:`bpvideo.settings`). A URL
INPUT is always read live; ``--live`` reads stdin or a capture device so.
"""

from __future__ import annotations

from dataclasses import dataclass

from bpvideo.limits import MAX_FRAMES, MAX_SECONDS
from bpvideo.settings.spec import option

__all__ = ["LiveSettings"]


@dataclass
class LiveSettings:
    """Live streams (the ``Live`` section of ``--help``)."""

    live: bool = option(
        False,
        "bool",
        "Read INPUT live (stdin or a capture device; a URL such as rtsp://... always is): "
        "each frame's mask is written as it is made, the background is learned on the first "
        "4 s (--learn START:END in frames, e.g. 0:50 for 2 s at 25 fps) and kept current "
        "(--absorb).",
        arrays=False,
    )
    reconnect: float = option(
        30.0,
        "float",
        "Seconds a dropped stream is waited for, reconnecting with a backoff, before it "
        "counts as ended (the outputs are then finished); 0 = end at the first drop.",
        low=0,
        high=MAX_SECONDS,
        metavar="SECONDS",
        arrays=False,
    )
    segment: int | str | None = option(
        None,
        "time",
        "Roll the outputs of a live stream over every SPAN of stream (1h, 10m, 00:30:00 or "
        "frames): OUTDIR/<start time>/ folders, each a complete result when it closes.",
        low=0,
        low_open=True,
        limit=MAX_FRAMES,
        optional=True,
        metavar="SPAN",
        arrays=False,
    )
    events_to: str | None = option(
        None,
        "path",
        "Write each event of a live stream (a stretch of frames with foreground) as a JSON "
        "line to this file or to stdout ('-') when it ends.",
        optional=True,
        metavar="PATH|-",
        arrays=False,
    )
