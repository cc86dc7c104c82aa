"""YUV4MPEG2 (y4m) streams: the header, and frames read into uint8 BGR.

Every bit depth ffmpeg writes is read (``C420jpeg``, ``C444p10``, ``Cmono16``...): samples
of more than 8 bits are little-endian 16-bit words, put on the 8-bit scale the way ffmpeg
converts them (limited range: divided by ``2**(bits - 8)``, so 10-bit 64..940 is 8-bit
16..235; full range: scaled by ``255 / (2**bits - 1)``) before the BT.601 conversion, so a
10-bit clip gives what the same clip in 8 bits does. With ``scale``, each frame's planes
are resized before anything else is made of them: memory follows the scaled size, not
the stream's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import cv2
import numpy as np

from bpvideo.errors import InputError, WorkError, literal, shown
from bpvideo.limits import DEFAULT_FPS
from bpvideo.sources.headers import check_frame_size, read_line

__all__ = ["Y4M_MAGIC", "Y4MHeader", "parse_y4m_header", "read_exact", "y4m_frames"]

Y4M_MAGIC = b"YUV4MPEG2"
#: Colour spaces: ``420``, ``422``, ``444`` (any chroma siting) or ``mono``, then ``p`` and
#: the bits for more than 8 (``444p10``, ``mono16``).
_COLORSPACE = re.compile(r"^(420|422|444|mono)[a-z]*?(?:p?(9|1[0-6]))?$")


@dataclass
class Y4MHeader:
    """What a YUV4MPEG2 stream header says (``depth``: bits per sample)."""

    width: int
    height: int
    fps: float
    colorspace: str
    full_range: bool
    depth: int = 8


def parse_y4m_header(line: bytes, name: str = "-") -> Y4MHeader:
    """Parse the first line of a y4m stream (``YUV4MPEG2 W320 H240 F25:1 C420jpeg ...``).

    Raises
    ------
    InputError
        If the header is not y4m, lacks the size, or has an unsupported colour space.
    """
    tokens = line.decode("ascii", "replace").split()
    if not tokens or tokens[0] != "YUV4MPEG2":
        raise InputError(
            f"{literal(name)}: not a y4m stream header: give {{size='WxH'}} for raw frames",
            option=("size", None),
        )
    fields = {t[0]: t[1:] for t in tokens[1:] if t}
    try:
        width, height = int(fields["W"]), int(fields["H"])
    except (KeyError, ValueError):
        raise InputError(
            f"{literal(name)}: y4m header lacks W/H: {literal(shown(line))}: check the stream"
        ) from None
    check_frame_size(width, height, name, "y4m frames")
    fps = DEFAULT_FPS
    if "F" in fields:
        num, _, den = fields["F"].partition(":")
        try:
            fps = float(num) / float(den or 1)
        except (ValueError, ZeroDivisionError, OverflowError):
            fps = math.nan  # refused below, unless --fps replaces it
    colorspace = fields.get("C", "420jpeg")
    match = _COLORSPACE.match(colorspace)
    if match is None:
        raise InputError(
            f"{literal(name)}: y4m colour space C{literal(colorspace)} is not supported (420, "
            "422, 444 and mono of 8 to 16 bits are): convert with ffmpeg -pix_fmt yuv420p"
        )
    full = any(t.upper() == "XCOLORRANGE=FULL" for t in tokens)
    depth = int(match.group(2) or 8)
    return Y4MHeader(width, height, fps, match.group(1), full, depth)


def read_exact(stream: BinaryIO, size: int) -> bytes:
    """Up to ``size`` bytes: fewer only at the end of the stream."""
    chunks = []
    got = 0
    while got < size:
        chunk = stream.read(size - got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _read_into(stream: BinaryIO, buffer: bytearray) -> int:
    """Fill ``buffer`` from ``stream``; the bytes read (fewer only at its end)."""
    view, got = memoryview(buffer), 0
    while got < len(buffer):
        count = stream.readinto(view[got:]) if hasattr(stream, "readinto") else None
        if count is None:  # a stream without readinto
            chunk = stream.read(len(buffer) - got)
            count = len(chunk)
            view[got : got + count] = chunk
        if not count:
            break
        got += count
    return got


def _chroma_size(header: Y4MHeader) -> tuple[int, int]:
    w, h = header.width, header.height
    return {
        "420": ((w + 1) // 2, (h + 1) // 2),
        "422": ((w + 1) // 2, h),
        "444": (w, h),
        "mono": (0, 0),
    }[header.colorspace]


def _eight_bit(plane: np.ndarray, header: Y4MHeader) -> np.ndarray:
    """A plane of samples as float32 on the 8-bit scale (see the module docstring)."""
    values = plane.astype(np.float32)
    if header.depth == 8:
        return values
    if header.full_range or header.colorspace == "mono":
        return values * np.float32(255 / (2**header.depth - 1))
    return values * np.float32(1 / 2 ** (header.depth - 8))


def _resized(plane: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``plane`` at ``size`` (width, height): averaged over areas when smaller, its
    samples repeated when larger (subsampled chroma at the frame's size)."""
    if plane.shape[::-1] == size:
        return plane
    shrink = size[0] <= plane.shape[1] and size[1] <= plane.shape[0]
    return cv2.resize(plane, size, interpolation=cv2.INTER_AREA if shrink else cv2.INTER_NEAREST)


