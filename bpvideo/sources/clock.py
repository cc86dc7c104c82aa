"""The time of day of an input (:class:`~bpvideo.times.WallClock`): the ``start_time``
option, else the container's ``creation_time`` tag, else none (:func:`input_clock`); a
live stream's arrival clock (:class:`ArrivalClock`).

A file's ``creation_time`` is read from ffmpeg's machine output (``-f ffmetadata``, the
container's global tags: one ``key=value`` a line), never from its log, and only parsed
as a date and time: a tag that is not one is ignored. It is taken as the time of the
first frame (cameras write the time the recording started).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import subprocess
import threading
import time
from typing import TYPE_CHECKING

from bpvideo.errors import InputError
from bpvideo.sources import ffmpeg as _ffmpeg
from bpvideo.times import WallClock, parse_time_of_day

if TYPE_CHECKING:  # pragma: no cover
    from bpvideo.sources.stream import FrameSource

__all__ = ["ArrivalClock", "ContainerClock", "RecentTimes", "container_time", "input_clock"]

logger = logging.getLogger("bpvideo")

#: Seconds ffmpeg may take to list a file's tags.
TAGS_TIMEOUT = 20.0
#: Frames whose arrival a live stream keeps (the sinks ask for the frames of the block
#: being written, a window of frames behind the reader at most): 18 minutes at 60 fps.
RECENT_FRAMES = 1 << 16


def container_time(path: str | os.PathLike, references: bool = False) -> dt.datetime | None:
    """The ``creation_time`` tag of a video file's container, or None (no such tag, not
    a date and time, or ffmpeg could not say)."""
    with _ffmpeg.opened_name(path) as name:
        cmd = [_ffmpeg.executable(), "-hide_banner", "-nostdin", "-loglevel", "quiet",
               *_ffmpeg.input_options(references), "-i", "file:" + name, "-map_metadata", "0",
               "-f", "ffmetadata", "pipe:1"]  # fmt: skip
        try:
            done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=TAGS_TIMEOUT, check=False, pass_fds=_fds(name),
                                  **_ffmpeg.no_sigint())  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            return None
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        if line.startswith("["):  # the first section (a stream, a chapter): no more tags
            break
        key, sep, value = line.partition("=")
        if sep and key.strip().lower() == "creation_time":
            try:
                return parse_time_of_day(value.strip(), "creation_time")
            except InputError:
                logger.debug("the creation_time tag is not a date and time: ignored")
                return None
    return None


def _fds(name: str) -> tuple[int, ...]:
    """The descriptor a ``/proc/self/fd/N`` name needs in the child."""
    prefix = "/proc/self/fd/"
    return (int(name[len(prefix) :]),) if name.startswith(prefix) else ()


def input_clock(
    input: str, start_time: str | None, source: FrameSource, references: bool = False
) -> WallClock | ContainerClock:
    """The clock of a file's, a folder's or stdin's frames: ``start_time`` (the option),
    else the ``creation_time`` of a video file's container, else unknown."""
    if start_time is not None:
        return WallClock(parse_time_of_day(start_time), "option")
    if input == "-" or source.numbering != "index" or not os.path.isfile(input):
        return WallClock()
    return ContainerClock(input, references)


class ContainerClock:
    """The clock of a video file's ``creation_time`` (:func:`container_time`), read by a
    thread while the frames are read and solved (an ffmpeg run: 0.1 to 0.2 s), waited for
    when a time of day is first asked (:meth:`at`, :meth:`to_dict`)."""

    def __init__(self, path: str, references: bool = False) -> None:
        self._clock: WallClock | None = None
        self._thread = threading.Thread(target=self._read, args=(path, references),
                                        name="bpvideo-creation-time", daemon=True)  # fmt: skip
        self._thread.start()

    def _read(self, path: str, references: bool) -> None:
        try:
            found = container_time(path, references)
        except (OSError, InputError):  # no ffmpeg, a file gone: no time of day
            found = None
        self._clock = WallClock(found, "container") if found is not None else WallClock()

    @property
    def clock(self) -> WallClock:
        """The clock, once read (unknown if ffmpeg did not answer in time)."""
        self._thread.join(TAGS_TIMEOUT + 5.0)
        return self._clock or WallClock()

    def at(self, seconds: float) -> str | None:
        """:meth:`WallClock.at` of the container's clock."""
        return self.clock.at(seconds)

    def to_dict(self) -> dict[str, str | None]:
        """:meth:`WallClock.to_dict` of the container's clock."""
        return self.clock.to_dict()


class RecentTimes(dict):
    """Seconds of frames by frame number (as :attr:`FrameSource.times`), keeping only the
    last ``keep`` frames set: a live stream's memory does not grow with its length."""

    def __init__(self, keep: int = RECENT_FRAMES) -> None:
        super().__init__()
        self.keep = keep

    def __setitem__(self, key: int, value: float) -> None:
        super().__setitem__(key, value)
        self.pop(key - self.keep, None)


class ArrivalClock:
    """A live stream's arrival clock: each frame's time is when it arrived, in seconds
    from the first frame's arrival (monotonic: a change of the system clock moves
    nothing), and the time of day of that first arrival; a reconnection's gap is a gap in
    the times (no frame or time is made up for it).

    Attributes
    ----------
    times : RecentTimes
        Seconds of the recent frames by frame number.
    clock : WallClock
        The time of day of second 0 (unknown until the first frame arrives).
    """

    def __init__(self) -> None:
        self.times = RecentTimes()
        self.clock = WallClock()
        self._first: float | None = None

    def stamp(self, index: int, arrived: float) -> None:
        """Frame ``index`` arrived at ``arrived`` (:func:`time.monotonic`).

        The time of day of the first arrival is kept to the millisecond and each frame's
        seconds to the microsecond: what summary.json's ``start_time`` and frames.csv's
        ``seconds`` record, so that ``bpvideo events`` finds the run's times of day again
        from them (a finer origin put them 1 ms off now and then)."""
        if self._first is None:
            self._first = arrived
            wall = time.time() - (time.monotonic() - arrived)
            origin = dt.datetime.fromtimestamp(wall).astimezone()
            origin = origin.replace(microsecond=origin.microsecond // 1000 * 1000)
            self.clock = WallClock(origin, "arrival")
        self.times[index] = round(arrived - self._first, 6)

    def arrived(self, index: int) -> float:
        """When frame ``index`` arrived, in seconds since the epoch (now, for a frame not
        stamped or no longer kept)."""
        if self.clock.origin is None or index not in self.times:
            return time.time()
        return self.clock.origin.timestamp() + self.times[index]

    def at(self, seconds: float) -> str | None:
        """:meth:`WallClock.at` of the arrival clock."""
        return self.clock.at(seconds)

    def to_dict(self) -> dict[str, str | None]:
        """:meth:`WallClock.to_dict` of the arrival clock."""
        return self.clock.to_dict()
