"""Events of a live stream as JSON lines, each written when it ends (``--events-to``).

The rules and options are those of the event outputs of a finished run
(``--event-threshold``, ``--min-event``, ``--event-gap``, ``--event-pad``, ``--roi``,
``--exclude``: docs/events.md): the rows of the frames are made by
:func:`bpvideo.events.frame_rows` and the events found by
:class:`~bpvideo.events.online.OnlineEvents`, which keeps only the last rows it needs. An
event is written as soon as no later frame can change it (``gap`` + ``pad`` frames after
its last active frame), or at the end of the stream.

Each line holds the columns of ``events.csv`` (``event``, ``start_frame``, ``end_frame``,
``start_time``, ``end_time``, ``duration``, ``peak_area``, ``x``, ``y``, ``w``, ``h``,
``start_time_of_day``, ``end_time_of_day``: the stream's arrival clock).

When objects are tracked (``--events objects`` or ``--count-line``), each object is a line
too, written when it ends (:class:`~bpvideo.sinks.objects.ObjectsSink`): the columns of
``objects.csv`` (``object``, ``first_frame`` ... ``first_time_of_day``,
``last_time_of_day``); with ``--events objects`` the objects are the events (no activity
event lines). With ``--count-line``, a line ``{"counts": {LINE: {"left_to_right": n,
"right_to_left": m}}, "frame", "time", "time_of_day"}`` follows each block in which an
object crossed a line: the totals so far. A line is an event, an object or counts by its
key: ``event``, ``object`` or ``counts``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from bpvideo.events import Event, frame_rows, timecode
from bpvideo.events.online import OnlineEvents
from bpvideo.records import Block
from bpvideo.sinks.objects import ObjectsSink
from bpvideo.sinks.raw import open_target
from bpvideo.sinks.table import tracks_objects
from bpvideo.times import WallClock

if TYPE_CHECKING:  # pragma: no cover
    from bpvideo.settings import SeparateSettings
    from bpvideo.sources.stream import FrameSource

__all__ = ["LiveEventSink"]


class LiveEventSink:
    """Writes the events of the blocks as JSON lines, flushed one by one.

    Parameters
    ----------
    target : str
        A file, or ``"-"`` for stdout.
    detector : OnlineEvents
        The rules (threshold, minimum length, gap, padding) at the stream's rate.
    mask_number : callable
        The mask number of a frame number (as the mask files are named).
    times : callable
        Seconds of frame numbers and mask numbers (the stream's own clock).
    region : (H, W) bool ndarray, optional
        Where foreground is reported (``--roi`` / ``--exclude``).
    clock : WallClock, optional
        The time of day of the seconds of ``times`` (events' ``*_time_of_day``).
    objects : ObjectsSink, optional
        The objects tracked (made with :meth:`objects_of`): their lines, and the counts.
    shared : callable, optional
        Instead of ``objects``: ``shared()`` gives, once the run's sinks are open, the
        objects another sink of the run tracks (the result folder's, which gets each block
        first): their rows are written as lines too (:meth:`ObjectsSink.tee`) and the
        tracker runs once.
    """

    def __init__(
        self,
        target: str,
        detector: OnlineEvents,
        mask_number: Callable[[int], int],
        times: Callable[[list[int], list[int]], np.ndarray],
        region: np.ndarray | None = None,
        clock: WallClock | None = None,
        objects: ObjectsSink | None = None,
        shared: Callable[[], ObjectsSink | None] | None = None,
    ) -> None:
        self.target = target
        self.clock = clock or WallClock()
        self.objects = objects
        self.shared = shared
        self.events = objects is None or objects.settings.events != "objects"
        self._counts = ""
        self.detector = detector
        self.mask_number = mask_number
        self.times = times
        self.region = region
        self._fh: IO[str] | None = None

    @staticmethod
    def objects_of(source: FrameSource, settings: SeparateSettings) -> ObjectsSink | None:
        """The objects of a stream's lines, when tracked (none kept in memory)."""
        if not tracks_objects(settings):
            return None
        objects = ObjectsSink(None, source, settings, rows=(_Lines(), _Lines()))
        objects.keep = False  # each object is written as it ends
        return objects

    def open(self) -> None:
        """Open the target (stdout is used as it is)."""
        self._fh = (
            sys.stdout
            if self.target == "-"
            else open_target(self.target, "events_to", "the events", "jq . < PIPE", "w")
        )
        if self.shared is not None:
            self.objects = self.shared()
            if self.objects is not None:
                lines = _Lines()
                lines.fh = self._fh
                self.objects.tee(lines, _Lines())  # the tracks are not lines
                self.events = self.objects.settings.events != "objects"
        elif self.objects is not None:
            self.objects.open()
            self.objects.objects.fh = self._fh

    def write(self, block: Block) -> None:
        """Count a block's masks; write the events (and objects) that ended."""
        numbers = [self.mask_number(n) for n in block.numbers]
        times = self.times(block.numbers, numbers)
        rows = frame_rows(block.masks, np.asarray(numbers), times, self.region)
        self.detector.add(rows)
        self._emit(self.detector.take())
        if self.objects is not None and len(block):
            if self.shared is None:  # else the result folder tracked this block already
                self.objects.write(block)
            self._count(numbers[-1], float(times[-1]))

    def _emit(self, events: list[Event]) -> None:
        assert self._fh is not None
        if not self.events:
            return
        for event in events:
            self._fh.write(json.dumps(event.timed(self.clock).row()) + "\n")
        if events:
            self._fh.flush()

    def _count(self, frame: int, seconds: float) -> None:
        """A counts line when an object crossed a line since the last one."""
        assert self.objects is not None and self._fh is not None
        totals = self.objects.tracker.counts.total
        text = json.dumps(totals, sort_keys=True)
        if not totals or text == self._counts:
            return
        self._counts = text
        line = {"counts": totals, "frame": frame, "time": timecode(seconds),
                "time_of_day": self.clock.at(seconds)}  # fmt: skip
        self._fh.write(json.dumps(line) + "\n")
        self._fh.flush()

    def close(self) -> None:
        """Write the events and objects still open; close the target."""
        self.detector.finish()
        self._emit(self.detector.take())
        if self.objects is not None and self.shared is None:
            self.objects.close()  # a shared one is closed by its folder, before
        self._end()

    def abort(self) -> None:
        """Close the target."""
        self._end()

    def _end(self) -> None:
        if self._fh is not None and self._fh is not sys.stdout:
            self._fh.close()
        self._fh = None


class _Lines:
    """Rows written as JSON lines to ``fh`` (set once the target is open), flushed each
    time; dropped while ``fh`` is None (the tracks are not lines)."""

    def __init__(self) -> None:
        self.fh: Any = None

    def write(self, rows: list[dict[str, Any]]) -> None:
        if self.fh is None or not rows:
            return
        for row in rows:
            self.fh.write(json.dumps(row) + "\n")
        self.fh.flush()

    def close(self) -> None:
        """The target is closed by its sink."""
