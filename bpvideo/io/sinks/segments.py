"""Outputs of a live stream: one complete result folder (:class:`ResultSink`), results that
roll over every span of stream (:class:`SegmentSink`), and raw masks as they are made
(:class:`MaskStreamSink`).

A result folder is the output folder of ``separate`` (videos, masks, ``background.png``,
``summary.json``), staged and committed when it closes (:class:`~bpvideo.io.outputs.OutputDir`):
a segment that is closed, by its span or by the end of the run (the stream ended, or a
signal asked to stop), is complete; one cut by a failure leaves nothing. Segments are
named after the wall-clock time of their first frame (``OUTDIR/2026-11-25T09-30-00/``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bpvideo.io.outputs import SUMMARY, OutputDir, write_json
from bpvideo.io.sinks.folder import FolderSink, output_names
from bpvideo.io.sinks.raw import RawMaskSink
from bpvideo.io.summary import ReportBuilder
from bpvideo.records import Block, Plan, Report, Stopwatch, WindowReport

if TYPE_CHECKING:  # pragma: no cover
    from bpvideo.io.sources import FrameSource
    from bpvideo.settings import SeparateSettings

__all__ = ["MaskStreamSink", "ResultSink", "SegmentSink", "segment_name", "split_block"]

#: What a result reports of the background that made its masks: the reports and plan of
#: the last solve, and ``summary.json``'s ``"learned"`` entry.
Solved = Callable[[], tuple[list[WindowReport], Plan, dict[str, Any]]]


class ResultSink:
    """One output folder of a live run, complete when closed (see the module docstring).

    Parameters
    ----------
    path : Path
        The folder (created; refused when it holds results, unless ``overwrite``).
    source : FrameSource
        The stream (rate, name, how masks are numbered).
    settings : SeparateSettings
        The run's options (``masks_to`` is written by a :class:`MaskStreamSink` instead).
    clock : Stopwatch
        Seconds of the run.
    solved : callable
        The reports of the background in use, asked when the folder closes.
    """

    def __init__(
        self,
        path: Path,
        source: FrameSource,
        settings: SeparateSettings,
        clock: Stopwatch,
        solved: Solved,
    ) -> None:
        self.path = Path(path)
        self.source = source
        self.settings = dataclasses.replace(settings, masks_to=None)
        self.clock = clock
        self.solved = solved
        self.outdir = OutputDir(self.path, overwrite=settings.overwrite)
        self.report: Report | None = None  #: what summary.json holds, once closed
        self.folder: FolderSink | None = None
        self.builder: ReportBuilder | None = None

    def open(self) -> None:
        """Create the staging folder and start the encoders."""
        self.outdir.__enter__()
        _, plan, _ = self.solved()
        self.folder = FolderSink(self.outdir, self.source, self.settings, self.clock)
        self.builder = ReportBuilder(self.source, self.settings, plan)
        try:
            self.folder.open()
        except BaseException as exc:
            self._failed(exc)
            raise

    def write(self, block: Block) -> None:
        assert self.folder is not None and self.builder is not None
        try:
            self.folder.write(block)
            self.builder.write(block)
        except BaseException as exc:
            self._failed(exc)
            raise

    def _failed(self, exc: BaseException) -> None:
        """Stop the encoders and remove the staging folder after ``exc``; an OS error (a
        full disk) is raised as the output folder's one-line error, as in a file run."""
        if self.folder is not None:
            self.folder.abort()
        self.outdir.__exit__(type(exc), exc, None)

    def close(self) -> None:
        """Finish the files, stage ``summary.json`` and commit the folder."""
        assert self.folder is not None and self.builder is not None
        try:
            self.folder.close()
            reports, plan, info = self.solved()
            self.builder.solved_by(reports, plan)
            outputs = output_names(self.settings)
            report = self.builder.build(output=str(self.path), outputs=outputs, learned=info)
            report.seconds = self.clock.total()
            write_json(self.outdir.stage(SUMMARY), report.to_dict())
            self.outdir.commit()
        except BaseException as exc:
            self._failed(exc)
            raise
        self.outdir.__exit__(None, None, None)
        self.report = report

    def abort(self) -> None:
        """Stop the encoders; remove the staging folder."""
        if self.folder is not None:
            self.folder.abort()
        if self.outdir.staging is not None:
            self.outdir.__exit__(None, None, None)


def split_block(block: Block, at: int) -> tuple[Block, Block]:
    """``block`` cut before its frame ``at`` (0 < at < len(block))."""
    head = Block(block.numbers[:at], block.frames[:at], block.background[:at],
                 block.masks[:at], block.window, block.offset)  # fmt: skip
    tail = Block(block.numbers[at:], block.frames[at:], block.background[at:],
                 block.masks[at:], block.window, block.offset + at)  # fmt: skip
    return head, tail


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
        ``make(path)``: the :class:`ResultSink` of one segment folder.
    started : float
        Wall-clock time (seconds since the epoch) of the stream's first frame.
    fps : float
        The stream's rate (the start time of each segment is counted in stream time).
    """

    def __init__(
        self,
        root: Path,
        span: int,
        make: Callable[[Path], ResultSink],
        started: float,
        fps: float,
    ) -> None:
        self.root = Path(root)
        self.span = max(1, span)
        self.make = make
        self.started = started
        self.fps = fps
        self.current: ResultSink | None = None
        self.in_current = 0
        self.frames = 0
        #: The folders of the segments closed (their reports are not kept: a run of days
        #: would hold every frame number of every segment).
        self.closed: list[Path] = []

    def open(self) -> None:
        """Create OUTDIR (segments open with their first frame)."""
        self.root.mkdir(parents=True, exist_ok=True)

    def write(self, block: Block) -> None:
        while len(block):
            if self.current is None:
                name = segment_name(self.started + self.frames / self.fps, self.root)
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

    def close(self) -> None:
        """Close the current segment as a complete result."""
        if self.current is not None:
            self._roll()

    def abort(self) -> None:
        if self.current is not None:
            self.current.abort()
            self.current = None


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
