"""The pipeline: a stream of frames in, finished windows out (:func:`iter_windows`).

Frames are read as a stream and held as uint8 until their window is solved. With a
window size (``settings.window``) the video is solved window by window, each started from
the previous window's background subspace (:func:`~bpvideo.pipeline.windows.warm_start`)
and sharing ``settings.overlap`` frames with it; ``window=0`` (and ``auto`` on short
clips) solves the whole video at once. Each window comes out finished: the numbers of its
new frames, the frames, the full-resolution background, masks and a report. Consumers
(:func:`bpvideo.separate_file` feeds encoders and mask files, :func:`bpvideo.separate`
collects arrays) take one window at a time, so memory stays bounded by the window.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from bpvideo.errors import Diverged, InputError, literal
from bpvideo.io.observation import load_observation_mask, random_observation
from bpvideo.io.sources import FrameSource
from bpvideo.io.summary import Stopwatch, WindowReport
from bpvideo.io.video import Video, video_from_frames
from bpvideo.pipeline.empty_scene import span_scene
from bpvideo.pipeline.finished import OUTPUT_FRAMES, Block, Window, columns_to_frames, masked_frames
from bpvideo.pipeline.reference import Reference
from bpvideo.pipeline.scale import (
    Background,
    effective_solve_scale,
    resize_columns,
    scaled_size,
    solved_video_size,
)
from bpvideo.pipeline.solve import (
    Solved,
    WarmUp,
    solve_device,
    solve_entries,
    solve_window,
    uses_reference,
)
from bpvideo.pipeline.spool import FrameSpool, SpooledVideo
from bpvideo.pipeline.statistics import window_model
from bpvideo.pipeline.windows import (
    CARRY_FRAMES,
    check_window,
    chunk_windows,
    plan_window,
    planned_memory,
    resident_memory,
    spools,
)
from bpvideo.progress import Tracker
from bpvideo.settings import SeparateSettings, format_span
from bpvideo.solvers import SolverResult
from bpvideo.solvers._common import Callback
from bpvideo.solvers.backends import get_backend

__all__ = [
    "OUTPUT_FRAMES",
    "Block",
    "Plan",
    "Window",
    "columns_to_frames",
    "iter_windows",
    "masked_frames",
    "plan_run",
]

logger = logging.getLogger("bpvideo")


@dataclass
class Plan:
    """How a stream is cut and solved (the same for all its windows).

    Attributes
    ----------
    window : int or None
        Frames per window, None for the whole stream at once.
    overlap : int
        Frames shared by consecutive windows (0 without windows).
    whole_max : int
        With ``window="auto"``: a stream that ends within this many frames is solved whole.
    solve_scale : float
        The factor the solve runs at (``"auto"`` resolved).
    memory : int or None
        Bytes the process will hold at most: what it held when the run was planned, plus
        :func:`~bpvideo.pipeline.windows.planned_memory` (None when unknown).
    device : {"cpu", "cuda"}
        Where the solver runs (``"auto"`` resolved).
    spooled : bool
        Whether the full-resolution frames of a window wait on disk (:func:`spools`), not
        in memory.
    """

    window: int | None
    overlap: int
    whole_max: int
    solve_scale: float
    memory: int | None = None
    device: str = "cpu"
    spooled: bool = False


def plan_run(source: FrameSource, settings: SeparateSettings) -> Plan:
    """The :class:`Plan` of a stream, checked against the memory before any work.

    Raises
    ------
    InputError
        The job cannot fit (names ``window`` and ``scale``), or ``device="cuda"`` cannot
        run here.
    """
    device = solve_device(settings)
    window, whole_max = plan_window(
        settings, source.width, source.height, source.frame_count, name=source.name
    )
    scale = effective_solve_scale(settings.solve_scale, source.width, source.height)
    if device == "cuda":
        from bpvideo.solvers.backends.cuda import device_name

        logger.info("solving on the GPU: %s (CuPy)", device_name())
    memory = planned_memory(settings, source.width, source.height, source.frame_count, window,
                            whole_max)  # fmt: skip
    if memory is not None:
        memory += resident_memory()
    overlap = settings.overlap if window is not None else 0
    return Plan(window, overlap, whole_max, scale, memory=memory, device=device,
                spooled=spools(settings, scale))  # fmt: skip


def iter_windows(
    source: FrameSource,
    settings: SeparateSettings,
    *,
    callback: Callback | None = None,
    clock: Stopwatch | None = None,
    outputs: bool = True,
    plan: Plan | None = None,
    progress: Tracker | None = None,
    empty_scene: np.ndarray | tuple[int, int | None] | None = None,
) -> Iterator[Window]:
    """Solve ``source`` window by window; yield each :class:`Window` as it is finished.

    Parameters
    ----------
    source : FrameSource
        The frames (a file, a folder, stdin or arrays).
    settings : SeparateSettings
        Options, validated.
    callback : callable, optional
        Called with each solver :class:`~bpvideo.solvers.Iterate`.
    clock : Stopwatch, optional
        Collects the seconds of the stages (``read``, ``solve``, ``masks``, ``write``).
    outputs : bool, default True
        Form the masks and background frames of a window before going on to the next
        (False: a consumer that only wants the backgrounds and reports).
    plan : Plan, optional
        :func:`plan_run` of the stream, when already made.
    progress : Tracker, optional
        Told when a window's solve begins (see :mod:`bpvideo.progress`).
    empty_scene : (m,) ndarray or (int, int or None), optional
        A given empty scene (``background_from``): a data column of the frames' size, or
        the span of the first window's frames to take it from (a stream that cannot be
        read twice).

    Yields
    ------
    Window
        Valid until the next one is asked for; then only its finished arrays are kept.

    Raises
    ------
    InputError
        Bad options or input, a job that cannot fit in memory (before any work), no frame
        selected, or a bad last window (when it is reached).
    """
    clock = clock or Stopwatch()
    plan = plan or plan_run(source, settings)
    spool = _spool(source, settings, plan)
    try:
        yield from _windows(
            source, settings, plan, spool, clock, callback, outputs, empty_scene, progress
        )
    finally:
        if spool is not None:
            spool.close()


def _spool(source: FrameSource, settings: SeparateSettings, plan: Plan) -> FrameSpool | None:
    """The spool of the full-resolution frames, when the plan says so."""
    if not plan.spooled:
        return None
    shape = _frame_shape(source, settings)
    return FrameSpool(shape, scaled_size(shape, plan.solve_scale))


def _windows(
    source: FrameSource,
    settings: SeparateSettings,
    plan: Plan,
    spool: FrameSpool | None,
    clock: Stopwatch,
    callback: Callback | None,
    outputs: bool,
    empty_scene: np.ndarray | tuple[int, int | None] | None,
    progress: Tracker | None,
) -> Iterator[Window]:
    """:func:`iter_windows` once its plan and spool are made."""
    warm = _warm_up(source, settings, plan)
    state = _Carry()
    if isinstance(empty_scene, np.ndarray):
        state.give(empty_scene, _frame_shape(source, settings), plan.solve_scale)
    read = [0]  # frames taken from the source: more than a window's when read ahead
    frames = _counted(source.frames, read)
    if spool is not None:  # (number, index in the spool): written to disk as they come
        frames = ((number, spool.add(frame)) for number, frame in frames)
    chunks = chunk_windows(
        frames, plan.window, settings.overlap, plan.whole_max, 2 * settings.rank + 2
    )
    t_read = clock.started
    for index, (chunk, new_from) in enumerate(chunks):
        clock.add("read", time.perf_counter() - t_read)
        if spool is not None and chunk:
            spool.release_before(chunk[0][1])
        if index == 0 and isinstance(empty_scene, tuple):
            state.give(_first_frames_scene(chunk, empty_scene, settings, source.name, spool),
                       _frame_shape(source, settings), plan.solve_scale)  # fmt: skip
        video = _window_video(source, settings, plan, chunk, new_from, state, index, spool)
        del chunk
        if index == 0:
            _log_read(source, settings, plan, video, clock, read[0])
            _warn_unobserved(video, source.name)
        t = time.perf_counter()
        if progress is not None:
            progress.start_window(index + 1)
            progress.enter("solve")
        if warm is not None:
            warm.join()
            warm = None
        try:
            solved = solve_window(
                video, settings, state.columns(), callback=callback, scale=plan.solve_scale,
                previous_detail=state.detail, new_from=new_from, reference=state.reference,
            )  # fmt: skip
        except Diverged as exc:  # named: the input, and the window when there are several
            windowed = index > 0 or (plan.window is not None and video.n_frames == plan.window)
            where = f" (window {index + 1})" if windowed else ""
            raise Diverged(f"{literal(source.name)}{where}: {exc.template}",
                           option=exc.option) from None  # fmt: skip
        state.detail, state.reference = solved.detail, solved.reference
        clock.add("solve", time.perf_counter() - t)
        window = _finish(video, new_from, solved, settings, plan, index, state, clock)
        _log_window(window, solved.result, plan, clock, t_read)
        if not uses_reference(settings):
            state.keep(solved.L, video.n_frames, plan)
        del video, solved
        yield window
        window.release(outputs)
        del window  # the consumer's to keep: not held while the next window is solved
        t_read = time.perf_counter()
    if state.done == 0:
        raise source.nothing_selected(settings.start, settings.step)


class _Carry:
    """What one window hands on to the next: the reference background (or background
    columns, without one), the detail, the frames done."""

    def __init__(self, reference: Reference | None = None) -> None:
        self.carried: np.ndarray | tuple[Background, np.ndarray] | None = None
        self.reference = reference
        self.detail: np.ndarray | None = None
        self.done = 0

    def give(self, scene: np.ndarray, frame_shape: tuple[int, ...], solve_scale: float) -> None:
        """Start from a given empty scene (a data column): the reference, and the detail
        the solve scale loses."""
        if solve_scale >= 1.0:
            self.reference = Reference.given(scene)
            return
        size = scaled_size(frame_shape, solve_scale)
        small_shape = (size[1], size[0], *frame_shape[2:])
        column = scene.reshape(-1, 1)
        small = resize_columns(column, frame_shape, size, cv2.INTER_AREA)
        self.reference = Reference.given(small[:, 0])
        up = resize_columns(small, small_shape, solved_video_size(frame_shape), cv2.INTER_LINEAR)
        self.detail = (column - up).astype(np.float32)

    def columns(self) -> np.ndarray | None:
        """The carried background columns (formed now when kept as factors)."""
        if isinstance(self.carried, tuple):
            self.carried = self.carried[0].take(self.carried[1])
        return self.carried

    def keep(self, L: Background, n: int, plan: Plan) -> None:
        """Keep :data:`CARRY_FRAMES` columns of ``L`` (m x n) for the next window."""
        if plan.window is not None and CARRY_FRAMES > 0:
            pick = np.unique(np.linspace(0, n - 1, min(n, CARRY_FRAMES)).round().astype(int))
            # kept as (background, columns) when factored: formed only if another window comes
            self.carried = L.take(pick) if L.dense is not None else (L, pick)


def _frame_shape(source: FrameSource, settings: SeparateSettings) -> tuple[int, ...]:
    """How a column of the data matrix is a frame."""
    return (source.height, source.width) if settings.gray else (source.height, source.width, 3)


def _first_frames_scene(
    chunk: list[tuple[int, np.ndarray]] | list[tuple[int, int]],
    span: tuple[int, int | None],
    settings: SeparateSettings,
    name: str,
    spool: FrameSpool | None = None,
) -> np.ndarray:
    """A given empty scene from frames ``span`` of the input (0-based, as ``--learn``), in
    a stream's first window."""
    start, end = span
    first = settings.start + settings.step * (len(chunk) - 1)
    if end is None or end - 1 > first:
        raise InputError(
            f"{name}: {{background_from}} {format_span(span)} must end by frame {first + 1} "
            "(the first window of a stream that cannot be read twice): give an IMAGE of the "
            "empty scene, or a larger {window}",
            option=("background_from", settings.background_from),
        )
    picked = (
        frame if spool is None else spool.frame(frame)
        for i, (_, frame) in enumerate(chunk)
        if start <= settings.start + settings.step * i < end
    )
    return span_scene(picked, gray=settings.gray, what=name)


