"""YAML batch configs: loading with line numbers, and validation before any work starts.

A config describes many ``separate`` jobs (see the README, "Batch runs")::

    executor: local            # or dask (optional; --executor wins)
    scheduler: tcp://host:8786 # dask scheduler (optional; --scheduler wins)
    workers: 2                 # local worker processes (optional; --workers wins)
    report: batch_report.json  # where the report goes (optional; --report wins)
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

import difflib
import glob
import os
import re
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bpvideo.errors import InputError
from bpvideo.io.paths import path_fields
from bpvideo.settings import SeparateSettings, check_value, option_name, option_specs

__all__ = [
    "BatchConfig",
    "ConfigError",
    "Job",
    "LineLoader",
    "expand_template",
    "load_config",
    "load_yaml",
]

#: Top-level keys of a config.
TOP_KEYS = ("defaults", "jobs", "executor", "scheduler", "workers", "report")
#: Keys of a job (or of ``defaults``) that are not options of ``separate``.
JOB_KEYS = ("input", "output")
#: Fields every output template may use, besides the job's extra keys and options.
TEMPLATE_FIELDS = ("stem", "name", "parent")
#: Output template when neither the job nor ``defaults`` gives one (as ``separate``).
DEFAULT_TEMPLATE = "{stem}-bpvideo"
EXECUTORS = ("local", "dask")


class ConfigError(InputError):
    """A config with problems; :attr:`problems` holds one ``file:line: ...`` per problem."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        count = len(self.problems)
        extra = f" (and {count - 1} more)" if count > 1 else ""
        super().__init__(self.problems[0] + extra if self.problems else "invalid config")


# --------------------------------------------------------------------------------------
# YAML with line numbers
# --------------------------------------------------------------------------------------


class LineDict(dict):
    """A dict from YAML that knows the line (1-based) of itself and of each value."""

    line: int = 0
    key_lines: dict[Any, int]
    value_lines: dict[Any, int]

    def line_of(self, key: Any) -> int:
        """Line of the value of ``key`` (of the mapping itself when absent)."""
        return self.value_lines.get(key, self.line) if hasattr(self, "value_lines") else self.line


class LineList(list):
    """A list from YAML that knows the line (1-based) of itself and of each item."""

    line: int = 0
    item_lines: list[int]

    def line_of(self, index: int) -> int:
        """Line of item ``index``."""
        lines = getattr(self, "item_lines", [])
        return lines[index] if index < len(lines) else self.line


class LineLoader(yaml.SafeLoader):
    """A SafeLoader that records line numbers and refuses duplicate keys.

    Mappings load as :class:`LineDict`, sequences as :class:`LineList`. Duplicate keys are
    collected in :attr:`duplicates` (``(line, message)``) instead of silently keeping the
    last value, so that they are reported with every other problem. Floats follow YAML
    1.2: ``1e-1`` and ``5E3`` are numbers, not strings.
    """

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.duplicates: list[tuple[int, str]] = []


def _construct_mapping(loader: LineLoader, node: yaml.MappingNode) -> Any:
    data = LineDict()
    data.line = node.start_mark.line + 1
    data.key_lines, data.value_lines = {}, {}
    yield data
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # '<<: *anchor' keys may be overridden: that is what merging is for
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        try:
            first = seen.get(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "unhashable key", key_node.start_mark
            ) from None
        if first is not None:
            loader.duplicates.append(
                (line, f"duplicate key {key!r} (first given on line {first}): keep only one")
            )
        else:
            seen[key] = line
    loader.flatten_mapping(node)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        data[key] = loader.construct_object(value_node, deep=True)
        data.key_lines[key] = key_node.start_mark.line + 1
        data.value_lines[key] = value_node.start_mark.line + 1


def _construct_sequence(loader: LineLoader, node: yaml.SequenceNode) -> Any:
    data = LineList()
    data.line = node.start_mark.line + 1
    yield data
    data.extend(loader.construct_object(child, deep=True) for child in node.value)
    data.item_lines = [child.start_mark.line + 1 for child in node.value]


LineLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
LineLoader.add_constructor("tag:yaml.org,2002:seq", _construct_sequence)
# YAML 1.2 floats: an exponent without a dot (1e-1, 5E3) is a number. PyYAML implements
# YAML 1.1, whose float pattern requires the dot, and loads '1e-1' as a string.
LineLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def load_yaml(path: str | os.PathLike) -> tuple[Any, list[tuple[int, str]]]:
    """Load a YAML file with line numbers.

    Parameters
    ----------
    path : path-like
        The file.

    Returns
    -------
    (data, duplicates)
        The document (:class:`LineDict`/:class:`LineList` containers) and the duplicate
        keys found, as ``(line, message)``.

    Raises
    ------
    InputError
        The file cannot be read, or is not valid YAML (one line, with the line number).
    """
    label = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{label}: no such config file: check the path") from None
    except IsADirectoryError:
        raise InputError(f"{label}: is a folder, not a config file: give a .yaml file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            f"{label}: cannot read the config ({exc}): give a UTF-8 text file"
        ) from None
    loader = LineLoader(text)
    try:
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{label}:{mark.line + 1}" if mark is not None else label
        problem = " ".join(str(exc.problem or exc.context or "syntax error").split())
        raise InputError(f"{where}: invalid YAML: {problem}: fix the syntax") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{label}: invalid YAML: {' '.join(str(exc).split())}") from None
    finally:
        loader.dispose()
    return data, loader.duplicates


# --------------------------------------------------------------------------------------
# Output templates and input globs
# --------------------------------------------------------------------------------------


def template_fields(template: str) -> list[str]:
    """Names of the ``{fields}`` of a template; raise ValueError when it is malformed."""
    names = []
    for _, name, spec, conversion in string.Formatter().parse(template):
        if name is None:
            continue
        if not name.isidentifier():
            raise ValueError(f"field {{{name}}} is not a plain name")
        if spec or conversion:
            raise ValueError(f"field {{{name}}} has a format spec; use plain {{{name}}}")
        names.append(name)
    return names


def expand_template(template: str, input_path: str | os.PathLike, values: dict[str, Any]) -> str:
    """Fill an output template for one input.

    Fields: those of :func:`bpvideo.io.paths.path_fields` (``{stem}``, ``{name}``,
    ``{parent}``, the same as ``separate``'s output templates) and every key of
    ``values`` (the job's extra keys such as ``{camera}``, and its options such as
    ``{rank}``).

    Examples
    --------
    >>> expand_template("out/{camera}/{stem}", "cams/n/clip1.mp4", {"camera": "north"})
    'out/north/clip1'
    """
    fields = {**values, **path_fields(input_path)}
    return template.format_map(fields)


def expand_input(pattern: str, base: Path) -> list[Path]:
    """The inputs a job's ``input`` names: one path, or the sorted matches of a glob.

    Relative patterns are taken relative to ``base`` (the config's folder); ``~`` is
    expanded; ``**`` matches folders recursively. A plain path is returned whether or not
    it exists (the caller checks).
    """
    expanded = Path(os.path.expanduser(pattern))
    full = expanded if expanded.is_absolute() else base / expanded
    full = Path(os.path.normpath(full))
    if glob.has_magic(str(expanded)):
        return [Path(p) for p in sorted(glob.glob(str(full), recursive=True))]
    return [full]


# --------------------------------------------------------------------------------------
# The config
# --------------------------------------------------------------------------------------


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


def _option_aliases() -> dict[str, str]:
    """Spelling -> option name (``max_iter``, ``max-iter``, ``inertia-a`` -> ``a``), from
    :func:`bpvideo.settings.option_name`."""
    aliases: dict[str, str] = {}
    for name, _, spec in option_specs():
        for spelling in (name, name.replace("_", "-"), (spec.flag or "").lstrip("-")):
            if spelling and option_name(spelling) == name:
                aliases[spelling] = name
    return aliases


def _did_you_mean(key: str, known: list[str]) -> str:
    close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


