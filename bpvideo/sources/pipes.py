"""Frames from a pipe (stdin): raw frames, a y4m stream, or any container ffmpeg reads.

``bpvideo separate -`` reads raw frames when their size is given (``--size WxH`` and
``--pix-fmt gray|bgr24``, as ``ffmpeg -f rawvideo -pix_fmt gray -`` writes them), else a
y4m stream (its header gives size and rate), else any container, decoded by an ffmpeg
child into y4m. Frames come out as uint8 BGR, numbered from 0 in stream order.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from typing import BinaryIO

import cv2
import numpy as np

from bpvideo.errors import InputError, WorkError, literal
from bpvideo.limits import DEFAULT_FPS, MAX_HEADER_LINE
from bpvideo.sources import ffmpeg as _ffmpeg
from bpvideo.sources.accounting import failure
from bpvideo.sources.headers import check_rate, read_line
from bpvideo.sources.stream import resize_frame, scaled_size
from bpvideo.sources.y4m import Y4M_MAGIC, Y4MHeader, parse_y4m_header, read_exact, y4m_frames

__all__ = ["Y4M_MAGIC", "Y4MHeader", "open_pipe", "parse_y4m_header", "y4m_frames"]


def open_pipe(
    stream: BinaryIO,
    *,
    size: tuple[int, int] | None = None,
    pix_fmt: str = "gray",
    fps: float | None = None,
    step: int = 1,
    name: str = "stdin",
    scale: float = 1.0,
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
    scale : float
        Each frame is resized by ``scale`` as it is read (its planes, before anything
        else is made of them): memory follows the scaled size.

    Returns
    -------
    frames : iterator of (int, (H, W, 3) uint8 ndarray)
        Every frame of the stream with its 0-based index, resized by ``scale``.
    width, height : int
        The stream's frame size (before ``scale``).
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
        return _iter_raw(stream, (w, h), pix_fmt, name, scale), w, h, rate
    head = read_exact(stream, len(Y4M_MAGIC))
    if not head:
        raise _empty(name)
    if head == Y4M_MAGIC:
        header = parse_y4m_header(head + read_line(stream, name, "the y4m header"), name)
        raw = y4m_frames(stream, header, name, scaled_size(header.width, header.height, scale))
    else:
        header, raw = _ffmpeg_y4m(stream, head, name, scale)
    rate = fps if fps is not None else (check_rate(header.fps, name, fps) or DEFAULT_FPS) / step
    return raw, header.width, header.height, rate


def _empty(name: str) -> InputError:
    """The error of a stream that ended before its first byte."""
    return InputError(
        f"{literal(name)}: is empty (no byte came): pipe frames into bpvideo separate -"
    )


def _iter_raw(
    stream: BinaryIO, frame: tuple[int, int], pix_fmt: str, name: str, scale: float
) -> Iterator[tuple[int, np.ndarray]]:
    """Raw frames of ``frame`` (width, height) pixels, each resized by ``scale`` as read."""
    width, height = frame
    channels = 1 if pix_fmt == "gray" else 3
    size = width * height * channels
    index = 0
    while True:
        buf = read_exact(stream, size)
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
        image = np.frombuffer(buf, dtype=np.uint8).reshape(height, width, channels)
        image = resize_frame(image[:, :, 0] if channels == 1 else image, scale)
        yield index, cv2.cvtColor(image, cv2.COLOR_GRAY2BGR) if channels == 1 else image
        index += 1


def _ffmpeg_y4m(stream: BinaryIO, head: bytes, name: str, scale: float):
    """Decode a container on ``stream`` (``head`` already read from it) into y4m by ffmpeg."""
    from bpvideo.sources.frame_times import passthrough_flag

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
        err = proc.stderr.read().decode("utf-8", "replace").splitlines()
        proc.kill()
        proc.wait()
        detail = failure(err, "no video stream")
        raise InputError(
            f"{literal(name)}: stdin cannot be decoded as a video ({literal(detail)}): give "
            "{size='WxH'} and {pix_fmt} for raw frames, or a y4m or other container stream",
            option=("size", None),
        )
    header = parse_y4m_header(line, name)

    def frames() -> Iterator[tuple[int, np.ndarray]]:
        try:
            size = scaled_size(header.width, header.height, scale)
            yield from y4m_frames(proc.stdout, header, name, size)
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
