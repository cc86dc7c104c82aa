"""Events found as the frames stream by, in constant memory.

:func:`~bpvideo.events.detect.detect_events` needs the whole table; :class:`OnlineEvents`
takes its rows block by block and keeps only the last ``max(gap, pad)`` rows and the
event being formed, so that a night of frames costs no more than a minute of them. It
finds the same events (the tests compare both on random activity).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from bpvideo.events.detect import Event, frames_of
from bpvideo.events.table import FrameTable, check_fps, check_times, timecode

__all__ = ["OnlineEvents"]

_NEVER = 2**62


@dataclass
class _Row:
    index: int
    number: int
    time: float
    end: float
    share: float
    active: bool
    box: tuple[int, int, int, int]


@dataclass
class _Span:
    """What an event holds so far: rows ``first`` to ``last`` (folded as they come; a
    row folded twice changes nothing)."""

    first: int
    last: int = _NEVER
    first_number: int = 0
    first_time: float = 0.0
    seen: int = -1
    last_number: int = 0
    last_end: float = 0.0
    peak: float = 0.0
    box: list[int] | None = field(default=None)  # x0, y0, x1, y1

    def fold(self, row: _Row) -> None:
        if not self.first <= row.index <= self.last:
            return
        if row.index == self.first:
            self.first_number, self.first_time = row.number, row.time
        if row.index > self.seen:
            self.seen, self.last_number, self.last_end = row.index, row.number, row.end
        self.peak = max(self.peak, row.share)
        if row.active:
            x, y, w, h = row.box
            self._union([x, y, x + w, y + h])

    def _union(self, box: list[int] | None) -> None:
        if box is None:
            return
        if self.box is None:
            self.box = list(box)
        else:
            self.box = [min(self.box[0], box[0]), min(self.box[1], box[1]),
                        max(self.box[2], box[2]), max(self.box[3], box[3])]  # fmt: skip

    def absorb(self, other: _Span) -> None:
        """Take in a later span that touches this one."""
        self.last = max(self.last, other.last)
        if other.seen > self.seen:
            self.seen, self.last_number, self.last_end = (
                other.seen,
                other.last_number,
                other.last_end,
            )
        self.peak = max(self.peak, other.peak)
        self._union(other.box)


@dataclass
class _Run:
    lo: int
    hi: int
    span: _Span
    tail: list[_Row] = field(default_factory=list)  # inactive rows after ``hi``


class OnlineEvents:
    """The events of a frame table handed over block by block (see the module docstring).

    Parameters
    ----------
    fps : float
        The input's rate.
    threshold, min_event, gap, pad
        As :func:`~bpvideo.events.detect.detect_events` takes them.

    Examples
    --------
    >>> import numpy as np
    >>> share = np.array([0, 0.2, 0.3, 0, 0, 0.1, 0, 0])
    >>> n = len(share)
    >>> table = FrameTable(np.arange(1, n + 1), np.arange(n) / 10, share,
    ...                    (share > 0).astype(int), np.ones((n, 4), int))
    >>> online = OnlineEvents(10.0, threshold=0, min_event=1, gap=3, pad=0)
    >>> online.add(table[:3]); online.add(table[3:])
    >>> [(e.start_frame, e.end_frame, e.end_time) for e in online.finish()]
    [(2, 6, '00:00:00.600')]
    """

    def __init__(self, fps: float, *, threshold: float, min_event: int | str, gap: int | str,
                 pad: int | str) -> None:  # fmt: skip
        self.fps = fps = check_fps(fps)
        self.threshold = float(threshold)
        self.min_len = max(1, frames_of(min_event, fps, "min_event"))
        self.gap = frames_of(gap, fps, "event_gap")
        self.pad = frames_of(pad, fps, "event_pad")
        self.n = 0
        self.previous: float | None = None
        self.ring: deque[_Row] = deque(maxlen=max(1, self.pad))
        self.run: _Run | None = None
        self.open: _Span | None = None
        self.events: list[Event] = []
        self.taken = 0

    def add(self, rows: FrameTable) -> None:
        """The next rows of the table."""
        check_times(rows.times, len(rows), "rows.times")
        for i in range(len(rows)):
            time = float(rows.times[i])
            step = time - self.previous if self.previous is not None else 0.0
            x, y, w, h = (int(v) for v in rows.boxes[i])
            share = float(rows.share[i])
            row = _Row(self.n, int(rows.numbers[i]), time,
                       time + (step if step > 0 else 1.0 / self.fps), share,
                       share > self.threshold, (x, y, w, h))  # fmt: skip
            self._row(row)
            self.previous = time
            self.n += 1

    def _row(self, row: _Row) -> None:
        if self.open is not None:
            self.open.fold(row)
        run = self.run
        if row.active:
            if run is not None:  # contiguous, or within the gap: the same run
                for t in run.tail:
                    run.span.fold(t)
                run.tail.clear()
                run.span.fold(row)
                run.hi = row.index
            else:
                span = _Span(first=max(0, row.index - self.pad))
                for t in self.ring:
                    span.fold(t)
                span.fold(row)
                self.run = _Run(row.index, row.index, span)
        elif run is not None:
            run.tail.append(row)
            if len(run.tail) >= max(1, self.gap):  # the next active row starts a new run
                self._close()
        self.ring.append(row)
        if self.open is not None and self.run is None and row.index > self.open.last + self.pad:
            self._emit(self.open)  # no later run can reach back into it: it is final
            self.open = None

    def _close(self) -> None:
        run, self.run = self.run, None
        assert run is not None
        if run.hi - run.lo + 1 < self.min_len:
            return
        span = run.span
        span.last = run.hi + self.pad
        for t in run.tail:
            span.fold(t)
        if self.open is not None and span.first <= self.open.last + 1:
            self.open.absorb(span)
            return
        if self.open is not None:
            self._emit(self.open)
        self.open = span

    def _emit(self, span: _Span) -> None:
        x0, y0, x1, y1 = span.box if span.box is not None else (0, 0, 0, 0)
        start, end = span.first_time, span.last_end
        self.events.append(Event(
            event=len(self.events) + 1, start_frame=span.first_number,
            end_frame=span.last_number, start_time=timecode(start), end_time=timecode(end),
            duration=round(end - start, 3), peak_area=round(span.peak, 6),
            x=x0, y=y0, w=x1 - x0, h=y1 - y0, start_seconds=start, end_seconds=end,
            first=span.first, last=span.seen,
        ))  # fmt: skip

    def take(self) -> list[Event]:
        """The events final since the last call (a live stream writes each as it ends:
        ``gap`` + ``pad`` frames after its last active frame)."""
        new = self.events[self.taken :]
        self.taken = len(self.events)
        return new

    def finish(self) -> list[Event]:
        """Close what is open; the events, in order."""
        if self.run is not None:
            self._close()
        if self.open is not None:
            self._emit(self.open)
            self.open = None
        return self.events
