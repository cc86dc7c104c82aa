"""Reading what an input says about itself, at a bounded cost: header lines with a length
cap, small text files with a size cap, image sizes from their headers (before any pixel is
decoded), and the check of a frame size or rate against the bounds of
:mod:`bpvideo.settings`.

Every reader of a header or a small file goes through here, so that no input, whatever it
announces, costs more than the bounds allow before it is refused.
"""

from __future__ import annotations

import math
import os
import warnings
from typing import BinaryIO

import cv2
import numpy as np

from bpvideo.errors import InputError, literal
from bpvideo.limits import (
    FPS_RANGE,
    MAX_HEADER_LINE,
    MAX_PIXELS,
    MAX_SIDE,
    MAX_TEXT_BYTES,
)

__all__ = [
    "check_frame_size",
    "check_rate",
    "decode_image",
    "image_size",
    "read_image",
    "read_line",
    "read_text",
]


def read_line(stream: BinaryIO, name: str, what: str, limit: int = MAX_HEADER_LINE) -> bytes:
    """One line of a stream (with its newline), at most ``limit`` bytes.

    Returns the bytes before the end of the stream when it ends without a newline (``b""``
    at its end).

    Raises
    ------
    InputError
        The line is longer than ``limit`` (a header with no newline, say).
    """
    line = stream.readline(limit + 1)
    if len(line) > limit and not line.endswith(b"\n"):
        raise InputError(
            f"{literal(name)}: {what} is longer than {limit} bytes (no end of line): the "
            "stream is not what it claims to be; check the input"
        )
    return line


def read_text(path: str | os.PathLike, what: str, limit: int = MAX_TEXT_BYTES) -> str:
    """A small text file read whole (UTF-8, undecodable bytes replaced).

    Raises
    ------
    OSError
        The file cannot be read (callers name the fix).
    InputError
        The file is larger than ``limit`` bytes.
    """
    with open(path, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise InputError(
            f"{literal(path)}: {what} is larger than {limit // 2**20} MiB: give the right file"
        )
    return data.decode("utf-8", "replace")


def check_frame_size(width: int, height: int, name: str, what: str = "frames") -> None:
    """Refuse a frame size outside the bounds (:data:`~bpvideo.settings.MAX_SIDE`,
    :data:`~bpvideo.settings.MAX_PIXELS`) before anything of that size is allocated.

    Raises
    ------
    InputError
        Naming the input, the size and the bounds.
    """
    if width < 1 or height < 1 or max(width, height) > MAX_SIDE or width * height > MAX_PIXELS:
        raise InputError(
            f"{literal(name)}: {what} of {width}x{height} pixels are outside the bounds (1 to "
            f"{MAX_SIDE} a side, at most {MAX_PIXELS} pixels): check the input (a frame of "
            f"{MAX_SIDE}x{MAX_PIXELS // MAX_SIDE} already needs "
            f"{MAX_PIXELS * 3 / 2**30:.1f} GiB decoded)"
        )


def check_rate(rate: float | None, name: str, fps: float | None) -> float | None:
    """The frame rate an input announces, checked (None when it announces none).

    A rate given by ``fps`` (the option) makes the input's irrelevant.

    Raises
    ------
    InputError
        A rate that is not a number in :data:`~bpvideo.settings.FPS_RANGE` (negative, NaN,
        1e300...), when ``fps`` does not replace it.
    """
    if rate is None or rate == 0:
        return None
    if fps is not None:
        return rate
    low, high = FPS_RANGE
    if not (math.isfinite(rate) and low <= rate <= high):
        raise InputError(
            f"{literal(name)}: the input announces a frame rate of {rate:g} frames/s, outside "
            f"{low:g} to {high:g}: give the rate with {{fps}}",
            option=("fps", None),
        )
    return rate


def image_size(path: str | os.PathLike) -> tuple[int, int] | None:
    """``(width, height)`` of an image file from its header, or None when it is not an
    image that can be read. No pixel is decoded.
    """
    from PIL import Image, UnidentifiedImageError

    # Pillow only reads the header here (OpenCV decodes): its own bomb check, which would
    # hide the size behind an error, is off for that instant; ours follows the header.
    bound, Image.MAX_IMAGE_PIXELS = Image.MAX_IMAGE_PIXELS, None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(path) as image:
                return image.size
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
        return None
    finally:
        Image.MAX_IMAGE_PIXELS = bound


def read_image(path: str | os.PathLike, flags: int = cv2.IMREAD_UNCHANGED) -> np.ndarray | None:
    """``cv2.imread(path, flags)``, once the header says the image is within the bounds.

    Returns None when the file cannot be read as an image (as ``cv2.imread`` does).

    Raises
    ------
    InputError
        The header announces an image larger than the bounds (nothing was decoded).
    """
    size = image_size(path)
    if size is None:
        return None
    check_frame_size(*size, str(path), "an image")
    return decode_image(path, flags)


def decode_image(path: str | os.PathLike, flags: int = cv2.IMREAD_UNCHANGED) -> np.ndarray | None:
    """An image file decoded from its bytes (``cv2.imdecode``): OpenCV never gets the
    name, which it could not take when it is not UTF-8. None when it is not an image."""
    try:
        data = np.fromfile(os.fspath(path), np.uint8)
    except (OSError, ValueError):
        return None
    if data.size == 0:
        return None
    return cv2.imdecode(data, flags)
