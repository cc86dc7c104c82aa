"""One result folder, assembled in one place for a file, a batch job and a live segment
(:class:`ResultFolder`).

The folder's files are those of :mod:`bpvideo.sinks.table`: the videos, masks and still
(:class:`~bpvideo.sinks.folder.FolderSink`), the events, frame table, overlay, clips and
report (:mod:`bpvideo.sinks.events`), the objects and their tracks
(:mod:`bpvideo.sinks.objects`), the evaluation against ground truth, and
``summary.json`` (:class:`~bpvideo.sinks.summary.ReportBuilder`), written last. Everything
is staged in the output directory's staging folder and committed when the sink closes
(:class:`~bpvideo.sinks.outputs.OutputDir`): a closed folder is complete, an aborted one
leaves nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bpvideo.records import Block, Plan, Report, Stopwatch, WindowReport
from bpvideo.sinks.events import EventsSink, event_sinks
from bpvideo.sinks.folder import FolderSink
from bpvideo.sinks.objects import ObjectsSink
from bpvideo.sinks.outputs import OutputDir, write_json
from bpvideo.sinks.summary import ReportBuilder
from bpvideo.sinks.table import SUMMARY, output_names

if TYPE_CHECKING:  # pragma: no cover
    from bpvideo.settings import SeparateSettings
    from bpvideo.sources.stream import FrameSource

__all__ = ["ResultFolder", "Solved"]

logger = logging.getLogger("bpvideo")

#: What a result reports of a background that was not solved window by window (learned
#: once, or kept current on a live stream), asked when the folder closes: the reports and
#: plan of its solve, and ``summary.json``'s ``"learned"`` entry.
Solved = Callable[[], tuple[list[WindowReport], Plan, dict[str, Any] | None]]


class ResultFolder:
    """The output folder of a run (or of one live segment), complete when closed.

    Parameters
    ----------
    path : Path
        OUTDIR (created; refused when it holds results, unless ``settings.overwrite``).
    source : FrameSource
        The frames (size, rate, how masks are numbered).
    settings : SeparateSettings
        The run's options.
    plan : Plan
        The plan of the job (``summary.json``'s), until ``solved`` says otherwise.
    clock : Stopwatch
        Seconds of the run.
    solved : callable, optional
        The reports of a background learned elsewhere, asked at close (None: the windows'
        reports, as the blocks carry them).
    evaluate : callable, optional
        ``evaluate(outdir)``: scores the staged masks (staging ``evaluation.csv``) and
        returns ``summary.json``'s ``"evaluation"``; called after the files are finished.
    """

    def __init__(
        self,
        path: str | Path,
        source: FrameSource,
        settings: SeparateSettings,
        plan: Plan,
        clock: Stopwatch,
        solved: Solved | None = None,
        evaluate: Callable[[OutputDir], dict[str, Any] | None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.source = source
        self.settings = settings
        self.plan = plan
        self.clock = clock
        self.solved = solved
        self.evaluate = evaluate
        # --resume replaces the incomplete result of the stopped run (checked by the job)
        self.outdir = OutputDir(self.path, overwrite=settings.overwrite or settings.resume)
        self.report: Report | None = None  #: what summary.json holds, once closed
        self.sinks: list[Any] = []
        self.builder: ReportBuilder | None = None
        #: summary.json's ``incomplete`` (the frames a stopped run kept), or None
        self.incomplete: dict[str, Any] | None = None

    def check(self) -> None:
        """Refuse an unusable OUTDIR before any work (see :meth:`OutputDir.check`)."""
        self.outdir.check()

    def open(self) -> None:
        """Create the staging folder and start the encoders."""
        self.outdir.__enter__()
        try:
            self.builder = ReportBuilder(self.source, self.settings, self.plan)
            folder = FolderSink(self.outdir, self.source, self.settings, self.clock)
            # after the folder: the report shows its background.png
            self.sinks = [folder, *event_sinks(self.outdir, self.source, self.settings)]
            for sink in self.sinks:
                sink.open()
        except BaseException as exc:
            self._abort(exc)
            raise

    def early(self, background: np.ndarray) -> None:
        """Encode the background frames (k, H, W[, 3]) uint8 of the next frames before their
        blocks come (:attr:`bpvideo.pipeline.Job.early`; see :meth:`FolderSink.early`)."""
        folder = next((s for s in self.sinks if isinstance(s, FolderSink)), None)
        if folder is not None:
            folder.early(background)

    def objects(self) -> ObjectsSink | None:
        """The folder's objects, once open, when it tracks them (else None)."""
        return next((s for s in self.sinks if isinstance(s, ObjectsSink)), None)

    def write(self, block: Block) -> None:
        """Hand a block to every file of the folder (a failure to write is the output's:
        :meth:`OutputDir.__exit__` names it, nothing is kept)."""
        assert self.builder is not None
        try:
            for sink in self.sinks:
                sink.write(block)
            self.builder.write(block)
        except BaseException as exc:
            self._abort(exc)
            raise

    def close(self) -> None:
        """Finish the files, stage ``summary.json`` (last) and commit the folder."""
        assert self.builder is not None
        try:
            for sink in self.sinks:
                sink.close()
            learned = None
            if self.solved is not None:
                reports, plan, learned = self.solved()
                self.builder.solved_by(reports, plan)
            report = self.builder.build(
                output=str(self.path),
                outputs=output_names(self.settings),
                learned=learned,
                evaluation=None if self.evaluate is None else self.evaluate(self.outdir),
            )
            report.seconds = self.clock.total()
            report.incomplete = self.incomplete
            for sink in self.sinks:
                if isinstance(sink, EventsSink):
                    report.events = sink.rows()
                if isinstance(sink, ObjectsSink):
                    facts = sink.summary()
                    report.objects, report.counts = facts["objects"], facts.get("counts")
            write_json(self.outdir.stage(SUMMARY), report.to_dict())
            self.outdir.commit(complete=self.incomplete is None)
        except BaseException as exc:
            self._abort(exc)
            raise
        self.outdir.__exit__(None, None, None)
        self.report = report

    def abort(self) -> None:
        """Stop the encoders; remove the staging folder."""
        self._abort(None)

    def _abort(self, exc: BaseException | None) -> None:
        """Stop every file's sink, then remove the staging folder; an OS error ``exc`` (a
        full disk) is raised as the output folder's one-line error. A sink that fails to
        stop (a full disk again, as it flushes) does not hide the run's own error."""
        for sink in self.sinks:
            try:
                sink.abort()
            except Exception as failed:
                logger.debug("aborting %s failed too: %s", type(sink).__name__, failed)
        if self.outdir.staging is not None:
            self.outdir.__exit__(type(exc) if exc is not None else None, exc, None)
