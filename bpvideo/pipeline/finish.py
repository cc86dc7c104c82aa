"""Finishing a solved window: its new frames, with their background and masks, as blocks.

:func:`finish` forms the masks and uint8 background frames of a :class:`Solution`
:func:`output_frames` at a time from the full-resolution background (kept as factors when
the solve was downscaled), so that the background is never held whole as floats, and the
sinks get frames while the next ones are formed. With more than one thread
(:func:`bpvideo.cores.threads`, ``--threads``) that many blocks are formed side by side by
a pool of threads (thresholds, the match of the appearance samples, shadows and clean-up
release the interpreter lock: numpy, OpenCV, numba) while the sinks take the blocks
before them, in order: each block's masks are those one thread would form. Frames larger
than :data:`OUTPUT_PIXELS` (4K) are formed one at a time (the memory bound).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import cv2
import numpy as np

from bpvideo import cores
from bpvideo.masks import MaskModel, MaskOptions, foreground_masks
from bpvideo.pipeline.scale import Background
from bpvideo.records import Block, Stopwatch, Video, WindowInfo, WindowReport

__all__ = [
    "OUTPUT_FRAMES",
    "Solution",
    "columns_to_frames",
    "finish",
    "output_frames",
    "window_info",
]

#: Frames whose outputs are formed at a time (background columns, residual, masks): a
#: window's full-resolution background is never held whole, and the encoders get frames
#: while the next ones are formed.
OUTPUT_FRAMES = 32
#: Pixels of the frames whose outputs are formed at a time: :data:`OUTPUT_FRAMES` frames of
#: 320x240, fewer of larger frames (2 at 720p, 1 at 1080p), so that a block's float32
#: background, masks and foreground stay within a few tens of MB whatever the frame size.
OUTPUT_PIXELS = OUTPUT_FRAMES * 320 * 240


def output_frames(frame_shape: tuple[int, ...]) -> int:
    """Frames per block of outputs, for frames of ``frame_shape`` (see :data:`OUTPUT_PIXELS`)."""
    return max(1, min(OUTPUT_FRAMES, OUTPUT_PIXELS // (frame_shape[0] * frame_shape[1])))


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
class Solution:
    """One solved window, before its outputs are formed.

    Attributes
    ----------
    video : Video
        The window's frames as a data matrix (spooled frames are read back a block at a
        time, when the outputs are formed).
    new_from : int
        First frame not shared with the previous window (only new frames are finished).
    L : Background
        Full-resolution background of the window's frames (factors when downscaled).
    S : ndarray or None
        Full-resolution sparse part (the support rule only).
    model : MaskModel or None
        The thresholds of the masks (None for the support rule).
    info : WindowInfo
        Index, new frames, report and observed frames, shared by the window's blocks.
    """

    video: Video
    new_from: int
    L: Background
    S: np.ndarray | None
    model: MaskModel | None
    info: WindowInfo

    @property
    def numbers(self) -> list[int]:
        """Source frame numbers of the new frames."""
        return list(self.video.frame_numbers[self.new_from :])

    @property
    def background(self) -> Background:
        """Full-resolution background of the new frames (m x k)."""
        return self.L.select(self.new_from, self.video.n_frames)


def window_info(
    video: Video, new_from: int, index: int, report: WindowReport | None = None
) -> WindowInfo:
    """The :class:`~bpvideo.records.WindowInfo` of a window's new frames."""
    n = video.n_frames
    observed = float(n - new_from)
    if video.mask is not None:
        observed = float(video.mask[:, new_from:].mean()) * (n - new_from)
    return WindowInfo(index=index, frames=n - new_from, report=report, observed=observed)


def finish(
    solution: Solution,
    options: MaskOptions,
    clock: Stopwatch | None = None,
    region: np.ndarray | None = None,
) -> Iterator[Block]:
    """The new frames of a solved window with their background and masks, in blocks of
    :func:`output_frames` frames (formed as they are asked for, not kept); foreground
    outside ``region`` ((H, W) bool: ``--roi``/``--exclude``) is never reported."""
    clock = clock or Stopwatch()
    video, new_from = solution.video, solution.new_from
    numbers = solution.numbers
    step = output_frames(video.frame_shape)

    def block(lo: int) -> tuple[Block, Stopwatch]:
        hi = min(len(numbers), lo + step)
        watch = Stopwatch()  # each thread its own: added up in order below
        frames = video.frame_block(new_from + lo, new_from + hi)
        masks, background = _form(solution, options, new_from + lo, new_from + hi, frames, watch)
        if region is not None:
            masks &= region
        return Block(numbers[lo:hi], frames, background, masks, solution.info, lo), watch

    # a frame larger than a block's budget (4K) is formed one at a time, as before: each
    # block alive holds ~100 MB of float32 planes there, and the pool holds threads + 1
    threads = cores.threads() if video.height * video.width <= OUTPUT_PIXELS else 1
    for done, watch in in_order(block, range(0, len(numbers), step), threads):
        for stage in ("masks", "write"):
            clock.add(stage, watch.seconds[stage])
        yield done


def in_order(work: Callable, items, threads: int) -> Iterator:
    """``work(item)`` of each item, in order, computed by ``threads`` threads at most
    ``threads`` items beyond the one taken (one thread: one after another, no pool)."""
    if threads <= 1:
        yield from map(work, items)
        return
    with ThreadPoolExecutor(threads, thread_name_prefix="bpvideo-masks",
                            initializer=cores.in_pool) as pool:  # fmt: skip
        ahead: deque[Future] = deque()
        try:
            for item in items:
                ahead.append(pool.submit(work, item))
                if len(ahead) > threads:  # ``threads`` at work while this one is used
                    yield ahead.popleft().result()
            while ahead:
                yield ahead.popleft().result()
        finally:  # the consumer stopped early, or a block failed: no work left behind
            for future in ahead:
                future.cancel()


def _form(
    solution: Solution,
    options: MaskOptions,
    lo: int,
    hi: int,
    frames: np.ndarray,
    clock: Stopwatch,
) -> tuple[np.ndarray, np.ndarray]:
    """Masks (k, H, W) and uint8 background frames of the window's frames ``lo:hi``
    (``frames``, BGR)."""
    video, L, S = solution.video, solution.L, solution.S
    t = time.perf_counter()
    shape = video.frame_shape
    # frame by frame (contiguous) when the frames are kept and nothing else is needed
    planes = video.plane_block(lo, hi) if video.mask is None and S is None else None
    by_frames = planes is not None
    if by_frames:
        A, Lc = planes, L.frames(lo, hi, shape)
    else:
        A, Lc = video.data[:, lo:hi], L.columns(lo, hi)
    kwargs = options.for_view(*shape[:2]).kwargs()
    if solution.model is not None:
        kwargs["threshold"] = solution.model
    masks = foreground_masks(
        A,
        Lc,
        None if S is None else S[:, lo:hi],
        shape,
        observed=None if video.mask is None else video.mask[:, lo:hi],
        frames=frames,
        frame_offset=lo,
        **kwargs,
    ).masks
    t2 = time.perf_counter()
    clock.add("masks", t2 - t)
    if by_frames:
        flat = Lc.reshape(len(Lc), -1)  # rounded and saturated, as columns_to_frames
        background = cv2.add(flat, 0.0, dtype=cv2.CV_8U).reshape(Lc.shape)
    else:
        background = columns_to_frames(Lc, shape)
    clock.add("write", time.perf_counter() - t2)
    return masks, background
