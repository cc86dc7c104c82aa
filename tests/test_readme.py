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


# --- the docs say what the code does (issue 27) ------------------------------------------

#: "see X" in a help text or a doc: a file of the repository, or a section that exists.
_SEE = re.compile(r"\(?see ((?:docs/)?[\w.-]+\.md|README)(?:,? \"?([A-Z][\w ]+)\"?)?")


def _headings(path: Path) -> list[str]:
    return [line.lstrip("#").strip() for line in path.read_text().splitlines()
            if line.startswith("#")]  # fmt: skip


def test_every_see_points_at_something_that_exists() -> None:
    from bpvideo.settings import option_specs

    texts = {f"--{name} help": spec.help for name, _, spec in option_specs()}
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        texts[doc.name] = doc.read_text()
    for where, text in texts.items():
        for target, section in _SEE.findall(text):
            path = REPO / ("README.md" if target == "README" else target)
            if not path.exists():
                path = REPO / "docs" / target
            assert path.exists(), (where, target)
            if section:
                assert any(section.strip() in h for h in _headings(path)), (where, section)
        for section in re.findall(r"\(see ([A-Z][a-z]+)\)", text):  # a section of itself
            doc = REPO / ("README.md" if where == "README.md" else f"docs/{where}")
            assert doc.exists() and any(section in h for h in _headings(doc)), (where, section)


def test_the_configs_name_their_reports_as_batch_does() -> None:
    from bpvideo.limits import REPORT_SUFFIX

    for config in sorted((REPO / "configs").glob("*.yaml")):
        for line in config.read_text().splitlines():
            if line.startswith("report:"):
                name = line.split()[1].rsplit("/", 1)[-1]
                assert name == f"{config.stem}{REPORT_SUFFIX}", (config.name, line)


def test_the_evaluate_example_gives_its_f_measure(tmp_path: Path) -> None:
    """docs/evaluate.md's example, run: its F-measure is today's."""
    import bpvideo
    from bpvideo._cli import main

    text = (REPO / "docs" / "evaluate.md").read_text()
    shown = float(re.search(r"F-measure\s+([0-9.]+)", text).group(1))
    out = tmp_path / "out"
    assert main(["separate", str(REPO / "sample_data/sample.mp4"), "-o", str(out), "-q"]) == 0
    scores = bpvideo.evaluate(out, REPO / "sample_data/groundtruth").summary
    assert round(scores["f_measure"], 4) == shown


def test_the_test_command_waits_for_the_dpkg_lock() -> None:
    """The README's test command (run verbatim by ``.ci/run``) waits for another apt
    process's dpkg lock instead of failing at once: every apt-get in it has
    ``DPkg::Lock::Timeout``."""
    lines = [line for line in (REPO / "README.md").read_text().splitlines()
             if line.startswith("python3 -m venv .venv && ")]  # fmt: skip
    assert len(lines) == 2
    calls = re.findall(r"apt-get((?: -o \S+)*) (\w+)", lines[1])
    assert [verb for _, verb in calls] == ["update", "install"]
    for options, _ in calls:
        assert "-o DPkg::Lock::Timeout=600" in options
