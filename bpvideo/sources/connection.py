"""One connection of a live source: an ffmpeg reading a URL or a capture device into
y4m (:func:`connect`), and which INPUTs are URLs (:func:`is_url`, :func:`redact`).

The ffmpeg that reads a URL may use that URL's protocol family and nothing else
(``-protocol_whitelist``), with low-latency settings: a probe of at most half a second
(:data:`LOW_LATENCY`), and a read timeout (:data:`READ_TIMEOUT`) so that a stalled
stream counts as dropped. Reconnection and the reading thread: :mod:`bpvideo.sources.live`.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from bpvideo.limits import DEFAULT_FPS, MAX_HEADER_LINE
from bpvideo.sources import ffmpeg as _ffmpeg
from bpvideo.sources.accounting import failure
from bpvideo.sources.pipes import Y4M_MAGIC, parse_y4m_header, y4m_frames

__all__ = [
    "LOW_LATENCY",
    "READ_TIMEOUT",
    "URL_SCHEMES",
    "Connection",
    "command",
    "connect",
    "is_device",
    "is_url",
    "redact",
]

#: Protocols of a URL INPUT, and the ffmpeg protocols each may use (its transport).
URL_SCHEMES = {
    "rtsp": "rtsp,rtp,srtp,udp,tcp",
    "rtsps": "rtsp,rtsps,rtp,srtp,udp,tcp,tls",
    "http": "http,tcp",
    "https": "https,http,tcp,tls",
    "rtmp": "rtmp,tcp",
    "rtmps": "rtmps,rtmp,tcp,tls",
    "udp": "udp,rtp",
    "tcp": "tcp",
    "srt": "srt,udp",
}
_URL = re.compile(r"^(" + "|".join(URL_SCHEMES) + r")://", re.IGNORECASE)
#: ffmpeg input options of a live source: a probe of at most 0.5 s of stream (the default,
#: 5 s, held the first frame back 5 s) or 5 MB (with 256 KiB a 720x480 lossless stream's
#: rate was guessed 50 for 25), frames handed on as soon as decoded. Not
#: ``-fflags nobuffer``: on MPEG-TS over HTTP it lost the first second of frames (125 of
#: 150 decoded) or all of them.
LOW_LATENCY = ("-flags", "low_delay", "-probesize", "5000000", "-analyzeduration", "500000")
#: Seconds without data after which a connected stream counts as dropped.
READ_TIMEOUT = 5.0


def is_url(name: str | os.PathLike) -> bool:
    """Whether INPUT is a network URL (rtsp, rtsps, http(s), rtmp(s), udp, tcp, srt).

    Examples
    --------
    >>> is_url("rtsp://127.0.0.1:8554/cam"), is_url("HTTP://h/x.ts"), is_url("cam.mp4")
    (True, True, False)
    """
    return bool(_URL.match(os.fspath(name)))


def is_device(name: str | os.PathLike) -> bool:
    """Whether INPUT is a capture device (a character device such as ``/dev/video0``)."""
    try:
        return stat.S_ISCHR(os.stat(name).st_mode)
    except (OSError, ValueError):
        return False


def redact(url: str) -> str:
    """``url`` without a password (``rtsp://user:***@host/...``), for messages and logs.

    Examples
    --------
    >>> redact("rtsp://admin:secret@10.0.0.5/stream1")
    'rtsp://admin:***@10.0.0.5/stream1'
    """
    return re.sub(r"^([a-zA-Z]+://[^/@:]*):[^/@]*@", r"\1:***@", url)


def command(name: str, size: tuple[int, int] | None) -> list[str]:
    """The ffmpeg command that decodes ``name`` (a URL or a device) into y4m on stdout."""
    cmd = [_ffmpeg.executable(), "-hide_banner", "-nostdin", "-nostats", "-loglevel", "error"]
    if is_url(name):
        scheme = name.split(":", 1)[0].lower()
        cmd += ["-protocol_whitelist", URL_SCHEMES[scheme], *LOW_LATENCY]
        cmd += ["-rw_timeout", str(int(READ_TIMEOUT * 1e6))]
        # rw_timeout never ends a wait on UDP, nor an SRT listener's for its caller
        extra = {"udp": "-timeout", "srt": "-listen_timeout"}.get(scheme)
        if extra is not None:
            cmd += [extra, str(int(READ_TIMEOUT * 1e6))]
        if scheme.startswith("rtsp"):
            cmd += ["-rtsp_flags", "prefer_tcp"]
    else:  # a capture device
        cmd += ["-protocol_whitelist", "file", *LOW_LATENCY, "-f", "v4l2"]
    # every frame decoded is passed on once: never duplicated to fill a guessed rate
    cmd += ["-i", name, "-map", "0:V:0", "-an", "-sn", "-fps_mode", "passthrough",
            "-f", "yuv4mpegpipe", "-pix_fmt", "yuv444p", "-strict", "-1"]  # fmt: skip
    if size is not None:  # a reconnection: frames of the first connection's size
        cmd += ["-s", f"{size[0]}x{size[1]}"]
    return [*cmd, "pipe:1"]


@dataclass
class Connection:
    """One ffmpeg reading the stream: its process and its frames."""

    proc: subprocess.Popen
    frames: Iterator[tuple[int, np.ndarray]]
    width: int
    height: int
    fps: float
    log: list[str] = field(default_factory=list)

    def stop(self) -> None:
        _end(self.proc)


def _end(proc: subprocess.Popen) -> None:
    """Kill ffmpeg (when it still runs), reap it and close its pipes."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for pipe in (proc.stdout, proc.stderr):
        try:
            pipe.close()
        except OSError:
            pass


def connect(
    name: str,
    size: tuple[int, int] | None,
    started: Callable[[subprocess.Popen], None],
    timeout: float | None = None,
) -> Connection:
    """Start ffmpeg on ``name`` (handed to ``started`` at once: killing it ends the wait)
    and read its y4m header, within ``timeout`` seconds when given (a server that keeps
    the connection alive with a trickle of bytes is never ended by ffmpeg's read timeout).

    Raises
    ------
    OSError
        ffmpeg could not open the stream (the message says why, from ffmpeg's log), or
        gave no frame within ``timeout``.
    """
    proc = subprocess.Popen(command(name, size), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            **_ffmpeg.no_sigint())  # fmt: skip
    started(proc)
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        proc.kill()

    timer = threading.Timer(max(timeout, 0.0), expire) if timeout is not None else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        try:
            _ffmpeg.enlarge_pipe(proc.stdout)
            line = proc.stdout.readline(MAX_HEADER_LINE)
        finally:
            if timer is not None:
                timer.cancel()
        if expired.is_set() or not line.startswith(Y4M_MAGIC):
            proc.kill()
            err = proc.stderr.read().decode("utf-8", "replace").splitlines()
            if expired.is_set():  # killed by the timer, maybe just after the header came
                raise OSError(f"no frame within {timeout:.1f}s")
            raise OSError(failure(err, "no video stream").replace(name, redact(name)))
        header = parse_y4m_header(line, redact(name))
    except BaseException:  # no frame, a header refused, a stop: ffmpeg and its pipes go
        _end(proc)
        raise
    frames = y4m_frames(proc.stdout, header, redact(name))
    fps = header.fps if header.fps == header.fps and header.fps > 0 else DEFAULT_FPS
    return Connection(proc, frames, header.width, header.height, fps)
