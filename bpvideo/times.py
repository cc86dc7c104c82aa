"""Times and spans of frames as options write them: a frame number (``1500``), seconds
(``90s``), ``HH:MM:SS[.ms]`` (:func:`parse_time`), and ``START:END`` spans of frames
(:func:`parse_span`); times of day (ISO 8601, :func:`parse_time_of_day`) and the clock
that gives a time of day to the seconds of an input (:class:`WallClock`). A low module:
the settings, the sources and the events parse with it.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass
from typing import Any

from bpvideo.errors import InputError

__all__ = [
    "START_TIME_SOURCES",
    "TIME_FORMS",
    "Time",
    "WallClock",
    "bad_value",
    "format_span",
    "is_span",
    "parse_span",
    "parse_time",
    "parse_time_of_day",
]


def bad_value(name: str, value: Any, rule: str) -> InputError:
    """``name=value rule`` (``rank=0 must be >= 1``), about option ``name``: the error of
    one option's value, for every parser of options."""
    return InputError(f"{{{name}=}} {rule}", option=(name, value), rule=rule)


def parse_span(value: Any, name: str = "learn") -> tuple[int, int | None]:
    """``(start, end)`` frame indices from ``"START:END"`` (END may be empty: to the end).

    Parameters
    ----------
    value : str or (int, int)
        ``"0:200"``, ``"100:"`` or a pair of integers; ``end`` is excluded (as a slice).
    name : str
        The option, for messages.

    Returns
    -------
    (int, int or None)

    Examples
    --------
    >>> parse_span("0:200"), parse_span((10, 20)), parse_span("100:")
    ((0, 200), (10, 20), (100, None))
    """
    try:
        if isinstance(value, str):
            first, sep, last = value.replace(" ", "").partition(":")
            if not sep:
                raise ValueError
            start, end = int(first or 0), (int(last) if last else None)
        else:
            start, end = (int(v) for v in value)
    except (TypeError, ValueError, OverflowError):  # Overflow: a YAML .inf
        raise bad_value(
            name, value, "must be START:END (frame indices), e.g. {learn='0:200'}"
        ) from None
    if start < 0 or (end is not None and end < start + 2):
        raise bad_value(
            name, value, "must have 0 <= START and START + 2 <= END (two frames or more)"
        )
    from bpvideo.limits import MAX_FRAMES

    if max(start, end or 0) > MAX_FRAMES:
        raise bad_value(name, value, f"must have START and END <= {MAX_FRAMES}")
    return start, end


def format_span(span: tuple[int, int | None]) -> str:
    """``"START:END"`` (see :func:`parse_span`)."""
    return f"{span[0]}:{'' if span[1] is None else span[1]}"


#: The forms of a time option, for help and messages.
TIME_FORMS = (
    "a frame number (1500), seconds (90s, 2.5s) or HH:MM:SS[.ms] (00:01:30), or minutes or "
    "hours (10m, 1h)"
)
_TIMECODE = re.compile(r"^([0-9]+):([0-5]?[0-9]):([0-5]?[0-9](?:\.[0-9]+)?)$")
_SECONDS = re.compile(r"^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([smh])$")
_UNIT = {"s": 1, "m": 60, "h": 3600}


@dataclass(frozen=True)
class Time:
    """A point or a length in a video: a number of frames, or seconds.

    Attributes
    ----------
    frames : int or None
        Frames (a plain integer was given).
    seconds : float or None
        Seconds (``90s`` or ``HH:MM:SS[.ms]`` was given).
    """

    frames: int | None = None
    seconds: float | None = None

    def to_frames(self, fps: float) -> int:
        """The frame count (or 0-based frame index) at ``fps`` frames per second: the
        nearest frame to a time (halves round up)."""
        if self.frames is not None:
            return self.frames
        assert self.seconds is not None
        return math.floor(self.seconds * fps + 0.5)


