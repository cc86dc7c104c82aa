"""YAML batch configs: loading with line numbers, and validation before any work starts.

A config describes many ``separate`` jobs (see the README, "Batch runs")::

    executor: local            # or dask (optional; --executor wins)
    scheduler: tcp://host:8786 # dask scheduler (optional; --scheduler wins)
    workers: 2                 # local worker processes (optional; --workers wins)
    report: night.json         # the report (optional; --report wins; default NAME.report.json)
    defaults:                  # any option of ``separate``, for every job
      rank: 2
      output: out/{camera}/{stem}
    jobs:
      - input: cams/north/*.mp4   # a path or a glob
        camera: north             # an extra key, used by the output template
        sparsity: 1e-1            # a per-job override

Paths (``input``, ``output``, ``mask``, ``report``) are relative to the folder of the
config file, not to the current directory, so a config runs the same from anywhere.

Everything is checked before anything runs, and every problem is reported, each with
``file:line`` (``night.yaml:12: jobs[1].rank: must be an integer, got 'two'``). The
types and bounds of the options come from :mod:`bpvideo.settings` (``check_value``), never
from here. Two YAML traps are closed: duplicate keys are an error (PyYAML silently keeps
the last), and ``1e-1`` is a float (YAML 1.1, and so PyYAML, reads it as a string).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bpvideo.batch.checks import (
    JOB_KEYS,
    Checker,
    ConfigError,
    check_options,
    did_you_mean,
    is_scheduler,
    load_mapping,
    option_aliases,
    options_apply,
)
from bpvideo.batch.lines import LineDict, LineList, load_yaml
from bpvideo.errors import InputError, shown
from bpvideo.events.regions import image_specs_to
from bpvideo.limits import MAX_WORKERS
from bpvideo.settings import (
    SeparateSettings,
    is_span,
    merge_options,
    option_specs,
)
from bpvideo.sinks.guard import check_usable
from bpvideo.sinks.paths import expand_input, expand_template, template_fields

__all__ = [
    "BatchConfig",
    "ConfigError",
    "Job",
    "expand_template",
    "load_config",
    "load_defaults",
    "load_yaml",
]

#: Top-level keys of a config.
TOP_KEYS = ("defaults", "jobs", "executor", "scheduler", "workers", "report")
#: Fields every output template may use, besides the job's extra keys and options.
TEMPLATE_FIELDS = ("stem", "name", "parent")
#: Output template when neither the job nor ``defaults`` gives one (as ``separate``).
DEFAULT_TEMPLATE = "{stem}-bpvideo"
EXECUTORS = ("local", "dask")


# --------------------------------------------------------------------------------------
# The config
# --------------------------------------------------------------------------------------


#: Path options besides ``mask`` (checked on its own) that a config gives relative to
#: its folder.
_RELATIVE_PATHS = ("learn_from", "groundtruth", "masks_to", "background_from")


@dataclass(frozen=True)
class Job:
    """One ``separate`` run of a batch (picklable: it travels to worker processes).

    Attributes
    ----------
    index : int
        Position in the batch (0-based), after globs are expanded.
    entry : int
        Index of the ``jobs:`` entry it comes from.
    line : int
        Line of that entry in the config.
    input : str
        Input file or folder (absolute or relative to the current directory).
    output : str
        Output directory.
    settings : dict
        Validated options (:meth:`SeparateSettings.to_dict`).
    """

    index: int
    entry: int
    line: int
    input: str
    output: str
    settings: dict[str, Any]

    def make_settings(self) -> SeparateSettings:
        """The job's :class:`SeparateSettings`."""
        return SeparateSettings(**self.settings)


@dataclass
class BatchConfig:
    """A validated config: its jobs and its run options (``None`` = not given)."""

    path: Path
    jobs: list[Job] = field(default_factory=list)
    executor: str | None = None
    scheduler: str | None = None
    workers: int | None = None
    report: Path | None = None


#: Run options of a config: key -> (is the value valid, what it must be).
_RUN_KEYS: dict[str, tuple[Any, str]] = {
    "executor": (lambda v: v in EXECUTORS, "must be local or dask"),
    "scheduler": (is_scheduler, "must be an address such as tcp://host:8786"),
    "workers": (lambda v: not isinstance(v, bool) and isinstance(v, int) and 1 <= v <= MAX_WORKERS,
                f"must be an integer from 1 to {MAX_WORKERS} (each worker is a process)"),
    "report": (lambda v: isinstance(v, str) and v, "must be a path"),
}  # fmt: skip


