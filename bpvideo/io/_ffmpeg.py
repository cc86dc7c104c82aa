"""The ffmpeg child processes of the reader and the writer (the binary of imageio-ffmpeg),
and the probe of a video file.

File names are data, never syntax: ffmpeg gets every file as a ``file:`` URL of its
absolute path (:func:`file_url`), so that a name such as ``concat:other.mkv`` or
``-i`` is a file name and nothing else, and its inputs may open local files only
(``-protocol_whitelist``). What a video is (size, rate, frame count) comes from
libavformat's own fields through OpenCV's FFmpeg backend (:func:`probe`), never from
ffmpeg's log, which holds the file name and whatever text it contains.

:func:`decode` runs ffmpeg as a raw-frame decoder of the size the probe found (``-s``:
every frame has that many bytes, whatever the stream does); its stderr is kept only for
error messages.
"""

from __future__ import annotations

import collections
import contextlib
import math
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["Probe", "decode", "enlarge_pipe", "executable", "file_url", "no_sigint", "probe"]

# libavformat inside OpenCV (the probe) would print its complaints about a damaged file
# straight to fd 2; bpvideo says what is wrong itself, in one line. OpenCV reads this once,
# when its FFmpeg backend is first used.
os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")

#: Bytes of the pipes to and from ffmpeg (Linux ``F_SETPIPE_SZ``; 64 KiB by default, less
#: than one 320x240 BGR frame): deeper pipes mean fewer wake-ups and copies per frame.
PIPE_BYTES = 1 << 20
#: Seconds ffmpeg may take to say why it cannot open a file that the probe refused.
DIAGNOSE_TIMEOUT = 20.0


def file_url(path: str | os.PathLike) -> str:
    """The ``file:`` URL of a path, as ffmpeg is given every file.

    Examples
    --------
    >>> file_url("/videos/concat:other.mkv")
    'file:/videos/concat:other.mkv'
    """
    return "file:" + os.path.abspath(os.fspath(path))


def enlarge_pipe(pipe: Any) -> None:
    """Deepen a pipe to or from ffmpeg, where the system allows it."""
    try:
        import fcntl

        fcntl.fcntl(pipe.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except (ImportError, AttributeError, OSError, ValueError):
        pass  # another platform: the default pipe works too


def executable() -> str:
    """Path of the ffmpeg binary (imageio-ffmpeg's, or ``IMAGEIO_FFMPEG_EXE``)."""
    import imageio_ffmpeg

    return imageio_ffmpeg.get_ffmpeg_exe()


def no_sigint() -> dict[str, Any]:
    """Popen arguments that keep a terminal's Ctrl-C from the child (bpvideo stops it)."""
    if os.name == "nt":  # pragma: no cover
        return {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0x200)}
    if sys.version_info >= (3, 11):
        return {"process_group": 0}
    return {"start_new_session": True}  # pragma: no cover - Python 3.10


class _Stderr(threading.Thread):
    """Keeps the last lines ffmpeg prints (for error messages only)."""

    def __init__(self, stream: Any) -> None:
        super().__init__(name="bpvideo-ffmpeg-log", daemon=True)
        self._stream = stream
        self.lines: collections.deque[str] = collections.deque(maxlen=100)
        self.start()

    def run(self) -> None:
        try:
            for raw in self._stream:
                self.lines.append(raw.decode("utf-8", "replace").rstrip("\r\n"))
        except (OSError, ValueError):
            pass  # the pipe was closed

    def text(self) -> str:
        """What ffmpeg printed last."""
        return "\n".join(self.lines)


@dataclass(frozen=True)
class Probe:
    """What libavformat says about the first video stream of a file.

    Attributes
    ----------
    width, height : int
        Frame size, as decoded (after the rotation the container asks for).
    fps : float or None
        Frame rate (None when the container gives none).
    frame_count : int or None
        Frames the container announces (its count, or duration x rate; None when unknown).
    """

    width: int
    height: int
    fps: float | None
    frame_count: int | None


