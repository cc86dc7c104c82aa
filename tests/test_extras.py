"""The CI guard: with ``BPVIDEO_REQUIRE_EXTRAS=1`` (the README's test command) a test
skipped for a missing optional dependency fails, and a missing extra stops the run."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests import conftest
from tests.conftest import REPO, process_env

NUMBA_TEST = "tests/solvers/test_backends.py::test_auto_is_numpy_and_numba_is_chosen_by_name"


def _pytest(**env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", NUMBA_TEST],
        cwd=REPO, env={**process_env(), **env}, capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip


def test_a_skip_for_a_missing_extra_fails_when_extras_are_required() -> None:
    without_numba = {"BPVIDEO_NUMBA": "0"}  # as if numba were not installed
    skipped = _pytest(**without_numba, BPVIDEO_REQUIRE_EXTRAS="0")
    assert skipped.returncode == 0 and "1 skipped" in skipped.stdout, skipped.stdout
    failed = _pytest(**without_numba, BPVIDEO_REQUIRE_EXTRAS="1")
    assert failed.returncode == 1 and "1 failed" in failed.stdout, failed.stdout
    assert "BPVIDEO_REQUIRE_EXTRAS is set, and this test skipped: numba is not installed" in (
        failed.stdout
    )


def test_a_missing_extra_stops_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conftest, "EXTRAS", {"no_such_module_of_bpvideo": "fast"})
    monkeypatch.setenv("BPVIDEO_REQUIRE_EXTRAS", "1")
    with pytest.raises(pytest.UsageError, match=r"no_such_module_of_bpvideo \(bpvideo\[fast\]\)"):
        conftest.pytest_configure(None)  # type: ignore[arg-type]
    monkeypatch.setenv("BPVIDEO_REQUIRE_EXTRAS", "0")
    conftest.pytest_configure(None)  # type: ignore[arg-type]
