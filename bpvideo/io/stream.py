"""A stream of numbered frames (:class:`FrameSource`): what every source gives the pipeline.

Sources (files and folders, stdin: :mod:`bpvideo.io.sources`; frames in memory:
:mod:`bpvideo.io.arrays`) are read only as the frames are consumed; the selection
(``start``, ``frames``, ``step``) and the resizing (``scale``) are the same for all.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from bpvideo.errors import InputError, WorkError, literal

__all__ = [
    "FrameSource",
    "TruncatedVideoError",
    "frame_size",
    "resize_frame",
    "scaled_frames",
    "scaled_size",
    "select_frames",
    "selected_count",
]

logger = logging.getLogger("bpvideo")


class TruncatedVideoError(WorkError):
    """A video whose decoding stopped before its end (truncated or damaged).

    Attributes
    ----------
    decoded : int
        Frames decoded before the failure (frame numbers ``0 .. decoded - 1``).
    expected : int or None
        Frames the container announces (None when it does not say).
    """

    def __init__(self, message: str, decoded: int, expected: int | None) -> None:
        super().__init__(message, option=("allow_partial", False))
        self.decoded = decoded
        self.expected = expected


def resize_frame(
    image: np.ndarray, scale: float, interpolation: int = cv2.INTER_AREA
) -> np.ndarray:
    """``image`` resized by ``scale`` (``INTER_AREA`` down, ``INTER_LINEAR`` up)."""
    if scale == 1.0:
        return image
    h, w = image.shape[:2]
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    if scale > 1.0 and interpolation == cv2.INTER_AREA:
        interpolation = cv2.INTER_LINEAR
    return cv2.resize(image, size, interpolation=interpolation)


@dataclass
class FrameSource:
    """A stream of selected, scaled uint8 BGR frames, read only as they are consumed.

    Attributes
    ----------
    name : str
        Where the frames come from (``"-"`` for stdin).
    width, height : int
        Frame size after scaling.
    fps : float
        Frame rate of the selected frames.
    frame_count : int or None
        Frames expected after the selection (None when unknown, e.g. stdin).
    native_size : (int, int)
        ``(width, height)`` before scaling.
    frames : iterator of (int, (H, W, 3) uint8 ndarray)
        Frame number and frame, in order.
    numbering : {"index", "name"}
        What the frame numbers are: 0-based decode indices (videos, pipes, arrays), or the
        numbers in the frame files' names (image folders).
    channels : {1, 3}
        Channels of the frames as given (1: grey arrays; the frames are BGR all the same).
    total_frames : int or None
        Frames in the source before the selection (None when unknown, e.g. stdin).
    partial : bool
        Set once the frames are consumed: the video was truncated or damaged and
        ``allow_partial`` kept the frames decoded before the damage.
    frames_expected : int or None
        With ``partial``: the frames the container announced.
    """

    name: str
    width: int
    height: int
    fps: float
    frame_count: int | None
    native_size: tuple[int, int]
    frames: Iterator[tuple[int, np.ndarray]]
    numbering: str = "index"
    channels: int = 3
    total_frames: int | None = None
    partial: bool = False
    frames_expected: int | None = None
    _decoder: Any = None

    def mask_number(self, frame_number: int) -> int:
        """The number in the name of a frame's mask file (``bin%06d.png``).

        As changedetection.net names result files: the number of the frame's file for
        image folders (``in000470.jpg`` -> ``bin000470.png``), the 0-based index + 1 for
        videos and pipes (``--start 50`` gives ``bin000051.png`` first).
        """
        return frame_number if self.numbering == "name" else frame_number + 1

    def nothing_selected(self, start: int, step: int) -> InputError:
        """The error of a selection that holds no frame."""
        total = self.total_frames
        total = "" if total is None else f"the source has {total} frame(s), "
        return InputError(
            f"{self.name}: no frames selected ({total}{{start=}}, {{step={step}}}): lower "
            "{start} or check the input",
            option=("start", start),
        )

    def close(self) -> None:
        """Stop reading (ends a decoding child process)."""
        for frames in (self.frames, self._decoder):
            close = getattr(frames, "close", None)
            if close is not None:
                close()


def scaled_size(w: int, h: int, scale: float) -> tuple[int, int]:
    if scale == 1.0:
        return w, h
    return max(1, round(w * scale)), max(1, round(h * scale))


def frame_size(w: int, h: int, scale: float, name: str) -> tuple[int, int]:
    """The size of ``name``'s frames after ``scale``, checked against the bounds.

    Raises
    ------
    InputError
        Frames of ``w`` x ``h`` outside the bounds, or that ``scale`` makes smaller than
        :data:`~bpvideo.settings.MIN_SIDE` pixels a side (no scene left to separate) or
        larger than the bounds.
    """
    from bpvideo.io.headers import check_frame_size
    from bpvideo.settings import MIN_SIDE

    check_frame_size(w, h, name)
    sw, sh = scaled_size(w, h, scale)
    if min(sw, sh) < MIN_SIDE:
        least = MIN_SIDE / min(w, h)
        raise InputError(
            f"{literal(name)}: {{scale=}} makes frames of {sw}x{sh} pixels out of {w}x{h}: "
            f"raise {{scale}} to {least:.3g} or more ({MIN_SIDE} pixels a side at least)"
            if least <= 1
            else f"{literal(name)}: frames of {w}x{h} pixels are too small: give frames of "
            f"{MIN_SIDE}x{MIN_SIDE} pixels or more",
            option=("scale", scale),
        )
    check_frame_size(sw, sh, name, f"frames scaled by {scale:g}")
    return sw, sh


def select_frames(
    frames: Iterator[tuple[int, np.ndarray]], start: int, count: int | None, step: int
) -> Iterator[tuple[int, np.ndarray]]:
    kept = 0
    for index, frame in frames:
        if count is not None and kept >= count:
            return
        if index < start or (index - start) % step:
            continue
        kept += 1
        yield index, frame


def selected_count(total: int | None, start: int, frames: int | None, step: int) -> int | None:
    """Frames that ``start``/``frames``/``step`` select from ``total`` (None if unknown)."""
    if total is None:
        return None
    count = max(0, -(-(total - start) // step))
    return count if frames is None else min(count, frames)


def scaled_frames(
    source: FrameSource,
    selected: Iterator[tuple[int, np.ndarray]],
    scale: float,
    allow_partial: bool,
    selection: tuple[int, int | None, int],
) -> Iterator[tuple[int, np.ndarray]]:
    """The frames of ``selected`` resized; a truncation ends them when ``allow_partial``."""
    kept = 0
    try:
        for number, frame in selected:
            kept += 1
            yield number, resize_frame(frame, scale)
    except TruncatedVideoError as exc:
        if not allow_partial:
            raise
        source.partial = True
        source.frames_expected = selected_count(exc.expected, *selection)
        logger.warning(
            "%s: only %d frame(s) could be decoded (of %s announced); allow_partial keeps "
            "the %d selected frame(s) read and marks the result partial",
            source.name,
            exc.decoded,
            exc.expected if exc.expected is not None else "an unknown number",
            kept,
        )
    finally:
        close = getattr(selected, "close", None)
        if close is not None:
            close()
