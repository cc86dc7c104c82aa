"""What one option is (:class:`Spec`: type, bounds, help, flag) and checking a value
against it; the parsers of the options written as text (``WxH``, ``START:END``, times).

The options themselves are declared in :mod:`bpvideo.settings`.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any

from bpvideo.errors import InputError

__all__ = [
    "TIME_FORMS",
    "Spec",
    "Time",
    "check_value",
    "format_span",
    "is_span",
    "option",
    "parse_size",
    "parse_span",
    "parse_time",
]


@dataclass(frozen=True)
class Spec:
    """Type, bounds and help of one option.

    Attributes
    ----------
    kind : {"int", "float", "str", "bool", "path", "threshold", "scale", "window", "span", \
"time", "regions"}
        Value type. "threshold" and "scale" are a float within the bounds or the string
        "auto"; "window" is an integer within the bounds or the string "auto"; "span" is
        ``START:END`` (:func:`parse_span`); "time" a frame number or a time
        (:func:`parse_time`); "regions" a tuple of region specs (repeatable on the
        command line, see :mod:`bpvideo.events.regions`).
    help : str
        One-line help text (also the CLI help).
    low, high : float or None
        Bounds; ``low_open``/``high_open`` make them strict.
    choices : tuple of str or None
        Allowed values of a "str" option.
    optional : bool
        ``None`` is a valid value (meaning "not set").
    flag : str or None
        CLI flag when it is not derived from the name (``--max-iter`` from ``max_iter``).
    secondary : str or None
        The "off" flag of a boolean pair (``--color`` for ``--gray``).
    cli : bool
        Whether the option appears on the command line of ``separate``.
    arrays : bool
        Whether the option applies to frames in memory (:func:`bpvideo.separate`); False
        for those of files only (stdin's size, the outputs written, ground truth...).
    limit : float or None
        A cap on the cost an option may ask for rather than on its meaning (a radius, a
        frame count): only a value above it is told of it.
    """

    kind: str
    help: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] | None = None
    optional: bool = False
    flag: str | None = None
    secondary: str | None = None
    cli: bool = True
    arrays: bool = True
    metavar: str | None = None
    limit: float | None = None


def option(default: Any, kind: str, help: str, **kwargs: Any) -> Any:
    """Declare a settings field with its :class:`Spec`."""
    return dataclasses.field(default=default, metadata={"spec": Spec(kind, help, **kwargs)})


def _bounds_text(spec: Spec) -> str:
    parts = []
    if spec.low is not None:
        parts.append(f"{'>' if spec.low_open else '>='} {spec.low:g}")
    if spec.high is not None:
        parts.append(f"{'<' if spec.high_open else '<='} {spec.high:g}")
    return " and ".join(parts)


def _bad(name: str, value: Any, rule: str) -> InputError:
    """``name=value rule`` (``rank=0 must be >= 1``), about option ``name``."""
    return InputError(f"{{{name}=}} {rule}", option=(name, value), rule=rule)


def check_value(name: str, spec: Spec, value: Any) -> Any:
    """Coerce and check one option value; raise :class:`InputError` when it is invalid.

    Parameters
    ----------
    name : str
        Option name (as in :class:`SeparateSettings`).
    spec : Spec
        Its specification.
    value : Any
        The value, from the CLI, a YAML file or Python.

    Returns
    -------
    Any
        The value, converted to the option's type.

    Raises
    ------
    InputError
        With ``option=(name, value)`` and ``rule`` (``must be >= 1``).

    Examples
    --------
    >>> from bpvideo.settings import option_specs
    >>> specs = dict((n, s) for n, _, s in option_specs())
    >>> check_value("rank", specs["rank"], "3")
    3
    >>> check_value("rank", specs["rank"], 0)
    Traceback (most recent call last):
    ...
    bpvideo.errors.InputError: rank=0 must be >= 1
    """
    if value is None:
        if spec.optional:
            return None
        raise _bad(name, value, "must be set")
    kind = spec.kind
    if kind == "bool":
        if isinstance(value, bool):
            return value
        raise _bad(name, value, "must be true or false")
    if kind == "span":
        return format_span(parse_span(value, name))
    if kind == "time":
        return _check_time(name, spec, value)
    if kind == "reference":
        return _check_reference(name, value)
    if kind == "regions":
        return _check_regions(name, value)
    if kind in ("threshold", "scale", "window") and isinstance(value, str):
        if value.strip().lower() == "auto":
            return "auto"
    if kind in ("int", "window"):
        kind = "int"
    if kind in ("int", "float", "threshold", "scale"):
        return _check_number(name, spec, value, kind)
    if kind in ("str", "path"):
        if not isinstance(value, str):
            raise _bad(name, value, "must be a string")
        if kind == "path" and (not value.strip() or "\0" in value):
            raise _bad(name, value, "must be a path (not empty, no NUL character)")
        if spec.choices is not None and value not in spec.choices:
            raise _bad(name, value, f"must be one of: {', '.join(spec.choices)}")
        return value
    raise AssertionError(f"unknown option kind {kind!r}")  # pragma: no cover


def _check_reference(name: str, value: Any) -> str:
    """``auto``, ``none``, ``START:END`` (checked, normalised) or a path (not empty)."""
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise _bad(name, value, "must be auto, none, an image path or START:END")
    word = value.strip().lower()
    if word in ("auto", "none"):
        return word
    if ":" in value and all(p.strip().isdigit() or not p.strip() for p in value.split(":", 1)):
        return format_span(parse_span(value, name))
    return value


def _check_regions(name: str, value: Any) -> tuple[str, ...]:
    """Region specs (``roi``, ``exclude``): one string or a list of them; polygons checked."""
    from bpvideo.events.regions import parse_region

    specs = [value] if isinstance(value, str) else value
    if not isinstance(specs, (list, tuple)):
        raise _bad(name, value, "must be a polygon 'x1,y1 x2,y2 x3,y3 ...' or a mask image path")
    for spec in specs:
        parse_region(spec, name)
    return tuple(specs)


def _check_number(name: str, spec: Spec, value: Any, kind: str) -> float:
    """A number option: type, finiteness and bounds."""
    auto = " or 'auto'" if spec.kind in ("threshold", "scale", "window") else ""
    if isinstance(value, bool):
        raise _bad(name, value, f"must be a number{auto}")
    try:
        if kind == "int":
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            number: float = int(value)
        else:
            number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise _bad(
            name, value, f"must be {'an integer' if kind == 'int' else 'a number'}{auto}"
        ) from None
    if not math.isfinite(number):
        raise _bad(name, value, "must be finite")
    bad_low = spec.low is not None and (number <= spec.low if spec.low_open else number < spec.low)
    bad_high = spec.high is not None and (
        number >= spec.high if spec.high_open else number > spec.high
    )
    shown_value = number if isinstance(value, str) else value  # text typed for 'auto' options
    if bad_low or bad_high:
        raise _bad(name, shown_value, f"must be {_bounds_text(spec)}")
    if spec.limit is not None and number > spec.limit:
        raise _bad(name, shown_value, f"must be <= {spec.limit:g} (a bound on its cost)")
    return number


def parse_size(text: str) -> tuple[int, int]:
    """``(width, height)`` from ``"WxH"``; raise :class:`InputError` when malformed."""
    parts = text.lower().replace(" ", "").split("x")
    try:
        w, h = (int(p) for p in parts)
    except ValueError:
        raise _bad("size", text, "must be WxH, e.g. {size='320x240'}") from None
    if w < 1 or h < 1:
        raise _bad("size", text, "must be positive, e.g. {size='320x240'}")
    from bpvideo.limits import MAX_PIXELS, MAX_SIDE

    if max(w, h) > MAX_SIDE or w * h > MAX_PIXELS:
        raise _bad(
            "size", text, f"must be at most {MAX_SIDE} pixels a side and {MAX_PIXELS} in all"
        )
    return w, h


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
        raise _bad(name, value, "must be START:END (frame indices), e.g. {learn='0:200'}") from None
    if start < 0 or (end is not None and end < start + 2):
        raise _bad(name, value, "must have 0 <= START and START + 2 <= END (two frames or more)")
    from bpvideo.limits import MAX_FRAMES

    if max(start, end or 0) > MAX_FRAMES:
        raise _bad(name, value, f"must have START and END <= {MAX_FRAMES}")
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
        raise _bad(name, value, f"must be {TIME_FORMS}")
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
    raise _bad(name, value, f"must be {TIME_FORMS}{hint}")


def _check_time(name: str, spec: Spec, value: Any) -> int | str:
    """A time option: the frame number as an int, or the time as given (checked)."""
    time = parse_time(value, name)
    amount = time.frames if time.frames is not None else time.seconds
    assert amount is not None
    if spec.low is not None and (amount <= spec.low if spec.low_open else amount < spec.low):
        raise _bad(name, time.frames if time.frames is not None else value,
                   f"must be {_bounds_text(spec)}")  # fmt: skip
    if spec.limit is not None and time.frames is not None and time.frames > spec.limit:
        raise _bad(name, time.frames, f"must be <= {spec.limit:g} (a bound on its cost)")
    if not math.isfinite(amount):  # pragma: no cover - the patterns admit no inf
        raise _bad(name, value, "must be finite")
    return time.frames if time.frames is not None else str(value).strip().lower()


def is_span(spec: str) -> bool:
    """Whether ``background_from`` names frames (``START:END``) rather than an image."""
    try:
        parse_span(spec, "background_from")
    except InputError:
        return False
    return True
