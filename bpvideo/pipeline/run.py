"""The run loop: a job's frames in, finished blocks out (:func:`iter_blocks`).

Frames are read as a stream and held as uint8 until their window is solved. With a
window size (the job's plan) the video is solved window by window, each started from the
previous window's background subspace (:func:`~bpvideo.pipeline.windows.warm_start`) and
sharing ``overlap`` frames with it; ``window=0`` (and ``auto`` on short clips) solves the
whole video at once. :func:`iter_solutions` yields each window solved;
:func:`iter_blocks` finishes them (:func:`~bpvideo.pipeline.finish.finish`) into blocks of
frames with their background and masks, which the sinks take one after another, so that
memory stays bounded by the window.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import cv2
import numpy as np

from bpvideo import cores
from bpvideo.background.empty_scene import span_scene
from bpvideo.background.reference import Reference
from bpvideo.errors import Diverged, InputError, literal
from bpvideo.masks import window_model
from bpvideo.masks.appearances import COMPILED_FRAME
from bpvideo.masks.appearances import warm_up as warm_appearances
from bpvideo.pipeline.finish import (
    OUTPUT_PIXELS,
    EarlyBackground,
    Solution,
    finish,
    window_info,
)
from bpvideo.pipeline.plan import Job, plan_window
from bpvideo.pipeline.scale import Background, resize_columns, solve_size, solved_video_size
from bpvideo.pipeline.solve import Solved, WarmUp, solve_window, uses_reference
from bpvideo.pipeline.spool import FrameSpool, SpooledVideo
from bpvideo.pipeline.windows import CARRY_FRAMES, check_window, chunk_windows, min_window
from bpvideo.records import Block, Plan, Video, WindowReport
from bpvideo.settings import format_span
from bpvideo.solvers.backends import get_backend
from bpvideo.solvers.registry import on_backend
from bpvideo.sources.observation import load_observation_mask, random_observation
from bpvideo.sources.regions import region_mask
from bpvideo.sources.video import video_from_frames

__all__ = ["carried_state", "iter_blocks", "iter_solutions"]

logger = logging.getLogger("bpvideo")


def iter_blocks(job: Job) -> Iterator[Block]:
    """Solve the job's frames window by window and yield the finished blocks.

    Yields
    ------
    Block
        Frames, background and masks of up to a few dozen frames, in order; the blocks
        of one window share its :class:`~bpvideo.records.WindowInfo` (with its report).

    Raises
    ------
    InputError
        Bad options or input, no frame selected, or a bad last window (when it is
        reached).
    """
    options, settings = job.settings.masks, job.settings
    region = region_mask(settings.roi, settings.exclude, (job.source.height, job.source.width),
                         settings.scale)  # fmt: skip
    for solution in iter_solutions(job):
        try:
            yield from finish(solution, options, job.clock, region)
        finally:  # stopped before its first block: its early background goes no further
            if solution.early is not None:
                solution.early.stop()
        del solution  # not held while the next window is solved


def iter_solutions(job: Job) -> Iterator[Solution]:
    """Solve the job's frames window by window; yield each window solved (its outputs not
    formed: :func:`~bpvideo.pipeline.finish.finish` forms them).

    Raises
    ------
    InputError
        As :func:`iter_blocks`.
    """
    spool = _spool(job)
    try:
        yield from _solutions(job, spool)
    finally:
        if spool is not None:
            spool.close()


def _spool(job: Job) -> FrameSpool | None:
    """The spool of the full-resolution frames, when the plan says so."""
    if not job.plan.spooled:
        return None
    return FrameSpool(job.frame_shape, solve_size(job.frame_shape, job.plan.solve_scale))


def _solutions(job: Job, spool: FrameSpool | None) -> Iterator[Solution]:
    """:func:`iter_solutions` once its spool is made."""
    settings, plan, clock, source = job.settings, job.plan, job.clock, job.source
    warm = _warm_up(job)
    state = job.carry = _Carry()
    if isinstance(job.empty_scene, np.ndarray):
        state.give(job.empty_scene, job.frame_shape, plan.solve_scale)
    skip, saved = job.resume or (0, {})
    read = [0]  # frames taken from the source: more than a window's when read ahead
    frames = _counted(source.frames, read)
    if spool is not None:  # (number, index in the spool): written to disk as they come
        frames = ((number, spool.add(frame)) for number, frame in frames)
    chunks = chunk_windows(
        frames, plan.window, settings.overlap, plan.whole_max, min_window(settings.rank)
    )
    t_read = clock.started
    for index, (chunk, new_from) in enumerate(chunks):
        clock.add("read", time.perf_counter() - t_read)
        if spool is not None and chunk:
            spool.release_before(chunk[0][1])
        if index < skip:  # solved before a stop (--resume): the checkpoint has its outputs
            _check_resumed(job, chunk, new_from, saved, index)
            t_read = time.perf_counter()
            continue
        if index == skip and saved:
            state = job.carry = _Carry.of_state(saved)
        if index == 0 and isinstance(job.empty_scene, tuple):
            scene = _first_frames_scene(chunk, job.empty_scene, job, spool)
            state.give(scene, job.frame_shape, plan.solve_scale)
        video = _window_video(job, chunk, new_from, state, index, spool)
        del chunk
        if index == 0:
            _log_read(job, video, read[0])
            _warn_unobserved(video, source.name)
        t = time.perf_counter()
        if job.progress is not None:
            job.progress.start_window(index + 1)
            job.progress.enter("solve")
        if warm is not None:
            warm.join()
            warm = None
        solved = _solve(job, video, state, new_from, index)
        state.detail, state.reference = solved.detail, solved.reference
        clock.add("solve", time.perf_counter() - t)
        early = _early(job, video, new_from, solved, index)
        try:
            solution = _solution(job, video, new_from, solved, index, state)
        except BaseException:
            if early is not None:
                early.stop()
            raise
        solution.early = early
        _log_window(solution, solved, plan, job, t_read)
        if not uses_reference(settings):
            state.keep(solved.L, video.n_frames, plan)
        del video, solved
        yield solution
        del solution  # the consumer's to keep: not held while the next window is solved
        t_read = time.perf_counter()
    if state.done == 0:
        raise source.nothing_selected(settings.start, settings.step)


def carried_state(job: Job) -> dict[str, Any]:
    """What the last solved window of ``job`` handed on to the next (its background
    columns, reference, detail, frames done), as arrays: saved at a window's end for
    ``--resume`` (:attr:`Job.resume`), which goes on from it exactly as the run would."""
    state: _Carry = job.carry
    out: dict[str, Any] = {"done": np.array(state.done)}
    for name, value in (("carried", state.columns()), ("detail", state.detail)):
        if value is not None:
            out[name] = value
    ref = state.reference
    if ref is not None:
        out.update(ref_image=ref.image, ref_age=ref.age, ref_covered=np.array(ref.covered))
        if ref.noise is not None:
            out["ref_noise"] = np.array(ref.noise)
        if ref.columns is not None:
            out["ref_columns"] = ref.columns
    return out


def _check_resumed(
    job: Job, chunk: list[tuple[int, Any]], new_from: int, saved: dict[str, Any], index: int
) -> None:
    """Refuse to go on when a window solved before the stop is not the input's now."""
    numbers = saved.get("numbers", {}).get(index)
    if numbers is not None and [n for n, _ in chunk[new_from:]] != list(numbers):
        raise InputError(
            f"{literal(job.source.name)}: window {index + 1} is not the one the stopped run "
            "solved (the input changed): run without {resume} and with {overwrite}",
            option=("resume", True),
        )


