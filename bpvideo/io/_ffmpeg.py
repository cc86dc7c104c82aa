"""The ffmpeg child processes of the reader and the writer (the binary of imageio-ffmpeg).

:func:`decode` runs ffmpeg as a raw-frame decoder with no polling: its stderr is read by
a thread that signals as soon as the stream header is complete (imageio-ffmpeg's own
reader polls for it every 10 ms and reads stderr 20 bytes at a time, which costs a
300-frame clip ~0.1 s), and the header is parsed by imageio-ffmpeg's parser.
"""

from __future__ import annotations

import collections
import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["decode", "enlarge_pipe", "executable", "no_sigint"]

#: Seconds to wait for ffmpeg to print the header of its input.
HEADER_TIMEOUT = 20.0
#: Bytes of the pipes to and from ffmpeg (Linux ``F_SETPIPE_SZ``; 64 KiB by default, less
#: than one 320x240 BGR frame): deeper pipes mean fewer wake-ups and copies per frame.
PIPE_BYTES = 1 << 20


def enlarge_pipe(pipe: Any) -> None:
    """Deepen a pipe to or from ffmpeg, where the system allows it."""
    try:
        import fcntl

        fcntl.fcntl(pipe.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except (ImportError, AttributeError, OSError, ValueError):
        pass  # another platform: the default pipe works too


def executable() -> str:
    """Path of the ffmpeg binary (imageio-ffmpeg's, or ``IMAGEIO_FFMPEG_EXE``).

    Raises
    ------
    InputError
        Neither is there: what to install, and ``no_video`` for masks without ffmpeg.
    """
    try:
        import imageio_ffmpeg

        return imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError) as exc:
        from bpvideo.errors import InputError, literal

        raise InputError(
            f"ffmpeg is not available ({literal(exc)}): pip install imageio-ffmpeg, or set "
            "IMAGEIO_FFMPEG_EXE to an ffmpeg binary; {no_video} writes the masks of a "
            "folder of frames without it",
            option=("no_video", False),
        ) from None


def no_sigint() -> dict[str, Any]:
    """Popen arguments that keep a terminal's Ctrl-C from the child (bpvideo stops it)."""
    if os.name == "nt":  # pragma: no cover
        return {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0x200)}
    if sys.version_info >= (3, 11):
        return {"process_group": 0}
    return {"start_new_session": True}  # pragma: no cover - Python 3.10


class _Stderr(threading.Thread):
    """Reads ffmpeg's stderr: the header (up to the output stream) and the last lines."""

    def __init__(self, stream: Any) -> None:
        super().__init__(name="bpvideo-ffmpeg-log", daemon=True)
        self._stream = stream
        self.header = ""
        self.lines: collections.deque[str] = collections.deque(maxlen=100)
        self.header_done = threading.Event()
        self.start()

    def run(self) -> None:
        head: list[str] = []
        in_output = False
        try:
            for raw in self._stream:
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                self.lines.append(line)
                if self.header_done.is_set():
                    continue
                head.append(line)
                stripped = line.lstrip()
                if stripped.startswith("Output "):
                    in_output = True
                elif in_output and stripped.startswith("Stream ") and " Video:" in stripped:
                    self.header = "\n".join(head)  # the output stream: the header is whole
                    self.header_done.set()
        except (OSError, ValueError):
            pass  # the pipe was closed
        finally:
            self.header_done.set()  # EOF: ffmpeg ended (an error, or no video stream)

    def text(self) -> str:
        """What ffmpeg printed last."""
        return "\n".join(self.lines)


def decode(path: str, pix_fmt: str = "bgr24") -> tuple[Iterator[bytes], dict]:
    """Start ffmpeg decoding ``path`` into raw frames; return (frames, meta).

    Parameters
    ----------
    path : str
        Anything ffmpeg reads.
    pix_fmt : {"bgr24", "gray"}
        Pixel format of the frames.

    Returns
    -------
    frames : generator of bytes
        One frame per item, in decoding order. Closing it (or reading to the end) stops
        ffmpeg. Raises RuntimeError on a frame cut short.
    meta : dict
        imageio-ffmpeg's parse of the header: ``size`` (w, h), ``fps``, ``duration``...

    Raises
    ------
    OSError
        ffmpeg could not open or decode the input (the message holds its last line).
    """
    from imageio_ffmpeg._parsing import parse_ffmpeg_header

    cmd = [
        executable(), "-hide_banner", "-nostdin", "-nostats", "-i", path,
        "-f", "image2pipe", "-pix_fmt", pix_fmt, "-vcodec", "rawvideo", "-",
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
    try:
        log.header_done.wait(HEADER_TIMEOUT)
        if not log.header:
            lines = [line for line in log.lines if line.strip()]
            raise OSError(lines[-1] if lines else "ffmpeg printed no stream header")
        meta = parse_ffmpeg_header(log.header)
    except BaseException:
        _stop(proc, log)
        raise
    bpp = 1 if pix_fmt == "gray" else 3
    return _frames(proc, log, meta["size"][0] * meta["size"][1] * bpp), meta


def _frames(proc: subprocess.Popen, log: _Stderr, size: int) -> Iterator[bytes]:
    stdout = proc.stdout
    try:
        while True:
            buf = stdout.read(size)
            if not buf:
                return
            if len(buf) < size:
                raise RuntimeError(
                    "End of file reached before full frame could be read.\n" + log.text()
                )
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
