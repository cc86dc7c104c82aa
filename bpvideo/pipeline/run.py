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

import cv2
import numpy as np

from bpvideo.io.observation import load_observation_mask, random_observation
from bpvideo.io.sources import FrameSource
from bpvideo.io.summary import Stopwatch, WindowReport
from bpvideo.io.video import Video, video_from_frames
from bpvideo.masks import foreground_masks, mask_threshold
from bpvideo.pipeline.scale import Background, effective_solve_scale
from bpvideo.pipeline.solve import WarmUp, solve_entries, solve_window
from bpvideo.pipeline.windows import CARRY_FRAMES, check_window, chunk_windows, plan_window
from bpvideo.settings import SeparateSettings
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

#: Frames whose outputs are formed at a time (background columns, residual, masks): a
#: window's full-resolution background is never held whole, and the encoders get frames
#: while the next ones are formed.
OUTPUT_FRAMES = 32


def masked_frames(frames: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """``frames`` where ``masks`` is set, 0 elsewhere: (k, H, W[, C]) uint8 frames and
    (k, H, W) bool masks (``np.where(masks[..., None], frames, 0)``, by OpenCV)."""
    out = np.zeros_like(frames)
    m = np.ascontiguousarray(masks).view(np.uint8)
    for j in range(len(frames)):
        cv2.copyTo(frames[j], m[j], out[j])
    return out


def columns_to_frames(matrix: np.ndarray, frame_shape: tuple[int, ...]) -> np.ndarray:
    """uint8 frames ``(k, *frame_shape)`` of an m x k matrix: rounded, saturated, transposed.

    Equal to ``clip(rint(matrix), 0, 255)`` as uint8, transposed to one frame per row; done
    by OpenCV (rounding half to even, like ``np.rint``) on uint8, not on float32 copies.
    """
    k = matrix.shape[1]
    if matrix.ndim != 2 or max(matrix.shape) >= 2**31 or matrix.strides[1] != matrix.itemsize:
        u8 = np.clip(np.rint(matrix), 0, 255).astype(np.uint8)  # pragma: no cover
        return np.ascontiguousarray(u8.T).reshape((k, *frame_shape))  # pragma: no cover
    u8 = cv2.add(matrix, 0.0, dtype=cv2.CV_8U)
    return cv2.transpose(u8).reshape((k, *frame_shape))


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
    """

    window: int | None
    overlap: int
    whole_max: int
    solve_scale: float


@dataclass
class Block:
    """Up to :data:`OUTPUT_FRAMES` finished frames of a window.

    Attributes
    ----------
    numbers : list of int
        Source frame numbers.
    frames : (k, H, W, 3) uint8 ndarray
        The input frames (BGR).
    background : (k, H, W) or (k, H, W, 3) uint8 ndarray
        The background (grey, or BGR with ``gray=False``).
    masks : (k, H, W) bool ndarray
        Foreground masks.
    """

    numbers: list[int]
    frames: np.ndarray
    background: np.ndarray
    masks: np.ndarray

    @property
    def foreground(self) -> np.ndarray:
        """(k, H, W, 3) uint8: the input where the mask is set, black elsewhere."""
        return masked_frames(self.frames, self.masks)


class Window:
    """One finished window: its new frames, their background, masks and report.

    Masks and uint8 background frames are formed :data:`OUTPUT_FRAMES` at a time, as
    :meth:`blocks` is iterated (or at once by :attr:`masks`), from the full-resolution
    background kept as factors; they are kept. When the pipeline goes on to the next
    window, what they were made from (the data matrix, the solver's buffers) is let go
    (:meth:`release`): a window stays valid, holding only finished arrays.

    Attributes
    ----------
    index : int
        0-based position in the stream.
    numbers : list of int
        Source frame numbers of the window's new frames (those not in the previous window).
    frames : (k, H, W, 3) uint8 ndarray
        The new frames.
    background : Background
        Full-resolution ``L`` of the new frames, m x k (factors when the solve was
        downscaled).
    frame_shape : tuple of int
        ``(H, W)`` (grey) or ``(H, W, 3)`` (colour): how a column of ``L`` is a frame.
    report : WindowReport or None
        How the window was solved (None for a learned background).
    threshold : float or None
        Threshold on ``|A - L|`` of the masks (None for the support rule).
    observed : float
        Frames observed (the sum over the new frames of their observed fraction).
    plan : Plan
        How the stream is cut and solved.
    """

    def __init__(
        self,
        video: Video,
        new_from: int,
        L: Background,
        S: np.ndarray | None,
        *,
        settings: SeparateSettings,
        threshold: float | None,
        plan: Plan,
        index: int = 0,
        report: WindowReport | None = None,
        clock: Stopwatch | None = None,
    ) -> None:
        n = video.n_frames
        self.index = index
        self.numbers = list(video.frame_numbers[new_from:])
        self.frames = video.frames[new_from:]
        self.background = L.select(new_from, n)
        self.frame_shape = tuple(video.frame_shape)
        self.report = report
        self.threshold = threshold
        self.plan = plan
        observed = n - new_from
        if video.mask is not None:
            observed = float(video.mask[:, new_from:].mean()) * (n - new_from)
        self.observed = observed
        self._settings = settings
        self._clock = clock or Stopwatch()
        self._source: tuple[Video, Background, np.ndarray | None, int] | None = (
            video, L, S, new_from
        )  # fmt: skip
        k = n - new_from
        self._masks = np.empty((k, *self.frame_shape[:2]), dtype=bool)
        self._bg = np.empty((k, *self.frame_shape), dtype=np.uint8)
        self._formed = 0

    def __len__(self) -> int:
        return len(self.numbers)

    def blocks(self, size: int = OUTPUT_FRAMES) -> Iterator[Block]:
        """The window's frames with their background and masks, ``size`` at a time."""
        k = len(self.numbers)
        for lo in range(0, k, size):
            hi = min(k, lo + size)
            while self._formed < hi:
                self._form_next()
            yield Block(self.numbers[lo:hi], self.frames[lo:hi], self._bg[lo:hi],
                        self._masks[lo:hi])  # fmt: skip

    @property
    def masks(self) -> np.ndarray:
        """(k, H, W) bool: foreground masks of the new frames."""
        self._form_all()
        return self._masks

    @property
    def background_frames(self) -> np.ndarray:
        """(k, H, W) or (k, H, W, 3) uint8: the background of the new frames."""
        self._form_all()
        return self._bg

    @property
    def foreground(self) -> np.ndarray:
        """(k, H, W, 3) uint8: the new frames where the mask is set, black elsewhere."""
        return masked_frames(self.frames, self.masks)

    @property
    def foreground_pixels(self) -> int:
        """Foreground pixels of the masks."""
        return int(np.count_nonzero(self.masks))

    def release(self, outputs: bool = True) -> None:
        """Let go of what the outputs are made from; form them first with ``outputs``."""
        if outputs:
            self._form_all()
        self._source = None
        self.background = self.background.compact()

    def _form_all(self) -> None:
        while self._formed < len(self.numbers):
            self._form_next()

    def _form_next(self) -> None:
        """Masks and uint8 background of the next :data:`OUTPUT_FRAMES` frames."""
        if self._source is None:
            raise RuntimeError("this window was released before its outputs were formed")
        video, L, S, new_from = self._source
        st = self._settings
        lo = new_from + self._formed
        hi = min(video.n_frames, lo + OUTPUT_FRAMES)
        t = time.perf_counter()
        shape = video.frame_shape
        # frame by frame (contiguous) when the frames are kept and nothing else is needed
        by_frames = video.planes is not None and video.mask is None and S is None
        if by_frames:
            A, Lc = video.planes[lo:hi], L.frames(lo, hi, shape)
        else:
            A, Lc = video.data[:, lo:hi], L.columns(lo, hi)
        kwargs = st.mask_kwargs()
        if self.threshold is not None:
            kwargs["threshold"] = self.threshold
        masks = foreground_masks(
            A,
            Lc,
            None if S is None else S[:, lo:hi],
            shape,
            observed=None if video.mask is None else video.mask[:, lo:hi],
            **kwargs,
        ).masks
        t2 = time.perf_counter()
        self._clock.add("masks", t2 - t)
        out = slice(self._formed, self._formed + hi - lo)
        self._masks[out] = masks
        if by_frames:
            flat = Lc.reshape(len(Lc), -1)  # rounded and saturated, as columns_to_frames
            self._bg[out] = cv2.add(flat, 0.0, dtype=cv2.CV_8U).reshape(Lc.shape)
        else:
            self._bg[out] = columns_to_frames(Lc, shape)
        self._formed += hi - lo
        self._clock.add("write", time.perf_counter() - t2)


def plan_run(source: FrameSource, settings: SeparateSettings) -> Plan:
    """The :class:`Plan` of a stream, checked against the memory before any work.

    Raises
    ------
    InputError
        The job cannot fit (names ``window`` and ``scale``).
    """
    window, whole_max = plan_window(
        settings, source.width, source.height, source.frame_count, name=source.name
    )
    scale = effective_solve_scale(settings.solve_scale, source.width, source.height)
    return Plan(window, settings.overlap if window is not None else 0, whole_max, scale)


def iter_windows(
    source: FrameSource,
    settings: SeparateSettings,
    *,
    callback: Callback | None = None,
    clock: Stopwatch | None = None,
    outputs: bool = True,
    plan: Plan | None = None,
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
    warm = _warm_up(source, settings, plan)
    state = _Carry()
    chunks = chunk_windows(
        source.frames, plan.window, settings.overlap, plan.whole_max, 2 * settings.rank + 2
    )
    t_read = clock.started
    for index, (chunk, new_from) in enumerate(chunks):
        clock.add("read", time.perf_counter() - t_read)
        video = _window_video(source, settings, plan, chunk, new_from, state, index)
        del chunk
        if index == 0:
            _log_read(source, settings, plan, video, clock)
        t = time.perf_counter()
        if warm is not None:
            warm.join()
            warm = None
        result, L, S, state.detail = solve_window(
            video, settings, state.columns(), callback=callback, scale=plan.solve_scale,
            previous_detail=state.detail, new_from=new_from,
        )  # fmt: skip
        clock.add("solve", time.perf_counter() - t)
        window = _finish(video, new_from, L, S, result, settings, plan, index, state, clock)
        _log_window(window, result, plan, clock, t_read)
        state.keep(L, video.n_frames, plan)
        del video, result, L, S
        yield window
        window.release(outputs)
        del window  # the consumer's to keep: not held while the next window is solved
        t_read = time.perf_counter()
    if state.done == 0:
        raise source.nothing_selected(settings.start, settings.step)


class _Carry:
    """What one window hands on to the next: background columns, detail, frames done."""

    def __init__(self) -> None:
        self.carried: np.ndarray | tuple[Background, np.ndarray] | None = None
        self.detail: np.ndarray | None = None
        self.done = 0

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


def _warm_up(source: FrameSource, settings: SeparateSettings, plan: Plan) -> WarmUp | None:
    """Load the compiled kernels in a thread while the frames are read, when a solve will
    use them."""
    if settings.method not in ("bestpair", "ncf"):
        return None
    backend = get_backend("auto", solve_entries(source, settings, plan.window, plan.solve_scale))
    return WarmUp(backend) if backend.name != "numpy" else None


def _window_video(
    source: FrameSource,
    settings: SeparateSettings,
    plan: Plan,
    chunk: list[tuple[int, np.ndarray]],
    new_from: int,
    state: _Carry,
    index: int,
) -> Video:
    """The checked data matrix of one window, with its observation mask."""
    if not chunk:
        raise source.nothing_selected(settings.start, settings.step)
    if plan.window is None:
        # The frame count was an estimate (or unknown): check the real one.
        plan_window(settings, source.width, source.height, len(chunk), name=source.name)
    video = video_from_frames(chunk, gray=settings.gray, fps=source.fps, source=source.name)
    check_window(video, settings, source.name, state.carried is None)
    if settings.mask is not None:
        video.mask = load_observation_mask(
            settings.mask,
            video,
            native_size=source.native_size,
            start=settings.start + settings.step * (state.done - new_from),
            step=settings.step,
            scale=settings.scale,
        )
    elif settings.observe is not None and settings.observe < 1.0:
        video.mask = random_observation(video.data.shape, settings.observe, settings.seed + index)
    return video


def _finish(
    video: Video,
    new_from: int,
    L: Background,
    S: np.ndarray | None,
    result: SolverResult,
    settings: SeparateSettings,
    plan: Plan,
    index: int,
    state: _Carry,
    clock: Stopwatch,
) -> Window:
    """The :class:`Window` of a solved window: the threshold of its masks and its report."""
    t = time.perf_counter()
    threshold: float | None = None
    noise: float | None = None
    if settings.mask_rule == "residual":
        level = L.dense if L.dense is not None else L.entries
        threshold, noise = mask_threshold(
            video.data, level, video.mask, threshold=settings.threshold,
            threshold_k=settings.threshold_k,
        )  # fmt: skip
    clock.add("masks", time.perf_counter() - t)
    n = video.n_frames
    report = WindowReport(
        first_frame=state.done,
        frames=n,
        new_frames=n - new_from,
        method=result.method,
        iterations=result.iterations,
        converged=result.converged,
        residual=result.residual,
        change=result.changes[-1] if result.changes else None,
        threshold=threshold,
        noise=noise,
    )
    state.done += n - new_from
    return Window(video, new_from, L, S, settings=settings, threshold=threshold, plan=plan,
                  index=index, report=report, clock=clock)  # fmt: skip


def _log_read(
    source: FrameSource, settings: SeparateSettings, plan: Plan, video: Video, clock: Stopwatch
) -> None:
    n = video.n_frames
    windowed = plan.window is not None and n == plan.window  # else read-ahead found it all
    logger.info(
        "read %d frames of %dx%d from %s (%.2fs)%s",
        n,
        video.width,
        video.height,
        source.name,
        clock.seconds["read"],
        f"; solving in windows of {plan.window} frames, overlap {settings.overlap}"
        if windowed
        else "",
    )


def _log_window(
    window: Window, result: SolverResult, plan: Plan, clock: Stopwatch, t_read: float
) -> None:
    report = window.report
    assert report is not None
    if window.index > 0 or (plan.window is not None and report.frames == plan.window):
        logger.info(
            "window %d: frames %d-%d, %d iterations, converged=%s, residual %.3g (%.2fs)",
            window.index + 1,
            report.first_frame + 1,
            report.first_frame + report.new_frames,
            result.iterations,
            result.converged,
            result.residual,
            time.perf_counter() - t_read,
        )
    else:
        logger.info(
            "%s: %d iterations, converged=%s, residual %.3g (%.2fs)",
            result.method,
            result.iterations,
            result.converged,
            result.residual,
            clock.seconds["solve"],
        )
