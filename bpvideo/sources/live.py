"""Live inputs: a network stream (a URL typed as INPUT), stdin or a capture device, read
as frames arrive, with reconnection after a drop.

A URL is read only where the user typed it: :func:`is_url` is asked of INPUT alone, never
of a name found inside a file (files reach ffmpeg as ``file:`` URLs with only the file
protocol allowed, so a playlist that names a URL stays refused). The ffmpeg that reads a
URL may use that URL's protocol family and nothing else (``-protocol_whitelist``), with
low-latency settings: a probe of at most half a second
(:data:`LOW_LATENCY`), and a read timeout so that a stalled stream counts as dropped.

Frames are decoded by ffmpeg into y4m (its header gives the size) and read by a thread
into a bounded queue (:class:`LiveReader`): the consumer takes what has arrived without
waiting for more, and a stop request (a signal) is seen within a fraction of a second
even while no frame comes. After a drop the reader reconnects with a doubling backoff
(0.5 s, 1 s, 2 s ... at most :data:`BACKOFF_MAX`), logging each gap; when the stream has
been gone for ``reconnect`` seconds it ends, as a clean end of stream does, and the
outputs are finished.
"""

from __future__ import annotations

import logging
import os
import queue
import re
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from bpvideo.errors import BpvideoError, InputError, literal
from bpvideo.limits import DEFAULT_FPS, MAX_HEADER_LINE
from bpvideo.settings.names import cli_flags
from bpvideo.sources import ffmpeg as _ffmpeg
from bpvideo.sources.accounting import failure
from bpvideo.sources.clock import ArrivalClock
from bpvideo.sources.pipes import Y4M_MAGIC, open_pipe, parse_y4m_header, y4m_frames
from bpvideo.sources.stream import FrameSource, frame_size, resize_frame

if TYPE_CHECKING:  # pragma: no cover
    from bpvideo.settings import SeparateSettings

__all__ = [
    "BACKOFF_MAX",
    "LIVE_ONLY",
    "LOW_LATENCY",
    "URL_SCHEMES",
    "LiveReader",
    "check_live_options",
    "is_device",
    "is_live",
    "is_url",
    "open_live",
    "redact",
]

logger = logging.getLogger("bpvideo")

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
#: Seconds the first connection is tried for (within ``reconnect``).
FIRST_TRIES = 5.0
#: Longest wait between two reconnection attempts, in seconds.
BACKOFF_MAX = 8.0
#: Frames waiting in the queue between the reader and the consumer (bounded memory: a
#: consumer that falls this far behind makes the reader wait, and ffmpeg with it).
QUEUE_FRAMES = 256


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


#: Options that mean something only for a live input.
LIVE_ONLY = ("segment", "events_to")


def is_live(input: str, settings: SeparateSettings) -> bool:
    """Whether INPUT is read live: a URL always, stdin and devices with ``live``."""
    return is_url(input) or bool(settings.live)


def check_live_options(input: str, settings: SeparateSettings) -> None:
    """Refuse live options for a file, and options a live run cannot honour, before
    anything is opened.

    Raises
    ------
    InputError
        Naming the option.
    """
    if not is_live(input, settings):
        for name in LIVE_ONLY:
            if getattr(settings, name) is not None:
                raise InputError(
                    f"{{{name}}} applies to live inputs: add {{live}} or give a URL",
                    option=(name, getattr(settings, name)),
                )
        return
    if not (is_url(input) or input == "-" or is_device(input)):
        raise InputError(
            f"{input}: {{live}} reads stdin ('-'), a capture device or a URL: give one of "
            "them, or drop {live} for a file",
            option=("live", True),
        )
    if settings.background_from not in ("auto", "none"):
        raise InputError("{background_from} cannot be used on a live stream: its first "
                         "seconds are learned; give {learn} frames where the scene is empty",
                         option=("background_from", settings.background_from))  # fmt: skip
    for name in ("learn_from", "mask", "observe", "groundtruth", "preview", "end", "start_time"):
        if getattr(settings, name) not in (None, False):
            raise InputError(f"{{{name}}} cannot be used on a live stream: drop it",
                             option=(name, getattr(settings, name)))  # fmt: skip
    for name, plain in (("start", 0), ("step", 1)):
        if getattr(settings, name) != plain:
            raise InputError(f"{{{name}}} cannot be used on a live stream: drop it (a live "
                             "stream is read from now on, every frame)",
                             option=(name, getattr(settings, name)))  # fmt: skip
    if settings.masks_to == "-" and settings.events_to == "-":
        raise InputError("{masks_to} and {events_to} cannot both be stdout: give one a file",
                         option=("events_to", "-"))  # fmt: skip


