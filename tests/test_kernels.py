"""The fused solver kernels: numba and numpy paths agree, and agree with Algorithm 1."""

from __future__ import annotations

import numpy as np
import pytest

from bpvideo import _kernels
from bpvideo.solver import best_pair, project_sparse, sparse_counts
from bpvideo.synthetic import make_rpca_problem


@pytest.fixture(params=[False, True], ids=["numpy", "numba"])
def path(request: pytest.FixtureRequest):
    if request.param and not _kernels.HAVE_NUMBA:
        pytest.skip("numba is not installed")
    before = _kernels.use_numba()
    _kernels.use_numba(request.param)
    yield request.param
    _kernels.use_numba(before)


def reference_step(S, Sp, L, Lp, A, mask, a, b, h):
    """One gradient step of Algorithm 1, written out with temporaries."""
    Sa, La = S + a * (S - Sp), L + a * (L - Lp)
    Sb, Lb = S + b * (S - Sp), L + b * (L - Lp)
    R = Sb + Lb - A
    if mask is not None:
        R = R * mask
    return Sa - h * R, La - h * R


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize(("a", "b"), [(0.5, 0.5), (0.3, 0.7), (0.0, 0.0)])
def test_gradient_step_matches_reference(path: bool, masked: bool, a: float, b: float) -> None:
    rng = np.random.default_rng(0)
    S, Sp, L, Lp, A = (rng.standard_normal((40, 30)) for _ in range(5))
    mask = rng.random((40, 30)) < 0.7 if masked else None
    want_s, want_l = reference_step(S, Sp, L, Lp, A, mask, a, b, 0.55)
    Sp2, Lp2 = Sp.copy(), Lp.copy()
    k_row, _ = sparse_counts(S.shape, 0.1)
    rows = _kernels.gradient_step(S, Sp2, L, Lp2, A, mask, a, b, 0.55, k_row, np.empty_like(S))
    assert np.allclose(Sp2, want_s, atol=1e-12) and np.allclose(Lp2, want_l, atol=1e-12)
    if rows is not None:  # numba: row thresholds are the k-th largest magnitudes
        want = -np.sort(-np.abs(Sp2), axis=1)[:, k_row - 1]
        assert np.array_equal(rows[0], want)


def test_projection_same_on_both_paths_with_ties() -> None:
    rng = np.random.default_rng(1)
    M = rng.integers(-3, 4, size=(60, 45)).astype(np.float64)  # many ties
    out = {}
    for flag in (False, True):
        if flag and not _kernels.HAVE_NUMBA:
            continue
        before = _kernels.use_numba(flag)
        try:
            out[flag] = project_sparse(M, 0.2)
        finally:
            _kernels.use_numba(before)
    k_row, k_col = sparse_counts(M.shape, 0.2)
    for P in out.values():
        nz = P != 0
        assert (nz.sum(axis=1) <= k_row).all() and (nz.sum(axis=0) <= k_col).all()
    if len(out) == 2:
        assert np.array_equal(out[False], out[True])


def test_solver_same_on_both_paths(path: bool) -> None:
    p = make_rpca_problem(120, 90, rank=3, sparsity=0.05, observed=0.9, seed=2)
    result = best_pair(p.A, 3, 0.05, mask=p.mask, tol=1e-12, max_iter=1000)
    assert result.converged
    assert np.linalg.norm(result.L - p.L) / np.linalg.norm(p.L) < 1e-6


def test_paths_give_same_iterates_on_video_like_data() -> None:
    if not _kernels.HAVE_NUMBA:
        pytest.skip("numba is not installed")
    from bpvideo.synthetic import make_scene

    scene = make_scene(48, 36, 40, seed=3)
    A = scene.frames[..., 1].reshape(40, -1).T.astype(np.float32).copy()
    results = []
    for flag in (False, True):
        before = _kernels.use_numba(flag)
        try:
            results.append(best_pair(A, 2, 0.1, tol=1e-3, max_iter=100))
        finally:
            _kernels.use_numba(before)
    np_res, nb_res = results
    assert np_res.iterations == nb_res.iterations
    rel = np.linalg.norm(np_res.L - nb_res.L) / np.linalg.norm(np_res.L)
    assert rel < 1e-4
