"""Frames from a pipe (stdin): raw frames, a y4m stream, or any container ffmpeg reads.

``bpvideo separate -`` reads raw frames when their size is given (``--size WxH`` and
``--pix-fmt gray|bgr24``, as ``ffmpeg -f rawvideo -pix_fmt gray -`` writes them), else a
y4m stream (its header gives size and rate), else any container, decoded by an ffmpeg
child into y4m. Frames come out as uint8 BGR, numbered from 0 in stream order.
"""

from __future__ import annotations

import math
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import cv2
import numpy as np

from bpvideo.errors import InputError, WorkError, literal, shown
from bpvideo.io import _ffmpeg
from bpvideo.io.headers import check_frame_size, check_rate, read_line
from bpvideo.limits import DEFAULT_FPS, MAX_HEADER_LINE

__all__ = ["Y4MHeader", "open_pipe", "parse_y4m_header"]

Y4M_MAGIC = b"YUV4MPEG2"
#: Frame rate of raw frames on stdin (which carry none) unless ``fps`` says otherwise.


def open_pipe(
    stream: BinaryIO,
    *,
    size: tuple[int, int] | None = None,
    pix_fmt: str = "gray",
    fps: float | None = None,
    step: int = 1,
    name: str = "stdin",
) -> tuple[Iterator[tuple[int, np.ndarray]], int, int, float]:
    """Start reading frames from ``stream``; only the header is read here.

    Parameters
    ----------
    stream : binary file
        The pipe.
    size : (width, height), optional
        Raw frames of this size; without it the stream is y4m or a container.
    pix_fmt : {"gray", "bgr24"}
        Pixel format of raw frames.
    fps : float, optional
        Frame rate override.
    step : int
        Frames kept (the rate of the selection is the stream's divided by ``step``).
    name : str
        The source, for messages.

    Returns
    -------
    frames : iterator of (int, (H, W, 3) uint8 ndarray)
        Every frame of the stream with its 0-based index.
    width, height : int
    fps : float
        Frame rate of the selected frames.

    Raises
    ------
    InputError
        An empty stream, or one that is neither y4m nor a container ffmpeg can read.
    """
    if size is not None:
        w, h = size
        rate = fps if fps is not None else DEFAULT_FPS
        return _iter_raw(stream, w, h, pix_fmt, name), w, h, rate
    head = _read_exact(stream, len(Y4M_MAGIC))
    if not head:
        raise _empty(name)
    if head == Y4M_MAGIC:
        header = parse_y4m_header(head + read_line(stream, name, "the y4m header"), name)
        raw = _iter_y4m(stream, header, name)
    else:
        header, raw = _ffmpeg_y4m(stream, head, name)
    rate = fps if fps is not None else (check_rate(header.fps, name, fps) or DEFAULT_FPS) / step
    return raw, header.width, header.height, rate


def _empty(name: str) -> InputError:
    """The error of a stream that ended before its first byte."""
    return InputError(
        f"{literal(name)}: is empty (no byte came): pipe frames into bpvideo separate -"
    )


def _read_exact(stream, size: int) -> bytes:
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


def _iter_raw(
    stream, width: int, height: int, pix_fmt: str, name: str
) -> Iterator[tuple[int, np.ndarray]]:
    channels = 1 if pix_fmt == "gray" else 3
    size = width * height * channels
    index = 0
    while True:
        buf = _read_exact(stream, size)
        if not buf and index == 0:
            raise _empty(name)
        if not buf:
            return
        if len(buf) < size:
            raise WorkError(
                f"{literal(name)}: stream ended inside frame {index} ({len(buf)} of {size} bytes "
                f"of a {width}x{height} {pix_fmt} frame): check {{size}} and {{pix_fmt}}",
                option=("size", f"{width}x{height}"),
            )
        frame = np.frombuffer(buf, dtype=np.uint8)
        if channels == 1:
            frame = cv2.cvtColor(frame.reshape(height, width), cv2.COLOR_GRAY2BGR)
        else:
            frame = frame.reshape(height, width, 3)
        yield index, frame
        index += 1


@dataclass
class Y4MHeader:
    """What a YUV4MPEG2 stream header says."""

    width: int
    height: int
    fps: float
    colorspace: str
    full_range: bool


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
    base = "mono" if colorspace.startswith("mono") else colorspace[:3]
    if base not in ("420", "444", "422", "mono") or colorspace.endswith(("p10", "p12", "p16")):
        raise InputError(
            f"{name}: y4m colour space C{colorspace} is not supported (8-bit 420, 422, 444, "
            "mono are): convert with ffmpeg -pix_fmt yuv420p"
        )
    full = any(t.upper() == "XCOLORRANGE=FULL" for t in tokens)
    return Y4MHeader(width, height, fps, base, full)


