"""The time of each decoded frame, and where a file's data end: from ffmpeg's machine
output, never from its log.

Videos are decoded with their frames passed through as they are (``-fps_mode
passthrough``: a variable frame rate gives no duplicated or dropped frame), and ffmpeg
writes the timestamp of each frame it hands on (``-stats_enc_pre``, ``{pts} {tb}``, in
the stream's own time base) to a pipe of its own, read here by a thread. A frame's line
is written (and flushed) before its pixels, so the time of frame ``i`` is known once
frame ``i`` is read.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from concurrent.futures import Future
from fractions import Fraction

__all__ = [
    "Timestamps",
    "ask_options",
    "data_end",
    "passthrough_flag",
    "passthrough_options",
    "scan_packets",
    "supports_times",
]

#: Seconds to wait for the time of a frame already read (its line precedes it).
WAIT = 5.0


#: The answer of ``ffmpeg -h full`` of each executable, asked once.
_ASKED: dict[str, Future[str]] = {}
_ASKED_LOCK = threading.Lock()


def ask_options(ffmpeg: str) -> None:
    """Start asking ``ffmpeg -h full`` in a thread (once per executable).

    Its answer, a megabyte of text (~40 ms), is needed only when the decoder starts:
    asked while the input is probed, it is ready by then instead of delaying it.
    """
    _asked(ffmpeg)


def _asked(ffmpeg: str) -> Future[str]:
    with _ASKED_LOCK:
        future = _ASKED.get(ffmpeg)
        if future is None:
            future = _ASKED[ffmpeg] = Future()
            threading.Thread(target=_answer, args=(ffmpeg, future), daemon=True,
                             name="bpvideo-ffmpeg-options").start()  # fmt: skip
    return future


def _answer(ffmpeg: str, future: Future[str]) -> None:
    try:
        future.set_result(_read_options(ffmpeg))
    except BaseException as exc:  # handed to whoever waits for the answer
        future.set_exception(exc)


def _read_options(ffmpeg: str) -> str:
    try:
        done = subprocess.run([ffmpeg, "-hide_banner", "-h", "full"], capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=20, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.decode("ascii", "replace")


def _forget_unanswered() -> None:
    """In a forked child: the thread asking is the parent's, so a question still open
    there is asked again here (under a new lock: the parent's may have been held)."""
    global _ASKED_LOCK
    _ASKED_LOCK = threading.Lock()
    for ffmpeg in [k for k, future in _ASKED.items() if not future.done()]:
        del _ASKED[ffmpeg]


if hasattr(os, "register_at_fork"):  # not on Windows, which does not fork
    os.register_at_fork(after_in_child=_forget_unanswered)


def _options_of(ffmpeg: str) -> str:
    """The text of ``ffmpeg -h full`` (its options; machine text, no file name; empty
    when it cannot be run), asked once (:func:`ask_options`)."""
    return _asked(ffmpeg).result()


def supports_times(ffmpeg: str) -> bool:
    """Whether this ffmpeg has ``-stats_enc_pre`` and ``-enc_time_base`` (ffmpeg 6.1+)."""
    text = _options_of(ffmpeg)
    return "-stats_enc_pre_fmt" in text and "-enc_time_base" in text


def passthrough_flag(ffmpeg: str) -> list[str]:
    """Keep every frame as it is: ``-fps_mode passthrough`` (ffmpeg 5.1+), else the
    older ``-vsync passthrough``."""
    text = _options_of(ffmpeg)
    return ["-fps_mode" if "-fps_mode" in text or not text else "-vsync", "passthrough"]


def passthrough_options(ffmpeg: str, fd: int | None) -> list[str]:
    """Output options that keep every frame as it is (no frame duplicated to fill a
    gap, none dropped) and, with ``fd``, write each frame's timestamp to it."""
    if fd is None or not supports_times(ffmpeg):
        return passthrough_flag(ffmpeg)
    return [*passthrough_flag(ffmpeg), "-enc_time_base", "demux",
            "-stats_enc_pre", f"pipe:{fd}", "-stats_enc_pre_fmt", "{pts} {tb}"]  # fmt: skip


class Timestamps(threading.Thread):
    """Reads the ``{pts} {tb}`` lines ffmpeg writes to ``fd`` (closed here at the end).

    Attributes
    ----------
    seconds : list of float
        Time of each frame decoded so far, in seconds from the first frame's.
    """

    def __init__(self, fd: int) -> None:
        super().__init__(name="bpvideo-frame-times", daemon=True)
        self._fd = fd
        self.seconds: list[float] = []
        self._first: Fraction | None = None
        self._ready = threading.Condition()
        self._done = False
        self.start()

    def run(self) -> None:
        try:
            with os.fdopen(self._fd, "rb") as stream:
                for line in stream:
                    self._add(line)
        except (OSError, ValueError):
            pass  # the pipe was closed
        finally:
            with self._ready:
                self._done = True
                self._ready.notify_all()

    def _add(self, line: bytes) -> None:
        try:
            pts, tb = line.split()
            t = int(pts) * Fraction(tb.decode("ascii"))
        except (ValueError, ZeroDivisionError, UnicodeDecodeError):
            return  # a frame without a timestamp: its time stays unknown
        with self._ready:
            if self._first is None:
                self._first = t
            self.seconds.append(float(t - self._first))
            self._ready.notify_all()

    def time(self, index: int) -> float | None:
        """Seconds of frame ``index`` (0-based decode order) from the first frame; None
        when ffmpeg gave none."""
        with self._ready:
            self._ready.wait_for(lambda: len(self.seconds) > index or self._done, WAIT)
            return self.seconds[index] if len(self.seconds) > index else None


#: Bytes of a video packet that stands for no picture of its own: an AVI "drop frame"
#: (one byte), an MPEG-4 N-VOP (six): the decoder gives no frame for it, and none is lost.
PLACEHOLDER_BYTES = 8


def data_end(ffmpeg: str, url: str, options: list[str], pass_fds: tuple[int, ...]) -> float | None:
    """Seconds from the first video packet to the end of the last packet of the video and
    audio streams (packets copied, nothing decoded): where a file's data really end.

    A container's announced length is a duration, so a video whose audio lasts longer, or
    whose frame rate varies, announces more frames than it holds; a truncated file's data
    end before its announced length. None when ffmpeg cannot say.
    """
    return scan_packets(ffmpeg, url, options, pass_fds)[0]


def scan_packets(
    ffmpeg: str, url: str, options: list[str], pass_fds: tuple[int, ...]
) -> tuple[float | None, int | None, float | None]:
    """Where a file's data end (:func:`data_end`), how many packets of its video stream
    hold a picture (more than :data:`PLACEHOLDER_BYTES`) and the time of its first video
    packet on the container's clock, from one pass that copies the packets (``-copyts``:
    a clock that jumps keeps its gap). ``(None, None, None)`` when ffmpeg cannot say.
    """
    cmd = [ffmpeg, "-hide_banner", "-nostdin", "-loglevel", "quiet", "-copyts", *options,
           "-i", url, "-map", "0:V:0", "-map", "0:a?", "-c", "copy", "-f", "framecrc",
           "pipe:1"]  # fmt: skip
    try:
        done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=600,
                              check=False, pass_fds=pass_fds)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None, None, None
    bases: dict[int, Fraction] = {}
    first, end, pictures = None, None, 0
    for raw in done.stdout.decode("ascii", "replace").splitlines():
        with contextlib.suppress(ValueError, ZeroDivisionError, IndexError):
            if raw.startswith("#tb "):
                index, base = raw[4:].split(":")
                bases[int(index)] = Fraction(base.strip())
            elif raw[:1].isdigit():
                fields = [f.strip() for f in raw.split(",")]
                stream, pts, duration = int(fields[0]), int(fields[2]), int(fields[3])
                pictures += stream == 0 and int(fields[4]) > PLACEHOLDER_BYTES
                t = pts * bases[stream]
                if stream == 0 and (first is None or t < first):
                    first = t
                stop = (pts + duration) * bases[stream]
                end = stop if end is None else max(end, stop)
    if first is None or end is None:
        return None, pictures or None, None
    return float(end - first), pictures, float(first)