def probe(path: str | os.PathLike) -> Probe:
    """Size, rate and frame count of a video file, from libavformat's fields.

    Read through OpenCV's FFmpeg backend (``cv2.CAP_FFMPEG``: its properties are the
    stream's and container's fields, not text), restricted to local files, with the file
    given as a ``file:`` URL.

    Raises
    ------
    OSError
        The file cannot be opened as a video (the message says why, from ffmpeg).
    """
    import cv2

    url = file_url(path)
    previous = os.environ.get("OPENCV_FFMPEG_CAPTURE_OPTIONS")
    os.environ["OPENCV_FFMPEG_CAPTURE_OPTIONS"] = "protocol_whitelist;file"
    try:
        capture = cv2.VideoCapture(url, cv2.CAP_FFMPEG)
        try:
            opened = capture.isOpened()
            names = ("FRAME_WIDTH", "FRAME_HEIGHT", "FPS", "FRAME_COUNT")
            props = [capture.get(getattr(cv2, f"CAP_PROP_{name}")) for name in names]
        finally:
            capture.release()
    finally:
        if previous is None:
            os.environ.pop("OPENCV_FFMPEG_CAPTURE_OPTIONS", None)
        else:
            os.environ["OPENCV_FFMPEG_CAPTURE_OPTIONS"] = previous
    width, height, fps, count = props
    if not opened or not (width >= 1 and height >= 1):
        raise OSError(_why_not(url))
    return Probe(
        int(width),
        int(height),
        None if fps == 0 else fps,  # NaN or negative: refused by the caller
        int(count) if math.isfinite(count) and count >= 1 else None,
    )


def _why_not(url: str) -> str:
    """Why ffmpeg cannot decode ``url``: one line (for the message of a refused file)."""
    cmd = [executable(), "-hide_banner", "-nostdin", "-loglevel", "error",
           "-protocol_whitelist", "file", "-i", url, "-map", "0:V:0", "-frames:v", "1",
           "-f", "null", "-"]  # fmt: skip
    try:
        done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=DIAGNOSE_TIMEOUT, check=False, **no_sigint())  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return "ffmpeg could not open it"
    lines = [line.strip() for line in done.stderr.decode("utf-8", "replace").splitlines()]
    lines = [line.replace(url + ": ", "").replace(url, "the file") for line in lines if line]
    if any("matches no streams" in line for line in lines):
        return "it has no video stream"
    return lines[-1] if lines else "no video stream could be read"


def decode(
    path: str | os.PathLike, width: int, height: int, pix_fmt: str = "bgr24"
) -> Iterator[bytes]:
    """Start ffmpeg decoding ``path`` into raw frames of ``width`` x ``height``.

    Parameters
    ----------
    path : str or path-like
        A video file (see :func:`probe`).
    width, height : int
        Frame size (from :func:`probe`); ffmpeg scales to it should the stream differ.
    pix_fmt : {"bgr24", "gray"}
        Pixel format of the frames.

    Returns
    -------
    generator of bytes
        One frame per item, in decoding order. Closing it (or reading to the end) stops
        ffmpeg. Raises RuntimeError on a frame cut short or a decoding error (the message
        holds ffmpeg's last line).
    """
    cmd = [
        executable(), "-hide_banner", "-nostdin", "-nostats", "-loglevel", "error",
        "-protocol_whitelist", "file", "-i", file_url(path), "-map", "0:V:0", "-an", "-sn",
        "-f", "rawvideo", "-pix_fmt", pix_fmt, "-s", f"{width}x{height}", "pipe:1",
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **no_sigint(),
    )
    enlarge_pipe(proc.stdout)
    log = _Stderr(proc.stderr)
    bpp = 1 if pix_fmt == "gray" else 3
    return _frames(proc, log, width * height * bpp)


def _frames(proc: subprocess.Popen, log: _Stderr, size: int) -> Iterator[bytes]:
    stdout = proc.stdout
    count = 0
    try:
        while True:
            buf = stdout.read(size)
            if not buf:
                if count == 0 and proc.wait() != 0:  # not one frame: say why
                    raise RuntimeError(log.text() or f"ffmpeg exited with {proc.returncode}")
                return
            if len(buf) < size:
                raise RuntimeError(f"a frame was cut short\n{log.text()}")
            count += 1
            yield buf
    finally:
        _stop(proc, log)


def _stop(proc: subprocess.Popen, log: _Stderr) -> None:
    """Kill ffmpeg (if still running) and reap it."""
    with contextlib.suppress(OSError):
        proc.kill()
    for pipe in (proc.stdout, proc.stderr):
        with contextlib.suppress(OSError):
            pipe.close()
    with contextlib.suppress(OSError):
        proc.wait()
    log.join(1.0)