def _yuv_to_bgr(y: np.ndarray, u: np.ndarray, v: np.ndarray, full: bool) -> np.ndarray:
    """BT.601 YUV planes (same size) to BGR uint8."""
    yf = y.astype(np.float32)
    uf = u.astype(np.float32) - 128.0
    vf = v.astype(np.float32) - 128.0
    if full:
        r, g, b = yf + 1.402 * vf, yf - 0.344136 * uf - 0.714136 * vf, yf + 1.772 * uf
    else:
        yf = 1.164383 * (yf - 16.0)
        r = yf + 1.596027 * vf
        g = yf - 0.391762 * uf - 0.812968 * vf
        b = yf + 2.017232 * uf
    out = np.stack([b, g, r], axis=2)
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def _iter_y4m(stream, header: Y4MHeader, name: str) -> Iterator[tuple[int, np.ndarray]]:
    w, h = header.width, header.height
    cw, ch = {
        "420": ((w + 1) // 2, (h + 1) // 2),
        "422": ((w + 1) // 2, h),
        "444": (w, h),
        "mono": (0, 0),
    }[header.colorspace]
    size = w * h + 2 * cw * ch
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
                f"{name}: y4m frame {index} lacks its FRAME marker: the stream is damaged"
            )
        buf = _read_exact(stream, size)
        if len(buf) < size:
            raise WorkError(
                f"{name}: stream ended inside frame {index} ({len(buf)} of {size} bytes): the "
                "y4m stream is truncated"
            )
        data = np.frombuffer(buf, dtype=np.uint8)
        y = data[: w * h].reshape(h, w)
        if header.colorspace == "mono":
            frame = cv2.cvtColor(y, cv2.COLOR_GRAY2BGR)
        else:
            u = data[w * h : w * h + cw * ch].reshape(ch, cw)
            v = data[w * h + cw * ch :].reshape(ch, cw)
            if ch != h:
                u, v = np.repeat(u, 2, axis=0)[:h], np.repeat(v, 2, axis=0)[:h]
            if cw != w:
                u, v = np.repeat(u, 2, axis=1)[:, :w], np.repeat(v, 2, axis=1)[:, :w]
            frame = _yuv_to_bgr(y, u, v, header.full_range)
        yield index, frame
        index += 1


def _ffmpeg_y4m(stream, head: bytes, name: str):
    """Decode a container on ``stream`` (``head`` already read from it) into y4m by ffmpeg."""
    from bpvideo.io.frame_times import passthrough_flag

    ffmpeg = _ffmpeg.executable()
    cmd = [
        ffmpeg,
        "-hide_banner",
        "-loglevel",
        "error",
        "-protocol_whitelist",
        "pipe",
        "-i",
        "pipe:0",
        *passthrough_flag(ffmpeg),  # every frame as it is: no copies fill a variable rate
        "-f",
        "yuv4mpegpipe",
        "-pix_fmt",
        "yuv444p",
        "-strict",
        "-1",
        "pipe:1",
    ]
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )

    def feed() -> None:
        try:
            proc.stdin.write(head)
            while True:
                chunk = stream.read(1 << 16)
                if not chunk:
                    break
                proc.stdin.write(chunk)
        except (BrokenPipeError, OSError, ValueError):
            pass
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    line = proc.stdout.readline(MAX_HEADER_LINE)
    if not line.startswith(Y4M_MAGIC):
        err = proc.stderr.read().decode("utf-8", "replace").strip().splitlines()
        proc.kill()
        proc.wait()
        detail = err[-1] if err else "no video stream"
        raise InputError(
            f"{literal(name)}: stdin cannot be decoded as a video ({literal(detail)}): give "
            "{size='WxH'} and {pix_fmt} for raw frames, or a y4m or other container stream",
            option=("size", None),
        )
    header = parse_y4m_header(line, name)

    def frames() -> Iterator[tuple[int, np.ndarray]]:
        try:
            yield from _iter_y4m(proc.stdout, header, name)
            if proc.wait() != 0:
                err = proc.stderr.read().decode("utf-8", "replace").strip().splitlines()
                raise WorkError(
                    f"{name}: decoding the stream failed ({err[-1] if err else 'ffmpeg error'})"
                    ": check the input"
                )
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            proc.stderr.close()

    return header, frames()
