"""The examples in the docstrings of bpvideo's modules run as written (doctest)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import bpvideo

#: Modules that need an optional dependency to import.
OPTIONAL = {"bpvideo.solvers.backends._numba_kernels"}
MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(bpvideo.__path__, "bpvideo.")
    if info.name not in OPTIONAL and not info.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, raise_on_error=False)
    assert result.failed == 0, f"{result.failed} example(s) of {name} failed: see above"
