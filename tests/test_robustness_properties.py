"""Property-based tests (hypothesis) for the parsers and the projections (issue 7).

Any input either works or fails with the tool's own error type (InputError, exit 2);
never another exception, never a traceback.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import string
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from bpvideo.cli import main
from bpvideo.errors import InputError
from bpvideo.settings import SeparateSettings, check_value, option_specs
from bpvideo.solver import project_rank, project_sparse, sparse_counts

SPECS = {name: spec for name, _, spec in option_specs()}
NAMES = sorted(SPECS)

# Values as they come from YAML or Python: every JSON-like type, and numbers at the edges.
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["auto", "AUTO", " auto ", "1e-1", "0x10", "nan", "-inf", "", "2", "1.5"]),
    st.text(max_size=12),
)
values = st.one_of(scalars, st.lists(scalars, max_size=3), st.dictionaries(st.text(), scalars))


@settings(max_examples=400, deadline=None)
@given(name=st.sampled_from(NAMES), value=values)
def test_check_value_works_or_raises_input_error(name: str, value: object) -> None:
    spec = SPECS[name]
    try:
        checked = check_value(name, spec, value)
    except InputError as exc:
        assert "\n" not in exc.message and name.replace("_", "-") in exc.message
        return
    # A value that passed is of the option's type, within its bounds, and passes again.
    assert check_value(name, spec, checked) == checked
    if spec.kind == "int" and checked is not None:
        assert type(checked) is int
    if spec.kind == "float" and checked is not None:
        assert type(checked) is float and np.isfinite(checked)
    if spec.choices is not None:
        assert checked in spec.choices


@settings(max_examples=200, deadline=None)
@given(
    mapping=st.dictionaries(
        st.one_of(st.sampled_from(NAMES), st.text(max_size=8)), values, max_size=6
    )
)
def test_settings_from_mapping_works_or_raises_input_error(mapping: dict) -> None:
    try:
        s = SeparateSettings.from_mapping(mapping)
    except InputError:
        return
    assert set(mapping) <= {f.name for f in fields(SeparateSettings)}
    assert SeparateSettings.from_mapping(s.to_dict()) == s  # round trip


# --- command-line parsing ----------------------------------------------------------------

_FLAGS = sorted(
    {(spec.flag or "--" + name.replace("_", "-")) for name, _, spec in option_specs()}
    | {spec.secondary for _, _, spec in option_specs() if spec.secondary}
    | {"--json", "-v", "-q", "-o", "--output", "--frobnicate", "-x", "--"}
)
_SAFE = string.ascii_letters + string.digits + "-._"
_token = st.one_of(
    st.sampled_from(_FLAGS),
    st.sampled_from(["0", "1", "-1", "2", "0.5", "1e9", "nan", "inf", "auto", "two", ""]),
    st.text(alphabet=_SAFE, max_size=8),  # never '/': no path outside the test folder
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**6), max_value=10**6).map(str),
)


@pytest.fixture(scope="module")
def cli_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("argv")


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(tokens=st.lists(_token, max_size=8), input_first=st.booleans())
def test_separate_argv_never_tracebacks(
    cli_dir: Path, tokens: list[str], input_first: bool
) -> None:
    """Random argv for ``separate`` with a missing INPUT (so no work runs): exit 0 (help)
    or 2, one error line, never a traceback, nothing written."""
    assume("--debug" not in tokens)
    missing = "no-such-input.mp4"
    argv = ["separate", missing, *tokens] if input_first else ["separate", *tokens, missing]
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(cli_dir)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        os.chdir(cwd)
    assert "Traceback" not in err.getvalue() and "internal error" not in err.getvalue()
    lines = err.getvalue().splitlines()
    if code == 1:
        # Several inputs (a stray token is an input too): each failure on its own line,
        # then the count; "exit 1 if any failed" (issue 5).
        assert re.fullmatch(r"bpvideo: (\d+) of \1 input\(s\) failed", lines[-1]), lines
        assert all(line.startswith("bpvideo: error: ") for line in lines[:-1]), lines
        assert len(lines) - 1 == int(lines[-1].split()[1]) and out.getvalue() == ""
    else:
        assert code in (0, 2), (argv, code, err.getvalue())
    if code == 2:
        assert len(lines) == 1 and lines[0].startswith("bpvideo: error: "), err.getvalue()
        assert out.getvalue() == ""
    assert list(cli_dir.iterdir()) == []  # nothing created


# --- projections -------------------------------------------------------------------------

# Pixel data is 0..255; the rank projection squares entries (Gram matrix), so entries are
# bounded to keep the squares finite. Shapes include 1 x n and m x 1.
matrices = hnp.arrays(
    dtype=st.sampled_from([np.float32, np.float64]),
    shape=hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=7),
    elements=st.one_of(
        st.floats(-1e6, 1e6, width=32),
        st.sampled_from([0.0, 1.0, -1.0, 255.0]),
    ),
)
special = st.sampled_from(["as-is", "zeros", "constant", "one-value"])


def _variant(M: np.ndarray, kind: str) -> np.ndarray:
    if kind == "zeros":
        return np.zeros_like(M)
    if kind == "constant":
        return np.full_like(M, 7.5)
    if kind == "one-value":
        Z = np.zeros_like(M)
        Z.flat[0] = M.flat[0] or 1.0
        return Z
    return M


@settings(max_examples=300, deadline=None)
@given(M=matrices, kind=special, sparsity=st.floats(allow_nan=True, allow_infinity=True))
def test_project_sparse_in_set_or_input_error(M: np.ndarray, kind: str, sparsity: float) -> None:
    M = _variant(M, kind)
    try:
        P = project_sparse(M, sparsity)
    except InputError:
        assert not (0 < sparsity < np.inf)  # NaN, inf, <= 0
        return
    assert 0 < sparsity < np.inf  # >= 1 keeps every entry (baselines scale the level up)
    k_row, k_col = sparse_counts(M.shape, sparsity)
    assert P.shape == M.shape and P.dtype == M.dtype
    nz = P != 0
    assert (nz.sum(axis=1) <= k_row).all() and (nz.sum(axis=0) <= k_col).all()
    kept = np.where(nz)
    np.testing.assert_array_equal(P[kept], M[kept])  # kept entries are unchanged
    np.testing.assert_array_equal(project_sparse(P, sparsity), P)  # idempotent


@settings(max_examples=300, deadline=None)
@given(M=matrices, kind=special, rank=st.integers(min_value=-3, max_value=9))
def test_project_rank_in_set_or_input_error(M: np.ndarray, kind: str, rank: int) -> None:
    M = _variant(M, kind)
    try:
        P = project_rank(M, rank)
    except InputError:
        assert rank < 1
        return
    assert rank >= 1
    assert P.shape == M.shape and np.isfinite(P).all()
    M64 = M.astype(np.float64)
    s = np.linalg.svd(M64, compute_uv=False)
    scale = max(float(s[0]) if s.size else 0.0, 1e-30)
    eps = 1e-4 if M.dtype == np.float32 else 1e-9
    # In the set: rank <= r (singular values past r vanish up to rounding) ...
    sp = np.linalg.svd(P.astype(np.float64), compute_uv=False)
    assert (sp[rank:] <= eps * scale * 10).all()
    # ... and the closest point of it (Eckart-Young): the error is the tail of M's spectrum.
    err = np.linalg.norm(M64 - P)
    best = np.sqrt(np.sum(s[rank:] ** 2))
    assert err <= best + eps * scale * 10 * np.sqrt(M.size)
