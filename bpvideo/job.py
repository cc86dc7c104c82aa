"""One job of ``bpvideo separate``: any source, its blocks, the result sinks
(:func:`separate_file`, :func:`separate_live`).

Files, folders, pipes, URLs and capture devices are sources of one job. What differs is
only how the background is learned and kept current: solved window by window (a file),
learned once and applied (``learn``), or learned on a live stream's first seconds and
kept current as frames arrive (the live update policy,
:class:`~bpvideo.background.online.OnlineBackground`). The same sinks take every job's
blocks: one result folder (:class:`~bpvideo.sinks.result.ResultFolder`), or result
folders rolled over every ``segment`` of stream
(:class:`~bpvideo.sinks.segments.SegmentSink`); raw masks (``masks_to``) and events as
JSON lines (``events_to``) beside them. Regions are applied where the masks are made,
every path written passes the one guard (:mod:`bpvideo.sinks.guard`), whatever the
source.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from threadpoolctl import threadpool_limits

from bpvideo.background import tuning
from bpvideo.background.empty_scene import given_scene, reopen_file
from bpvideo.errors import (
    BpvideoError,
    InputError,
    Terminated,
    callable_argument,
    literal,
    path_argument,
)
from bpvideo.evaluate.groundtruth import check_groundtruth
from bpvideo.evaluate.scoring import evaluate
from bpvideo.events.online import OnlineEvents
from bpvideo.failures import retold
from bpvideo.pipeline.learned import LearnedBackground, iter_learned_blocks, learn
from bpvideo.pipeline.online import iter_live_blocks, learn_span, limited
from bpvideo.pipeline.plan import Job, plan_run
from bpvideo.pipeline.run import iter_blocks
from bpvideo.progress import ProgressCallback, track
from bpvideo.records import Block, Report, Stopwatch
from bpvideo.resume import (
    check_resume,
    keep_incomplete,
    missing_folders,
    remove_created,
    with_checkpoint,
)
from bpvideo.settings import SeparateSettings, parse_size, parse_span, parse_time, settings_of
from bpvideo.sinks import Sink, drain
from bpvideo.sinks.checkpoint import Checkpoint
from bpvideo.sinks.event_lines import LiveEventSink
from bpvideo.sinks.event_stream import event_options
from bpvideo.sinks.events import block_times
from bpvideo.sinks.guard import check_access, separate_access
from bpvideo.sinks.outputs import OutputDir
from bpvideo.sinks.paths import default_output
from bpvideo.sinks.raw import RawMaskSink
from bpvideo.sinks.result import ResultFolder, Solved
from bpvideo.sinks.segments import MaskStreamSink, SegmentSink
from bpvideo.solvers._common import Callback
from bpvideo.sources.clock import input_clock
from bpvideo.sources.files import FrameSource, check_input_name, open_source
from bpvideo.sources.live import (
    LiveReader,
    check_input_options,
    is_live,
    open_live,
    signalled,
    signals_stop,
)
from bpvideo.sources.regions import region_mask

__all__ = ["Outcome", "output_path", "separate_file", "separate_live"]

logger = logging.getLogger("bpvideo")


@dataclass
class Outcome:
    """What a job wrote: its result folders (one, or a live run's segments), complete,
    and the report of the last one (None when none was written)."""

    folders: list[Path]
    report: Report | None


def separate_file(
    input: str | os.PathLike,
    output: str | os.PathLike | None = None,
    /,
    *,
    callback: Callback | None = None,
    progress: ProgressCallback | None = None,
    stdin: BinaryIO | None = None,
    stop: threading.Event | None = None,
    **options: Any,
) -> Report:
    """Separate a video file, a folder of frames, stdin (``"-"``) or a live stream; write
    the outputs.

    What ``bpvideo separate`` does: OUTDIR gets ``background.mp4``, ``foreground.mp4``,
    ``masks/binNNNNNN.png`` (named after the source frames), ``background.png``, the
    events (``events.csv``, ``frames.csv``, ``report.html``) and ``summary.json`` (written
    last; all appear together or not at all): the files of :mod:`bpvideo.sinks.table`.

    Parameters
    ----------
    input : str or path-like
        Video file, image folder, ``"-"`` for stdin, or a live source: a URL (rtsp,
        http(s), udp ...), or with ``live=True`` stdin or a capture device.
    output : str or path-like, optional
        Output directory (default: ``<input name>-bpvideo``; ``live-bpvideo`` for a URL).
        With ``segment`` (live) it holds one result folder per segment.
    callback : callable, optional
        Called with each solver :class:`~bpvideo.solvers.Iterate`.
    progress : callable, optional
        Called with a :class:`~bpvideo.progress.Progress` as frames are read, solved and
        written (``bpvideo separate`` draws it as a bar).
    stdin : binary file, optional
        Stream read for ``"-"`` instead of ``sys.stdin.buffer``.
    stop : threading.Event, optional
        Set it to end a live stream (as SIGINT does): the outputs of the frames read are
        finished.
    **options
        Options of ``bpvideo separate`` (see :mod:`bpvideo.settings`); ``learn`` /
        ``learn_from`` learn the background on some frames and apply it to all.

    Returns
    -------
    Report
        What ``summary.json`` holds (of the last segment, with ``segment``).

    Raises
    ------
    InputError
        Bad options or input, or a job that cannot fit in memory, before any output is
        written (a bad last window is found when it is reached).
    WorkError
        Failed work; nothing partial is left in the output directory.
    """
    outcome = run_job(input, output, options, callback=callback, progress=progress,
                      stdin=stdin, stop=stop)  # fmt: skip
    if outcome.report is None:
        raise InputError(f"{input}: the stream ended before a result was written")
    return outcome.report


def separate_live(
    input: str,
    output: str | os.PathLike | None = None,
    /,
    *,
    stdin: BinaryIO | None = None,
    stop: threading.Event | None = None,
    **options: Any,
) -> list[Path]:
    """Separate a live stream as it comes (:func:`separate_file` with ``live=True``); the
    result folders written, each complete (OUTDIR, or its segments with ``segment``).

    SIGINT and SIGTERM (or ``stop``) end the stream: what was read is finished and the
    current result committed complete.
    """
    options = dict(options, live=True)
    return run_job(input, output, options, stdin=stdin, stop=stop).folders


def output_path(input: str, output: str | os.PathLike | None, settings: SeparateSettings) -> str:
    """The output directory of ``input``: ``output``, or ``<input name>-bpvideo``
    (``stdin-bpvideo``, ``live-bpvideo`` for a URL or device)."""
    out_path = os.fspath(output) if output is not None else None
    if out_path is not None and not out_path.strip():
        raise InputError("{output=} is an empty name: give a folder", option=("output", out_path))
    if out_path:
        return out_path
    if input == "-":
        return "stdin-bpvideo"
    return "live-bpvideo" if is_live(input, settings) else default_output(input)


def check_job(input: str, out_path: str, settings: SeparateSettings) -> None:
    """Refuse a job before anything is opened: options that do not apply to its source,
    paths written that are read (the guard), an unusable OUTDIR."""
    check_input_options(input, settings)
    if not is_live(input, settings):
        check_input_name(input)
    RawMaskSink.check(settings.masks_to)
    check_access(*separate_access(input, out_path, settings))
    check_resume(input, out_path, settings, is_live(input, settings))
    if settings.segment is not None:
        SegmentSink.check_root(Path(out_path))
    else:
        OutputDir(out_path, overwrite=settings.overwrite or settings.resume).check()


def run_job(
    input: str | os.PathLike,
    output: str | os.PathLike | None,
    options: dict[str, Any],
    *,
    callback: Callback | None = None,
    progress: ProgressCallback | None = None,
    stdin: BinaryIO | None = None,
    stop: threading.Event | None = None,
) -> Outcome:
    """Run one job (see the module docstring); what it wrote."""
    clock = Stopwatch()
    input = path_argument("input", input)
    output = None if output is None else path_argument("output", output)
    callable_argument("callback", callback)
    callable_argument("progress", progress)
    settings = settings_of(options, arrays=False)
    live = is_live(input, settings)
    out_path = output_path(input, output, settings)
    check_job(input, out_path, settings)
    stop = stop or threading.Event()
    # One BLAS thread throughout: the products outside the solver are thin (r + 2
    # columns), and idle OpenBLAS threads spin for a while after each call, taking a
    # core from the ffmpeg encoders (measured: 1.1 s of CPU on a 300-frame clip).
    with signals_stop(stop, live) as received, threadpool_limits(limits=1, user_api="blas"):
        reader = None
        try:
            source, reader = _open(input, settings, stdin, stop, live)
            try:
                if settings.groundtruth is not None:  # checked before the work, used after it
                    check_groundtruth(settings.groundtruth, source.width, source.height)
                plan = plan_run(source, settings)
                once = settings.learn is not None or settings.learn_from is not None
                tracker = None if live else track(progress, source, None if once else plan)
                if tracker is not None:
                    callback = tracker.solver_callback(callback)
                job = Job(source, settings, plan, clock, callback, tracker)
                learned = None if live else _learned(input, settings, callback, clock)
                blocks, solved = _blocks(job, input, reader, learned)
                results = _results(out_path, job, solved, live)
                if isinstance(results, ResultFolder) and not settings.no_video:
                    job.early = results.early  # its background video starts with the window
                reopen = lambda: _open(input, settings, None, stop, False)[0]  # noqa: E731
                checkpoint, blocks = with_checkpoint(job, input, out_path, live, blocks, reopen)
                _drain(job, out_path, blocks, [results, *_beside(job, live, results)], checkpoint,
                       reopen)  # fmt: skip
            finally:
                source.close()
        except BpvideoError:
            stopped = signalled(received, reader)
            if stopped is not None:  # the signal is why: the stop of a run, as a file's
                raise stopped from None
            raise
    outcome = _outcome(results)
    if received:
        logger.warning("stopped by signal %d: the outputs of the frames read are complete",
                       received[0])  # fmt: skip
    if live:
        logger.info("wrote %d result folder(s) in %s", len(outcome.folders), out_path)
    else:
        logger.info("wrote %s (%.2fs in all)%s", out_path, clock.total()["total"],
                    _found(outcome.report, out_path))  # fmt: skip
    return outcome


def _drain(
    job: Job, out_path: str, blocks: Iterable[Block], sinks: list[Sink],
    checkpoint: Checkpoint | None, reopen: Callable[[], FrameSource],
) -> None:  # fmt: skip
    """Hand the blocks to the sinks (and the checkpoint). Stopped by a signal, keep the
    finished windows as an incomplete result; failed, remove the checkpoint too."""
    created = missing_folders(Path(out_path))
    results = sinks[0]
    try:
        drain(blocks, sinks if checkpoint is None else [*sinks, checkpoint], job.progress)
    except (KeyboardInterrupt, Terminated):
        if checkpoint is not None:
            if getattr(results, "report", None) is not None:  # complete already
                checkpoint.remove()
            elif not keep_incomplete(job, out_path, checkpoint, reopen):
                remove_created(created)
        raise
    except BpvideoError as exc:
        if checkpoint is not None and not job.settings.resume:  # a resumed one stays
            checkpoint.remove()
            remove_created(created)
        kept = results.closed if isinstance(results, SegmentSink) else []
        if not kept:
            raise
        raise _saying_kept(exc, kept, Path(out_path)) from exc


def _open(
    input: str, settings: SeparateSettings, stdin: BinaryIO | None, stop: threading.Event,
    live: bool,
) -> tuple[FrameSource, LiveReader | None]:  # fmt: skip
    """The job's source (and a live source's reading thread)."""
    raw = {"size": parse_size(settings.size) if settings.size else None,
           "pix_fmt": settings.pix_fmt, "fps": settings.fps}  # fmt: skip
    if live:  # stdin is read as a pipe is, with the same options
        return open_live(input, scale=settings.scale, reconnect=settings.reconnect, stop=stop,
                         stdin=stdin, raw=raw)  # fmt: skip
    source = open_source(
        input,
        **settings.selection(),
        scale=settings.scale,
        **raw,
        stdin=stdin,
        allow_partial=settings.allow_partial,
        allow_references=settings.allow_references,
        strict=settings.strict,
    )
    source.clock = input_clock(input, settings.start_time, source, settings.allow_references)
    return source, None


def _blocks(
    job: Job, input: str, reader: LiveReader | None, learned: LearnedBackground | None
) -> tuple[Iterable[Block], Solved | None]:
    """The job's blocks, by how its background is learned and kept current; what the
    results report of a background not solved window by window."""
    source, settings = job.source, job.settings
    if reader is not None:
        return _live_blocks(job, reader)
    if learned is None:
        job.empty_scene = given_scene(settings, source, reopen_file(input, settings))
        return iter_blocks(job), None
    job.plan = learned.plan  # the report tells how the background was learned
    info = _learned_info(settings, learned)
    blocks = iter_learned_blocks(learned, source, settings, clock=job.clock)
    return blocks, lambda: (learned.reports, learned.plan, info)


def _live_blocks(job: Job, reader: LiveReader) -> tuple[Iterator[Block], Solved]:
    """A live stream's blocks: learned on its first seconds, then kept current."""
    source, settings, fps = job.source, job.settings, job.source.fps
    start, end = learn_span(settings, fps)
    state: dict[str, Any] = {}
    count = None
    if settings.frames is not None or settings.duration is not None:
        count = settings.frames or parse_time(settings.duration, "duration").to_frames(fps)
    batches = limited(reader.batches(tuning.MOST_FRAMES, settings.scale), count)
    region = region_mask(settings.roi, settings.exclude, (source.height, source.width),
                         settings.scale)  # fmt: skip
    blocks = iter_live_blocks(batches, settings, fps=fps, name=source.name, learn=(start, end),
                              clock=job.clock, state=state, region=region)  # fmt: skip

    def solved() -> tuple[list, Any, dict[str, Any]]:
        online = state.get("online")
        learned = online.learned if online is not None else None
        info = {"live": True, "frames": f"{start}:{end}", "updates": 0, "threshold": None}
        if learned is None:
            return [], job.plan, info
        info.update(updates=online.updates, threshold=learned.threshold)
        return learned.reports, learned.plan, info

    return blocks, solved


