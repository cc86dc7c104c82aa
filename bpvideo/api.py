"""The library on frames in memory: separate arrays (:func:`separate`), window by window
(:func:`iter_separate`). Files, folders, pipes and live streams are
:func:`bpvideo.job.separate_file`'s; a background learned once and applied to new frames
is :class:`bpvideo.model.BackgroundModel`.

Every function takes the options of ``bpvideo separate`` as keyword arguments, with the
same names and defaults (:class:`~bpvideo.settings.SeparateSettings`: ``rank=2``,
``sparsity=0.1``, ``max_iter=100``, ``solve_scale="auto"`` ...); a bad value raises
:class:`~bpvideo.errors.InputError` (a :class:`ValueError`) that names it
(``rank=0 must be >= 1``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from threadpoolctl import threadpool_limits

from bpvideo.background.empty_scene import given_scene, reopen_array
from bpvideo.errors import callable_argument
from bpvideo.pipeline.plan import Job, plan_run
from bpvideo.pipeline.run import iter_blocks
from bpvideo.progress import ProgressCallback, track
from bpvideo.settings import SeparateSettings, settings_of
from bpvideo.sinks import drain
from bpvideo.sinks.arrays import ArraysSink, Separation, Window, gather_windows
from bpvideo.sinks.events import TableSink
from bpvideo.sinks.summary import ReportBuilder
from bpvideo.solvers._common import Callback
from bpvideo.sources.arrays import open_frames
from bpvideo.sources.files import FrameSource

__all__ = ["Separation", "Window", "iter_separate", "open_arrays", "separate"]

logger = logging.getLogger("bpvideo")


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

    Returns
    -------
    iterator of Window
        Finished windows, made as it is iterated: ``index``, ``numbers`` (frame indices),
        ``frames``, ``masks``, ``background_frames``, ``foreground``, ``report``.

    Raises
    ------
    InputError
        Bad options or frames, when called (not at the first window); a frame of another
        shape when it is reached.

    Examples
    --------
    >>> import numpy as np
    >>> import bpvideo
    >>> frames = (np.random.default_rng(0).normal(100, 2, (30, 24, 32))).clip(0, 255)
    >>> windows = bpvideo.iter_separate(frames.astype(np.uint8), window=20, overlap=5)
    >>> sum(len(w.masks) for w in windows)
    30
    """
    callable_argument("callback", callback)
    settings = settings_of(options, arrays=True)
    source = open_arrays(frames, settings)
    scene = given_scene(settings, source, reopen_array(frames, settings))
    return _windows(Job.of(source, settings, callback=callback, empty_scene=scene))


def _windows(job: Job) -> Iterator[Window]:
    """The finished windows of ``job``: a generator, so that :func:`iter_separate` checks
    its arguments when called, not at the first window."""
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
        ``background``, ``foreground``, ``masks``, ``background_image``, ``report``,
        ``events``, ``frames``; with ``events="objects"`` or ``count_line``, the objects
        (``objects``, ``tracks``: the rows of objects.csv and tracks.csv) and ``counts``.

    Raises
    ------
    InputError
        Bad options or frames (also a :class:`ValueError`).
    """
    callable_argument("callback", callback)
    callable_argument("progress", progress)
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
    if table.objects is not None:
        report.objects, report.counts = (
            table.objects.summary().get(k) for k in ("objects", "counts")
        )
    return arrays.separation(report, **table.found())