def _yuv_to_bgr(y: np.ndarray, u: np.ndarray, v: np.ndarray, full: bool) -> np.ndarray:
    """BT.601 YUV planes (float32 on the 8-bit scale, same size; changed here) to BGR
    uint8, worked in place: a frame's conversion holds a few planes, not a dozen."""
    u -= np.float32(128.0)
    v -= np.float32(128.0)
    if full:
        coefficients = (1.772, 0.0, -0.344136, -0.714136, 0.0, 1.402)
    else:
        y -= np.float32(16.0)
        y *= np.float32(1.164383)
        coefficients = (2.017232, 0.0, -0.391762, -0.812968, 0.0, 1.596027)
    out = np.empty((*y.shape, 3), np.float32)
    for channel in range(3):  # B, G, R: y + cu * u + cv * v
        cu, cv = coefficients[2 * channel], coefficients[2 * channel + 1]
        plane = out[:, :, channel]
        np.multiply(u, np.float32(cu), out=plane)
        plane += y
        if cv:
            plane += np.float32(cv) * v
    np.rint(out, out=out)
    np.clip(out, 0, 255, out=out)
    return out.astype(np.uint8)


def _frame(data: np.ndarray, header: Y4MHeader, size: tuple[int, int]) -> np.ndarray:
    """One frame's samples (``data``, uint8 or uint16) as a BGR frame of ``size``."""
    w, h = header.width, header.height
    cw, ch = _chroma_size(header)
    y = _eight_bit(_resized(data[: w * h].reshape(h, w), size), header)
    if header.colorspace == "mono":
        grey = np.clip(np.rint(y), 0, 255).astype(np.uint8)
        return cv2.cvtColor(grey, cv2.COLOR_GRAY2BGR)
    u = data[w * h : w * h + cw * ch].reshape(ch, cw)
    v = data[w * h + cw * ch :].reshape(ch, cw)
    u, v = _eight_bit(_resized(u, size), header), _eight_bit(_resized(v, size), header)
    return _yuv_to_bgr(y, u, v, header.full_range)


def y4m_frames(
    stream: BinaryIO, header: Y4MHeader, name: str, size: tuple[int, int] | None = None
) -> Iterator[tuple[int, np.ndarray]]:
    """The frames of a y4m stream whose header was read, as BGR uint8 of ``size``
    (width, height; default the stream's), numbered from 0.

    Raises
    ------
    InputError
        The stream holds no frame.
    WorkError
        A frame without its marker, or cut short.
    """
    w, h = header.width, header.height
    size = size or (w, h)
    cw, ch = _chroma_size(header)
    words = w * h + 2 * cw * ch
    dtype = np.dtype(np.uint8) if header.depth == 8 else np.dtype("<u2")
    buffer = bytearray(words * dtype.itemsize)  # one frame's bytes, read into again and again
    index = 0
    while True:
        line = read_line(stream, name, f"the FRAME line of y4m frame {index}")
        if not line and index == 0:
            raise InputError(
                f"{literal(name)}: the y4m stream ends after its header: it holds no frame"
            )
        if not line:
            return
        if not line.startswith(b"FRAME"):
            raise WorkError(
                f"{literal(name)}: y4m frame {index} lacks its FRAME marker: the stream is damaged"
            )
        got = _read_into(stream, buffer)
        if got < len(buffer):
            raise WorkError(
                f"{literal(name)}: stream ended inside frame {index} ({got} of {len(buffer)} "
                "bytes): the y4m stream is truncated"
            )
        yield index, _frame(np.frombuffer(buffer, dtype=dtype), header, size)
        index += 1
