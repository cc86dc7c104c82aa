"""Checking the options of a YAML mapping (a batch config's jobs and defaults, a defaults
file), with every problem collected as ``file:line: key: message``."""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bpvideo.batch.lines import LineDict, load_yaml
from bpvideo.errors import InputError, shown
from bpvideo.settings import check_value, option_name, option_specs
from bpvideo.sources.live import check_input_options

if TYPE_CHECKING:  # pragma: no cover
    from bpvideo.settings import SeparateSettings

__all__ = [
    "JOB_KEYS",
    "Checker",
    "ConfigError",
    "check_options",
    "did_you_mean",
    "is_scheduler",
    "load_mapping",
    "option_aliases",
    "options_apply",
]

#: A Dask scheduler's address: ``[tcp|tls|ws|wss|ucx://]host:port`` (or ``inproc://...``,
#: a scheduler in this process: the library's callers and the tests).
_SCHEDULER = re.compile(r"^(?:(?:tcp|tls|ws|wss|ucx)://)?(?:\[[0-9A-Fa-f:.]+\]|[^\s:/@\[\]]+)"
                        r":(\d{1,5})/?$")  # fmt: skip


def is_scheduler(address: object) -> bool:
    """Whether ``address`` is a Dask scheduler's address (``tcp://host:8786``), checked
    before Dask is asked: Dask's own check of a bad one was an internal error.

    Examples
    --------
    >>> is_scheduler("tcp://10.0.0.5:8786"), is_scheduler("[::1]:8786"), is_scheduler("host")
    (True, True, False)
    """
    if isinstance(address, str) and re.match(r"^inproc://\S+$", address):
        return True
    match = _SCHEDULER.match(address) if isinstance(address, str) else None
    return match is not None and 0 < int(match.group(1)) < 65536


#: Keys of a job (or of ``defaults``) that are not options of ``separate``.
JOB_KEYS = ("input", "output")


class ConfigError(InputError):
    """A config with problems; :attr:`problems` holds one ``file:line: ...`` per problem."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        count = len(self.problems)
        extra = f" (and {count - 1} more)" if count > 1 else ""
        super().__init__(self.problems[0] + extra if self.problems else "invalid config")


def option_aliases() -> dict[str, str]:
    """Spelling -> option name (``max_iter``, ``max-iter``, ``inertia-a`` -> ``a``), from
    :func:`bpvideo.settings.option_name`."""
    aliases: dict[str, str] = {}
    for name, _, spec in option_specs():
        for spelling in (name, name.replace("_", "-"), (spec.flag or "").lstrip("-")):
            if spelling and option_name(spelling) == name:
                aliases[spelling] = name
    return aliases


def did_you_mean(key: str, known: list[str]) -> str:
    close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


class Checker:
    """Collects ``file:line: where: message`` problems."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.problems: list[tuple[int, str]] = []

    def add(self, line: int, where: str, message: str) -> None:
        """Record a problem; the same one again (a ``defaults:`` key, met by every job
        that uses it) is said once."""
        prefix = f"{where}: " if where else ""
        problem = (line, f"{self.label}:{line}: {prefix}{message}")
        if problem not in self.problems:
            self.problems.append(problem)

    def raise_if_any(self) -> None:
        if self.problems:
            ordered = [msg for _, msg in sorted(self.problems, key=lambda p: p[0])]
            raise ConfigError(ordered)


def check_options(
    mapping: LineDict, where: str, check: Checker, aliases: dict[str, str]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, tuple[str, int]]]:
    """Split a job (or ``defaults``) into options, job keys and extra keys; check options.

    Returns ``(options, job_keys, extras)``; extras map key -> (value, line).
    """
    specs = {name: spec for name, _, spec in option_specs()}
    options: dict[str, Any] = {}
    job_keys: dict[str, Any] = {}
    extras: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for key, value in mapping.items():
        line = mapping.line_of(key)
        path = f"{where}.{key}" if where else str(key)
        if not isinstance(key, str):
            check.add(line, where, f"key {shown(key)} must be a name")
            continue
        if key in JOB_KEYS:
            if not isinstance(value, str) or not value:
                check.add(line, path, f"must be a path (a string), got {shown(value)}")
            else:
                job_keys[key] = value
            continue
        name = aliases.get(key)
        if name is None:
            extras[key] = (value, line)
            continue
        if name in spelled:
            check.add(line, path, f"same option as {spelled[name]!r}: give it once")
            continue
        spelled[name] = key
        try:
            options[name] = check_value(name, specs[name], value)
        except InputError as exc:
            got = "" if value is None else f", got {shown(value)}"
            check.add(line, path, f"{exc.rule}{got}" if exc.rule else exc.message)
    return options, job_keys, extras


def load_mapping(path: str | os.PathLike, what: str) -> tuple[LineDict | None, Checker]:
    """The YAML mapping of ``path`` (None for an empty file) and a checker that holds its
    duplicate keys; anything else than a mapping is a :class:`ConfigError` (``what`` says
    which mapping)."""
    data, duplicates = load_yaml(path)
    check = Checker(str(path))
    for line, message in duplicates:
        check.add(line, "", message)
    if data is not None and not isinstance(data, LineDict):
        got = "a list" if isinstance(data, list) else shown(data)
        check.add(getattr(data, "line", 1), "", f"must be a mapping {what}, got {got}")
        check.raise_if_any()
    return data, check


def options_apply(
    check: Checker,
    inputs: Sequence[Path],
    settings: SeparateSettings,
    aliases: dict[str, str],
    job: tuple[int, list[tuple[LineDict, str]]],
) -> bool:
    """Whether every option of a job applies to each of its inputs (the rule of
    ``separate``: :func:`~bpvideo.sources.live.check_input_options`); when one does not,
    its problem is added on the line of the key that gave it.

    ``job`` is the job's line and the mappings its options come from, each with its name
    (``[(entry, "jobs[0]"), (defaults, "defaults")]``).
    """
    line, places = job
    for input_path in inputs:
        try:
            check_input_options(str(input_path), settings)
        except InputError as exc:
            name = exc.option[0] if exc.option else ""
            for mapping, label in places:
                key = next((k for k in mapping if aliases.get(str(k)) == name), None)
                if key is not None:
                    check.add(mapping.line_of(key), f"{label}.{key}", exc.message)
                    return False
            check.add(line, places[0][1], exc.message)
            return False
    return True