def redact(url: str) -> str:
    """``url`` without a password (``rtsp://user:***@host/...``), for messages and logs.

    Examples
    --------
    >>> redact("rtsp://admin:secret@10.0.0.5/stream1")
    'rtsp://admin:***@10.0.0.5/stream1'
    """
    return re.sub(r"^([a-zA-Z]+://[^/@:]*):[^/@]*@", r"\1:***@", url)


def _command(name: str, size: tuple[int, int] | None) -> list[str]:
    """The ffmpeg command that decodes ``name`` (a URL or a device) into y4m on stdout."""
    cmd = [_ffmpeg.executable(), "-hide_banner", "-nostdin", "-nostats", "-loglevel", "error"]
    if is_url(name):
        scheme = name.split(":", 1)[0].lower()
        cmd += ["-protocol_whitelist", URL_SCHEMES[scheme], *LOW_LATENCY]
        cmd += ["-rw_timeout", str(int(READ_TIMEOUT * 1e6))]
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
class _Connection:
    """One ffmpeg reading the stream: its process and its frames."""

    proc: subprocess.Popen
    frames: Iterator[tuple[int, np.ndarray]]
    width: int
    height: int
    fps: float
    log: list[str] = field(default_factory=list)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdout, self.proc.stderr):
            try:
                pipe.close()
            except OSError:
                pass


def _connect(name: str, size: tuple[int, int] | None) -> _Connection:
    """Start ffmpeg on ``name`` and read its y4m header.

    Raises
    ------
    OSError
        ffmpeg could not open the stream (the message is ffmpeg's last line).
    """
    proc = subprocess.Popen(_command(name, size), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            **_ffmpeg.no_sigint())  # fmt: skip
    _ffmpeg.enlarge_pipe(proc.stdout)
    line = proc.stdout.readline(MAX_HEADER_LINE)
    if not line.startswith(Y4M_MAGIC):
        proc.kill()
        err = proc.stderr.read().decode("utf-8", "replace").splitlines()
        proc.wait()
        raise OSError(failure(err, "no video stream").replace(name, redact(name)))
    header = parse_y4m_header(line, redact(name))
    frames = y4m_frames(proc.stdout, header, redact(name))
    fps = header.fps if header.fps == header.fps and header.fps > 0 else DEFAULT_FPS
    return _Connection(proc, frames, header.width, header.height, fps)


