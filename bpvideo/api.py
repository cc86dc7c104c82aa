"""The library: separate arrays (:func:`separate`), files (:func:`separate_file`); the one
loop that drains finished blocks into sinks (:func:`drain`). A background learned once
and applied to new frames is :class:`bpvideo.model.BackgroundModel`.

Every function takes the options of ``bpvideo separate`` as keyword arguments, with the
same names and defaults (:class:`~bpvideo.settings.SeparateSettings`: ``rank=2``,
``sparsity=0.1``, ``max_iter=100``, ``solve_scale="auto"`` ...); a bad value raises
:class:`~bpvideo.errors.InputError` (a :class:`ValueError`) that names it
(``rank=0 must be >= 1``).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

from threadpoolctl import threadpool_limits

from bpvideo.errors import InputError
from bpvideo.evaluate.groundtruth import check_groundtruth
from bpvideo.evaluate.scoring import evaluate
from bpvideo.io.arrays import open_frames
from bpvideo.io.event_sinks import TableSink, event_output_names, event_sinks
from bpvideo.io.guard import check_access, separate_access
from bpvideo.io.outputs import SUMMARY, OutputDir, write_json
from bpvideo.io.paths import default_output
from bpvideo.io.sinks import Sink
from bpvideo.io.sinks.arrays import ArraysSink, Separation, Window, gather_windows
from bpvideo.io.sinks.folder import FolderSink, output_names
from bpvideo.io.sinks.raw import RawMaskSink
from bpvideo.io.sources import FrameSource, check_input_name, open_source
from bpvideo.io.summary import ReportBuilder
from bpvideo.pipeline.empty_scene import given_scene, reopen_array, reopen_file
from bpvideo.pipeline.learned import LearnedBackground, iter_learned_blocks, learn
from bpvideo.pipeline.plan import Job, plan_run
from bpvideo.pipeline.run import iter_blocks
from bpvideo.progress import ProgressCallback, Tracker, track
from bpvideo.records import Block, Report, Stopwatch
from bpvideo.settings import SeparateSettings, default, option_specs, parse_size, parse_span
from bpvideo.solvers._common import Callback

__all__ = [
    "Separation",
    "Window",
    "drain",
    "iter_separate",
    "separate",
    "separate_file",
]

logger = logging.getLogger("bpvideo")

#: Options that only mean something for files (``separate_file``), not for arrays: those
#: the option table marks ``arrays=False``.
FILE_OPTIONS = tuple(name for name, _, spec in option_specs() if not spec.arrays)


def settings_of(options: dict[str, Any], *, arrays: bool) -> SeparateSettings:
    """Validated settings from keyword options; file-only options refused for arrays."""
    settings = SeparateSettings.from_mapping(options)
    if arrays:
        for name in FILE_OPTIONS:
            if getattr(settings, name) != default(name):
                raise InputError(
                    f"{{{name}}} applies to files: use bpvideo.separate_file (or "
                    "BackgroundModel for a learned background)",
                    option=(name, getattr(settings, name)),
                )
    return settings


def open_arrays(frames: Any, settings: SeparateSettings) -> FrameSource:
    """Frames in memory (an array, or any iterable of frames) as a source, selected as
    ``settings`` say."""
    selection = settings.selection()
    selection["count"] = selection.pop("frames")
    return open_frames(frames, **selection, scale=settings.scale, fps=settings.fps)


def iter_separate(
    frames: Any, /, *, callback: Callback | None = None, **options: Any
) -> Iterator[Window]:
    """Separate frames window by window, with memory bounded by the window.

    Parameters
    ----------
    frames : (T, H, W[, 3]) array_like, or iterable of (H, W[, 3]) array_like
        Grey or BGR frames (as OpenCV gives them), uint8 or grey levels 0..255; a
        generator is read as the windows need it.
    callback : callable, optional
        Called with each solver :class:`~bpvideo.solvers.Iterate`.
    **options
        Options of ``bpvideo separate`` (see :mod:`bpvideo.settings`).

    Yields
    ------
    Window
        Finished windows: ``index``, ``numbers`` (frame indices), ``frames``, ``masks``,
        ``background_frames``, ``foreground``, ``report``.

    Examples
    --------
    >>> import numpy as np
    >>> import bpvideo
    >>> frames = (np.random.default_rng(0).normal(100, 2, (30, 24, 32))).clip(0, 255)
    >>> windows = bpvideo.iter_separate(frames.astype(np.uint8), window=20, overlap=5)
    >>> sum(len(w.masks) for w in windows)
    30
    """
    settings = settings_of(options, arrays=True)
    source = open_arrays(frames, settings)
    scene = given_scene(settings, source, reopen_array(frames, settings))
    job = Job.of(source, settings, callback=callback, empty_scene=scene)
    with threadpool_limits(limits=1, user_api="blas"):
        yield from gather_windows(iter_blocks(job))


def separate(
    frames: Any,
    /,
    *,
    callback: Callback | None = None,
    progress: ProgressCallback | None = None,
    **options: Any,
) -> Separation:
    """Separate the background and foreground of frames in memory.

    Parameters
    ----------
    frames : (T, H, W[, 3]) array_like, or iterable of (H, W[, 3]) array_like
        Grey or BGR frames (as OpenCV gives them), uint8 or grey levels 0..255. An
        iterable (a generator of decoded frames, say) is read window by window.
    callback : callable, optional
        Called with each solver :class:`~bpvideo.solvers.Iterate`.
    progress : callable, optional
        Called with a :class:`~bpvideo.progress.Progress` as frames are read, solved and
        finished.
    **options
        Options of ``bpvideo separate``, same names and defaults
        (:class:`~bpvideo.settings.SeparateSettings`); ``frames=N`` is the option (how
        many frames to take), the frames themselves are the first argument.

    Returns
    -------
    Separation
        ``background``, ``foreground``, ``masks``, ``background_image``, ``report``.

    Raises
    ------
    InputError
        Bad options or frames (also a :class:`ValueError`).
    """
    settings = settings_of(options, arrays=True)
    source = open_arrays(frames, settings)
    scene = given_scene(settings, source, reopen_array(frames, settings))
    plan = plan_run(source, settings)
    tracker = track(progress, source, plan)
    job = Job(source, settings, plan, callback=tracker.solver_callback(callback),
              progress=tracker, empty_scene=scene)  # fmt: skip
    arrays = ArraysSink(source.channels)
    table = TableSink(source, settings)
    builder = ReportBuilder(source, settings, plan)
    with threadpool_limits(limits=1, user_api="blas"):
        drain(iter_blocks(job), [arrays, table, builder], tracker)
    report = builder.build(seconds=job.clock.total())
    report.events = [e.row() for e in table.events]
    return arrays.separation(report, events=table.events, frames=table.table)


def drain(blocks: Iterable[Block], sinks: list[Sink], tracker: Tracker | None = None) -> None:
    """Hand every block to every sink, in order: open them all, write each block to each,
    close them all; abort them all on any failure or interruption (then re-raise). Sinks
    are opened before the first block is asked for: encoders start while the first window
    is read and solved.

    ``tracker`` (optional) is told of the frames finished and the windows done.
    """
    try:
        for sink in sinks:
            sink.open()
        for block in blocks:
            if tracker is not None and block.offset == 0:
                tracker.enter("write")
            for sink in sinks:
                sink.write(block)
            if tracker is not None:
                tracker.finished(len(block))
                if block.last:
                    tracker.window_done()
            del block  # not held while the next block is formed
        if tracker is not None:
            tracker.enter("finish")
        for sink in sinks:
            sink.close()
    except BaseException:
        for sink in sinks:
            try:
                sink.abort()
            except Exception as exc:  # the run's own error is the one to tell, not this
                logger.debug("aborting %s failed too: %s", type(sink).__name__, exc)
        raise


def separate_file(
    input: str | os.PathLike,
    output: str | os.PathLike | None = None,
    /,
    *,
    callback: Callback | None = None,
    progress: ProgressCallback | None = None,
    stdin: BinaryIO | None = None,
    **options: Any,
) -> Report:
    """Separate a video file, a folder of frames or stdin (``"-"``); write the outputs.

    What ``bpvideo separate`` does: OUTDIR gets ``background.mp4``, ``foreground.mp4``,
    ``masks/binNNNNNN.png`` (named after the source frames), ``background.png`` and
    ``summary.json`` (written last; all appear together or not at all).

    Parameters
    ----------
    input : str or path-like
        Video file, image folder, or ``"-"`` for stdin.
    output : str or path-like, optional
        Output directory (default: ``<input name>-bpvideo``).
    callback : callable, optional
        Called with each solver :class:`~bpvideo.solvers.Iterate`.
    progress : callable, optional
        Called with a :class:`~bpvideo.progress.Progress` as frames are read, solved and
        written (``bpvideo separate`` draws it as a bar).
    stdin : binary file, optional
        Stream read for ``"-"`` instead of ``sys.stdin.buffer``.
    **options
        Options of ``bpvideo separate`` (see :mod:`bpvideo.settings`); ``learn`` /
        ``learn_from`` learn the background on some frames and apply it to all.

    Returns
    -------
    Report
        What ``summary.json`` holds.

    Raises
    ------
    InputError
        Bad options or input, or a job that cannot fit in memory, before any output is
        written (a bad last window is found when it is reached).
    WorkError
        Failed work; nothing partial is left in the output directory.
    """
    clock = Stopwatch()
    settings = settings_of(options, arrays=False).not_live()
    input = os.fspath(input)
    out_path = _output_path(input, output)
    RawMaskSink.check(settings.masks_to)
    check_access(*separate_access(input, out_path, settings))
    outdir = OutputDir(out_path, overwrite=settings.overwrite)
    outdir.check()
    source = _open_file(input, settings, stdin)
    try:
        if settings.groundtruth is not None:  # checked before the work, used after it
            check_groundtruth(settings.groundtruth, source.width, source.height)
        plan = plan_run(source, settings)
        tracker = track(progress, source, plan if settings.learn is None and
                           settings.learn_from is None else None)  # fmt: skip
        callback = tracker.solver_callback(callback)
        # One BLAS thread throughout: the products outside the solver are thin (r + 2
        # columns), and idle OpenBLAS threads spin for a while after each call, taking a
        # core from the ffmpeg encoders (measured: 1.1 s of CPU on a 300-frame clip).
        with threadpool_limits(limits=1, user_api="blas"):
            job = Job(source, settings, plan, clock, callback, tracker)
            learned = _learned(input, settings, callback, clock)
            if learned is None:
                job.empty_scene = given_scene(settings, source, reopen_file(input, settings))
                blocks = iter_blocks(job)
            else:  # the report tells how the background was learned
                job.plan = learned.plan
                blocks = iter_learned_blocks(learned, source, settings, clock=clock)
            report = _write(outdir, out_path, job, blocks, learned)
    finally:
        source.close()
    logger.info("wrote %s (%.2fs in all)", out_path, report.seconds["total"])
    return report


def _output_path(input: str, output: str | os.PathLike | None) -> str:
    """The output directory of ``input``: ``output``, or ``<input name>-bpvideo``."""
    check_input_name(input)
    out_path = os.fspath(output) if output is not None else None
    if out_path is not None and not out_path.strip():
        raise InputError("{output=} is an empty name: give a folder", option=("output", out_path))
    return out_path or ("stdin-bpvideo" if input == "-" else default_output(input))


def _open_file(input: str, settings: SeparateSettings, stdin: BinaryIO | None) -> FrameSource:
    return open_source(
        input,
        **settings.selection(),
        scale=settings.scale,
        fps=settings.fps,
        size=parse_size(settings.size) if settings.size else None,
        pix_fmt=settings.pix_fmt,
        stdin=stdin,
        allow_partial=settings.allow_partial,
        allow_references=settings.allow_references,
    )


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
                         allow_references=settings.allow_references)  # fmt: skip
    try:
        t = time.perf_counter()
        learned = learn(source, settings, callback=callback)
        clock.add("solve", time.perf_counter() - t)
    finally:
        source.close()
    frames = sum(r.new_frames for r in learned.reports)
    logger.info("learned the background on %d frame(s) of %s", frames, path)
    return learned


def _write(
    outdir: OutputDir,
    out_path: str,
    job: Job,
    blocks: Iterable[Block],
    learned: LearnedBackground | None,
) -> Report:
    """Drain the job's blocks into the output folder; stage ``summary.json``; commit."""
    source, settings, clock = job.source, job.settings, job.clock
    with outdir:
        builder = ReportBuilder(source, settings, job.plan)
        events = event_sinks(outdir, source, settings)  # after the folder: background.png
        drain(blocks, [FolderSink(outdir, source, settings, clock), *events, builder],
              job.progress)  # fmt: skip
        if learned is not None:
            builder.solved_by(learned.reports, learned.plan)
        report = builder.build(
            output=out_path,
            outputs={**output_names(settings), **event_output_names(settings)},
            learned=_learned_info(settings, learned),
            evaluation=_evaluate_staged(outdir, source, settings),
        )
        report.seconds = clock.total()
        report.events = events[0].rows()
        write_json(outdir.stage(SUMMARY), report.to_dict())
        outdir.commit()
    return report


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
    if settings.groundtruth is None:
        return None
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
