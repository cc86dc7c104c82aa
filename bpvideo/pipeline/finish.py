"""Finishing a solved window: its new frames, with their background and masks, as blocks.

:func:`finish` forms the masks and uint8 background frames of a :class:`Solution`
:func:`output_frames` at a time from the full-resolution background (kept as factors when
the solve was downscaled), so that the background is never held whole as floats, and the
sinks get frames while the next ones are formed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import cv2
import numpy as np

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
    for lo in range(0, len(numbers), step):
        hi = min(len(numbers), lo + step)
        frames = video.frame_block(new_from + lo, new_from + hi)
        masks, background = _form(solution, options, new_from + lo, new_from + hi, frames, clock)
        if region is not None:
            masks &= region
        yield Block(numbers[lo:hi], frames, background, masks, solution.info, lo)


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
    kwargs = options.kwargs()
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