def _early(
    job: Job, video: Video, new_from: int, solved: Solved, index: int
) -> EarlyBackground | None:
    """The background of the window's first blocks, formed and handed to ``job.early``
    (the result's background video) by a thread while the window's model is formed."""
    if job.early is None or video.n_frames <= new_from or cores.threads() <= 1:
        return None  # one thread (--threads 1): formed by finish, in turn
    if video.height * video.width > OUTPUT_PIXELS:  # 4K: one block at a time (memory)
        return None
    ahead = Solution(video, new_from, solved.L, solved.S, None, window_info(video, new_from, index))
    return EarlyBackground(ahead, job.early)


def _solution(
    job: Job, video: Video, new_from: int, solved: Solved, index: int, state: _Carry
) -> Solution:
    """The :class:`Solution` of a solved window: the thresholds of its masks, its report."""
    t = time.perf_counter()
    model = window_model(video, solved.L, job.settings.masks, new_from=new_from,
                         observed=solved.observed, rows=solved.rows)  # fmt: skip
    job.clock.add("masks", time.perf_counter() - t)
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
        covered=None if solved.reference is None else solved.reference.covered,
        dynamic=None if model is None else model.dynamic,
    )
    state.done += n - new_from
    info = window_info(video, new_from, index, report)
    return Solution(video, new_from, solved.L, solved.S, model, info)


class _Carry:
    """What one window hands on to the next: the reference background (or background
    columns, without one), the detail, the frames done."""

    def __init__(self, reference: Reference | None = None) -> None:
        self.carried: np.ndarray | tuple[Background, np.ndarray] | None = None
        self.reference = reference
        self.detail: np.ndarray | None = None
        self.done = 0

    @classmethod
    def of_state(cls, saved: dict[str, Any]) -> _Carry:
        """The state :func:`carried_state` saved."""
        state = cls()
        state.done = int(saved["done"])
        state.carried = saved.get("carried")
        state.detail = saved.get("detail")
        if "ref_image" in saved:
            noise = saved.get("ref_noise")
            state.reference = Reference(
                image=saved["ref_image"], age=saved["ref_age"],
                noise=None if noise is None else _scalar(noise), columns=saved.get("ref_columns"),
                covered=_scalar(saved["ref_covered"]),
            )  # fmt: skip
        return state

    def give(self, scene: np.ndarray, frame_shape: tuple[int, ...], solve_scale: float) -> None:
        """Start from a given empty scene (a data column): the reference, and the detail
        the solve scale loses."""
        if solve_scale >= 1.0:
            self.reference = Reference.given(scene)
            return
        size = solve_size(frame_shape, solve_scale)
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


