"""benchmarks/phase_transition.py says which start it used, and offers the paper's
(issue 27)."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import REPO


@pytest.fixture(scope="module")
def phase_transition():
    spec = importlib.util.spec_from_file_location(
        "phase_transition", REPO / "benchmarks" / "phase_transition.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_both_starts_side_by_side(phase_transition, capsys) -> None:
    assert phase_transition.main(["--size", "20", "--grid", "1", "--trials", "1", "--no-plot",
                                  "--init", "both", "--max-iter", "50"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "start of best pair and NCF: both (the paper's: zeros)" in out
    for title in ("Best pair RPCA (robust start)", "Best pair RPCA (start Y_0 = 0, the paper's)",
                  "RPCA NCF (start Y_0 = 0, the paper's)", "iEALM:"):  # fmt: skip
        assert out.count(title) == 2, title  # residual and recovery tables


def test_the_default_start_is_said(phase_transition, capsys) -> None:
    assert phase_transition.main(["--size", "20", "--grid", "1", "--trials", "1", "--no-plot",
                                  "--methods", "bestpair", "--max-iter", "50"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "start of best pair and NCF: robust" in out and "Y_0 = 0" not in out.split("\n", 1)[1]
    doc = " ".join(phase_transition.__doc__.split())
    assert "start from bpvideo's robust start" in doc and "(``--init zeros``" in doc
