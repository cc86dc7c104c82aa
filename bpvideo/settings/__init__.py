"""Every option of ``separate``: its default, bounds, help and flag, in one table.

The table is in sections, one class each (:mod:`.input`, :mod:`.solver`, :mod:`.masks`,
:mod:`.output`); :class:`SeparateSettings` has them all. The CLI builds its click options
and ``--help`` sections from the table, YAML configs are checked against it, the
library's keyword arguments (:func:`bpvideo.separate` ...) are its fields, and each layer
is handed its own section (:meth:`SeparateSettings.section`, :attr:`~SeparateSettings.masks`,
:meth:`~SeparateSettings.solver_call`). Defaults of the solver and mask options are read
from the layers that own them (the solvers' signatures, :class:`~bpvideo.masks.MaskOptions`).
To add an option, add a field to its section with :func:`option`; the CLI, the config
loader, the library and ``summary.json`` pick it up.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from bpvideo.errors import InputError
from bpvideo.masks.options import MASK_RULES, MaskOptions
from bpvideo.settings.events import EventSettings
from bpvideo.settings.input import InputSettings
from bpvideo.settings.live import LiveSettings
from bpvideo.settings.masks import MaskSettings
from bpvideo.settings.names import (
    EXCLUSIVE,
    OPTION_GROUPS,
    OVERRIDES,
    SECTIONS,
    cli_flags,
    default,
    did_you_mean,
    flag_of,
    merge_options,
    option_group,
    option_name,
    option_specs,
)
from bpvideo.settings.output import X264_PRESETS, OutputSettings
from bpvideo.settings.solver import INIT_METHODS, METHODS, PAPER_SPARSITY, SolverSettings
from bpvideo.settings.spec import Spec, check_value, option, parse_size
from bpvideo.solvers.backends import DEVICES
from bpvideo.solvers.registry import on_backend, solver_call
from bpvideo.times import TIME_FORMS, Time, format_span, is_span, parse_span, parse_time

__all__ = [
    "DEVICES",
    "EXCLUSIVE",
    "INIT_METHODS",
    "MASK_RULES",
    "METHODS",
    "OPTION_GROUPS",
    "OVERRIDES",
    "SECTIONS",
    "TIME_FORMS",
    "X264_PRESETS",
    "InputSettings",
    "LiveSettings",
    "MaskSettings",
    "OutputSettings",
    "SeparateSettings",
    "SolverSettings",
    "Spec",
    "Time",
    "check_value",
    "cli_flags",
    "default",
    "flag_of",
    "format_span",
    "is_span",
    "merge_options",
    "option",
    "option_group",
    "option_name",
    "option_specs",
    "parse_size",
    "parse_span",
    "parse_time",
    "settings_of",
]


@dataclass
class SeparateSettings(
    LiveSettings, EventSettings, OutputSettings, MaskSettings, SolverSettings, InputSettings
):
    """Settings of one ``separate`` job. Defaults here are the tool's defaults.

    Every field carries a :class:`Spec` (type, bounds, help). Construct with keywords and
    call :meth:`validate`, or use :meth:`from_mapping` for untrusted input.
    """

    def validate(self) -> SeparateSettings:
        """Check and coerce every field in place; return self.

        Raises
        ------
        InputError
            The first invalid value, or options that cannot be combined.
        """
        for f in fields(self):
            setattr(self, f.name, check_value(f.name, f.metadata["spec"], getattr(self, f.name)))
        if self.mask is not None and self.observe is not None:
            raise InputError(
                "{mask} and {observe} cannot be combined: choose one",
                option=("observe", self.observe),
            )
        if isinstance(self.window, int) and 0 < self.window <= self.overlap:
            raise InputError(
                f"{{overlap=}} must be < {{window}} ({self.window}): lower {{overlap}}",
                option=("overlap", self.overlap),
            )
        if self.device == "cuda" and not on_backend(self.method):
            raise InputError(
                f"{{device='cuda'}} runs the bestpair and ncf methods, not {self.method}: use "
                "{device='cpu'} or {method='bestpair'}",
                option=("device", self.device),
            )
        if self.size is not None:
            parse_size(self.size)
        self._check_selection()
        self._check_encoder()
        if self.learn is not None or self.learn_from is not None:
            self._check_learned()
        return self

    def _check_selection(self) -> None:
        """One way to say where reading stops; an ``end`` after ``start`` (same units)."""
        stops = [name for name in ("frames", "end", "duration") if getattr(self, name) is not None]
        if len(stops) > 1:
            raise InputError(
                f"{{{stops[0]}}} and {{{stops[1]}}} both say where to stop reading: give one",
                option=(stops[1], getattr(self, stops[1])),
            )
        if self.end is not None:
            start, end = parse_time(self.start, "start"), parse_time(self.end, "end")
            same = (start.frames is None) == (end.frames is None)
            if same and end.to_frames(1.0) <= start.to_frames(1.0):  # frames, or seconds
                raise InputError(
                    f"{{end=}} must come after {{start}} ({self.start}): give a later {{end}}",
                    option=("end", self.end),
                )

    def _check_encoder(self) -> None:
        """``crf`` and ``preset`` set the H.264 encoder: refused when no H.264 is written."""
        for name in ("lossless", "no_video"):
            if not getattr(self, name):
                continue
            if name == "lossless" and self.no_video:
                raise InputError(
                    "{lossless} and {no_video} cannot be combined: {no_video} writes no video",
                    option=("lossless", True),
                )
            for setting in ("crf", "preset"):
                if getattr(self, setting) != default(setting):
                    raise InputError(
                        f"{{{setting}=}} sets the H.264 encoder, but {{{name}}} writes "
                        f"{'FFV1' if name == 'lossless' else 'no video'}: drop one",
                        option=(setting, getattr(self, setting)),
                    )

    def selection(self) -> dict[str, Any]:
        """``start``, ``frames``, ``end``, ``duration``, ``step``: which frames to read, as
        :func:`~bpvideo.sources.files.open_source` takes them."""
        return {name: getattr(self, name) for name in ("start", "frames", "end", "duration",
                                                       "step")}  # fmt: skip

    def _check_learned(self) -> None:
        """Options that a learned background (``learn``, ``learn_from``) cannot honour."""
        for name in ("mask", "observe"):
            if getattr(self, name) is not None:
                raise InputError(
                    f"{{{name}}} cannot be combined with {{learn}} or {{learn_from}}: the "
                    "learned background is applied to every pixel; drop one",
                    option=(name, getattr(self, name)),
                )
        if self.mask_rule == "support":
            raise InputError(
                "{mask_rule=} needs the solved sparse part, which a learned background does "
                "not have: use {mask_rule='residual'}",
                option=("mask_rule", self.mask_rule),
            )

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> SeparateSettings:
        """Build validated settings from a mapping of options.

        Keys are option names, or their flags' spellings (``inertia_a``, ``max-iter``).

        Raises
        ------
        InputError
            Unknown keys (all listed), the same option twice, or an invalid value.
        """
        given: dict[str, Any] = {}
        unknown = []
        for key, value in values.items():
            name = option_name(key)
            if name is None:
                unknown.append(str(key))
            elif name in given:
                raise InputError(f"{{{name}}} is given twice ({key!r}): give it once",
                                 option=(name, value))  # fmt: skip
            else:
                given[name] = value
        if unknown:
            hints = "".join(did_you_mean(key) for key in sorted(unknown))
            raise InputError(
                f"unknown option(s): {', '.join(sorted(unknown))}{hints}: the options are the "
                "fields of bpvideo.settings.SeparateSettings"
            )
        return cls(**given).validate()

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of every setting (JSON-able)."""
        return dataclasses.asdict(self)

    def section(self, title: str) -> dict[str, Any]:
        """The options of one section of the table (``"Input"``, ``"Solver"``, ``"Masks"``,
        ``"Output"``, ``"Live"``), by name: what the layer that uses them is handed."""
        return {f.name: getattr(self, f.name) for f in fields(SECTIONS[title])}

    @property
    def masks(self) -> MaskOptions:
        """The ``Masks`` section as the mask step takes it."""
        return MaskOptions(**self.section("Masks"))

    def solver_call(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        """The solver of :attr:`method`, its positional arguments after ``A`` and its
        keywords: the options its registry entry names
        (:func:`~bpvideo.solvers.registry.solver_call`), ``sparsity`` as a number."""
        options = dict(self.section("Solver"), sparsity=self.solver_sparsity)
        return solver_call(self.method, options)

    @property
    def solver_sparsity(self) -> float:
        """``sparsity`` as a number: "auto" is :data:`PAPER_SPARSITY` here (a solve with a
        reference background estimates it instead, see
        :func:`bpvideo.background.reference.auto_sparsity`)."""
        return PAPER_SPARSITY if self.sparsity == "auto" else float(self.sparsity)


#: Options that only mean something for files (``separate_file``), not for arrays: those
#: the option table marks ``arrays=False``.
FILE_OPTIONS = tuple(name for name, _, spec in option_specs() if not spec.arrays)


def settings_of(options: dict[str, Any], *, arrays: bool) -> SeparateSettings:
    """Validated settings from keyword options; file-only options refused for arrays."""
    settings = SeparateSettings.from_mapping(options)
    if arrays:
        for name in FILE_OPTIONS:
            if getattr(settings, name) != default(name):
                raise InputError(
                    f"{{{name}}} applies to files: use bpvideo.separate_file (or "
                    "BackgroundModel for a learned background)",
                    option=(name, getattr(settings, name)),
                )
    return settings
