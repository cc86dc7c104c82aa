"""Where outputs go: output names and templates, and inputs given as globs (CLI, batch).

``separate`` writes into ``<INPUT name>-bpvideo`` unless told otherwise; with several
inputs ``-o`` is a template (``OUT/{stem}``, ``{name}``, ``{parent}``, ``{index}``), and
batch configs fill the same fields (:func:`path_fields`).
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
import string
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from bpvideo.errors import InputError, shown

__all__ = [
    "default_output",
    "expand_input",
    "expand_inputs",
    "expand_template",
    "fill_template",
    "format_output",
    "glob_paths",
    "path_fields",
    "plan_outputs",
    "template_base",
    "template_fields",
]


def default_output(input_path: str) -> str:
    """Output directory used when ``-o`` is not given: ``<stem>-bpvideo`` in the cwd."""
    stem = Path(input_path.rstrip("/\\")).name
    stem = Path(stem).stem if Path(stem).suffix else stem
    return f"{stem or 'video'}-bpvideo"


_GLOB_CHARS = set("*?[")


def expand_inputs(patterns: Sequence[str]) -> list[str]:
    """Expand shell-style globs among the inputs, keeping the order given.

    Parameters
    ----------
    patterns : sequence of str
        Paths, globs (``cams/*.mp4``, ``**`` recursive) or ``"-"`` (stdin). A path without
        glob characters is kept as is, even when missing (its job reports the error).
        Matches of one glob are sorted; a path listed twice is kept once.

    Returns
    -------
    list of str

    Raises
    ------
    InputError
        If a glob matches nothing (the message names it), a path cannot be used at all (a
        name too long), or stdin is listed with other inputs or twice.
    """
    out: list[str] = []
    seen: set[str] = set()
    from bpvideo.sinks.guard import check_usable

    for pattern in patterns:
        if pattern != "-":
            check_usable(pattern, "the input")
        if pattern != "-" and _GLOB_CHARS & set(pattern) and not Path(pattern).exists():
            matches = glob_paths(pattern)
            if not matches:
                raise InputError(
                    f"{pattern}: the glob matches no file or folder: check the pattern (quote "
                    "it so that bpvideo, not the shell, expands it)"
                )
        else:
            matches = [pattern]
        for match in matches:
            if match not in seen:
                seen.add(match)
                out.append(match)
    if "-" in out and len(out) > 1:
        raise InputError("stdin ('-') cannot be combined with other inputs: run it alone")
    return out


def _input_name(input_path: str) -> Path:
    if input_path == "-":
        return Path("stdin")
    p = Path(input_path.rstrip("/\\"))
    if p.name == "input" and p.parent.name:  # changedetection.net: seq/input -> seq
        p = p.parent
    return p


def path_fields(input_path: str | os.PathLike) -> dict[str, str]:
    """The template fields of an input: ``stem``, ``name`` and ``parent``.

    ``stem`` is the file name without extension (or a folder's name), ``name`` the file or
    folder name, ``parent`` the name of the folder holding it. A changedetection.net
    ``SEQ/input`` folder counts as ``SEQ``; stdin (``"-"``) is ``stdin`` with no parent.
    Used by ``separate``'s output templates and by the batch configs.
    """
    input_path = str(input_path)
    p = _input_name(input_path)
    stem = p.stem if p.suffix and not Path(input_path).is_dir() else p.name
    parent = p.resolve().parent.name if input_path != "-" else ""
    return {"stem": stem, "name": p.name, "parent": parent}


def format_output(template: str | None, input_path: str, index: int) -> str:
    """The output directory of one input from an output template.

    Parameters
    ----------
    template : str or None
        ``-o`` value. May hold ``{stem}`` (file name without extension, or folder name),
        ``{name}`` (file or folder name), ``{parent}`` (name of the folder holding the
        input) and ``{index}`` (1-based position among the inputs). None gives
        :func:`default_output`. A template without placeholders is returned as is.
    input_path : str
        The input (``"-"`` for stdin: stem ``stdin``).
    index : int
        1-based position of the input.

    Returns
    -------
    str

    Raises
    ------
    InputError
        On an unknown placeholder or a malformed template.

    Examples
    --------
    >>> format_output("out/{parent}-{stem}", "cams/north/cam1.mp4", 1)
    'out/north-cam1'
    >>> format_output("out/{index:03d}", "a.mp4", 7)
    'out/007'
    """
    if template is None:
        return (
            default_output(str(_input_name(input_path))) if input_path != "-" else "stdin-bpvideo"
        )
    fields = {**path_fields(input_path), "index": index}
    try:
        return fill_template(template, fields, input_path)
    except InputError:
        raise
    except KeyError as exc:
        raise InputError(
            f"output template {template!r}: unknown placeholder {{{exc.args[0]}}}: use "
            "{stem}, {name}, {parent} or {index}"
        ) from None
    except (ValueError, IndexError) as exc:
        raise InputError(f"output template {template!r}: {exc}: e.g. -o out/{{stem}}") from None


def template_base(template: str) -> str:
    """The folder every output of ``template`` must stay inside: the folder part of its
    text before the first field (``"."`` when it starts with one).

    Examples
    --------
    >>> template_base("res/{stem}"), template_base("{stem}-bpvideo"), template_base("/o/a{x}")
    ('res', '.', '/o')
    """
    head = re.split(r"(?<!\{)\{(?!\{)", template, maxsplit=1)[0]
    head = head.replace("{{", "{").replace("}}", "}")
    return os.path.dirname(head) or "."


def fill_template(template: str, fields: dict[str, Any], input_path: str | os.PathLike) -> str:
    """``template`` filled with ``fields``; the result must stay inside its base.

    A value substituted for a field is data: it cannot leave the folder the template's
    own text names (``res/{stem}`` with a stem ``..``, or ``{camera}/x`` with a camera
    ``/etc``), and it is never expanded (``~`` stays a name). A template without fields is
    the user's own path and is returned as is.

    Raises
    ------
    KeyError, ValueError, IndexError
        A field that ``fields`` lacks, a malformed template.
    InputError
        The result is outside the template's base (or is the base itself).
    """
    text = template.format_map(fields)
    if text == template.replace("{{", "{").replace("}}", "}"):
        return text  # no field
    base = template_base(template)
    rel = os.path.relpath(os.path.normpath(text), os.path.normpath(base))
    if rel == "." or rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
        raise InputError(
            f"output template {shown(template)} gives {shown(text)} for "
            f"{shown(str(input_path))}, which is not inside {shown(base)}: use fields whose "
            "values are plain names, or rename the input"
        )
    return text


def plan_outputs(inputs: Sequence[str], template: str | None) -> list[str]:
    """Output directory of each input; refuse templates that send two inputs to one place.

    Raises
    ------
    InputError
        When two inputs would get the same output directory (names the fix).
    """
    outputs = [format_output(template, path, i) for i, path in enumerate(inputs, start=1)]
    seen: dict[str, str] = {}
    for path, out in zip(inputs, outputs, strict=True):
        key = os.path.realpath(out)  # a loop of links is named by the guard, later
        if key in seen:
            raise InputError(
                f"{path} and {seen[key]} would both write to {out}: give -o a template such "
                "as OUT/{stem}, OUT/{parent}-{stem} or OUT/{index}"
            )
        seen[key] = path
    return outputs


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

    Fields: those of :func:`path_fields` (``{stem}``, ``{name}``,
    ``{parent}``, the same as ``separate``'s output templates) and every key of
    ``values`` (the job's extra keys such as ``{camera}``, and its options such as
    ``{rank}``).

    Examples
    --------
    >>> expand_template("out/{camera}/{stem}", "cams/n/clip1.mp4", {"camera": "north"})
    'out/north/clip1'
    """
    fields = {**values, **path_fields(input_path)}
    return fill_template(template, fields, input_path)


def expand_input(pattern: str, base: Path) -> list[Path]:
    """The inputs a job's ``input`` names: one path, or the sorted matches of a glob.

    Relative patterns are taken relative to ``base`` (the config's folder); ``~`` is
    expanded; ``**`` matches folders recursively. A plain path is returned whether or not
    it exists (the caller checks).

    Raises
    ------
    InputError
        The path cannot be used at all (a name too long), or the glob's cost is too high.
    """
    expanded = Path(os.path.expanduser(pattern))
    full = expanded if expanded.is_absolute() else base / expanded
    full = Path(os.path.normpath(full))
    from bpvideo.sinks.guard import check_usable

    check_usable(full, "the input")
    if glob.has_magic(str(expanded)):
        return [Path(p) for p in glob_paths(str(full))]
    return [full]


#: Paths a glob may look at (a ``**`` over a huge tree is refused rather than endless).
GLOB_VISITS = 1_000_000


def glob_paths(pattern: str) -> list[str]:
    """The sorted matches of a glob (``*``, ``?``, ``[...]``, ``**`` for any folders).

    As ``glob.glob(pattern, recursive=True)``, hidden names aside as there, except that
    ``**`` never descends into a symbolic link to a folder, so that a loop of links
    cannot make it endless, and that the cost is bounded.

    Raises
    ------
    InputError
        More than :data:`~bpvideo.settings.MAX_GLOB_MATCHES` matches, or more than
        :data:`GLOB_VISITS` paths looked at.
    """
    from bpvideo.limits import MAX_GLOB_MATCHES

    drive, rest = os.path.splitdrive(pattern)
    root = drive + (os.sep if rest.startswith(os.sep) else "")
    parts = [p for p in rest.split(os.sep) if p]
    budget = [GLOB_VISITS]
    found: set[str] = set()
    for match in _glob(root, parts, budget, pattern):
        if rest.endswith(os.sep) and not os.path.isdir(match):
            continue  # 'cams/*/': folders only
        found.add(match)
        if len(found) > MAX_GLOB_MATCHES:
            raise InputError(
                f"{pattern}: the glob matches more than {MAX_GLOB_MATCHES} paths: narrow it"
            )
    return sorted(found)


def _entries(folder: str, budget: list[int], pattern: str) -> list[os.DirEntry]:
    try:
        with os.scandir(folder or os.curdir) as it:
            entries = list(it)
    except OSError:
        return []
    budget[0] -= len(entries)
    if budget[0] < 0:
        raise InputError(f"{pattern}: the glob looks at more than {GLOB_VISITS} paths: narrow it")
    return entries


def _glob(folder: str, parts: list[str], budget: list[int], pattern: str) -> Iterator[str]:
    """Matches of ``parts`` under ``folder`` (``""``: the current folder)."""
    if not parts:
        yield folder
        return
    part, rest = parts[0], parts[1:]
    if part == "**":
        yield from (
            _glob(folder, rest, budget, pattern) if rest else iter([folder] if folder else [])
        )
        for entry in _entries(folder, budget, pattern):
            if entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                yield from _glob(os.path.join(folder, entry.name), parts, budget, pattern)
            elif not rest:
                yield os.path.join(folder, entry.name)
    elif glob.has_magic(part):
        for entry in _entries(folder, budget, pattern):
            if entry.name.startswith(".") and not part.startswith("."):
                continue
            if fnmatch.fnmatchcase(entry.name, part) and (not rest or entry.is_dir()):
                yield from _glob(os.path.join(folder, entry.name), rest, budget, pattern)
    else:
        path = os.path.join(folder, part)
        if os.path.lexists(path) and (not rest or os.path.isdir(path)):
            yield from _glob(path, rest, budget, pattern)
