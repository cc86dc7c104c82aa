"""The projections ``T_alpha`` and ``H_r``: in their sets, idempotent, optimal; any input
either works or fails with the tool's own error type."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from hypothesis.extra.numpy import arrays

from bpvideo.errors import InputError
from bpvideo.solvers import project_rank, project_sparse, sparse_counts

float64_matrices = arrays(
    np.float64,
    st.tuples(st.integers(2, 25), st.integers(2, 25)),
    elements=st.floats(-1e3, 1e3, allow_nan=False, width=64),
)


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


@given(M=float64_matrices, sparsity=st.floats(0.01, 0.99))
@settings(max_examples=60, deadline=None)
def test_project_sparse_in_set_and_idempotent(M: np.ndarray, sparsity: float) -> None:
    P = project_sparse(M, sparsity)
    k_row, k_col = sparse_counts(M.shape, sparsity)
    nz = P != 0
    assert (nz.sum(axis=1) <= k_row).all() and (nz.sum(axis=0) <= k_col).all()
    assert np.array_equal(P[nz], M[nz])  # kept entries are unchanged
    assert np.array_equal(project_sparse(P, sparsity), P)


def test_project_sparse_keeps_largest() -> None:
    M = np.arange(1.0, 101.0).reshape(10, 10)
    P = project_sparse(M, 0.2)  # 2 per row and column
    # Row i's two largest are columns 8, 9; column j's two largest are rows 8, 9.
    expected = np.zeros_like(M)
    expected[8:, 8:] = M[8:, 8:]
    assert np.array_equal(P, expected)


@given(
    shape=st.tuples(st.integers(3, 40), st.integers(3, 40)),
    rank=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=40, deadline=None)
def test_project_rank_in_set_optimal_idempotent(
    shape: tuple[int, int], rank: int, seed: int
) -> None:
    M = np.random.default_rng(seed).standard_normal(shape)
    P = project_rank(M, rank)
    r = min(rank, *shape)
    s = np.linalg.svd(P, compute_uv=False)
    assert (s[r:] <= 1e-8 * s[0]).all()  # rank <= r
    U, sv, Vt = np.linalg.svd(M, full_matrices=False)
    best = (U[:, :r] * sv[:r]) @ Vt[:r]  # Eckart-Young optimum
    assert np.allclose(P, best, atol=1e-8 * sv[0])
    assert np.allclose(project_rank(P, rank), P, atol=1e-8 * sv[0])


def test_rank_projection_of_a_matrix_of_almost_nothing() -> None:
    """Entries near 1e-27 square to zero in float32: the projection stays exact."""
    rng = np.random.default_rng(0)
    M = (np.outer(rng.random(40), rng.random(6)) * 1e-26).astype(np.float32)
    P = project_rank(M, 1)
    assert np.abs(P - M).max() <= 1e-4 * np.abs(M).max()
