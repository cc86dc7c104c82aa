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

import threading
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
    "EARLY_PIXELS",
    "OUTPUT_FRAMES",
    "EarlyBackground",
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
#: Pixels of a window's first new frames whose uint8 background :class:`EarlyBackground`
#: forms and hands on (the result's background video) as soon as the window is solved,
#: while the window's model is formed on the main thread, beside it on the other core:
#: 4 blocks of 320x240, 128 frames (x264 encodes them in ~0.1 s at ``veryfast``, about
#: the time of the model), held until their blocks are formed (10 MB grey).
EARLY_PIXELS = 4 * OUTPUT_PIXELS  # whole blocks: at least one


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
    early : EarlyBackground or None
        The uint8 background of the first blocks, formed (and handed on) while the
        window's model was formed; :func:`finish` takes it instead of forming it again.
    """

    video: Video
    new_from: int
    L: Background
    S: np.ndarray | None
    model: MaskModel | None
    info: WindowInfo
    early: EarlyBackground | None = None

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
    formed: dict[int, np.ndarray] = {}
    if solution.early is not None:  # before any block: its frames were handed on first
        formed = solution.early.join()
        clock.add("write", solution.early.seconds)
        solution.early = None

    def block(lo: int) -> tuple[Block, Stopwatch]:
        hi = min(len(numbers), lo + step)
        watch = Stopwatch()  # each thread its own: added up in order below
        frames = video.frame_block(new_from + lo, new_from + hi)
        masks, background = _form(solution, options, new_from + lo, new_from + hi, frames, watch,
                                  formed.pop(new_from + lo, None))  # fmt: skip
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


def _by_frames(solution: Solution) -> bool:
    """Whether the outputs are formed frame by frame (contiguous): when the frames are
    kept as planes and nothing else is needed (no observation mask, no sparse part)."""
    video = solution.video
    return video.mask is None and solution.S is None and video.plane_block(0, 0) is not None


def _background(solution: Solution, lo: int, hi: int, Lc: np.ndarray) -> np.ndarray:
    """uint8 background frames (k, H, W[, 3]) of the window's frames ``lo:hi`` from their
    float background ``Lc`` (frames if :func:`_by_frames`, else m x k columns): rounded and
    saturated."""
    if _by_frames(solution):
        flat = Lc.reshape(len(Lc), -1)  # rounded and saturated, as columns_to_frames
        return cv2.add(flat, 0.0, dtype=cv2.CV_8U).reshape(Lc.shape)
    return columns_to_frames(Lc, solution.video.frame_shape)


def _float_background(solution: Solution, lo: int, hi: int) -> np.ndarray:
    """The float background of the window's frames ``lo:hi``, as :func:`_form` takes it."""
    if _by_frames(solution):
        return solution.L.frames(lo, hi, solution.video.frame_shape)
    return solution.L.columns(lo, hi)


class EarlyBackground:
    """The uint8 background of a solved window's first new frames (:data:`EARLY_PIXELS`),
    formed block by block (as :func:`finish` forms it) by a thread and handed to ``take``
    while the window's model is formed: the result's background video starts encoding on
    the core the model leaves idle. :func:`finish` joins it before its first block.

    Parameters
    ----------
    solution : Solution
        The solved window (its model may not be formed yet: only ``L`` is read).
    take : callable
        ``take(frames)``: the next background frames (k, H, W[, 3]) uint8, in order.
    """

    def __init__(self, solution: Solution, take: Callable[[np.ndarray], None]) -> None:
        video, new_from, n = solution.video, solution.new_from, len(solution.numbers)
        step = output_frames(video.frame_shape)  # whole blocks of finish: the same frames
        count = max(1, EARLY_PIXELS // (step * video.height * video.width))
        self._blocks = [(new_from + lo, new_from + min(n, lo + step))
                        for lo in range(0, min(n, count * step), step)]  # fmt: skip
        self._solution, self._take = solution, take
        self._stop = threading.Event()
        self._formed: dict[int, np.ndarray] = {}
        self._error: BaseException | None = None
        self.seconds = 0.0  #: of the thread's work (the ``write`` stage's)
        self._thread = threading.Thread(target=self._run, name="bpvideo-early", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        t = time.perf_counter()
        try:
            for lo, hi in self._blocks:
                if self._stop.is_set():
                    break
                background = _background(self._solution, lo, hi,
                                         _float_background(self._solution, lo, hi))  # fmt: skip
                self._take(background)
                self._formed[lo] = background
        except BaseException as exc:  # the caller's to raise (join)
            self._error = exc
        self.seconds = time.perf_counter() - t

    def join(self) -> dict[int, np.ndarray]:
        """Wait for the thread; the frames it formed by their first frame's position in
        the window. Raises the thread's error (the encoder's: a full disk...)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._formed

    def stop(self) -> None:
        """Stop after the current block and wait (the window failed or was dropped): nothing
        more is handed on."""
        self._stop.set()
        self._thread.join()


def _form(
    solution: Solution,
    options: MaskOptions,
    lo: int,
    hi: int,
    frames: np.ndarray,
    clock: Stopwatch,
    background: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Masks (k, H, W) and uint8 background frames of the window's frames ``lo:hi``
    (``frames``, BGR); ``background``: those frames' uint8 background when formed already
    (:class:`EarlyBackground`)."""
    video, S = solution.video, solution.S
    t = time.perf_counter()
    shape = video.frame_shape
    by_frames = _by_frames(solution)
    Lc = _float_background(solution, lo, hi)
    A = video.plane_block(lo, hi) if by_frames else video.data[:, lo:hi]
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
    if background is None:
        background = _background(solution, lo, hi, Lc)
    clock.add("write", time.perf_counter() - t2)
    return masks, background