class _Checker:
    """Collects ``file:line: where: message`` problems."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.problems: list[tuple[int, str]] = []

    def add(self, line: int, where: str, message: str) -> None:
        prefix = f"{where}: " if where else ""
        self.problems.append((line, f"{self.label}:{line}: {prefix}{message}"))

    def raise_if_any(self) -> None:
        if self.problems:
            ordered = [msg for _, msg in sorted(self.problems, key=lambda p: p[0])]
            raise ConfigError(ordered)


def _check_options(
    mapping: LineDict, where: str, check: _Checker, aliases: dict[str, str]
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
        path = f"{where}.{key}"
        if not isinstance(key, str):
            check.add(line, where, f"key {key!r} must be a name")
            continue
        if key in JOB_KEYS:
            if not isinstance(value, str) or not value:
                check.add(line, path, f"must be a path (a string), got {value!r}")
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
            got = "" if value is None else f", got {value!r}"
            check.add(line, path, f"{exc.rule}{got}" if exc.rule else exc.message)
    return options, job_keys, extras


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
    label = str(path)
    config_path = Path(path)
    base = config_path.resolve().parent
    data, duplicates = load_yaml(config_path)
    check = _Checker(label)
    for line, message in duplicates:
        check.add(line, "", message)
    if not isinstance(data, LineDict):
        got = "an empty file" if data is None else f"a {type(data).__name__}"
        check.add(getattr(data, "line", 1), "", f"must be a mapping with 'jobs:', got {got}")
        check.raise_if_any()
    aliases = _option_aliases()
    config = BatchConfig(path=config_path)

    for key in data:
        if key not in TOP_KEYS:
            hint = _did_you_mean(key, list(TOP_KEYS))
            if hint == "" and key in aliases:
                hint = " (options go under 'defaults:' or in a job)"
            check.add(
                data.key_lines.get(key, data.line),
                str(key),
                f"unknown key{hint}: expected one of {', '.join(TOP_KEYS)}",
            )
    if "executor" in data:
        value = data["executor"]
        if value not in EXECUTORS:
            check.add(data.line_of("executor"), "executor", f"must be local or dask, got {value!r}")
        else:
            config.executor = value
    if "scheduler" in data:
        value = data["scheduler"]
        if not isinstance(value, str) or not value:
            check.add(
                data.line_of("scheduler"),
                "scheduler",
                f"must be an address such as tcp://host:8786, got {value!r}",
            )
        else:
            config.scheduler = value
    if "workers" in data:
        value = data["workers"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            check.add(data.line_of("workers"), "workers", f"must be an integer >= 1, got {value!r}")
        else:
            config.workers = value
    if "report" in data:
        value = data["report"]
        if not isinstance(value, str) or not value:
            check.add(data.line_of("report"), "report", f"must be a path, got {value!r}")
        else:
            config.report = Path(os.path.normpath(base / os.path.expanduser(value)))

    defaults = data.get("defaults", LineDict())
    default_options: dict[str, Any] = {}
    default_keys: dict[str, Any] = {}
    default_extras: dict[str, Any] = {}
    if defaults is None:
        defaults = LineDict()
    if not isinstance(defaults, LineDict):
        check.add(data.line_of("defaults"), "defaults", "must be a mapping of options")
        defaults = LineDict()
        defaults.line = data.line_of("defaults")
    else:
        default_options, default_keys, default_extras = _check_options(
            defaults, "defaults", check, aliases
        )
        if "input" in default_keys:
            check.add(defaults.line_of("input"), "defaults.input", "give the input in each job")

    jobs = data.get("jobs")
    if "jobs" not in data or jobs is None:
        check.add(data.line, "jobs", "missing: add a list of jobs, each with an input")
        jobs = LineList()
    elif not isinstance(jobs, LineList):
        check.add(data.line_of("jobs"), "jobs", "must be a list of jobs ('- input: ...')")
        jobs = LineList()
    elif not jobs:
        check.add(data.line_of("jobs"), "jobs", "is empty: add at least one job")

    known = sorted(set(aliases) | set(JOB_KEYS))
    outputs: dict[str, str] = {}
    planned: list[Job] = []
    for i, entry in enumerate(jobs):
        where = f"jobs[{i}]"
        line = jobs.line_of(i)
        if not isinstance(entry, LineDict):
            check.add(line, where, f"must be a mapping with an input, got {entry!r}")
            continue
        options, keys, extras = _check_options(entry, where, check, aliases)
        template = keys.get("output", default_keys.get("output", DEFAULT_TEMPLATE))
        template_line = entry.line_of("output") if "output" in keys else defaults.line_of("output")
        template_where = f"{where}.output" if "output" in keys else "defaults.output"
        all_extras = {**default_extras, **extras}
        # Extra keys are template variables; one the template does not use is a typo.
        ok_template = True
        try:
            used = set(template_fields(template))
        except ValueError as exc:
            check.add(template_line, template_where, f"bad template {template!r}: {exc}")
            used, ok_template = None, False
        available = set(TEMPLATE_FIELDS) | set(all_extras) | set(aliases)
        for name in sorted((used or set()) - available):
            check.add(
                template_line,
                template_where,
                f"{{{name}}} is not defined for {where}: define {name}: in the job, or use "
                f"{', '.join('{' + f + '}' for f in TEMPLATE_FIELDS)}",
            )
            ok_template = False
        values: dict[str, Any] = {}
        for key, (value, key_line) in all_extras.items():
            source = where if key in extras else "defaults"
            if used is None:
                continue  # the template itself is wrong: already reported
            if key not in used:
                check.add(
                    key_line,
                    f"{source}.{key}",
                    f"unknown key{_did_you_mean(key, known)}: not an option of separate, and "
                    f"the output template {template!r} does not use {{{key}}}",
                )
                ok_template = False
            elif isinstance(value, (dict, list)) or value is None:
                check.add(
                    key_line, f"{source}.{key}", f"template values must be text, got {value!r}"
                )
                ok_template = False
            else:
                values[key] = value
        merged = {**default_options, **options}
        # Cross-field rules (--mask with --observe...) come from SeparateSettings itself.
        try:
            settings = SeparateSettings(**merged).validate()
        except InputError as exc:
            check.add(line, where, exc.message)
            settings = None
        if settings is not None and settings.mask is not None:
            mask = Path(os.path.expanduser(settings.mask))
            mask = Path(os.path.normpath(mask if mask.is_absolute() else base / mask))
            if not mask.exists():
                mask_line = entry.line_of("mask") if "mask" in entry else defaults.line_of("mask")
                check.add(mask_line, f"{where}.mask", f"{settings.mask}: no such file or folder")
            settings.mask = str(mask)

        if "input" not in keys:
            if "input" not in entry:
                check.add(line, where, "missing input: add 'input: PATH-OR-GLOB'")
            continue
        pattern = keys["input"]
        inputs = expand_input(pattern, base)
        input_line = entry.line_of("input")
        if not inputs:
            check.add(
                input_line, f"{where}.input", f"{pattern!r} matches nothing (relative to {base})"
            )
            continue
        if len(inputs) == 1 and not inputs[0].exists():
            check.add(
                input_line, f"{where}.input", f"{pattern}: no such file or folder (in {base})"
            )
            continue
        if settings is None or not ok_template:
            continue
        option_values = settings.to_dict()
        for input_path in inputs:
            try:
                text = expand_template(template, input_path, {**option_values, **values})
            except (KeyError, ValueError, IndexError) as exc:  # pragma: no cover - checked above
                check.add(template_line, template_where, f"cannot fill {template!r}: {exc}")
                break
            out = Path(os.path.expanduser(text))
            out = Path(os.path.normpath(out if out.is_absolute() else base / out))
            key = str(out)
            if key in outputs:
                check.add(
                    template_line,
                    template_where,
                    f"{input_path.name} would write {out}, as {outputs[key]} does: add "
                    "{stem} to the output template",
                )
                continue
            outputs[key] = f"{input_path.name} of jobs[{i}]"
            planned.append(
                Job(
                    index=len(planned),
                    entry=i,
                    line=line,
                    input=str(input_path),
                    output=str(out),
                    settings=settings.to_dict(),
                )
            )
    check.raise_if_any()
    config.jobs = planned
    return config
