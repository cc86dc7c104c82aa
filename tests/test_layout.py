"""The shape of the code: one-way layers without import cycles, short modules and
functions (docs/layout.md).

Imports are read from the source (every ``import`` statement, at module level, inside
functions and under ``TYPE_CHECKING`` alike), so a cycle hidden in a function or a type
hint fails here as well.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "bpvideo"
#: Longest module, in lines.
MAX_MODULE_LINES = 500
#: Longest function, in lines (the solver kernels, one loop of an algorithm each, are
#: exempt: :data:`KERNELS`).
MAX_FUNCTION_LINES = 80
KERNELS = "bpvideo.solvers"

#: layer -> the layers it must never import (prefixes of module names). The order, lowest
#: first: errors, limits, records, still, times < solvers < masks < events < settings < sources <
#: sinks < background < pipeline < api, model < batch < _cli (docs/layout.md).
ABOVE_SOURCES = ("bpvideo.sinks", "bpvideo.background", "bpvideo.pipeline")
FACE = ("bpvideo.api", "bpvideo.model", "bpvideo.batch", "bpvideo._cli")
FORBIDDEN = {
    "bpvideo.sources": (*ABOVE_SOURCES, *FACE),
    "bpvideo.sinks": ("bpvideo.background", "bpvideo.pipeline", *FACE),
    "bpvideo.background": ("bpvideo.sinks", "bpvideo.pipeline", *FACE),
    "bpvideo.pipeline": ("bpvideo.sinks", *FACE),
    "bpvideo.solvers": ("bpvideo.settings", "bpvideo.masks", "bpvideo.sources", *ABOVE_SOURCES),
    "bpvideo.masks": ("bpvideo.settings", "bpvideo.sources", *ABOVE_SOURCES, *FACE),
    "bpvideo.settings": ("bpvideo.sources", *ABOVE_SOURCES, *FACE),
    "bpvideo.events": (
        "bpvideo.settings",
        "bpvideo.masks",
        "bpvideo.solvers",
        "bpvideo.sources",
        *ABOVE_SOURCES,
        *FACE,
    ),
    "bpvideo.times": ("bpvideo.",),
    "bpvideo.records": ("bpvideo.",),
    "bpvideo.still": ("bpvideo.",),
    "bpvideo.limits": ("bpvideo.",),
    "bpvideo.cores": ("bpvideo.",),
    "bpvideo.errors": ("bpvideo.",),
}
#: What the lowest modules may import all the same.
ALLOWED = {
    "bpvideo.records": ("bpvideo._version",),
    "bpvideo.times": ("bpvideo.errors", "bpvideo.limits"),
}
#: The live path: how a live stream is read and how its background is kept current. It
#: names no sink: a live run's outputs are the sinks of every run (docs/layout.md).
LIVE_PATH = ("bpvideo.sources.live", "bpvideo.background.online", "bpvideo.pipeline.online")
#: The largest share of the package's lines that one subpackage may hold.
MAX_PACKAGE_SHARE = 0.2


def module_name(path: Path) -> str:
    """``bpvideo.sources.files`` of ``bpvideo/sources/files.py`` (a package: its folder's name)."""
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def imports(name: str) -> set[str]:
    """The bpvideo modules that module ``name`` imports, anywhere in its source."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in MODULES else base)
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: imports(name) for name in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def _in(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix if prefix.endswith(".") else prefix + ".")


def test_no_import_cycles() -> None:
    assert cycles(GRAPH) == []


def test_the_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layers_import_only_downwards(layer: str) -> None:
    bad = []
    for name, deps in GRAPH.items():
        if not _in(name, layer):
            continue
        for dep in deps:
            if dep in ALLOWED.get(layer, ()) or _in(dep, layer):
                continue
            if any(_in(dep, f) for f in FORBIDDEN[layer]):
                bad.append(f"{name} imports {dep}")
    assert bad == []


def test_modules_are_short() -> None:
    long = {n: len(p.read_text().splitlines()) for n, p in MODULES.items()}
    assert {n: k for n, k in long.items() if k > MAX_MODULE_LINES} == {}


def test_functions_are_short() -> None:
    long = []
    for name, path in MODULES.items():
        if _in(name, KERNELS):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{name}.{node.name}: {lines} lines")
    assert long == []


def test_no_package_holds_more_than_a_fifth_of_the_code() -> None:
    lines = {n: len(p.read_text().splitlines()) for n, p in MODULES.items()}
    total = sum(lines.values())
    packages = {n for n, p in MODULES.items() if p.name == "__init__.py" and n != "bpvideo"}
    shares = {pkg: sum(k for n, k in lines.items() if _in(n, pkg)) / total for pkg in packages}
    assert {pkg: round(s, 3) for pkg, s in shares.items() if s > MAX_PACKAGE_SHARE} == {}


@pytest.mark.parametrize("name", LIVE_PATH)
def test_the_live_path_names_no_sink(name: str) -> None:
    assert name in MODULES
    assert sorted(dep for dep in GRAPH[name] if _in(dep, "bpvideo.sinks")) == []