def _results(
    out_path: str, job: Job, solved: Solved | None, live: bool
) -> ResultFolder | SegmentSink:
    """The result folder of the job, or its segments (``segment``)."""
    source, settings, plan, clock = job.source, job.settings, job.plan, job.clock
    if live:  # the raw masks flow across segments: MaskStreamSink
        settings = dataclasses.replace(settings, masks_to=None)
    scored = None
    if settings.groundtruth is not None:
        scored = lambda outdir: _evaluate_staged(outdir, source, settings)  # noqa: E731

    def make(path: Path) -> ResultFolder:
        return ResultFolder(path, source, settings, plan, clock, solved, scored)

    if settings.segment is None:
        return make(Path(out_path))
    span = parse_time(settings.segment, "segment").to_frames(source.fps)
    return SegmentSink(Path(out_path), span, make, source.clock.arrived)  # ArrivalClock


def _beside(job: Job, live: bool, results: ResultFolder | SegmentSink) -> list[Sink]:
    """The sinks beside the results: a live run's raw masks as made, its events as JSON
    lines (their objects those of the one result folder, tracked once; segments restart
    their objects, so the lines of a segmented run track the stream's own)."""
    source, settings = job.source, job.settings
    sinks: list[Sink] = []
    if live and settings.masks_to is not None:
        sinks.append(MaskStreamSink(settings.masks_to))
    if settings.events_to is not None:
        detector = OnlineEvents(source.fps, **event_options(settings))
        region = region_mask(settings.roi, settings.exclude, (source.height, source.width),
                             settings.scale)  # fmt: skip

        def times(frames: list[int], numbers: list[int]) -> Any:
            return block_times(source, frames, numbers, source.fps)

        if isinstance(results, ResultFolder):  # drained first: it tracks each block first
            objects, shared = None, results.objects
        else:
            objects, shared = LiveEventSink.objects_of(source, settings), None
        sinks.append(LiveEventSink(settings.events_to, detector, source.mask_number, times,
                                   region, source.clock, objects, shared))  # fmt: skip
    return sinks


