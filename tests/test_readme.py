"""The examples of README.md's ``pycon`` blocks run as written (doctest), from a scratch
folder, in order and sharing their names."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

from tests.conftest import REPO

_BLOCK = re.compile(r"^```pycon\n(.*?)^```", re.MULTILINE | re.DOTALL)


def readme_examples() -> str:
    """The ``pycon`` blocks of README.md, one after another."""
    blocks = _BLOCK.findall((REPO / "README.md").read_text(encoding="utf-8"))
    return "\n".join(blocks)


def test_readme_examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sample_data").symlink_to(REPO / "sample_data")
    monkeypatch.chdir(tmp_path)  # the examples write "out" here
    text = readme_examples()
    test = doctest.DocTestParser().get_doctest(text, {}, "README.md", str(REPO / "README.md"), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 15
    assert result.failed == 0, f"{result.failed} README example(s) failed: see the output above"
    assert (tmp_path / "out" / "summary.json").is_file()
