"""Events of a live stream as JSON lines, each written when it ends (``--events-to``).

The rules and options are those of the event outputs of a finished run
(``--event-threshold``, ``--min-event``, ``--event-gap``, ``--event-pad``, ``--roi``,
``--exclude``: docs/events.md): the rows of the frames are made by
:func:`bpvideo.events.frame_rows` and the events found by
:class:`~bpvideo.events.online.OnlineEvents`, which keeps only the last rows it needs. An
event is written as soon as no later frame can change it (``gap`` + ``pad`` frames after
its last active frame), or at the end of the stream.

Each line holds the columns of ``events.csv`` (``event``, ``start_frame``, ``end_frame``,
``start_time``, ``end_time``, ``duration``, ``peak_area``, ``x``, ``y``, ``w``, ``h``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import IO

import numpy as np

from bpvideo.events import Event, frame_rows
from bpvideo.events.online import OnlineEvents
from bpvideo.records import Block

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
    """

    def __init__(
        self,
        target: str,
        detector: OnlineEvents,
        mask_number: Callable[[int], int],
        times: Callable[[list[int], list[int]], np.ndarray],
        region: np.ndarray | None = None,
    ) -> None:
        self.target = target
        self.detector = detector
        self.mask_number = mask_number
        self.times = times
        self.region = region
        self._fh: IO[str] | None = None

    def open(self) -> None:
        """Open the target (stdout is used as it is)."""
        self._fh = sys.stdout if self.target == "-" else open(self.target, "w")

    def write(self, block: Block) -> None:
        """Count a block's masks; write the events that ended."""
        numbers = [self.mask_number(n) for n in block.numbers]
        rows = frame_rows(block.masks, np.asarray(numbers),
                          self.times(block.numbers, numbers), self.region)  # fmt: skip
        self.detector.add(rows)
        self._emit(self.detector.take())

    def _emit(self, events: list[Event]) -> None:
        assert self._fh is not None
        for event in events:
            self._fh.write(json.dumps(event.row()) + "\n")
        if events:
            self._fh.flush()

    def close(self) -> None:
        """Write the events still open; close the target."""
        self.detector.finish()
        self._emit(self.detector.take())
        self._end()

    def abort(self) -> None:
        """Close the target."""
        self._end()

    def _end(self) -> None:
        if self._fh is not None and self._fh is not sys.stdout:
            self._fh.close()
        self._fh = None