def parse_time(value: Any, name: str = "start") -> Time:
    """A frame number or a time, as PySceneDetect and DVR-Scan take them.

    Parameters
    ----------
    value : int or str
        A plain integer is frames (``1500``, ``"1500"``); ``"90s"`` or ``"2.5s"`` is
        seconds (``"10m"``, ``"1h"``: minutes, hours); ``"HH:MM:SS"`` or
        ``"HH:MM:SS.mmm"`` is a timecode.
    name : str
        The option, for messages.

    Returns
    -------
    Time

    Raises
    ------
    InputError
        Any other form (a float, ``"1:30"``, ``"90 sec"``), with the forms accepted.

    Examples
    --------
    >>> parse_time(1500), parse_time("90s"), parse_time("00:01:30.5")
    (Time(frames=1500, seconds=None), Time(frames=None, seconds=90.0), \
Time(frames=None, seconds=90.5))
    >>> parse_time("00:01:30").to_frames(25), parse_time("2.5s").to_frames(29.97)
    (2250, 75)
    >>> parse_time("1h"), parse_time("1.5m")
    (Time(frames=None, seconds=3600.0), Time(frames=None, seconds=90.0))
    """
    if isinstance(value, bool):
        raise bad_value(name, value, f"must be {TIME_FORMS}")
    if isinstance(value, int):
        return Time(frames=value)
    text = value.strip().lower() if isinstance(value, str) else ""
    if re.fullmatch("[-+]?[0-9]+", text):
        return Time(frames=int(text))  # a negative one is refused by the bounds
    seconds = _SECONDS.match(text)
    if seconds:
        return Time(seconds=float(seconds.group(1)) * _UNIT[seconds.group(2)])
    code = _TIMECODE.match(text)
    if code:
        hours, minutes, secs = code.groups()
        return Time(seconds=int(hours) * 3600 + int(minutes) * 60 + float(secs))
    hint = ""
    if isinstance(value, float) or re.fullmatch(r"[0-9]*\.[0-9]+", text):
        hint = f" (seconds take an s: {value}s)"
    elif re.fullmatch(r"[0-9]+:[0-5][0-9](\.[0-9]+)?", text):
        hint = f" (minutes and seconds: 00:{text.zfill(5)})"
    raise bad_value(name, value, f"must be {TIME_FORMS}{hint}")


def is_span(spec: str) -> bool:
    """Whether ``background_from`` names frames (``START:END``) rather than an image."""
    try:
        parse_span(spec, "background_from")
    except InputError:
        return False
    return True


#: Where a run's time of day comes from (summary.json's ``start_time_source``): the
#: ``start_time`` option, the container's ``creation_time`` tag, a live stream's arrival
#: clock.
START_TIME_SOURCES = ("option", "container", "arrival")


def parse_time_of_day(value: Any, name: str = "start_time") -> dt.datetime:
    """A date and time of day in ISO 8601 (``2026-11-27T08:30:00+01:00``; ``Z`` for UTC;
    no offset: a local time as given, written without one).

    Parameters
    ----------
    value : str or datetime
        The text (a YAML timestamp may come as a datetime).
    name : str
        The option, for messages.

    Returns
    -------
    datetime
        Its offset kept (naive when none was given).

    Raises
    ------
    InputError
        Not a date and time: the form, with an example.

    Examples
    --------
    >>> parse_time_of_day("2026-11-27T08:30:00+01:00").isoformat()
    '2026-11-27T08:30:00+01:00'
    >>> parse_time_of_day("2026-11-27 07:30:00.5Z").isoformat()
    '2026-11-27T07:30:00.500000+00:00'
    """
    if isinstance(value, dt.datetime):
        return value
    text = value.strip() if isinstance(value, str) else ""
    try:
        if len(text) < 16 or text[10] not in "Tt ":  # a date alone is no time of day
            raise ValueError
        return dt.datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "Zz" else text)
    except (ValueError, IndexError):
        raise bad_value(name, value, "must be an ISO 8601 date and time, e.g. "
                        "{start_time='2026-11-27T08:30:00+01:00'}") from None  # fmt: skip


@dataclass(frozen=True)
class WallClock:
    """The time of day of an input's seconds: ``origin`` (the time of day at second 0:
    the input's first frame) plus the seconds.

    Attributes
    ----------
    origin : datetime or None
        None: the time of day is unknown (every time is None).
    source : str or None
        One of :data:`START_TIME_SOURCES` (None when unknown).

    Examples
    --------
    >>> clock = WallClock(parse_time_of_day("2026-11-27T23:59:59+01:00"), "option")
    >>> clock.at(1.5)
    '2026-11-28T00:00:00.500+01:00'
    >>> WallClock(None, None).at(1.5) is None
    True
    """

    origin: dt.datetime | None = None
    source: str | None = None

    def at(self, seconds: float) -> str | None:
        """ISO 8601 of the time of day ``seconds`` after the origin (milliseconds, the
        origin's offset), or None when unknown."""
        when = self.moment(seconds)
        return None if when is None else when.isoformat(timespec="milliseconds")

    def moment(self, seconds: float) -> dt.datetime | None:
        """The time of day ``seconds`` after the origin; None when unknown, or past the
        years a datetime holds (an origin of 9999-12-31, or seconds of a frame named
        with a huge number)."""
        if self.origin is None:
            return None
        try:
            return self.origin + dt.timedelta(seconds=float(seconds))
        except (OverflowError, ValueError):
            return None

    def to_dict(self) -> dict[str, str | None]:
        """summary.json's ``start_time`` and ``start_time_source``."""
        origin = None if self.origin is None else self.origin.isoformat(timespec="milliseconds")
        return {"start_time": origin, "start_time_source": self.source}