def _warm_up(source: FrameSource, settings: SeparateSettings, plan: Plan) -> WarmUp | None:
    """Load the compiled kernels in a thread while the frames are read, when a solve will
    use them."""
    if settings.method not in ("bestpair", "ncf"):
        return None
    if plan.device == "cuda":
        return WarmUp(get_backend("cuda"))  # CuPy compiles its kernels while frames are read
    backend = get_backend("auto", solve_entries(source, settings, plan.window, plan.solve_scale))
    return WarmUp(backend) if backend.name != "numpy" else None


def _window_video(
    source: FrameSource,
    settings: SeparateSettings,
    plan: Plan,
    chunk: list[tuple[int, np.ndarray]] | list[tuple[int, int]],
    new_from: int,
    state: _Carry,
    index: int,
    spool: FrameSpool | None = None,
) -> Video:
    """The checked data matrix of one window, with its observation mask."""
    if not chunk:
        raise source.nothing_selected(settings.start, settings.step)
    if plan.window is None:
        # The frame count was an estimate (or unknown): check the real one.
        plan_window(settings, source.width, source.height, len(chunk), name=source.name)
    if spool is not None:
        numbers, indices = zip(*chunk, strict=True)
        video: Video = SpooledVideo(spool, list(indices), list(numbers), source.fps, source.name)
    else:
        video = video_from_frames(chunk, gray=settings.gray, fps=source.fps, source=source.name)
    check_window(video, settings, source.name, state.carried is None)
    if settings.mask is not None:
        video.mask = load_observation_mask(
            settings.mask,
            video,
            native_size=source.native_size,
            start=source.start + settings.step * (state.done - new_from),
            step=settings.step,
            scale=settings.scale,
        )
    elif settings.observe is not None and settings.observe < 1.0:
        video.mask = random_observation(video.shape, settings.observe, settings.seed + index)
    return video


