"""Error and warning types of bpvideo.

Every failure the tool expects is a :class:`BpvideoError` whose message is one line that
names the input and the fix. The CLI prints it and exits with its ``exit_code``: 2 for
usage errors (bad options, bad input files), 1 for work that failed.

Messages speak the library's words (``rank=0 must be >= 1``). An error about an option
carries it in :attr:`BpvideoError.option` and keeps its message as a small template in
which ``{name}`` is an option, ``{name=}`` the option with the value that was given and
``{name=VALUE}`` the option with a suggested value; :meth:`BpvideoError.render` spells
them as command-line flags (``--rank 0 must be >= 1``).
"""

from __future__ import annotations

import copy
import os
import re
import reprlib
from collections.abc import Mapping
from typing import Any

__all__ = [
    "ArgumentTypeError",
    "BpvideoError",
    "ConvergenceWarning",
    "Diverged",
    "InputError",
    "Terminated",
    "WorkError",
    "callable_argument",
    "literal",
    "path_argument",
    "shown",
]

#: ``{name}``, ``{name=}`` or ``{name=VALUE}`` in a message template; ``{{``/``}}`` are braces.
_FIELD = re.compile(r"\{\{|\}\}|\{(\w+)(?:=([^{}]*))?\}")


def literal(text: Any) -> str:
    """``text`` (a path, say) made safe to put in a message template: braces doubled."""
    return str(text).replace("{", "{{").replace("}", "}}")


#: How much of a value a message quotes: a YAML alias bomb or a long string is shown
#: in a line, at the cost of its first items only.
_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxstring, _SHOWN.maxother = 2, 80, 80
_SHOWN.maxlist = _SHOWN.maxtuple = _SHOWN.maxdict = _SHOWN.maxset = 6
_SHOWN_CHARS = 120


def shown(value: Any) -> str:
    """``repr(value)`` for messages: on one line, containers and strings cut short.

    Examples
    --------
    >>> shown("two"), shown([1, 2]), shown(list(range(100)))
    ("'two'", '[1, 2]', '[0, 1, 2, 3, 4, 5, ...]')
    >>> import numpy as np
    >>> shown(np.ones((36, 48), bool)), shown([np.ones((2, 2))])
    ('<bool array of shape (36, 48)>', '[<float64 array of shape (2, 2)>]')
    """
    if _is_array(value):
        return f"<{value.dtype} array of shape {tuple(value.shape)}>"
    if isinstance(value, (list, tuple)) and any(_is_array(v) for v in value):
        text = ", ".join(shown(v) for v in value[: _SHOWN.maxlist])
        text = f"[{text}]" if len(value) <= _SHOWN.maxlist else f"[{text}, ...]"
    else:
        text = " ".join(_SHOWN.repr(value).split())  # a repr of several lines on one
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."


def _is_array(value: Any) -> bool:
    """An array (numpy's, CuPy's ...) of one dimension or more: its repr has many lines."""
    return getattr(value, "ndim", 0) > 0 and hasattr(value, "dtype") and hasattr(value, "shape")


def _value_text(value: Any) -> str:
    """A value as a message shows it: strings quoted, arrays by dtype and shape, everything
    else as printed, on one line."""
    if isinstance(value, (str, list, tuple, dict, set)) or _is_array(value):
        return shown(value)
    text = " ".join(str(value).split())
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."


