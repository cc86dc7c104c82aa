"""What one option is (:class:`Spec`: type, bounds, help, flag) and checking a value
against it; sizes written as text (``WxH``). Times and spans: :mod:`bpvideo.times`.

The options themselves are declared in :mod:`bpvideo.settings`.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from typing import Any

from bpvideo.times import bad_value as _bad
from bpvideo.times import format_span, parse_span, parse_time, parse_time_of_day

__all__ = ["Spec", "check_value", "option", "parse_size"]


@dataclass(frozen=True)
class Spec:
    """Type, bounds and help of one option.

    Attributes
    ----------
    kind : {"int", "float", "str", "bool", "path", "threshold", "scale", "window", "span", \
"time", "time_of_day", "regions", "lines"}
        Value type. "threshold" and "scale" are a float within the bounds or the string
        "auto"; "window" is an integer within the bounds or the string "auto"; "span" is
        ``START:END`` (:func:`parse_span`); "time" a frame number or a time
        (:func:`parse_time`); "time_of_day" an ISO 8601 date and time, kept as ISO text
        with its offset (:func:`~bpvideo.times.parse_time_of_day`); "regions" a tuple of
        region specs (repeatable on the command line, see
        :mod:`bpvideo.events.regions`); "lines" a tuple of counting
        lines ``"x1,y1 x2,y2"`` (repeatable, :func:`bpvideo.events.objects.parse_line`).
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
    value = _path_text(value)
    kind = spec.kind
    if kind == "bool":
        if isinstance(value, bool):
            return value
        raise _bad(name, value, "must be true or false")
    if kind == "span":
        return format_span(parse_span(value, name))
    if kind == "time":
        return _check_time(name, spec, value)
    if kind == "time_of_day":
        return parse_time_of_day(value, name).isoformat()
    if kind == "reference":
        return _check_reference(name, value)
    if kind == "regions":
        return _check_regions(name, value)
    if kind == "lines":
        return _check_lines(name, value)
    if kind in ("threshold", "scale", "window") and isinstance(value, str):
        if value.strip().lower() == "auto":
            return "auto"
    if kind in ("int", "window"):
        kind = "int"
    if kind in ("int", "float", "threshold", "scale"):
        return _check_number(name, spec, value, kind)
    if kind in ("str", "path"):
        if not isinstance(value, str):
            what = "a path" if kind == "path" else "a string"
            raise _bad(name, value, f"must be {what}")
        if kind == "path" and (not value.strip() or "\0" in value):
            raise _bad(name, value, "must be a path (not empty, no NUL character)")
        if spec.choices is not None and value not in spec.choices:
            raise _bad(name, value, f"must be one of: {', '.join(spec.choices)}")
        return value
    raise AssertionError(f"unknown option kind {kind!r}")  # pragma: no cover


def _path_text(value: Any) -> Any:
    """A ``pathlib.Path`` (any ``os.PathLike``) as the string it names: Python callers pass
    paths as often as strings; anything else as it is."""
    if isinstance(value, os.PathLike):
        return os.fsdecode(os.fspath(value))
    return value


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


def _check_lines(name: str, value: Any) -> tuple[str, ...]:
    """Counting lines (``count_line``): one ``"x1,y1 x2,y2"`` or a list of them, checked."""
    from bpvideo.events.objects import parse_line

    return _each(name, value, parse_line, "a line 'x1,y1 x2,y2' or a list of them")


def _check_regions(name: str, value: Any) -> tuple[str, ...]:
    """Region specs (``roi``, ``exclude``): one string or a list of them; polygons checked."""
    from bpvideo.events.regions import parse_region

    return _each(
        name, value, parse_region, "a polygon 'x1,y1 x2,y2 x3,y3 ...' or a mask image path"
    )


def _each(name: str, value: Any, parse: Any, what: str) -> tuple[str, ...]:
    """One string or a list of them, each checked by ``parse(spec, name)``."""
    specs = [value] if isinstance(value, str) else value
    if not isinstance(specs, (list, tuple)):
        raise _bad(name, value, f"must be {what}")
    specs = [_path_text(spec) for spec in specs]
    for spec in specs:
        parse(spec, name)
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
