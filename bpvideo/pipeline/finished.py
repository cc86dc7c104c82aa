"""A finished window: its new frames, their background, masks and report.

Masks and uint8 background frames are formed :data:`OUTPUT_FRAMES` at a time from the
full-resolution background (kept as factors when the solve was downscaled), so that the
background is never held whole as floats, and encoders get frames while the next ones
are formed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import cv2
import numpy as np

from bpvideo.io.summary import Stopwatch, WindowReport
from bpvideo.io.video import Video
from bpvideo.masks import foreground_masks
from bpvideo.pipeline.scale import Background
from bpvideo.settings import SeparateSettings
from bpvideo.thresholds import MaskModel

if TYPE_CHECKING:  # pragma: no cover
    from bpvideo.pipeline.run import Plan

__all__ = ["OUTPUT_FRAMES", "Block", "Window", "columns_to_frames", "masked_frames"]

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
    background kept as factors. They are kept, unless a consumer streams them
    (``blocks(keep=False)``: a writer that only passes them on). When the pipeline goes
    on to the next window, what they were made from (the data matrix, the solver's
    buffers) is let go (:meth:`release`): a window stays valid, holding only finished
    arrays.

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
    model : MaskModel or None
        The thresholds of the masks (None for the support rule).
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
        model: MaskModel | None,
        plan: Plan,
        index: int = 0,
        report: WindowReport | None = None,
        clock: Stopwatch | None = None,
    ) -> None:
        n = video.n_frames
        self.index = index
        self.numbers = list(video.frame_numbers[new_from:])
        # spooled frames are read back a block at a time, when the outputs are formed
        self._frames = None if video.frames is None else video.frames[new_from:]
        self.background = L.select(new_from, n)
        self.frame_shape = tuple(video.frame_shape)
        self.report = report
        self.model = model
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
        self._masks: np.ndarray | None = None
        self._bg: np.ndarray | None = None
        self._formed = 0  # frames whose outputs are kept
        self._streamed: int | None = None  # foreground pixels, once streamed

    def __len__(self) -> int:
        return len(self.numbers)

    @property
    def frames(self) -> np.ndarray:
        """(k, H, W, 3) uint8: the new frames (read back whole when they were spooled)."""
        if self._frames is None:
            if self._source is None:
                raise RuntimeError("this window's spooled frames were released")
            video, _, _, new_from = self._source
            self._frames = video.frame_block(new_from, video.n_frames)
        return self._frames

    def _frame_block(self, lo: int, hi: int) -> np.ndarray:
        """The new frames ``lo:hi`` (from the spool, unless kept)."""
        if self._frames is not None or self._source is None:
            return self.frames[lo:hi]
        video, _, _, new_from = self._source
        return video.frame_block(new_from + lo, new_from + hi)

    def blocks(self, size: int | None = None, *, keep: bool = True) -> Iterator[Block]:
        """The window's frames with their background and masks, ``size`` at a time.

        With ``keep=False`` (and nothing formed yet) the blocks are formed and handed out
        without being kept, :data:`OUTPUT_FRAMES` at a time: :attr:`masks` and
        :attr:`background_frames` are then unavailable, :attr:`foreground_pixels` is.
        """
        if not keep and self._formed == 0 and self._streamed is None:
            yield from self._stream()
            return
        size = size or output_frames(self.frame_shape)
        k = len(self.numbers)
        for lo in range(0, k, size):
            hi = min(k, lo + size)
            self._form_until(hi)
            assert self._masks is not None and self._bg is not None
            yield Block(self.numbers[lo:hi], self._frame_block(lo, hi), self._bg[lo:hi],
                        self._masks[lo:hi])  # fmt: skip

    @property
    def masks(self) -> np.ndarray:
        """(k, H, W) bool: foreground masks of the new frames."""
        self._form_until(len(self))
        assert self._masks is not None
        return self._masks

    @property
    def background_frames(self) -> np.ndarray:
        """(k, H, W) or (k, H, W, 3) uint8: the background of the new frames."""
        self._form_until(len(self))
        assert self._bg is not None
        return self._bg

    @property
    def foreground(self) -> np.ndarray:
        """(k, H, W, 3) uint8: the new frames where the mask is set, black elsewhere."""
        return masked_frames(self.frames, self.masks)

    @property
    def threshold(self) -> float | None:
        """The global threshold of the masks in grey levels (None for the support rule)."""
        return None if self.model is None else self.model.threshold

    @property
    def foreground_pixels(self) -> int:
        """Foreground pixels of the masks."""
        if self._streamed is not None:
            return self._streamed
        return int(np.count_nonzero(self.masks))

    def release(self, outputs: bool = True) -> None:
        """Let go of what the outputs are made from; form them first with ``outputs``
        (unless they were streamed)."""
        if outputs and self._streamed is None:
            self._form_until(len(self))
            self.frames  # noqa: B018 - kept with the outputs: read back before the spool goes
        self._source = None
        self.background = self.background.compact()

    def _stream(self) -> Iterator[Block]:
        """Blocks formed and handed out, not kept (see :meth:`blocks`)."""
        pixels = 0
        step = output_frames(self.frame_shape)
        for lo in range(0, len(self), step):
            hi = min(len(self), lo + step)
            frames = self._frame_block(lo, hi)
            masks, background = self._form(lo, hi, frames)
            pixels += int(np.count_nonzero(masks))
            yield Block(self.numbers[lo:hi], frames, background, masks)
        self._streamed = pixels

    def _form_until(self, hi: int) -> None:
        """Form and keep the outputs of the first ``hi`` frames."""
        if self._streamed is not None:
            raise RuntimeError("this window's outputs were streamed, not kept")
        if self._masks is None or self._bg is None:
            self._masks = np.empty((len(self), *self.frame_shape[:2]), dtype=bool)
            self._bg = np.empty((len(self), *self.frame_shape), dtype=np.uint8)
        while self._formed < hi:
            lo = self._formed
            end = min(len(self), lo + output_frames(self.frame_shape))
            self._masks[lo:end], self._bg[lo:end] = self._form(lo, end, self._frame_block(lo, end))
            self._formed = end

    def _form(self, lo: int, hi: int, frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Masks (k, H, W) and uint8 background frames of the new frames ``lo:hi``
        (``frames``, BGR)."""
        if self._source is None:
            raise RuntimeError("this window was released before its outputs were formed")
        video, L, S, new_from = self._source
        lo, hi = new_from + lo, new_from + hi
        t = time.perf_counter()
        shape = video.frame_shape
        # frame by frame (contiguous) when the frames are kept and nothing else is needed
        planes = video.plane_block(lo, hi) if video.mask is None and S is None else None
        by_frames = planes is not None
        if by_frames:
            A, Lc = planes, L.frames(lo, hi, shape)
        else:
            A, Lc = video.data[:, lo:hi], L.columns(lo, hi)
        kwargs = self._settings.mask_kwargs()
        if self.model is not None:
            kwargs["threshold"] = self.model
        masks = foreground_masks(
            A,
            Lc,
            None if S is None else S[:, lo:hi],
            shape,
            observed=None if video.mask is None else video.mask[:, lo:hi],
            frames=frames,
            **kwargs,
        ).masks
        t2 = time.perf_counter()
        self._clock.add("masks", t2 - t)
        if by_frames:
            flat = Lc.reshape(len(Lc), -1)  # rounded and saturated, as columns_to_frames
            background = cv2.add(flat, 0.0, dtype=cv2.CV_8U).reshape(Lc.shape)
        else:
            background = columns_to_frames(Lc, shape)
        self._clock.add("write", time.perf_counter() - t2)
        return masks, background
