"""The best-pair solver: known answers on the paper's synthetic instances, projections."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from bpvideo.errors import ConvergenceWarning, InputError
from bpvideo.solvers import (
    Iterate,
    best_pair,
    initial_point,
    ncf,
    sparse_counts,
)
from bpvideo.synthetic import make_rpca_problem


def rel(x: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(x - ref) / np.linalg.norm(ref))


@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize("observed", [None, 0.9])
def test_paper_instance_recovered(observed: float | None, seed: int) -> None:
    # The paper's synthetic instance: m = n = 200, rank 5, sparsity 0.05, |S| <= 500.
    # Seeds 3 and 4 are the ones where the paper's zero start stalls with 10 % missing.
    p = make_rpca_problem(200, 200, rank=5, sparsity=0.05, observed=observed, seed=seed)
    result = best_pair(p.A, 5, 0.05, mask=p.mask, tol=1e-12, max_iter=1000, sweeps=0)
    assert result.converged
    assert rel(result.L, p.L) < 1e-6
    assert rel(result.S, p.S) < 1e-6 if observed is None else True
    if p.mask is not None:
        # Observed entries of S are recovered; unobserved ones are not identifiable.
        assert rel(result.S * p.mask, p.S * p.mask) < 1e-6
    assert result.residuals[-1] < 1e-9
    assert len(result.residuals) == result.iterations == len(result.changes)


def test_paper_start_zeros_fully_observed() -> None:
    p = make_rpca_problem(200, 200, rank=5, sparsity=0.05, seed=1)
    result = best_pair(p.A, 5, 0.05, init="zeros", tol=1e-12, max_iter=1000, sweeps=0)
    assert result.converged and rel(result.L, p.L) < 1e-6


def test_robust_start_is_in_the_set() -> None:
    p = make_rpca_problem(120, 80, rank=3, sparsity=0.05, seed=2)
    L0, S0 = initial_point(p.A, 3, 0.05)
    assert np.linalg.matrix_rank(L0) == 3
    k_row, k_col = sparse_counts(p.A.shape, 0.05)
    assert ((S0 != 0).sum(axis=1) <= k_row).all() and ((S0 != 0).sum(axis=0) <= k_col).all()
    L0, S0 = initial_point(p.A, 3, 0.05, init="median")
    assert not S0.any() and (L0 == L0[:, :1]).all()


def test_ncf_special_case_recovers_and_is_slower() -> None:
    p = make_rpca_problem(200, 200, rank=5, sparsity=0.05, seed=4)
    fast = best_pair(p.A, 5, 0.05, tol=1e-10, max_iter=1000, init="zeros", sweeps=0)
    slow = ncf(p.A, 5, 0.05, tol=1e-10, max_iter=2000, init="zeros", sweeps=0)
    assert slow.method == "ncf" and fast.method == "bestpair"
    assert rel(slow.L, p.L) < 1e-6 and rel(fast.L, p.L) < 1e-6
    # The paper's point: inertia and gamma = 1.1 converge in fewer iterations.
    assert fast.iterations < slow.iterations


def test_float32_stays_float32_and_close() -> None:
    p = make_rpca_problem(300, 60, rank=2, sparsity=0.05, seed=5)
    A = p.A.astype(np.float32)
    result = best_pair(A, 2, 0.05, tol=1e-7, max_iter=500, sweeps=0)
    assert result.L.dtype == np.float32 and result.S.dtype == np.float32
    assert rel(result.L, p.L) < 1e-3


def test_wide_matrix() -> None:
    p = make_rpca_problem(60, 150, rank=3, sparsity=0.05, seed=6)
    result = best_pair(p.A, 3, 0.05, tol=1e-12, max_iter=1000, sweeps=0)
    assert rel(result.L, p.L) < 1e-6


@pytest.mark.parametrize("shape", [(200, 100), (100, 200)])
def test_factors_give_L(shape: tuple[int, int]) -> None:
    m, n = shape
    p = make_rpca_problem(m, n, rank=2, sparsity=0.05, seed=9)
    result = best_pair(p.A, 2, 0.05, tol=1e-8, max_iter=300, sweeps=0)
    U, V = result.factors
    assert U.shape == (m, 2) and V.shape == (n, 2)
    np.testing.assert_allclose(U @ V.T, result.L, rtol=0, atol=1e-9 * np.abs(result.L).max())


def test_callback_and_iterate() -> None:
    p = make_rpca_problem(50, 40, rank=2, sparsity=0.05, seed=7)
    seen: list[Iterate] = []
    result = best_pair(p.A, 2, 0.05, tol=1e-8, max_iter=300, callback=seen.append, sweeps=0)
    assert [it.iteration for it in seen] == list(range(1, result.iterations + 1))
    assert seen[-1].residual == result.residuals[-1]


def test_max_iter_warns() -> None:
    p = make_rpca_problem(50, 40, rank=2, sparsity=0.05, seed=8)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        result = best_pair(p.A, 2, 0.05, max_iter=1, tol=0)
    assert not result.converged and result.iterations == 1


def test_starting_point_used() -> None:
    p = make_rpca_problem(80, 60, rank=2, sparsity=0.05, seed=9)
    result = best_pair(p.A, 2, 0.05, L0=p.L, S0=p.S, tol=1e-9, max_iter=5, sweeps=0)
    assert result.iterations == 1 and rel(result.L, p.L) < 1e-9


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"rank": 0}, "rank"),
        ({"rank": 40}, "rank"),
        ({"sparsity": 0.0}, "sparsity"),
        ({"sparsity": 1.0}, "sparsity"),
        ({"sparsity": -0.1}, "sparsity"),
        ({"gamma": 0.0}, "gamma"),
        ({"gamma": 2.5}, "gamma"),
        ({"max_iter": 0}, "max_iter"),
        # Wrong kinds: named, not float()'s or numpy's broadcasting message from inside.
        ({"sparsity": "x"}, r"sparsity='x' must be in \(0, 1\)"),
        ({"gamma": None}, "gamma=None must be in"),
        ({"tol": "1e-3"}, "tol='1e-3' must be a finite number"),
        ({"L0": np.zeros((3, 3))}, r"L0 has shape \(3, 3\) but the data are \(50, 40\)"),
        ({"L0": (np.zeros((50, 2)), np.zeros((9, 2)))}, "L0 has shape"),
        ({"S0": np.zeros((40, 50))}, "S0 has shape"),
        ({"L0": np.full((50, 40), np.nan)}, "L0 holds NaN"),
        ({"callback": 5}, "callback=5 is not callable"),
        ({"A": np.full((50, 40), "a")}, "dtype <U1: give a real-valued matrix"),
        ({"A": np.ones((50, 40), complex)}, "dtype complex128"),
    ],
)
def test_bad_parameters(kwargs: dict, match: str) -> None:
    args = {"rank": 2, "sparsity": 0.1, "A": np.ones((50, 40))} | kwargs
    A, rank, sparsity = args.pop("A"), args.pop("rank"), args.pop("sparsity")
    with pytest.raises(InputError, match=match):
        best_pair(A, rank, sparsity, **args)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("solver", ["best_pair", "rpca_gd", "godec", "ialm"])
def test_entries_that_are_not_finite(bad: float, solver: str) -> None:
    """A LinAlgError from LAPACK before (``Eigenvalues did not converge``)."""
    import bpvideo.solvers as solvers

    A = np.ones((20, 10))
    A[3, 4] = bad
    with pytest.raises(InputError, match="NaN or infinite entries: give finite numbers"):
        if solver == "best_pair":
            best_pair(A, 2, 0.1)
        else:
            args = {} if solver == "ialm" else {"rank": 2, "sparsity": 0.1}
            getattr(solvers, solver)(A, **args)


def test_bad_mask() -> None:
    A = np.ones((20, 10))
    with pytest.raises(InputError, match="shape"):
        best_pair(A, 1, 0.1, mask=np.ones((10, 10), bool))
    with pytest.raises(InputError, match="no observed"):
        best_pair(A, 1, 0.1, mask=np.zeros((20, 10), bool))


# --- the solver's edges (issue 27) --------------------------------------------------------


def algorithm_1(A, rank, sparsity, gamma, a, b, iterations, mask=None):
    """Algorithm 1 of the paper written out (``Y_0 = 0``, exact projections)."""
    from bpvideo.solvers import project_rank, project_sparse

    S = L = Sp = Lp = np.zeros_like(A)
    h = gamma / 2
    for _ in range(iterations):
        Sa, La = S + a * (S - Sp), L + a * (L - Lp)
        Sb, Lb = S + b * (S - Sp), L + b * (L - Lp)
        R = Sb + Lb - A if mask is None else (Sb + Lb - A) * mask
        Sp, Lp = S, L
        S, L = project_sparse(Sa - h * R, sparsity), project_rank(La - h * R, rank)
    return L, S


@pytest.mark.parametrize(("gamma", "a", "b"), [(1.1, 0.5, 0.5), (1.5, 0.5, 0.5), (2.0, 0, 0)])
@pytest.mark.parametrize("observed", [None, 0.8])
def test_the_iterates_are_algorithm_1s(gamma, a, b, observed) -> None:
    """Where it does not diverge, the solver is Algorithm 1 to rounding."""
    p = make_rpca_problem(60, 50, rank=2, sparsity=0.05, observed=observed, seed=5)
    with warnings.catch_warnings():  # stopped after 15 iterations on purpose
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = best_pair(p.A, 2, 0.05, gamma=gamma, a=a, b=b, mask=p.mask, init="zeros",
                           max_iter=15, tol=1e-14, sweeps=0)  # fmt: skip
    L, S = algorithm_1(p.A, 2, 0.05, gamma, a, b, result.iterations, p.mask)
    np.testing.assert_allclose(result.L, L, atol=1e-9 * np.abs(p.A).max())
    np.testing.assert_allclose(result.S, S, atol=1e-9 * np.abs(p.A).max())


@pytest.mark.parametrize(("gamma", "a", "b"), [(1.9, 0.5, 0.5), (2.0, 0.9, 0.9), (1.5, 0.3, 0.7)])
def test_divergence_stops_the_solve_and_says_what_to_lower(gamma, a, b) -> None:
    """Steps that make the algorithm itself diverge (Algorithm 1 grows without bound
    too): stopped at the first iterate that is far off, never a result of inf/NaN."""
    from bpvideo.errors import Diverged

    p = make_rpca_problem(60, 50, rank=2, sparsity=0.05, seed=0)
    with pytest.raises(Diverged, match=r"diverged at iteration \d+ .*lower gamma") as caught:
        best_pair(p.A, 2, 0.05, gamma=gamma, a=a, b=b, max_iter=500, tol=1e-12)
    assert caught.value.exit_code == 1 and "nothing was kept" in str(caught.value)
    L, _ = algorithm_1(p.A, 2, 0.05, gamma, a, b, 150)
    assert not np.all(np.abs(L) < 1e3 * np.abs(p.A).max())  # the algorithm diverges too