class BpvideoError(Exception):
    """A failure with a one-line message that names the input and the fix.

    Parameters
    ----------
    message : str
        One line: what went wrong, with which input, and how to fix it. With ``option``
        it is a template (see the module docstring).
    option : (str, object), optional
        The option the error is about and the value it was given.

    Attributes
    ----------
    message : str
        The message in the library's words.
    option : (str, object) or None
        See above.
    rule : str or None
        For a value out of its bounds or of the wrong type: what the value must be
        (``must be >= 1``), without the option (batch configs name it themselves).
    """

    exit_code: int = 1

    def __init__(
        self, message: str, *, option: tuple[str, Any] | None = None, rule: str | None = None
    ) -> None:
        self.template = message
        self.option = option
        self.rule = None if rule is None else self._fill(rule, None)
        self.message = self.render()
        super().__init__(self.message)

    def render(self, flags: Mapping[str, str] | None = None) -> str:
        """The message, with options spelled as ``flags`` gives them (library words: None).

        Parameters
        ----------
        flags : mapping of str to str, optional
            Option name -> command-line flag (``{"max_iter": "--max-iter"}``); names it
            lacks keep their library spelling.

        Returns
        -------
        str

        Examples
        --------
        >>> error = InputError("{rank=} must be >= 1: try {rank=2}", option=("rank", 0))
        >>> error.message
        'rank=0 must be >= 1: try rank=2'
        >>> error.render({"rank": "--rank"})
        '--rank 0 must be >= 1: try --rank 2'
        """
        return self._fill(self.template, flags)

    def _fill(self, template: str, flags: Mapping[str, str] | None) -> str:
        if self.option is None:
            return template

        def field(match: re.Match[str]) -> str:
            whole, name, given = match.group(0), match.group(1), match.group(2)
            if name is None:
                return whole[0]  # {{ or }}
            if given is None:
                return _spell(name, flags)
            if given == "":  # the value the option was given
                value = self.option[1] if self.option[0] == name else None
                return _spell(name, flags, _value_text(value), _value_text(value))
            return _spell(name, flags, given, given.strip("'"))  # a suggested value

        return _FIELD.sub(field, template)

    def within(
        self, prefix: str, suffix: str = "", option: tuple[str, Any] | None = None
    ) -> BpvideoError:
        """The same error as ``prefix: message`` (the input's name, say) and ``suffix``.

        ``prefix`` is literal text; ``suffix`` a template about ``option`` (or about the
        error's own option) that ends the message.
        """
        error = copy.copy(self)
        template = (
            self.template if self.option is not None or option is None else literal(self.template)
        )
        error.option = self.option or option
        error.template = (literal(prefix) if error.option else prefix) + f": {template}{suffix}"
        error.message = error.render()
        error.args = (error.message,)
        return error

    def __str__(self) -> str:
        return self.message


def _spell(
    name: str, flags: Mapping[str, str] | None, text: str | None = None, typed: str = ""
) -> str:
    """One option of a template: ``name`` or ``name=text`` (library words), or its flag.

    ``text`` is the value as the library shows it (``'auto'``), ``typed`` as it follows
    the flag (``auto`` when suggested, ``'high'`` when quoting what was given). A boolean
    flag pair (``--gray/--color``) stands for its value on its own.
    """
    flag = flags.get(name) if flags is not None else None
    if flag is None:
        return name if text is None else f"{name}={text}"
    on, _, off = flag.partition("/")
    if text is None:
        return on
    if typed in ("True", "False"):
        return on if typed == "True" else (off or f"{on} false")
    return f"{on} {typed}"


class InputError(BpvideoError, ValueError):
    """Bad usage: an invalid option value or an unusable input (exit code 2).

    Also a :class:`ValueError`, so that library callers can catch it as Python's own.
    """

    exit_code = 2


class ArgumentTypeError(InputError, TypeError):
    """An argument of the library of the wrong kind (a number where a function goes, an
    int where a path goes): an :class:`InputError` that is also a :class:`TypeError`."""


def _quoted(value: Any) -> str:
    """A value for a message template: on one line (an array's repr has several), braces
    doubled."""
    return literal(_value_text(value))


def callable_argument(name: str, value: Any) -> None:
    """Refuse a ``callback`` or ``progress`` that cannot be called, before any work.

    Examples
    --------
    >>> callable_argument("callback", 5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bpvideo.errors.ArgumentTypeError: callback=5 is not callable: pass a function of ...
    """
    if value is not None and not callable(value):
        raise ArgumentTypeError(
            f"{name}={_quoted(value)} is not callable: pass a function of one argument, or None"
        )


def path_argument(name: str, value: Any) -> str:
    """``value`` as a path string; a value that is not a path (an int, None, an array) is
    refused with the argument's name.

    Examples
    --------
    >>> path_argument("input", 5)
    Traceback (most recent call last):
    ...
    bpvideo.errors.ArgumentTypeError: input=5 is not a path: give a str or pathlib.Path
    """
    try:
        path = os.fspath(value)
    except TypeError:
        raise ArgumentTypeError(
            f"{name}={_quoted(value)} is not a path: give a str or pathlib.Path"
        ) from None
    return path if isinstance(path, str) else os.fsdecode(path)


class WorkError(BpvideoError):
    """Work that failed part-way: decoding, writing, solving (exit code 1)."""

    exit_code = 1


class Diverged(WorkError):
    """A solve whose iterates grew without bound (or became NaN/inf): nothing it gave can
    be used. Its message says which option to lower (exit code 1)."""


class Terminated(BaseException):
    """SIGTERM, turned into an exception so that cleanup (``finally``, ``__exit__``) runs.

    A ``BaseException`` like :class:`KeyboardInterrupt`: ``except Exception`` does not
    swallow it. The CLI exits with ``128 + signum`` (143).
    """

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum


class ConvergenceWarning(UserWarning):
    """The solver stopped at ``max_iter`` before meeting its tolerance."""