class LiveReader:
    """Frames of a live source read by a thread as they arrive (see the module docstring).

    Parameters
    ----------
    name : str
        A URL or a capture device; or ``"-"`` with ``stream``.
    reconnect : float
        Seconds a dropped stream is waited for before it counts as ended (0: never
        reconnect).
    stop : threading.Event, optional
        Set to end the frames (a signal asked the run to stop).
    stream : binary file, optional
        stdin (``name == "-"``): read until it ends, never reconnected.
    raw : dict, optional
        How ``stream`` is read, as :func:`~bpvideo.sources.pipes.open_pipe` takes it
        (``size``, ``pix_fmt`` of raw frames; ``fps``).
    """

    def __init__(
        self,
        name: str,
        *,
        reconnect: float = 30.0,
        stop: threading.Event | None = None,
        stream: BinaryIO | None = None,
        raw: dict | None = None,
    ) -> None:
        self.name = name
        self.shown = redact(name)
        self.reconnect = reconnect
        self.stop = stop or threading.Event()
        self.queue: queue.Queue[tuple[np.ndarray, float] | None] = queue.Queue(QUEUE_FRAMES)
        self.gaps: list[float] = []  #: seconds of each gap the stream was reconnected after
        #: when each frame arrived (the stream's times and time of day)
        self.arrivals = ArrivalClock()
        self.error: BaseException | None = None
        self._connection: _Connection | None = None
        if stream is not None:
            frames, w, h, fps = open_pipe(stream, name="stdin", **(raw or {}))
            self.width, self.height, self.fps = w, h, float(fps)
            self._first: Iterator[tuple[int, np.ndarray]] = frames
            self.reconnect = 0.0
        else:
            self._connection = self._first_connection()
            c = self._connection
            self.width, self.height, self.fps = c.width, c.height, c.fps
            self._first = c.frames
        self._thread = threading.Thread(target=self._run, name="bpvideo-live", daemon=True)
        self._thread.start()

    def _first_connection(self) -> _Connection:
        """Connect, trying again for :data:`FIRST_TRIES` seconds (a camera that is starting).

        Raises
        ------
        InputError
            No connection: ffmpeg's last line says why.
        """
        deadline = time.monotonic() + min(self.reconnect, FIRST_TRIES)
        delay = 0.1
        while True:
            try:
                return _connect(self.name, None)
            except OSError as exc:
                if time.monotonic() + delay > deadline or self.stop.wait(delay):
                    raise InputError(
                        f"{literal(self.shown)}: cannot open the stream ({literal(exc)}): "
                        "check the address and that the camera is streaming"
                    ) from None
                delay = min(2 * delay, 1.0)

    def _run(self) -> None:
        try:
            frames: Iterator[tuple[int, np.ndarray]] | None = self._first
            while frames is not None and not self.stop.is_set():
                count = self._pump(frames)
                if self._connection is not None:
                    self._connection.stop()
                    self._connection = None
                if self.stop.is_set():  # asked to stop: not a drop
                    break
                frames = self._reconnected(count) if self.reconnect > 0 else None
        except BaseException as exc:  # handed to the consumer, raised there
            self.error = exc
        finally:
            if self._connection is not None:
                self._connection.stop()
            self._put(None)

    def _pump(self, frames: Iterator[tuple[int, np.ndarray]]) -> int:
        """Queue the frames of one connection until it ends; how many there were (an
        error of a stream never reconnected, before its first frame, is raised)."""
        count = 0
        try:
            for _, frame in frames:
                if self.stop.is_set() or not self._put((frame, time.monotonic())):
                    break
                count += 1
        except Exception as exc:  # cut inside a frame (OSError, the readers' WorkError)
            if self.reconnect > 0 or self.stop.is_set():  # a drop, said when reconnecting
                logger.debug("%s: %s", self.shown, exc)
            elif isinstance(exc, BpvideoError) and count == 0:
                raise
            else:  # the end of stdin: the frames read are kept, the cut is said
                said = (exc.render(cli_flags()) if isinstance(exc, BpvideoError)
                        else f"{self.shown}: {exc}")  # fmt: skip
                logger.warning("%s; the stream ends there: the %d frame(s) before it are "
                               "kept", said, count)  # fmt: skip
        return count

    def _put(self, item: tuple[np.ndarray, float] | None) -> bool:
        """Queue ``item``, waiting while the queue is full; False once stopped."""
        while True:
            try:
                self.queue.put(item, timeout=0.2)
                return True
            except queue.Full:
                if self.stop.is_set():
                    return False

    def _reconnected(self, count: int) -> Iterator[tuple[int, np.ndarray]] | None:
        """Reconnect with a doubling backoff; None once ``reconnect`` seconds have passed."""
        lost = time.monotonic()
        delay = 0.5
        logger.warning("%s: the stream dropped after %d frame(s); reconnecting", self.shown,
                       count)  # fmt: skip
        while not self.stop.is_set():
            waited = time.monotonic() - lost
            if waited >= self.reconnect:
                logger.info("%s: no stream for %.1fs: the stream has ended", self.shown, waited)
                return None
            if self.stop.wait(min(delay, self.reconnect - waited)):
                return None
            delay = min(2 * delay, BACKOFF_MAX)
            try:
                self._connection = _connect(self.name, (self.width, self.height))
            except OSError as exc:
                logger.info("%s: not back yet (%s)", self.shown, exc)
                continue
            gap = time.monotonic() - lost
            self.gaps.append(gap)
            logger.warning("%s: reconnected after a gap of %.1fs", self.shown, gap)
            return self._connection.frames
        return None

    def frames(self) -> Iterator[tuple[np.ndarray, float]]:
        """``(frame, arrival time)`` in order, until the stream ends or :attr:`stop` is set.

        Raises
        ------
        BaseException
            What failed in the reading thread.
        """
        try:
            while True:
                try:
                    item = self.queue.get(timeout=0.2)
                except queue.Empty:
                    if self.stop.is_set():
                        return
                    continue
                if item is None:
                    if self.error is not None:
                        raise self.error
                    return
                if self.stop.is_set():  # frames read after the stop are dropped
                    return
                yield item
        finally:
            self.close()

    def batches(self, most: int, scale: float = 1.0) -> Iterator[list[tuple[int, np.ndarray]]]:
        """Frames in batches of what has arrived: the next frame (waited for), then those
        already queued behind it, ``most`` at most; numbered 0, 1, ... and resized; their
        arrival times in :attr:`arrivals`.

        Raises
        ------
        BaseException
            What failed in the reading thread.
        """
        index = 0
        frames = self.frames()
        try:
            for frame, arrived in frames:
                self.arrivals.stamp(index, arrived)
                batch = [(index, resize_frame(frame, scale))]
                index += 1
                while len(batch) < most:
                    try:
                        item = self.queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is None:
                        self.queue.put(None)  # the end, seen again by frames()
                        break
                    self.arrivals.stamp(index, item[1])
                    batch.append((index, resize_frame(item[0], scale)))
                    index += 1
                yield batch
        finally:
            frames.close()

    def close(self) -> None:
        """Stop reading (ends ffmpeg and the thread)."""
        self.stop.set()
        connection = self._connection
        if connection is not None:
            connection.stop()
        self._thread.join(2.0)


