"""YAML with line numbers: every mapping and list knows the line of each of its values, so
that a batch config's problems can be reported as ``file:line``.

Three YAML traps are closed: duplicate keys are collected (PyYAML silently keeps the
last), ``1e-1`` is a float (YAML 1.1, and so PyYAML, reads it as a string), and ``10:20``
and ``00:01:30.5`` are text (YAML 1.1 reads them as 620 and 90.5, numbers in base 60).
And the cost of a config is bounded before it is built: its size, its nesting depth and
the values its aliases expand to (a few hundred bytes of nested aliases can stand for
billions of values).
"""

from __future__ import annotations

import os
import re
from typing import Any

import yaml

from bpvideo.errors import InputError
from bpvideo.limits import MAX_CONFIG_BYTES, MAX_CONFIG_DEPTH, MAX_CONFIG_NODES
from bpvideo.sources.headers import open_file

__all__ = ["LineDict", "LineList", "LineLoader", "load_yaml"]


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
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        """Compose one node, refusing nesting deeper than
        :data:`~bpvideo.settings.MAX_CONFIG_DEPTH` (the composer recurses per level)."""
        self._depth += 1
        try:
            if self._depth > MAX_CONFIG_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested deeper than {MAX_CONFIG_DEPTH} levels",
                    self.peek_event().start_mark,
                )  # fmt: skip
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _expanded_size(node: yaml.Node, sizes: dict[int, int], mark: Any = None) -> int:
    """Values ``node`` stands for once every alias in it is expanded (each node counted
    once: linear in the document, however far its aliases expand).

    Raises
    ------
    yaml.constructor.ConstructorError
        A node that holds itself (a recursive alias).
    """
    key = id(node)
    if key in sizes:
        if sizes[key] < 0:
            raise yaml.constructor.ConstructorError(
                None, None, "an alias refers to a node that holds it", node.start_mark
            )
        return sizes[key]
    sizes[key] = -1
    if isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded_size(child, sizes) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        size = 1 + sum(_expanded_size(k, sizes) + _expanded_size(v, sizes) for k, v in node.value)
    else:
        size = 1
    sizes[key] = size
    return size


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
# YAML 1.2 integers and floats: no base 60 (YAML 1.1 reads `learn: 10:20` as the integer
# 620 and `start: 00:01:30.5` as the float 90.5).
_INT = re.compile(r"^[-+]?(?:0b[0-1_]+|0[0-7_]+|0|[1-9][0-9_]*|0x[0-9a-fA-F_]+)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)


def _yaml_12(tag: str, regexp: re.Pattern) -> re.Pattern:
    if tag == "tag:yaml.org,2002:int":
        return _INT
    if tag == "tag:yaml.org,2002:float" and "::[0-5]" in regexp.pattern:  # the base-60 one
        return _FLOAT
    return regexp


LineLoader.yaml_implicit_resolvers = {
    first: [(tag, _yaml_12(tag, regexp)) for tag, regexp in found]
    for first, found in LineLoader.yaml_implicit_resolvers.items()
}


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
        with open_file(path, "the config") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise InputError(
                f"{label}: the config is larger than {MAX_CONFIG_BYTES // 2**20} MiB: give the "
                "right file (or split it)"
            )
        text = raw.decode("utf-8")
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
        node = loader.get_single_node()
        if node is not None and _expanded_size(node, {}) > MAX_CONFIG_NODES:
            raise yaml.constructor.ConstructorError(
                None, None, f"its aliases expand to more than {MAX_CONFIG_NODES} values",
                node.start_mark,
            )  # fmt: skip
        data = loader.construct_document(node) if node is not None else None
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
