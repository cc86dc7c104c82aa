"""Results that roll over every span of a stream (:class:`SegmentSink`), and raw masks sent
as they are made across segments (:class:`MaskStreamSink`).

Each segment is a result folder like any other
(:class:`~bpvideo.sinks.result.ResultFolder`), named after the wall-clock time of its
first frame (``OUTDIR/2026-11-25T09-30-00/``) and committed complete when it closes, by
its span or by the end of the run (the stream ended, or a signal asked to stop); one cut
by a failure leaves nothing. The run holds OUTDIR's lock from start to end: a second run
into the same OUTDIR is refused at its start, never mid-stream, and segment names are
chosen under the lock. What a killed run left there is removed at the next run's start.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from pathlib import Path

from bpvideo.errors import InputError, literal
from bpvideo.records import Block, Report
from bpvideo.sinks.outputs import release_lock, remove_killed, take_lock
from bpvideo.sinks.raw import RawMaskSink
from bpvideo.sinks.result import ResultFolder

__all__ = ["MaskStreamSink", "SegmentSink", "segment_name", "split_block"]


def split_block(block: Block, at: int) -> tuple[Block, Block]:
    """``block`` cut before its frame ``at`` (0 < at < len(block))."""
    head = Block(block.numbers[:at], block.frames[:at], block.background[:at],
                 block.masks[:at], block.window, block.offset)  # fmt: skip
    tail = Block(block.numbers[at:], block.frames[at:], block.background[at:],
                 block.masks[at:], block.window, block.offset + at)  # fmt: skip
    return head, tail


#: The names :func:`segment_name` gives (what a killed run may have left half-written).
SEGMENT_NAME = re.compile(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d(-\d+)?")


def segment_name(started: float, root: Path) -> str:
    """The folder name of a segment whose first frame came at ``started`` (seconds since
    the epoch, local time): ``2026-11-25T09-30-00``, with ``-2``, ``-3`` ... when taken."""
    name = time.strftime("%Y-%m-%dT%H-%M-%S", time.localtime(started))
    taken, n = name, 1
    while (root / taken).exists():
        n += 1
        taken = f"{name}-{n}"
    return taken


class SegmentSink:
    """Results that roll over every ``span`` frames of stream: ``root/<start time>/``.

    Parameters
    ----------
    root : Path
        OUTDIR: the folder of the segments (created when missing).
    span : int
        Frames of stream per segment (``--segment`` at the stream's rate).
    make : callable
        ``make(path)``: the :class:`~bpvideo.sinks.result.ResultFolder` of one segment.
    arrived : callable
        ``arrived(number)``: when the frame of that number arrived, in seconds since the
        epoch (a segment is named after its first frame's: after a reconnection's gap,
        the time it really began, not the frames counted at the stream's rate).
    """

    def __init__(
        self,
        root: Path,
        span: int,
        make: Callable[[Path], ResultFolder],
        arrived: Callable[[int], float],
    ) -> None:
        self.root = Path(root)
        self.span = max(1, span)
        self.make = make
        self.arrived = arrived
        self.current: ResultFolder | None = None
        self.in_current = 0
        self.frames = 0
        self._lock: int | None = None
        #: The folders of the segments closed (their reports are not kept: a run of days
        #: would hold every frame number of every segment).
        self.closed: list[Path] = []
        #: The report of the last segment closed.
        self.last_report: Report | None = None

    @staticmethod
    def check_root(root: Path) -> None:
        """Refuse an OUTDIR that is a file, or that another run is writing, before any
        work (the lock is taken again, for the whole run, by :meth:`open`)."""
        if root.exists() and not root.is_dir():
            raise InputError(
                f"{literal(root)}: output path is a file, not a directory: choose another "
                "{output}",
                option=("output", str(root)),
            )
        if root.is_dir():
            release_lock(root, take_lock(root))

    def open(self) -> None:
        """Create OUTDIR, lock it for the run, remove what a killed run left (segments
        open with their first frame)."""
        self.check_root(self.root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = take_lock(self.root)
        for folder in sorted(self.root.iterdir()):
            if folder.is_dir() and SEGMENT_NAME.fullmatch(folder.name):
                remove_killed(folder)

    def write(self, block: Block) -> None:
        while len(block):
            if self.current is None:
                name = segment_name(self.arrived(block.numbers[0]), self.root)
                self.current = self.make(self.root / name)
                self.current.open()
                self.in_current = 0
            room = self.span - self.in_current
            if len(block) > room:
                head, block = split_block(block, room)
            else:
                head, block = block, _empty(block)
            self.current.write(head)
            self.in_current += len(head)
            self.frames += len(head)
            if self.in_current >= self.span:
                self._roll()

    def _roll(self) -> None:
        assert self.current is not None
        current, self.current = self.current, None
        current.close()
        self.closed.append(current.path)
        self.last_report = current.report

    def close(self) -> None:
        """Close the current segment as a complete result; release OUTDIR."""
        try:
            if self.current is not None:
                self._roll()
        finally:
            self._unlock()

    def abort(self) -> None:
        try:
            if self.current is not None:
                self.current.abort()
                self.current = None
        finally:
            self._unlock()

    def _unlock(self) -> None:
        if self._lock is not None:
            with contextlib.suppress(OSError):
                release_lock(self.root, self._lock)
            self._lock = None


def _empty(block: Block) -> Block:
    """A block of no frame (what is left of one written whole)."""
    return Block([], block.frames[:0], block.background[:0], block.masks[:0], block.window,
                 block.offset + len(block))  # fmt: skip


class MaskStreamSink:
    """``--masks-to`` of a live run: every mask as raw 0/255 bytes, flushed with its block
    (to stdout, a FIFO or a file), across segments."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.raw: RawMaskSink | None = None

    def open(self) -> None:
        self.raw = RawMaskSink(self.target)

    def write(self, block: Block) -> None:
        assert self.raw is not None
        self.raw.write(block.masks)

    def close(self) -> None:
        if self.raw is not None:
            self.raw.close()

    def abort(self) -> None:
        self.close()
