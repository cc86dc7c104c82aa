"""Events: stretches of frames with foreground, from the per-frame table.

A frame is active when its foreground share is above a threshold. Runs of active frames
closer than ``gap`` are merged, events shorter than ``min_event`` dropped, and the rest
padded by ``pad`` on each side (clipped at the ends; events that then touch are merged).
Lengths are frames (an int) or times as ``--start`` takes them (``2s``, ``00:00:01.5``),
turned into frames at the input's rate.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from bpvideo.events.table import FrameTable, check_fps, check_times, timecode
from bpvideo.times import WallClock, parse_time

__all__ = [
    "EVENT_COLUMNS",
    "Event",
    "active_runs",
    "detect_events",
    "frame_end",
    "frames_of",
    "spans",
]

#: The columns of ``events.csv``, in order.
EVENT_COLUMNS = ("event", "start_frame", "end_frame", "start_time", "end_time", "duration",
                 "peak_area", "x", "y", "w", "h", "start_time_of_day",
                 "end_time_of_day")  # fmt: skip


@dataclass
class Event:
    """One event (a row of ``events.csv``).

    Attributes
    ----------
    event : int
        1-based index.
    start_frame, end_frame : int
        Mask numbers of its first and last frame (inclusive, padding included).
    start_time, end_time : str
        ``HH:MM:SS.mmm`` of the start of its first frame and of the end of its last.
    duration : float
        Seconds from ``start_time`` to ``end_time``.
    peak_area : float
        The largest foreground share of its frames (of the frame, or of the region).
    x, y, w, h : int
        Bounding box of all its foreground, in pixels of the masks.
    start_seconds, end_seconds : float
        ``start_time`` and ``end_time`` in seconds (not columns of ``events.csv``).
    first, last : int
        Rows of the frame table (not columns of ``events.csv``).
    start_time_of_day, end_time_of_day : str
        ``start_time`` and ``end_time`` as times of day, ISO 8601 with the offset of the
        input's clock (:class:`~bpvideo.times.WallClock`: set by the outputs, see
        :meth:`timed`); empty when the input's time of day is unknown (as the cell of
        ``events.csv``: summary.json's events are its rows).
    """

    event: int
    start_frame: int
    end_frame: int
    start_time: str
    end_time: str
    duration: float
    peak_area: float
    x: int
    y: int
    w: int
    h: int
    start_seconds: float = 0.0
    end_seconds: float = 0.0
    first: int = 0
    last: int = 0
    start_time_of_day: str = ""
    end_time_of_day: str = ""

    def timed(self, clock: WallClock) -> Event:
        """This event with its times of day on ``clock`` (the input's seconds' clock)."""
        return replace(self, start_time_of_day=clock.at(self.start_seconds) or "",
                       end_time_of_day=clock.at(self.end_seconds) or "")  # fmt: skip

    def row(self) -> dict[str, Any]:
        """The row of ``events.csv`` (and of summary.json's ``"events"``)."""
        values = asdict(self)
        return {name: values[name] for name in EVENT_COLUMNS}


def frames_of(value: int | str, fps: float, name: str) -> int:
    """Frames of a length given as frames or as a time (see :func:`~bpvideo.times.parse_time`).

    Examples
    --------
    >>> frames_of(5, 25, "event_gap"), frames_of("2s", 25, "event_gap")
    (5, 50)
    """
    return max(0, parse_time(value, name).to_frames(check_fps(fps)))


def active_runs(active: np.ndarray) -> list[tuple[int, int]]:
    """``(first, last)`` rows (inclusive) of each run of True in a (n,) bool array.

    Examples
    --------
    >>> active_runs(np.array([0, 1, 1, 0, 0, 1], bool))
    [(1, 2), (5, 5)]
    """
    a = np.concatenate([[False], np.asarray(active, dtype=bool), [False]]).astype(np.int8)
    edges = np.diff(a)
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
    return [(int(s), int(e)) for s, e in zip(starts, ends, strict=True)]


def spans(active: np.ndarray, *, min_len: int, gap: int, pad: int) -> list[tuple[int, int]]:
    """Events as ``(first, last)`` rows of the table (inclusive).

    Parameters
    ----------
    active : (n,) bool ndarray
        Frames with foreground above the threshold.
    min_len : int
        Frames an event lasts at least (before padding).
    gap : int
        Runs separated by fewer inactive frames than this are merged.
    pad : int
        Frames added on each side (clipped at the ends).

    Examples
    --------
    >>> a = np.array([0, 1, 1, 0, 1, 0, 0, 0, 1, 0], bool)
    >>> spans(a, min_len=1, gap=2, pad=0)
    [(1, 4), (8, 8)]
    >>> spans(a, min_len=2, gap=2, pad=1)
    [(0, 5)]
    """
    n = len(active)
    merged: list[list[int]] = []
    for lo, hi in active_runs(active):
        if merged and lo - merged[-1][1] - 1 < gap:
            merged[-1][1] = hi
        else:
            merged.append([lo, hi])
    out: list[list[int]] = []
    for lo, hi in merged:
        if hi - lo + 1 < min_len:
            continue
        lo, hi = max(0, lo - pad), min(n - 1, hi + pad)
        if out and lo <= out[-1][1] + 1:  # padded into the previous one: one event
            out[-1][1] = hi
        else:
            out.append([lo, hi])
    return [(lo, hi) for lo, hi in out]


def frame_end(times: np.ndarray, row: int, fps: float) -> float:
    """When frame ``row`` ends: its time plus the step from the frame before it (1 / fps
    for a first frame, or when times do not increase)."""
    step = float(times[row] - times[row - 1]) if row > 0 else 0.0
    return float(times[row]) + (step if step > 0 else 1.0 / fps)


def detect_events(
    table: FrameTable,
    *,
    fps: float,
    threshold: float,
    min_event: int | str,
    gap: int | str,
    pad: int | str,
) -> list[Event]:
    """The events of a frame table.

    Parameters
    ----------
    table : FrameTable
        One row per mask, in order.
    fps : float
        The input's rate (turns times into frames; the length of a frame without times).
    threshold : float
        A frame is active when its foreground share is above this (0 = any foreground).
    min_event, gap, pad : int or str
        Frames, or times as ``--start`` takes them (``"2s"``).

    Returns
    -------
    list of Event
    """
    fps = check_fps(fps)
    check_times(table.times, len(table), "table.times")
    active = table.share > threshold
    found = spans(
        active,
        min_len=max(1, frames_of(min_event, fps, "min_event")),
        gap=frames_of(gap, fps, "event_gap"),
        pad=frames_of(pad, fps, "event_pad"),
    )
    events = []
    for index, (lo, hi) in enumerate(found, 1):
        inside = slice(lo, hi + 1)
        lit = active[inside]
        boxes = table.boxes[inside][lit]
        x0, y0 = boxes[:, 0].min(), boxes[:, 1].min()
        x1, y1 = (boxes[:, 0] + boxes[:, 2]).max(), (boxes[:, 1] + boxes[:, 3]).max()
        start, end = float(table.times[lo]), frame_end(table.times, hi, fps)
        events.append(Event(
            event=index, start_frame=int(table.numbers[lo]), end_frame=int(table.numbers[hi]),
            start_time=timecode(start), end_time=timecode(end),
            duration=round(end - start, 3), peak_area=round(float(table.share[inside].max()), 6),
            x=int(x0), y=int(y0), w=int(x1 - x0), h=int(y1 - y0),
            start_seconds=start, end_seconds=end, first=lo, last=hi,
        ))  # fmt: skip
    return events
