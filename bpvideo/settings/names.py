"""Names of the options: their sections, flags, spellings and defaults, read off the
option table (the section classes of :mod:`bpvideo.settings`)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from bpvideo.settings.events import EventSettings
from bpvideo.settings.input import InputSettings
from bpvideo.settings.live import LiveSettings
from bpvideo.settings.masks import MaskSettings
from bpvideo.settings.output import OutputSettings
from bpvideo.settings.solver import SolverSettings
from bpvideo.settings.spec import Spec

__all__ = [
    "EXCLUSIVE",
    "OPTION_GROUPS",
    "OVERRIDES",
    "SECTIONS",
    "cli_flags",
    "default",
    "did_you_mean",
    "flag_of",
    "merge_options",
    "option_group",
    "option_name",
    "option_specs",
]


def option_specs() -> list[tuple[str, Any, Spec]]:
    """``(name, default, spec)`` of every option, section by section, in order."""
    return [(f.name, f.default, f.metadata["spec"]) for cls in SECTIONS.values()
            for f in fields(cls)]  # fmt: skip


#: The sections of the option table, in order: ``--help`` title -> the section's class.
SECTIONS = {"Input": InputSettings, "Solver": SolverSettings, "Masks": MaskSettings,
            "Output": OutputSettings, "Events": EventSettings,
            "Live": LiveSettings}  # fmt: skip
#: The sections of ``bpvideo separate --help``: every option is in one, in this order
#: (derived from the table: an option is in the section whose class declares it).
OPTION_GROUPS: dict[str, tuple[str, ...]] = {
    title: tuple(f.name for f in fields(cls)) for title, cls in SECTIONS.items()
}


#: Options that say one thing in different ways: where one is given over another source
#: of options (a flag over a defaults file, a job over its batch's ``defaults:``), the
#: others of its group are dropped from that source (``--frames`` drops a file's ``end``).
EXCLUSIVE = (("frames", "end", "duration"), ("mask", "observe"))


#: An option set (not None, not False) in a higher layer drops these of a lower layer,
#: which cannot go with it: a flag wins over a defaults file, a job over its defaults.
OVERRIDES: dict[str, tuple[str, ...]] = {
    "no_video": ("crf", "preset", "lossless"),
    "lossless": ("crf", "preset", "no_video"),
    "crf": ("no_video", "lossless"),
    "preset": ("no_video", "lossless"),
    "learn": ("mask", "observe"),
    "learn_from": ("mask", "observe"),
}


def merge_options(low: Mapping[str, Any], high: Mapping[str, Any]) -> dict[str, Any]:
    """Options of ``high`` over those of ``low`` (keys are option names; see
    :data:`EXCLUSIVE` and :data:`OVERRIDES`).

    Examples
    --------
    >>> merge_options({"rank": 1, "end": "10s", "tol": 0.01}, {"rank": 3, "frames": 50})
    {'rank': 3, 'tol': 0.01, 'frames': 50}
    >>> merge_options({"crf": 18, "preset": "slow"}, {"no_video": True})
    {'no_video': True}
    """
    merged = dict(low)
    for group in EXCLUSIVE:
        if any(high.get(name) is not None for name in group):
            for name in group:
                merged.pop(name, None)
    for name, dropped in OVERRIDES.items():
        if high.get(name) not in (None, False):
            for other in dropped:
                if other not in high:
                    merged.pop(other, None)
    merged.update(high)
    return merged


def option_group(name: str) -> str:
    """The section of ``--help`` that shows option ``name`` (:data:`OPTION_GROUPS`)."""
    for group, names in OPTION_GROUPS.items():
        if name in names:
            return group
    raise KeyError(f"{name} is in no OPTION_GROUPS section: add it to one")


def default(name: str) -> Any:
    """The default of option ``name``.

    Examples
    --------
    >>> default("tol"), default("min_area")
    (0.001, 25)
    """
    return _DEFAULTS[name]


def flag_of(name: str, spec: Spec) -> str:
    """The command-line flag of an option: ``--max-iter`` for ``max_iter``."""
    return spec.flag or "--" + name.replace("_", "-")


def cli_flags() -> dict[str, str]:
    """Option name -> flag as :meth:`~bpvideo.errors.BpvideoError.render` takes it.

    Boolean pairs are ``"--gray/--color"``; ``output`` is ``-o``.
    """
    flags = {"output": "-o"}
    for name, _, spec in option_specs():
        flag = flag_of(name, spec)
        flags[name] = f"{flag}/{spec.secondary}" if spec.secondary else flag
    return flags


def _aliases() -> dict[str, str]:
    """Spelling -> option name: ``max_iter``, ``max-iter``, ``inertia-a``, ``inertia_a``."""
    aliases: dict[str, str] = {}
    for name, _, spec in option_specs():
        for spelling in (name, name.replace("_", "-"), flag_of(name, spec).lstrip("-")):
            aliases[spelling] = aliases[spelling.replace("-", "_")] = name
    return aliases


def option_name(key: Any) -> str | None:
    """The option a key names (``"inertia-a"`` -> ``"a"``), or None."""
    return _ALIASES.get(key) if isinstance(key, str) else None


def did_you_mean(key: str) -> str:
    close = difflib.get_close_matches(key, sorted(_ALIASES), n=1, cutoff=0.75)
    return f" ({key!r}: did you mean {close[0]!r}?)" if close else ""


_DEFAULTS = {name: value for name, value, _ in option_specs()}
_ALIASES = _aliases()