def _finish(
    video: Video,
    new_from: int,
    solved: Solved,
    settings: SeparateSettings,
    plan: Plan,
    index: int,
    state: _Carry,
    clock: Stopwatch,
) -> Window:
    """The :class:`Window` of a solved window: the thresholds of its masks and its report."""
    t = time.perf_counter()
    model = window_model(
        video, solved.L, settings, new_from=new_from, observed=solved.observed, rows=solved.rows
    )
    clock.add("masks", time.perf_counter() - t)
    n = video.n_frames
    result = solved.result
    report = WindowReport(
        first_frame=state.done,
        frames=n,
        new_frames=n - new_from,
        method=result.method,
        iterations=result.iterations,
        converged=result.converged,
        residual=result.residual,
        change=result.changes[-1] if result.changes else None,
        threshold=None if model is None else model.threshold,
        noise=None if model is None else model.noise,
        sparsity=solved.sparsity,
        observed=None if solved.observed is None else float(solved.observed.mean()),
    )
    state.done += n - new_from
    return Window(video, new_from, solved.L, solved.S, settings=settings, model=model, plan=plan,
                  index=index, report=report, clock=clock)  # fmt: skip


def _warn_unobserved(video: Video, name: str) -> None:
    """Say when the observation mask leaves pixels out of every frame of a window."""
    if video.mask is None:
        return
    never = ~video.mask.any(axis=1)
    if video.mask.shape[0] != video.height * video.width:  # colour: a pixel is 3 entries
        never = never.reshape(video.height * video.width, -1).all(axis=1)
    count = int(np.count_nonzero(never))
    if count:
        logger.warning(
            "%s: %d pixel(s) (%.1f%%) are observed in no frame (--mask): their background "
            "is unknown (black in the outputs) and they are never foreground",
            name, count, 100.0 * count / never.size,
        )  # fmt: skip


