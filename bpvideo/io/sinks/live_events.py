"""Events of a live stream as JSON lines, each written when it ends (``--events-to``).

A frame is active when its foreground share is above ``threshold``; runs of active frames
separated by fewer than ``gap`` inactive frames are one event; events shorter than
``min_event`` frames are dropped, the others padded by ``pad`` frames on each side. These
are the rules (and the defaults) of the event outputs of a finished run; here an event is
written as soon as no later frame can change it: ``gap`` + ``pad`` inactive frames after
its last active frame (or at the end of the stream). Only the rows of the frames since the
last event written are kept: memory does not grow with the stream.

Each line holds the columns of ``events.csv`` (``event``, ``start_frame``, ``end_frame``,
``start_time``, ``end_time``, ``duration``, ``peak_area``, ``x``, ``y``, ``w``, ``h``).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import IO

import cv2
import numpy as np

from bpvideo.records import Block

__all__ = ["EVENT_DEFAULTS", "LiveEventSink", "LiveEvents", "timecode"]

#: threshold (share), min_event, gap, pad (seconds): the defaults of the event outputs.
EVENT_DEFAULTS = (0.001, 0.5, 0.0, 0.2)


def timecode(seconds: float) -> str:
    """``HH:MM:SS.mmm`` of a time in seconds.

    Examples
    --------
    >>> timecode(83.04)
    '00:01:23.040'
    """
    ms = round(max(0.0, float(seconds)) * 1000)
    hours, ms = divmod(ms, 3_600_000)
    minutes, ms = divmod(ms, 60_000)
    secs, ms = divmod(ms, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}.{ms:03d}"


@dataclass
class _Row:
    number: int  # mask number
    index: int  # frame index in the stream (0-based)
    share: float
    box: tuple[int, int, int, int]


@dataclass
class LiveEvents:
    """The streaming event detector (see the module docstring); lengths in frames.

    Examples
    --------
    >>> ev = LiveEvents(fps=10, threshold=0.0, min_event=2, gap=1, pad=0)
    >>> masks = np.zeros((12, 4, 4), bool)
    >>> masks[3:6, 1, 1] = True
    >>> done = ev.add(list(range(1, 13)), list(range(12)), masks)
    >>> [(e["start_frame"], e["end_frame"], e["start_time"]) for e in done]
    [(4, 6, '00:00:00.300')]
    """

    fps: float
    threshold: float
    min_event: int
    gap: int
    pad: int
    rows: list[_Row] = field(default_factory=list)
    written: int = 0
    last_end: int = -1  # stream index of the last frame of the last event written

    def add(self, numbers: list[int], indices: list[int], masks: np.ndarray) -> list[dict]:
        """Take the rows of some masks; the events that ended."""
        h, w = masks.shape[1:3]
        for number, index, mask in zip(numbers, indices, masks, strict=True):
            count = int(np.count_nonzero(mask))
            box = cv2.boundingRect(mask.view(np.uint8)) if count else (0, 0, 0, 0)
            self.rows.append(_Row(int(number), int(index), count / (h * w), tuple(box)))
        return self._events(final=False)

    def finish(self) -> list[dict]:
        """The events still open at the end of the stream."""
        return self._events(final=True)

    def _events(self, final: bool) -> list[dict]:
        active = [r.share > self.threshold for r in self.rows]
        runs = _runs(active)
        merged: list[list[int]] = []
        for lo, hi in runs:
            if merged and lo - merged[-1][1] - 1 < self.gap:
                merged[-1][1] = hi
            else:
                merged.append([lo, hi])
        out, done = [], 0
        for lo, hi in merged:
            if not final and len(self.rows) - 1 - hi < self.gap + self.pad:
                break  # a later active frame may still extend it, or its padding is to come
            if hi - lo + 1 >= self.min_event:
                out.append(self._event(lo, hi, active))
            done = hi + 1
        pending = [lo for lo, _ in merged if lo >= done]
        first = pending[0] if pending else len(self.rows)
        # rows before an open event, or the last ones, are kept for its padding
        self.rows = [] if final else self.rows[max(done, first - self.pad) :]
        return out

    def _event(self, lo: int, hi: int, active: list[bool]) -> dict:
        first = max(0, lo - self.pad)
        while first < lo and self.rows[first].index <= self.last_end:
            first += 1  # never back into the previous event
        last = min(len(self.rows) - 1, hi + self.pad)
        self.last_end = self.rows[last].index
        boxes = np.array([r.box for r, a in zip(self.rows[lo : hi + 1], active[lo : hi + 1],
                                                strict=True) if a])  # fmt: skip
        x0, y0 = boxes[:, 0].min(), boxes[:, 1].min()
        x1, y1 = (boxes[:, 0] + boxes[:, 2]).max(), (boxes[:, 1] + boxes[:, 3]).max()
        start, end = self.rows[first].index / self.fps, (self.rows[last].index + 1) / self.fps
        self.written += 1
        return {
            "event": self.written, "start_frame": self.rows[first].number,
            "end_frame": self.rows[last].number, "start_time": timecode(start),
            "end_time": timecode(end), "duration": round(end - start, 3),
            "peak_area": round(max(r.share for r in self.rows[lo : hi + 1]), 6),
            "x": int(x0), "y": int(y0), "w": int(x1 - x0), "h": int(y1 - y0),
        }  # fmt: skip


def _runs(active: list[bool]) -> list[tuple[int, int]]:
    """``(first, last)`` of each run of True."""
    runs, start = [], None
    for i, a in enumerate(active):
        if a and start is None:
            start = i
        elif not a and start is not None:
            runs.append((start, i - 1))
            start = None
    if start is not None:
        runs.append((start, len(active) - 1))
    return runs


class LiveEventSink:
    """Writes the events of :class:`LiveEvents` as JSON lines, flushed one by one.

    Parameters
    ----------
    target : str
        A file, or ``"-"`` for stdout.
    detector : LiveEvents
        The rules.
    mask_number : callable
        The mask number of a frame number (as the mask files are named).
    """

    def __init__(self, target: str, detector: LiveEvents, mask_number) -> None:
        self.target = target
        self.detector = detector
        self.mask_number = mask_number
        self._fh: IO[str] | None = None

    def open(self) -> None:
        self._fh = sys.stdout if self.target == "-" else open(self.target, "w")

    def write(self, block: Block) -> None:
        numbers = [self.mask_number(n) for n in block.numbers]
        self._emit(self.detector.add(numbers, list(block.numbers), block.masks))

    def _emit(self, events: list[dict]) -> None:
        assert self._fh is not None
        for event in events:
            self._fh.write(json.dumps(event) + "\n")
        if events:
            self._fh.flush()

    def close(self) -> None:
        self._emit(self.detector.finish())
        self._end()

    def abort(self) -> None:
        self._end()

    def _end(self) -> None:
        if self._fh is not None and self._fh is not sys.stdout:
            self._fh.close()
        self._fh = None
