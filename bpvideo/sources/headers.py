"""Reading what an input says about itself, at a bounded cost: header lines with a length
cap, small text files with a size cap, image sizes from their headers (before any pixel is
decoded), and the check of a frame size or rate against the bounds of
:mod:`bpvideo.settings`.

Every reader of a header or a small file goes through here, so that no input, whatever it
announces, costs more than the bounds allow before it is refused.
"""

from __future__ import annotations

import errno
import fcntl
import io
import math
import os
import stat
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
    "open_file",
    "read_image",
    "read_line",
    "read_text",
    "video_container",
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
    with open_file(path, what) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise InputError(
            f"{literal(path)}: {what} is larger than {limit // 2**20} MiB: give the right file"
        )
    return data.decode("utf-8", "replace")


#: What a path that is not a regular file is, for messages (``stat.S_IFMT`` -> words).
_KINDS = {stat.S_IFIFO: "a named pipe (FIFO)", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}  # fmt: skip


def open_file(path: str | os.PathLike, what: str = "the file") -> BinaryIO:
    """Open a file that must be a regular file, for reading, without ever blocking.

    The path is opened with ``O_NONBLOCK`` (a FIFO with no writer would otherwise block
    the open, or the first read, for ever) and refused unless it is a regular file; the
    file is then switched back to blocking reads.

    Parameters
    ----------
    path : str or PathLike
        The file.
    what : str
        How a message names it (``"the defaults file"``).

    Returns
    -------
    BinaryIO
        Open for binary reading; the caller closes it.

    Raises
    ------
    InputError
        A FIFO, a device or a socket: ``"PATH: WHAT is a named pipe (FIFO), not a regular
        file: give a file"``.
    OSError
        The file cannot be opened (missing, a folder, no permission): callers name the fix.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
        if not stat.S_ISREG(mode):
            kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
            raise InputError(f"{literal(path)}: {literal(what)} is {kind}, not a regular file "
                             "(it would be waited on for ever): give a file")  # fmt: skip
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _file_bytes(path: str | os.PathLike, what: str) -> bytes | None:
    """The bytes of a regular file, None when it cannot be opened or read."""
    try:
        with open_file(path, what) as fh:
            return fh.read()
    except OSError:
        return None


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


def image_size(path: str | os.PathLike | BinaryIO) -> tuple[int, int] | None:
    """``(width, height)`` of an image file (or of its bytes, a file object) from its
    header, or None when it is not an image that can be read (a FIFO, a device: not
    waited on). No pixel is decoded.
    """
    from PIL import Image, UnidentifiedImageError

    # Pillow only reads the header here (OpenCV decodes): its own bomb check, which would
    # hide the size behind an error, is off for that instant; ours follows the header.
    bound, Image.MAX_IMAGE_PIXELS = Image.MAX_IMAGE_PIXELS, None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            if isinstance(path, (str, os.PathLike)):
                with open_file(path, "the image") as fh, Image.open(fh) as image:
                    return image.size
            with Image.open(path) as image:
                return image.size
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
        return None
    finally:
        Image.MAX_IMAGE_PIXELS = bound


#: Major brands of ISO base media files (MP4, MOV, 3GP) that are videos: an image in such
#: a box (AVIF, HEIF) names its own brand (``avif``, ``heic``, ``mif1``...).
VIDEO_BRANDS = frozenset((
    b"isom", b"iso2", b"iso4", b"iso5", b"iso6", b"mp41", b"mp42", b"avc1", b"M4V ",
    b"qt  ", b"3gp4", b"3gp5", b"3g2a", b"dash", b"mmp4",
))  # fmt: skip


def video_container(path: str | os.PathLike) -> bool:
    """Whether a file starts as a video container does (MP4/MOV of a video brand,
    Matroska/WebM, AVI): no image starts so, and :func:`image_size` (which loads every
    image plugin of Pillow, ~50 ms, to find none) need not be asked. False when unsure."""
    try:
        with open_file(path, "the video") as fh:
            head = fh.read(12)
    except (OSError, InputError):
        return False
    if head[4:8] == b"ftyp":
        return head[8:12] in VIDEO_BRANDS
    return head[:4] == b"\x1aE\xdf\xa3" or (head[:4] == b"RIFF" and head[8:12] == b"AVI ")


def read_image(path: str | os.PathLike, flags: int = cv2.IMREAD_UNCHANGED) -> np.ndarray | None:
    """``cv2.imread(path, flags)``, once the header says the image is within the bounds.

    Returns None when the file cannot be read as an image (as ``cv2.imread`` does).

    Raises
    ------
    InputError
        The header announces an image larger than the bounds (nothing was decoded).
    """
    data = _file_bytes(path, "the image")
    if not data:
        return None
    size = image_size(io.BytesIO(data))
    if size is None:
        return None
    check_frame_size(*size, str(path), "an image")
    return cv2.imdecode(np.frombuffer(data, np.uint8), flags)


def decode_image(path: str | os.PathLike, flags: int = cv2.IMREAD_UNCHANGED) -> np.ndarray | None:
    """An image file decoded from its bytes (``cv2.imdecode``): OpenCV never gets the
    name, which it could not take when it is not UTF-8. None when it is not an image."""
    data = _file_bytes(path, "the image")
    if not data:
        return None
    return cv2.imdecode(np.frombuffer(data, np.uint8), flags)
