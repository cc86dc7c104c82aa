"""What ``report.html`` shows, gathered and put into words: the page's inputs
(:class:`ReportData`), the headings of its tables (words with units), the times of its
axis and rows (seconds into the input, or clock times when the input's start is known).
No HTML here: :mod:`bpvideo.sinks.report.page` lays the data out.
"""

from __future__ import annotations

import csv
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from bpvideo._version import __version__
from bpvideo.events import Event
from bpvideo.times import WallClock

__all__ = [
    "MAX_OBJECT_ROWS",
    "Links",
    "ReportData",
    "clock",
    "png_size",
    "read_objects",
    "wall_clock",
]

#: Rows of ``objects.csv`` the page lists at most (the file holds them all).
MAX_OBJECT_ROWS = 1000


@dataclass
class Links:
    """Files of the result folder the page links to, relative to ``report.html``.

    Attributes
    ----------
    clips : dict of int to str
        Event number -> its clip (``clips/event_0001.mp4``), for the clips that exist.
    overlay : str or None
        ``overlay.mp4`` when it exists (linked at each event's time: ``#t=SECONDS``).
    """

    clips: dict[int, str] = field(default_factory=dict)
    overlay: str | None = None

    @classmethod
    def of(cls, folder: Path, events: Sequence[Event], clips: bool = True) -> Links:
        """The links to the files of ``folder`` (a result or its staging folder) that
        exist; ``clips=False``: none to clips (they may belong to other events)."""
        found = {}
        if clips:
            for e in events:
                name = f"clips/event_{e.event:04d}.mp4"
                if (folder / name).is_file():
                    found[e.event] = name
        overlay = "overlay.mp4" if (folder / "overlay.mp4").is_file() else None
        return cls(found, overlay)


@dataclass
class ReportData:
    """Everything ``report.html`` shows (see :func:`bpvideo.sinks.report.report_html`)."""

    title: str
    series: tuple[np.ndarray, np.ndarray]
    events: Sequence[Event]
    thumbs: dict[int, bytes]
    background_png: bytes | None
    settings: dict[str, Any]
    facts: dict[str, Any]
    objects: list[dict[str, str]] | None = None
    object_count: int | None = None
    counts: dict[str, Any] | None = None
    links: Links = field(default_factory=Links)
    start: datetime | None = None
    run_date: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    version: str = __version__

    @property
    def of_what(self) -> str:
        """What a share is of: ``"region"`` with ``--roi``/``--exclude``, else ``"frame"``."""
        return "region" if self.settings.get("roi") or self.settings.get("exclude") else "frame"

    @property
    def scale(self) -> float:
        """The masks' size over the input's (``--scale``)."""
        return float(self.settings.get("scale") or 1.0)

    @property
    def tracked(self) -> bool:
        """Whether the run tracked objects."""
        return self.objects is not None or self.object_count is not None


def wall_clock(value: Any) -> datetime | None:
    """The input's start as a time of day: a datetime, an ISO 8601 string or None (then
    None: the page shows seconds into the input). A time without a zone is kept as is
    (the camera's own clock)."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value
    text = str(value).strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def clock(seconds: float, start: datetime | None, step: float = 1.0) -> str:
    """A time of the input as the page shows it: the clock time ``start + seconds``
    (``HH:MM:SS``; ``HH:MM`` when ``step`` is a whole minute or more), else ``m:ss`` (or
    ``h:mm:ss``) into the input, with tenths where ``step`` is under a second.

    Examples
    --------
    >>> clock(83.0, None), clock(3725, None), clock(1.5, None, 0.5)
    ('1:23', '1:02:05', '0:01.5')
    >>> clock(90, datetime(2026, 5, 1, 14, 0, 0))
    '14:01:30'
    """
    moment = WallClock(start).moment(seconds)  # None past the years a datetime holds
    if moment is not None:
        if step < 1:
            return moment.strftime("%H:%M:%S.") + f"{moment.microsecond // 100000}"
        return moment.strftime("%H:%M" if step >= 60 and step % 60 == 0 else "%H:%M:%S")
    tenths = step < 1
    total = round(float(seconds) * 10) / 10 if tenths else round(float(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    sec = f"{secs:04.1f}" if tenths else f"{int(secs):02d}"
    return f"{int(hours)}:{int(minutes):02d}:{sec}" if hours else f"{int(minutes)}:{sec}"


#: Steps of the time axis, in seconds: the smallest that gives at most :data:`TICKS` ticks.
TIME_STEPS = (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200,
              10800, 21600, 43200, 86400)  # fmt: skip
TICKS = 8


def time_ticks(t0: float, t1: float, start: datetime | None) -> tuple[list[float], float]:
    """Times (seconds into the input) of the ticks of an axis from ``t0`` to ``t1``, on
    round clock times when ``start`` is known (every 5 minutes: :00, :05 ...); the step.

    Examples
    --------
    >>> time_ticks(0, 100, None)
    ([0.0, 15.0, 30.0, 45.0, 60.0, 75.0, 90.0], 15)
    """
    span = max(t1 - t0, 1e-9)
    step = next((s for s in TIME_STEPS if span / s <= TICKS), TIME_STEPS[-1])
    step = max(step, span / TICKS) if step == TIME_STEPS[-1] else step
    offset = 0.0
    if start is not None:  # seconds since the last midnight of the start, on its clock
        midnight = start.replace(hour=0, minute=0, second=0, microsecond=0)
        offset = (start - midnight).total_seconds()
    first = math.ceil((t0 + offset) / step - 1e-9) * step - offset
    count = math.floor((t1 - first) / step + 1e-9) + 1
    return [round(first + i * step, 6) for i in range(max(count, 0))], step


def share_ticks(peak: float) -> list[float]:
    """Round percentages from 0 to at least ``peak`` (a percentage), 3 to 6 of them.

    Examples
    --------
    >>> share_ticks(9.97)
    [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    """
    peak = max(float(peak), 1e-3)
    power = 10 ** math.floor(math.log10(peak))
    step = next(m * power for m in (0.2, 0.5, 1, 2, 2.5, 5, 10) if peak / (m * power) <= 5)
    count = math.ceil(peak / step - 1e-9)
    return [float(round(i * step, 6)) for i in range(count + 1)]


def read_objects(path: Path, limit: int = MAX_OBJECT_ROWS) -> list[dict[str, str]] | None:
    """The first ``limit`` rows of ``objects.csv`` by object id, or None where the file
    is absent (the run tracked no object)."""
    if not path.is_file():
        return None
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    rows.sort(key=lambda r: int(r.get("object") or 0))
    return rows[:limit]


def png_size(png: bytes) -> tuple[int, int]:
    """``(width, height)`` of a PNG image, from its header."""
    if len(png) < 24 or png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG image")
    width, height = struct.unpack(">II", png[16:24])
    return int(width), int(height)