def load_config(path: str | os.PathLike) -> BatchConfig:
    """Load and validate a batch config; plan its jobs.

    Parameters
    ----------
    path : path-like
        The YAML file.

    Returns
    -------
    BatchConfig
        Jobs with inputs expanded (globs), outputs filled in, settings validated.

    Raises
    ------
    InputError
        Unreadable file or invalid YAML (one line).
    ConfigError
        Every problem found (unknown keys, wrong types, out-of-range values, missing
        inputs, globs matching nothing, bad templates, two jobs writing one output), each
        ``file:line: key: message``, sorted by line.
    """
    config_path = Path(path)
    data, check = load_mapping(config_path, "with 'jobs:'")
    if data is None:
        check.add(1, "", "must be a mapping with 'jobs:', got an empty file")
        check.raise_if_any()
    config = BatchConfig(path=config_path)
    planner = _Planner(data, config_path.resolve().parent, check)
    planner.run_options(config)
    defaults = planner.defaults()
    config.jobs = planner.jobs(defaults)
    check.raise_if_any()
    return config


def load_defaults(path: str | os.PathLike) -> dict[str, Any]:
    """The options of a defaults file of ``bpvideo separate -c FILE``.

    The file is a YAML mapping with the keys of a batch config's ``defaults:``: any option
    of ``separate`` (``rank: 3``, ``max-iter: 50``) and ``output``. Paths in it (``output``,
    ``mask``, ``groundtruth``, ...) are relative to the file's folder, as in batch configs.

    Returns a dict: option name -> checked value, and ``output`` when given. Raises
    :class:`InputError` for an unreadable file or invalid YAML (one line), and
    :class:`ConfigError` with every problem (unknown keys, with a close match; bad values;
    duplicate keys), each ``file:line: key: message``, sorted by line.
    """
    data, check = load_mapping(path, "of options (rank: 3)")
    if data is None:
        return {}  # an empty file changes nothing
    planner = _Planner(data, Path(path).resolve().parent, check)
    options, keys, extras = check_options(data, "", check, planner.aliases)
    for key, (_, line) in extras.items():
        hint = did_you_mean(key, planner.known)
        if not hint and key in TOP_KEYS:
            hint = " (a batch config's key: this file holds what goes under 'defaults:')"
        check.add(line, key, f"unknown key{hint}: not an option of separate")
    if "input" in keys:
        check.add(data.line_of("input"), "input", "give the input on the command line")
    check.raise_if_any()
    specs = {name: spec for name, _, spec in option_specs()}
    for name, value in options.items():
        if specs[name].kind == "path" and value is not None and value != "-":
            options[name] = str(planner._path(value))
        if specs[name].kind == "regions":  # mask images relative to the file's folder
            value = [value] if isinstance(value, str) else value
            options[name] = image_specs_to(value, name, lambda v: str(planner._path(v)))
    if "output" in keys:
        options["output"] = str(planner._path(keys["output"]))
    return options


@dataclass
class _Defaults:
    """The checked ``defaults:`` of a config."""

    mapping: LineDict
    options: dict[str, Any] = field(default_factory=dict)
    keys: dict[str, Any] = field(default_factory=dict)
    extras: dict[str, tuple[Any, int]] = field(default_factory=dict)


@dataclass
class _Template:
    """A job's output template, where it was given, and the fields it uses."""

    text: str
    line: int
    where: str
    used: set[str] | None


