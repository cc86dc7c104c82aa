"""Live inputs: a network stream (a URL typed as INPUT), stdin or a capture device, read
as frames arrive, with reconnection after a drop.

A URL is read only where the user typed it: :func:`is_url` is asked of INPUT alone, never
of a name found inside a file (files reach ffmpeg as ``file:`` URLs with only the file
protocol allowed, so a playlist that names a URL stays refused). The ffmpeg that reads a
URL (one connection: :mod:`bpvideo.sources.connection`) may use that URL's protocol
family and nothing else, with low-latency settings and a read timeout.

Frames are decoded by ffmpeg into y4m (its header gives the size) and read by a thread
into a bounded queue (:class:`LiveReader`): the consumer takes what has arrived without
waiting for more, and a stop request (a signal) is seen within a fraction of a second
even while no frame comes, the stream's opening included (the thread opens it). After
a drop the reader reconnects with a doubling backoff (0.5 s, 1 s, 2 s ... at most
:data:`BACKOFF_MAX`), logging each gap; when the stream has been gone for ``reconnect``
seconds it ends, as a clean end of stream does, and the outputs are finished. An attempt
that is still opening when those seconds are over is ended with them (an ffmpeg kept
waiting by a server that trickles bytes never times out on its own).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from bpvideo.errors import BpvideoError, InputError, Terminated, literal
from bpvideo.settings.names import cli_flags
from bpvideo.sources.clock import ArrivalClock
from bpvideo.sources.connection import (
    LOW_LATENCY,
    URL_SCHEMES,
    Connection,
    connect,
    is_device,
    is_url,
    redact,
)
from bpvideo.sources.pipes import open_pipe
from bpvideo.sources.stream import FrameSource, frame_size, resize_frame

if TYPE_CHECKING:  # pragma: no cover
    from bpvideo.settings import SeparateSettings

__all__ = [
    "BACKOFF_MAX",
    "LIVE_ONLY",
    "LOW_LATENCY",
    "URL_SCHEMES",
    "LiveReader",
    "check_input_options",
    "check_live_options",
    "is_device",
    "is_live",
    "is_url",
    "open_live",
    "redact",
    "signalled",
    "signals_stop",
]

logger = logging.getLogger("bpvideo")

#: Seconds the first connection is tried for (within ``reconnect``).
FIRST_TRIES = 5.0
#: Seconds the first connection waits for its first frame at least (``reconnect`` when
#: longer): a camera slow to start, or a loaded machine, is given time; a server that
#: trickles bytes and sends no frame is not waited on for ever.
FIRST_FRAME = 20.0
#: Longest wait between two reconnection attempts, in seconds.
BACKOFF_MAX = 8.0
#: Frames waiting in the queue between the reader and the consumer (bounded memory: a
#: consumer that falls this far behind makes the reader wait, and ffmpeg with it).
QUEUE_FRAMES = 256


#: Options that mean something only for a live input.
LIVE_ONLY = ("segment", "events_to")


def is_live(input: str, settings: SeparateSettings) -> bool:
    """Whether INPUT is read live: a URL always, stdin and devices with ``live``."""
    return is_url(input) or bool(settings.live)


def check_input_options(input: str, settings: SeparateSettings) -> None:
    """Refuse the options that do not apply to ``input``: the raw-frame options
    (``size``, ``pix_fmt``) off stdin or without ``size``, the live options off a live
    input (:func:`check_live_options`). The one rule of ``separate``, its library call and
    each input of a batch job.

    Raises
    ------
    InputError
        The first option that does not apply, with the fix.
    """
    if input != "-" and settings.size is not None:
        raise InputError(
            f"{{size}} applies only to raw frames on stdin (INPUT '-'), not to {literal(input)}"
            ": drop it (a video's size is in its header; {scale} resizes)",
            option=("size", settings.size),
        )
    if settings.pix_fmt != "gray" and settings.size is None:  # the default needs no size
        raise InputError(
            "{pix_fmt} describes raw frames on stdin: add {size='WxH'} and give INPUT '-', "
            "or drop it (a video's pixel format is in its header)",
            option=("pix_fmt", settings.pix_fmt),
        )
    check_live_options(input, settings)


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
        self._connection: Connection | None = None
        self._pending: subprocess.Popen | None = None  # the ffmpeg of a connection being made
        self._opened = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(stream, raw), daemon=True,
                                        name="bpvideo-live")  # fmt: skip
        self._thread.start()
        # The stream is opened by the thread (a camera that is starting, stdin that sends
        # nothing yet): a stop is seen meanwhile, as it is between frames.
        while not self._opened.wait(0.1):
            if self.stop.is_set():
                self.close()
                raise InputError(f"{literal(self.shown)}: stopped before the stream opened")
        if not hasattr(self, "width"):  # the opening failed: the thread says why
            self._thread.join()
            raise self.error  # type: ignore[misc]

    def _open(self, stream: BinaryIO | None, raw: dict | None) -> Iterator[tuple[int, np.ndarray]]:
        """Open the stream (stdin, or the first connection): its size and rate; its frames."""
        if stream is not None:
            frames, w, h, fps = open_pipe(stream, name="stdin", **(raw or {}))
            self.reconnect = 0.0
        else:
            c = self._connection = self._first_connection()
            frames, w, h, fps = c.frames, c.width, c.height, c.fps
        self.fps, self.height, self.width = float(fps), h, w  # width last: opened
        return frames

    def _started(self, proc: subprocess.Popen) -> None:
        """An ffmpeg connecting: :meth:`close` kills it (a stop is not kept waiting)."""
        self._pending = proc
        if self.stop.is_set():
            proc.kill()

    def _first_connection(self) -> Connection:
        """Connect, trying again for :data:`FIRST_TRIES` seconds (a camera that is starting);
        an attempt waits for its first frame ``reconnect`` seconds at most (at least
        :data:`FIRST_FRAME`), not for ever on a server that trickles bytes.

        Raises
        ------
        InputError
            No connection: ffmpeg's last line says why.
        """
        deadline = time.monotonic() + min(self.reconnect, FIRST_TRIES)
        delay = 0.1
        while True:
            try:
                return connect(self.name, None, self._started,
                               timeout=max(self.reconnect, FIRST_FRAME))  # fmt: skip
            except OSError as exc:
                if time.monotonic() + delay > deadline or self.stop.wait(delay):
                    raise InputError(
                        f"{literal(self.shown)}: cannot open the stream ({literal(exc)}): "
                        "check the address and that the camera is streaming"
                    ) from None
                delay = min(2 * delay, 1.0)

    def _run(self, stream: BinaryIO | None, raw: dict | None) -> None:
        try:
            try:
                frames: Iterator[tuple[int, np.ndarray]] | None = self._open(stream, raw)
            finally:
                self._opened.set()
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
            left = self.reconnect - (time.monotonic() - lost)  # the attempt included
            if left <= 0:
                continue
            try:
                self._connection = connect(self.name, (self.width, self.height), self._started,
                                           timeout=left)  # fmt: skip
            except OSError as exc:
                if not self.stop.is_set():  # else the stop ended the attempt
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
        for proc in (self._pending, getattr(self._connection, "proc", None)):
            if proc is not None and proc.poll() is None:
                proc.kill()
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
        import io
        import sys

        # A reader of its own: the thread may be still waiting for a byte when the process
        # exits, holding its lock (sys.stdin's, needed at exit: "Fatal Python error").
        if stdin is None:
            try:
                stdin = io.BufferedReader(io.FileIO(sys.stdin.fileno(), "rb", closefd=False))
            except (AttributeError, OSError, ValueError):  # a stdin without a descriptor
                stdin = sys.stdin.buffer
        reader = LiveReader("-", stop=stop, raw=raw, stream=stdin)
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


@contextlib.contextmanager
def signals_stop(stop: threading.Event, live: bool) -> Iterator[list[int]]:
    """On a live stream, SIGINT and SIGTERM set ``stop`` (the stream ends, the outputs
    are finished) instead of raising; the signals received are listed. Only the main
    thread can do this; a file's run is stopped by them as any command is."""
    received: list[int] = []
    if not live or threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum: int, frame: object) -> None:
        received.append(signum)
        stop.set()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def signalled(received: list[int], reader: LiveReader | None) -> BaseException | None:
    """The stop of a live run signalled before its first frame (the stream was not open,
    or ended without a frame, because it was asked to stop: nothing is finished), raised
    as the signal's, as a file's run stops; else None."""
    if not received or (reader is not None and reader.arrivals.clock.origin is not None):
        return None
    return KeyboardInterrupt() if received[0] == signal.SIGINT else Terminated(received[0])