def _saying_kept(error: BpvideoError, kept: list[Path], root: Path) -> BpvideoError:
    """``error`` of a run that had closed segments: its message says which were kept (a
    part that said "nothing was kept" spoke for the segment being written only)."""
    said = (f"kept: the {len(kept)} segment(s) closed before it, complete, in {root} "
            f"({kept[0].name} to {kept[-1].name}); the one being written was removed")  # fmt: skip
    if "nothing was kept" in error.template:
        return retold(error, error.template.replace("nothing was kept", literal(said)))
    return retold(error, f"{error.template}; {literal(said)}")


def _found(report: Report | None, out_path: Path) -> str:
    """What the last log line says a result holds: events, objects, the report's path."""
    if report is None or report.events is None:
        return ""
    events, objects = len(report.events), report.objects
    found = f": {events} event{'s' * (events != 1)}"
    if objects is not None:
        found += f", {objects} object{'s' * (objects != 1)}"
    return f"{found}; {Path(out_path) / 'report.html'}"


def _outcome(results: ResultFolder | SegmentSink) -> Outcome:
    if isinstance(results, SegmentSink):
        return Outcome(results.closed, results.last_report)
    return Outcome([results.path] if results.report is not None else [], results.report)


def _learned(
    input: str, settings: SeparateSettings, callback: Callback | None, clock: Stopwatch
) -> LearnedBackground | None:
    """The background learned on ``learn`` / ``learn_from`` frames (None without)."""
    if settings.learn is None and settings.learn_from is None:
        return None
    path = settings.learn_from or input
    if path == "-":
        raise InputError(
            "{learn} needs frames that can be read again: give {learn_from} a file of the "
            "same camera when INPUT is stdin",
            option=("learn", settings.learn),
        )
    start, end = parse_span(settings.learn) if settings.learn is not None else (0, None)
    count = None if end is None else -(-(end - start) // settings.step)
    source = open_source(path, start=start, frames=count, step=settings.step,
                         scale=settings.scale, allow_partial=settings.allow_partial,
                         allow_references=settings.allow_references,
                         strict=settings.strict)  # fmt: skip
    try:
        t = time.perf_counter()
        learned = learn(source, settings, callback=callback)
        clock.add("solve", time.perf_counter() - t)
    finally:
        source.close()
    frames = sum(r.new_frames for r in learned.reports)
    logger.info("learned the background on %d frame(s) of %s", frames, path)
    return learned


def _learned_info(
    settings: SeparateSettings, learned: LearnedBackground | None
) -> dict[str, Any] | None:
    if learned is None:
        return None
    return {
        "from": settings.learn_from,
        "frames": settings.learn,
        "frame_count": sum(r.new_frames for r in learned.reports),
        "threshold": learned.threshold,
    }


def _evaluate_staged(
    outdir: OutputDir, source: FrameSource, settings: SeparateSettings
) -> dict[str, Any] | None:
    """Score the staged masks against ``settings.groundtruth``; stage evaluation.csv."""
    t = time.perf_counter()
    result = evaluate(outdir.stage("masks"), settings.groundtruth,
                      video=source.numbering == "index")  # fmt: skip
    result.to_csv(outdir.stage("evaluation.csv"))
    s = result.summary
    logger.info(
        "evaluation: F-measure %.4f, recall %.4f, precision %.4f over %d frames (%.2fs)",
        s["f_measure"],
        s["recall"],
        s["precision"],
        s["frames_scored"],
        time.perf_counter() - t,
    )
    info = dict(result.info, masks=str(outdir.path / "masks"))  # not the staging folder
    return {"summary": s, "info": info}