class _Planner:
    """Checks the parts of a config (every problem goes to ``check``) and plans its jobs."""

    def __init__(self, data: LineDict, base: Path, check: Checker) -> None:
        self.data = data
        self.base = base
        self.check = check
        self.aliases = option_aliases()
        self.known = sorted(set(self.aliases) | set(JOB_KEYS))
        self.outputs: dict[str, str] = {}
        self.stdout: str | None = None  # the job whose masks go to stdout ('masks-to: -')

    def run_options(self, config: BatchConfig) -> None:
        """Top-level keys: unknown ones, and ``executor``, ``scheduler``, ``workers``,
        ``report``."""
        data = self.data
        for key in data:
            if key not in TOP_KEYS:
                hint = did_you_mean(key, list(TOP_KEYS))
                if hint == "" and key in self.aliases:
                    hint = " (options go under 'defaults:' or in a job)"
                message = f"unknown key{hint}: expected one of {', '.join(TOP_KEYS)}"
                self.check.add(data.key_lines.get(key, data.line), str(key), message)
        for key, (valid, rule) in _RUN_KEYS.items():
            if key not in data:
                continue
            value = data[key]
            if not valid(value):
                self.check.add(data.line_of(key), key, f"{rule}, got {shown(value)}")
            elif key == "report":
                config.report = self._path(value)
            else:
                setattr(config, key, value)

    def defaults(self) -> _Defaults:
        """The ``defaults:`` mapping, checked."""
        data = self.data
        mapping = data.get("defaults", LineDict())
        if mapping is None:
            mapping = LineDict()
        if not isinstance(mapping, LineDict):
            self.check.add(data.line_of("defaults"), "defaults", "must be a mapping of options")
            empty = LineDict()
            empty.line = data.line_of("defaults")
            return _Defaults(empty)
        defaults = _Defaults(mapping, *check_options(mapping, "defaults", self.check,
                                                      self.aliases))  # fmt: skip
        if "input" in defaults.keys:
            self.check.add(mapping.line_of("input"), "defaults.input", "give the input in each job")
        return defaults

    def jobs(self, defaults: _Defaults) -> list[Job]:
        """Every job of ``jobs:``, checked and planned (one per input of a glob)."""
        data = self.data
        jobs = data.get("jobs")
        if "jobs" not in data or jobs is None:
            self.check.add(data.line, "jobs", "missing: add a list of jobs, each with an input")
            jobs = LineList()
        elif not isinstance(jobs, LineList):
            self.check.add(data.line_of("jobs"), "jobs", "must be a list of jobs ('- input: ...')")
            jobs = LineList()
        elif not jobs:
            self.check.add(data.line_of("jobs"), "jobs", "is empty: add at least one job")
        planned: list[Job] = []
        for i, entry in enumerate(jobs):
            if not isinstance(entry, LineDict):
                self.check.add(jobs.line_of(i), f"jobs[{i}]",
                               f"must be a mapping with an input, got {shown(entry)}")  # fmt: skip
                continue
            planned.extend(self._job(i, jobs.line_of(i), entry, defaults, len(planned)))
        return planned

    def _job(
        self, i: int, line: int, entry: LineDict, defaults: _Defaults, first: int
    ) -> list[Job]:
        """The jobs of one entry (none when it has a problem)."""
        where = f"jobs[{i}]"
        options, keys, extras = check_options(entry, where, self.check, self.aliases)
        template = self._template(where, entry, keys, defaults)
        values, ok = self._template_values(where, template, defaults.extras, extras)
        settings = self._settings(where, line, entry, defaults,
                                  merge_options(defaults.options, options))  # fmt: skip
        inputs = self._inputs(where, line, entry, keys)
        places = [(entry, where), (defaults.mapping, "defaults")]
        if not (inputs and settings is not None and ok) or not options_apply(
                self.check, inputs, settings, self.aliases, (line, places)):  # fmt: skip
            return []
        planned: list[Job] = []
        option_values = settings.to_dict()
        for input_path in inputs:
            out = self._output(template, input_path, {**option_values, **values}, i)
            if out is not None:
                planned.append(Job(index=first + len(planned), entry=i, line=line,
                                   input=str(input_path), output=str(out),
                                   settings=settings.to_dict()))  # fmt: skip
        if settings.masks_to == "-":
            key = next((k for k in ("masks-to", "masks_to") if k in entry), None)
            self._claim_stdout(where, line if key is None else entry.line_of(key),
                               [f"{Path(j.input).name} of {where}" for j in planned])  # fmt: skip
        return planned

    def _claim_stdout(self, where: str, line: int, jobs: list[str]) -> None:
        """One job at most writes its masks to stdout (``masks-to: -``): the raw frames
        of two jobs, written side by side, would be mixed there with nothing to tell
        them apart."""
        if self.stdout is None and jobs:
            self.stdout, jobs = jobs[0], jobs[1:]
        if jobs:
            self.check.add(line, f"{where}.masks-to",
                           f"'-' would write the masks of {jobs[0]} to stdout, as those of "
                           f"{self.stdout} are: give every job but one a file")  # fmt: skip

    def _template(
        self, where: str, entry: LineDict, keys: dict[str, Any], defaults: _Defaults
    ) -> _Template:
        """The job's output template (its own, the defaults', or ``{stem}-bpvideo``)."""
        own = "output" in keys
        template = _Template(
            keys.get("output", defaults.keys.get("output", DEFAULT_TEMPLATE)),
            entry.line_of("output") if own else defaults.mapping.line_of("output"),
            f"{where}.output" if own else "defaults.output",
            None,
        )
        try:
            template.used = set(template_fields(template.text))
        except ValueError as exc:
            self.check.add(template.line, template.where,
                           f"bad template {shown(template.text)}: {exc}")  # fmt: skip
        return template

    def _template_values(
        self,
        where: str,
        template: _Template,
        default_extras: dict[str, tuple[Any, int]],
        extras: dict[str, tuple[Any, int]],
    ) -> tuple[dict[str, Any], bool]:
        """The job's extra keys as template values; whether the template can be filled.

        Extra keys are template variables; one the template does not use is a typo.
        """
        if template.used is None:
            return {}, False  # the template itself is wrong: already reported
        all_extras = {**default_extras, **extras}
        ok = True
        available = set(TEMPLATE_FIELDS) | set(all_extras) | set(self.aliases)
        for name in sorted(template.used - available):
            self.check.add(
                template.line,
                template.where,
                f"{{{name}}} is not defined for {where}: define {name}: in the job, or use "
                f"{', '.join('{' + f + '}' for f in TEMPLATE_FIELDS)}",
            )
            ok = False
        values: dict[str, Any] = {}
        for key, (value, key_line) in all_extras.items():
            path = f"{where if key in extras else 'defaults'}.{key}"
            if key not in template.used:
                self.check.add(
                    key_line,
                    path,
                    f"unknown key{did_you_mean(key, self.known)}: not an option of separate, "
                    f"and the output template {shown(template.text)} does not use {{{key}}}",
                )
                ok = False
            elif isinstance(value, (dict, list)) or value is None:
                self.check.add(key_line, path, f"template values must be text, got {shown(value)}")
                ok = False
            else:
                values[key] = value
        return values, ok

    def _settings(
        self,
        where: str,
        line: int,
        entry: LineDict,
        defaults: _Defaults,
        merged: dict[str, Any],
    ) -> SeparateSettings | None:
        """The job's settings; cross-field rules (mask with observe...) come from
        :class:`SeparateSettings` itself; a mask path is relative to the config."""
        try:
            settings = SeparateSettings(**merged).validate()
        except InputError as exc:
            self.check.add(line, where, exc.message)
            return None
        if settings.mask is not None:
            mask = self._path(settings.mask)
            problem = None
            try:
                check_usable(mask, "the mask")
                if not mask.exists():
                    problem = f"{settings.mask}: no such file or folder"
            except InputError as exc:  # a name too long
                problem = exc.message
            if problem is not None:
                mask_line = (
                    entry.line_of("mask") if "mask" in entry else defaults.mapping.line_of("mask")
                )
                self.check.add(mask_line, f"{where}.mask", problem)
            settings.mask = str(mask)
        for name in ("roi", "exclude"):  # mask images are relative to the config
            setattr(settings, name, image_specs_to(getattr(settings, name), name,
                                                   lambda v: str(self._path(v))))  # fmt: skip
        for name in _RELATIVE_PATHS:  # relative to the config, as the docs say (not the cwd)
            value = getattr(settings, name)
            if (
                isinstance(value, str)
                and value not in ("-", "auto", "none")
                and not (name == "background_from" and is_span(value))
            ):
                setattr(settings, name, str(self._path(value)))
        return settings

    def _inputs(self, where: str, line: int, entry: LineDict, keys: dict[str, Any]) -> list[Path]:
        """The inputs of the job's ``input`` (a path or a glob), each checked."""
        if "input" not in keys:
            if "input" not in entry:
                self.check.add(line, where, "missing input: add 'input: PATH-OR-GLOB'")
            return []
        pattern = keys["input"]
        input_line = entry.line_of("input")
        try:
            inputs = expand_input(pattern, self.base)
        except InputError as exc:  # a name too long, a glob too costly
            self.check.add(input_line, f"{where}.input", exc.message)
            return []
        if not inputs:
            self.check.add(
                input_line, f"{where}.input", f"{shown(pattern)} matches nothing (in {self.base})"
            )
            return []
        if len(inputs) == 1 and not inputs[0].exists():
            self.check.add(input_line, f"{where}.input",
                           f"{pattern}: no such file or folder (in {self.base})")  # fmt: skip
            return []
        return inputs

    def _output(
        self, template: _Template, input_path: Path, values: dict[str, Any], i: int
    ) -> Path | None:
        """The output folder of one input; None when another job writes there already."""
        try:  # '~' is expanded in the template as typed, never in the values filled in
            text = expand_template(os.path.expanduser(template.text), input_path, values)
        except InputError as exc:  # a value that leaves the template's folder
            self.check.add(template.line, template.where, exc.message)
            return None
        except (KeyError, ValueError, IndexError) as exc:  # pragma: no cover - checked above
            what = f"cannot fill {shown(template.text)}: {exc}"
            self.check.add(template.line, template.where, what)
            return None
        out = self._path(text, expand=False)
        if str(out) in self.outputs:
            self.check.add(template.line, template.where,
                           f"{input_path.name} would write {out}, as {self.outputs[str(out)]} "
                           "does: add {stem} to the output template")  # fmt: skip
            return None
        self.outputs[str(out)] = f"{input_path.name} of jobs[{i}]"
        return out

    def _path(self, text: str, expand: bool = True) -> Path:
        """``text`` as a path relative to the config's folder (``~`` expanded as typed)."""
        path = Path(os.path.expanduser(text) if expand else text)
        return Path(os.path.normpath(path if path.is_absolute() else self.base / path))