def _scalar(value: np.ndarray) -> Any:
    """A saved number as it was: a Python float (saved as float64) or a numpy scalar of
    its own type (float32 arithmetic stays float32, so the next window is the same)."""
    return value.item() if value.dtype == np.float64 else value[()]


def _first_frames_scene(
    chunk: list[tuple[int, np.ndarray]] | list[tuple[int, int]],
    span: tuple[int, int | None],
    job: Job,
    spool: FrameSpool | None = None,
) -> np.ndarray:
    """A given empty scene from frames ``span`` of the input (0-based, as ``--learn``), in
    a stream's first window."""
    settings, name = job.settings, job.source.name
    start, end = span
    first = settings.start + settings.step * (len(chunk) - 1)
    if end is None or end - 1 > first:
        raise InputError(
            f"{literal(name)}: {{background_from}} {format_span(span)} must end by frame "
            f"{first + 1} (the first window of a stream that cannot be read twice): give an "
            "IMAGE of the empty scene, or a larger {window}",
            option=("background_from", settings.background_from),
        )
    picked = (
        frame if spool is None else spool.frame(frame)
        for i, (_, frame) in enumerate(chunk)
        if start <= settings.start + settings.step * i < end
    )
    return span_scene(picked, gray=settings.gray, what=name)


def _warm_up(job: Job) -> WarmUp | None:
    """Load the compiled kernels in threads while the frames are read: the solver's on a
    GPU (CuPy compiles them), and the masks' match of HD frames (numba; not waited for:
    its first use waits on numba's lock). The solver's CPU kernels are numpy's, nothing
    to load."""
    source, settings = job.source, job.settings
    warm = None
    if job.plan.device == "cuda" and on_backend(settings.method):
        warm = WarmUp(get_backend("cuda"))
    if settings.masks.appearances and source.width * source.height >= COMPILED_FRAME:

        def masks() -> None:
            if warm is not None:
                threading.Thread.join(warm)  # its error is the solve's to raise
            warm_appearances()

        threading.Thread(target=masks, name="bpvideo-warm-masks", daemon=True).start()
    return warm


def _window_video(
    job: Job,
    chunk: list[tuple[int, np.ndarray]] | list[tuple[int, int]],
    new_from: int,
    state: _Carry,
    index: int,
    spool: FrameSpool | None = None,
) -> Video:
    """The checked data matrix of one window, with its observation mask."""
    source, settings, plan = job.source, job.settings, job.plan
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


def _solve(job: Job, video: Video, state: _Carry, new_from: int, index: int) -> Solved:
    """Solve one window from what the previous one handed on; a diverged solve is named
    by the input (and the window, when there are several)."""
    plan = job.plan
    try:
        return solve_window(
            video, job.settings, state.columns(), callback=job.callback,
            scale=plan.solve_scale, previous_detail=state.detail, new_from=new_from,
            reference=state.reference,
        )  # fmt: skip
    except Diverged as exc:
        windowed = index > 0 or (plan.window is not None and video.n_frames == plan.window)
        where = f" (window {index + 1})" if windowed else ""
        raise Diverged(f"{literal(job.source.name)}{where}: {exc.template}",
                       option=exc.option) from None  # fmt: skip


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
            "%s: %d pixel(s) (%.1f%%) are observed in no frame (--mask or --observe): their "
            "background is unknown (black in the outputs) and they are never foreground",
            name, count, 100.0 * count / never.size,
        )  # fmt: skip


def _counted(frames: Iterator[Any], count: list[int]) -> Iterator[Any]:
    """``frames``, counted in ``count[0]`` as they are taken."""
    for item in frames:
        count[0] += 1
        yield item


def _log_read(job: Job, video: Video, read: int) -> None:
    plan = job.plan
    n = read  # all the frames read so far, the first window's and those read ahead
    windowed = plan.window is not None and video.n_frames == plan.window  # else: all of it
    memory = "" if plan.memory is None else f"; memory {plan.memory / 2**20:.0f} MiB at most"
    logger.info(
        "read %d frames of %dx%d from %s (%.2fs)%s%s",
        n,
        video.width,
        video.height,
        job.source.name,
        job.clock.seconds["read"],
        f"; solving in windows of {plan.window} frames, overlap {job.settings.overlap}"
        if windowed
        else "",
        memory,
    )


def _log_window(solution: Solution, solved: Solved, plan: Plan, job: Job, t_read: float) -> None:
    report, result = solution.info.report, solved.result
    assert report is not None
    if solution.info.index > 0 or (plan.window is not None and report.frames == plan.window):
        logger.info(
            "window %d: frames %d-%d, %s, converged=%s, residual %.3g (%.2fs)",
            solution.info.index + 1,
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
            job.clock.seconds["solve"],
        )


def _iterations(n: int) -> str:
    """``1 iteration``, ``14 iterations``."""
    return f"{n} iteration{'' if n == 1 else 's'}"
