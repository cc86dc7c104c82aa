"""``--help`` in sections with examples, ``--version``, shell completion, and the package
metadata (issue 16)."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys

import bpvideo
from bpvideo.settings import OPTION_GROUPS, cli_flags, option_group, option_specs
from tests.conftest import process_env

SECTIONS = ["Input options:", "Solver options:", "Masks options:", "Output options:",
            "Logging options:", "Other options:"]  # fmt: skip


def test_every_option_is_in_one_section() -> None:
    names = [name for name, _, _ in option_specs()]
    grouped = [name for group in OPTION_GROUPS.values() for name in group]
    assert sorted(grouped) == sorted(names)  # each once, none left out
    assert option_group("crf") == "Output" and option_group("end") == "Input"


def test_separate_help_is_grouped_with_examples(run_cli) -> None:
    res = run_cli("separate", "--help")
    assert res.code == 0 and res.err == ""
    text = res.out
    starts = [text.index(f"\n{title}\n") for title in SECTIONS]
    assert starts == sorted(starts), "sections out of order"
    assert "\nOptions:\n" not in text  # nothing left ungrouped
    flags = cli_flags()
    for group, names in OPTION_GROUPS.items():
        section = text[text.index(f"\n{group} options:\n") :]
        section = section[: section.index("\n\n", 1)]
        for name in names:
            assert f"  {flags[name].split('/')[0]} " in section or flags[name] in section, name
    logging_section = text[text.index("Logging options:") : text.index("Other options:")]
    for flag in ("-v, --verbose", "-q, --quiet", "--logfile PATH", "--debug"):
        assert flag in logging_section
    assert "-c, --config FILE" in text[text.index("Other options:") :]
    assert "Examples:" in text and "--start 00:01:30 --duration 10s" in text
    assert "[default: --gray]" in text and "--overwrite [default" not in text


def test_version_is_the_package_version(run_cli) -> None:
    res = run_cli("--version")
    assert res.code == 0
    assert res.out == f"bpvideo, version {bpvideo.__version__}\n"
    assert importlib.metadata.version("bpvideo") == bpvideo.__version__  # one string


def test_package_metadata() -> None:
    meta = importlib.metadata.metadata("bpvideo")
    classifiers = meta.get_all("Classifier")
    tested = [c.rsplit(" ", 1)[1] for c in classifiers if c.startswith("Programming Language ::"
              " Python :: 3.")]  # fmt: skip
    assert tested == ["3.10", "3.11", "3.12", "3.13"]
    assert f"{sys.version_info.major}.{sys.version_info.minor}" in tested
    assert meta["Requires-Python"] == ">=3.10"
    urls = dict(url.split(", ", 1) for url in meta.get_all("Project-URL"))
    assert urls["Paper"].startswith("https://arxiv.org/")


def _complete(*words: str, **env: str) -> str:
    completion = subprocess.run(
        [sys.executable, "-m", "bpvideo"],
        env={**process_env(), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completion.returncode == 0, completion.stderr
    return completion.stdout


def test_shell_completion() -> None:
    script = _complete(_BPVIDEO_COMPLETE="bash_source")
    assert "_bpvideo_completion()" in script and "complete -o nosort -F" in script
    words = _complete(
        _BPVIDEO_COMPLETE="bash_complete", COMP_WORDS="bpvideo separate --pre", COMP_CWORD="2"
    )
    assert set(words.split()) == {"plain,--preset", "plain,--preview"}
    words = _complete(
        _BPVIDEO_COMPLETE="bash_complete", COMP_WORDS="bpvideo separate --preset v",
        COMP_CWORD="3",
    )  # fmt: skip
    assert set(words.split()) == {"plain,veryfast", "plain,veryslow"}
    assert "BPVIDEO_COMPLETE" not in os.environ  # the test's own environment is untouched
