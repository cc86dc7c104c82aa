"""Frames handed over in memory: an array of frames, or any iterable of them (the library).

``bpvideo.separate(frames)`` takes what OpenCV and imageio give: a (T, H, W) grey or
(T, H, W, 3) BGR array, or any iterable of (H, W) / (H, W, 3) frames (a generator reads
them one at a time, so memory stays bounded by the window). uint8 frames are used as
they are; other dtypes are grey levels 0..255, rounded and clipped to uint8. Images of
0..1 are refused, not read as black: a float first frame whose values all lie in 0..1
(not all 0) is taken for one, with the fix (multiply by 255); so are frames of more than
8 bits, not read as white: a first frame with values above :data:`DEEP_FRAME` (a 16-bit
camera's) is refused with the divisor that makes it 0..255, and a first frame of signed
or centred values (more than :data:`NEGATIVE_SHARE` of them below ``-UNDERSHOOT``) with
the shift, not read as black. Frames are numbered from 0, as a video's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import cv2
import numpy as np

from bpvideo.errors import InputError
from bpvideo.limits import DEFAULT_FPS
from bpvideo.sources.stream import (
    FrameSource,
    frame_size,
    resolve_selection,
    scaled_frames,
    select_frames,
    selected_count,
)

__all__ = ["as_bgr", "open_frames"]

#: Above this, a first frame is taken for one of more than 8 bits (10-, 12-, 16-bit
#: cameras), refused with the divisor that makes it 0..255 rather than clipped to white;
#: up to it, values past 255 are overshoot (of a gain, a filter) and are clipped.
DEEP_FRAME = 511
#: A first frame with more than this share of its values below ``-UNDERSHOOT`` is taken
#: for signed or centred data (int8, frames minus their mean) and refused with the fix,
#: rather than clipped to black; fewer are the undershoot of a filter at dark edges.
NEGATIVE_SHARE = 0.01
UNDERSHOOT = 16


def as_bgr(frame: Any, index: int = 0) -> np.ndarray:
    """One frame as a (H, W, 3) uint8 BGR array.

    Parameters
    ----------
    frame : (H, W) or (H, W, 1) or (H, W, 3) array_like
        Grey or BGR; uint8, or grey levels 0..255 of any real dtype (rounded, clipped).
    index : int
        Its position, for messages.

    Returns
    -------
    (H, W, 3) uint8 ndarray

    Raises
    ------
    InputError
        A frame that is not an image of 1 or 3 channels, or holds NaN or infinity.
    """
    image = np.asarray(frame)
    if image.ndim == 3 and image.shape[2] == 1:
        image = image[:, :, 0]
    if (
        image.ndim not in (2, 3)
        or (image.ndim == 3 and image.shape[2] != 3)
        or min(image.shape[:2], default=0) < 1
    ):
        raise InputError(
            f"frame {index} has shape {image.shape}: give (H, W) grey or (H, W, 3) BGR frames"
        )
    if image.dtype != np.uint8:
        if image.dtype.kind not in "biuf":
            raise InputError(f"frame {index} is of dtype {image.dtype}: give uint8 or numbers")
        values = image.astype(np.float32)
        if not np.isfinite(values).all():
            raise InputError(f"frame {index} holds NaN or infinity: give grey levels 0..255")
        if index == 0 and image.dtype.kind == "f" and 0 < values.max() <= 1 and values.min() >= 0:
            raise InputError(
                f"frame 0 is {image.dtype} with values in 0..1 (at most {values.max():g}): "
                "frames are grey levels 0..255; multiply by 255 (or give uint8)"
            )
        if index == 0 and (top := float(values.max())) > DEEP_FRAME:
            bits = int(top).bit_length()
            raise InputError(
                f"frame 0 is {image.dtype} with values up to {top:g}: frames are grey levels "
                f"0..255; divide by {2 ** (bits - 8)} (its values take {bits} bits) or give uint8"
            )
        if index == 0 and (below := float(np.mean(values < -UNDERSHOOT))) > NEGATIVE_SHARE:
            raise InputError(
                f"frame 0 is {image.dtype} with {below:.0%} of its values below 0 (down to "
                f"{float(values.min()):g}): frames are grey levels 0..255; shift them (add "
                "128 to centred frames) or give uint8"
            )
        image = np.clip(np.rint(values), 0, 255).astype(np.uint8)
    if image.ndim == 2:
        return cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
    return np.ascontiguousarray(image)


def open_frames(
    frames: Any,
    *,
    start: int | str = 0,
    count: int | None = None,
    step: int = 1,
    scale: float = 1.0,
    fps: float | None = None,
    name: str = "frames",
    end: int | str | None = None,
    duration: int | str | None = None,
) -> FrameSource:
    """A :class:`~bpvideo.sources.files.FrameSource` of frames in memory.

    Parameters
    ----------
    frames : (T, H, W[, 3]) array_like, or iterable of (H, W[, 3]) array_like
        The frames (see the module docstring). An iterable is read as it is consumed.
    start, count, step : int
        Selection, as ``--start``, ``--frames`` and ``--step``.
    end, duration : int or str, optional
        Where to stop instead of ``count``, as ``--end`` and ``--duration``; times are
        converted with ``fps``.
    scale : float
        Resize factor.
    fps : float, optional
        Frame rate (default :data:`~bpvideo.limits.DEFAULT_FPS`).
    name : str
        The source, for messages and the report.

    Returns
    -------
    FrameSource

    Raises
    ------
    InputError
        Not frames, or no frame at all; a frame of another shape than the first is refused
        when it is reached.
    """
    total: int | None = None
    if isinstance(frames, np.ndarray):
        if frames.ndim not in (3, 4):
            raise InputError(
                f"{name} has shape {frames.shape}: give a (T, H, W) or (T, H, W, 3) array, or "
                "an iterable of frames"
            )
        total = len(frames)
        iterator: Iterator[Any] = iter(frames)
    elif isinstance(frames, Iterable) and not isinstance(frames, (str, bytes)):
        total = len(frames) if hasattr(frames, "__len__") else None
        iterator = iter(frames)
    else:
        raise InputError(
            f"{name} is a {type(frames).__name__}: give an array of frames or an iterable of "
            "them (for a file, use separate_file)"
        )
    try:
        given = next(iterator)
    except StopIteration:
        raise InputError(f"{name} holds no frame: give two frames or more") from None
    first = as_bgr(given, 0)
    h, w = first.shape[:2]
    rate = float(fps) if fps is not None else DEFAULT_FPS
    start, count = resolve_selection(start, count, end, duration, step, rate)
    count_selected = selected_count(total, start, count, step)
    source = FrameSource(name, w, h, rate, count_selected, (w, h), iter(()),
                         channels=3 if np.ndim(given) == 3 and np.shape(given)[2] == 3 else 1,
                         total_frames=total)  # fmt: skip
    source.start = start
    numbered = _numbered(first, iterator, (h, w))
    source.width, source.height = frame_size(w, h, scale, name)
    selected = select_frames(numbered, start, count, step)
    source.frames = scaled_frames(source, selected, scale, (False, False), (start, count, step))
    return source


def _numbered(
    first: np.ndarray, rest: Iterator[Any], shape: tuple[int, int]
) -> Iterator[tuple[int, np.ndarray]]:
    """``(index, BGR frame)`` of every frame, checked against the first one's size."""
    yield 0, first
    for index, frame in enumerate(rest, start=1):
        image = as_bgr(frame, index)
        if image.shape[:2] != shape:
            raise InputError(
                f"frame {index} is {image.shape[1]}x{image.shape[0]} but frame 0 is "
                f"{shape[1]}x{shape[0]}: every frame must have one size"
            )
        yield index, image