def _counted(frames: Iterator[Any], count: list[int]) -> Iterator[Any]:
    """``frames``, counted in ``count[0]`` as they are taken."""
    for item in frames:
        count[0] += 1
        yield item


def _log_read(
    source: FrameSource,
    settings: SeparateSettings,
    plan: Plan,
    video: Video,
    clock: Stopwatch,
    read: int,
) -> None:
    n = read  # all the frames read so far, the first window's and those read ahead
    windowed = plan.window is not None and video.n_frames == plan.window  # else: all of it
    memory = "" if plan.memory is None else f"; memory {plan.memory / 2**20:.0f} MiB at most"
    logger.info(
        "read %d frames of %dx%d from %s (%.2fs)%s%s",
        n,
        video.width,
        video.height,
        source.name,
        clock.seconds["read"],
        f"; solving in windows of {plan.window} frames, overlap {settings.overlap}"
        if windowed
        else "",
        memory,
    )


def _log_window(
    window: Window, result: SolverResult, plan: Plan, clock: Stopwatch, t_read: float
) -> None:
    report = window.report
    assert report is not None
    if window.index > 0 or (plan.window is not None and report.frames == plan.window):
        logger.info(
            "window %d: frames %d-%d, %s, converged=%s, residual %.3g (%.2fs)",
            window.index + 1,
            report.first_frame + 1,
            report.first_frame + report.new_frames,
            _iterations(result.iterations),
            result.converged,
            result.residual,
            time.perf_counter() - t_read,
        )
    else:
        logger.info(
            "%s: %s, converged=%s, residual %.3g (%.2fs)",
            result.method,
            _iterations(result.iterations),
            result.converged,
            result.residual,
            clock.seconds["solve"],
        )


def _iterations(n: int) -> str:
    """``1 iteration``, ``14 iterations``."""
    return f"{n} iteration{'' if n == 1 else 's'}"