def open_live(
    name: str,
    *,
    scale: float = 1.0,
    reconnect: float = 30.0,
    stop: threading.Event | None = None,
    stdin: BinaryIO | None = None,
    raw: dict | None = None,
) -> tuple[FrameSource, LiveReader]:
    """Open a live source: a URL, a capture device, or stdin (``"-"``; read as ``raw``
    says, as :func:`~bpvideo.sources.pipes.open_pipe` reads a pipe: raw frames of
    ``size`` and ``pix_fmt``, else y4m or a container; ``fps``).

    Returns
    -------
    source : FrameSource
        Frames numbered 0, 1, ... in arrival order (resized by ``scale``), of unknown count.
    reader : LiveReader
        The reading thread (its queue, the gaps, :meth:`~LiveReader.ready`).

    Raises
    ------
    InputError
        The stream cannot be opened, or frames outside the bounds.
    """
    if name == "-":
        import sys

        reader = LiveReader("-", stop=stop, raw=raw,
                            stream=stdin if stdin is not None else sys.stdin.buffer)  # fmt: skip
    else:
        reader = LiveReader(name, reconnect=reconnect, stop=stop)
    shown = "stdin" if name == "-" else redact(name)
    try:
        w, h = frame_size(reader.width, reader.height, scale, shown)
    except BaseException:
        reader.close()
        raise

    def numbered() -> Iterator[tuple[int, np.ndarray]]:
        for batch in reader.batches(1, scale):
            yield from batch

    source = FrameSource(shown, w, h, reader.fps, None, (reader.width, reader.height),
                         numbered())  # fmt: skip
    source._decoder = reader
    source.times, source.clock = reader.arrivals.times, reader.arrivals
    return source, reader
