"""Known-answer tests of the baseline methods (iEALM, GoDec, RPCA GD)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from bpvideo.errors import ConvergenceWarning, InputError
from bpvideo.solvers import Iterate, SolverResult, godec, ialm, rpca_gd
from bpvideo.synthetic import RPCAProblem, make_rpca_problem


@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread() -> Iterator[None]:
    """These matrices are small: one BLAS thread is faster, and robust to a loaded machine."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def rel_err(estimate: np.ndarray, truth: np.ndarray) -> float:
    return float(np.linalg.norm(estimate - truth) / np.linalg.norm(truth))


def outlier_fraction(problem: RPCAProblem) -> float:
    return np.count_nonzero(problem.S) / problem.S.size


@pytest.fixture(scope="module")
def problem() -> RPCAProblem:
    """The paper's instance (outliers up to 500), tall: 150 x 100, rank 3, alpha 5 %."""
    return make_rpca_problem(150, 100, rank=3, sparsity=0.05, seed=7)


@pytest.fixture(scope="module")
def mild_problem() -> RPCAProblem:
    """Outliers up to 50: inside GoDec's regime (it stalls at the paper's 500)."""
    return make_rpca_problem(150, 100, rank=3, sparsity=0.05, magnitude=50, seed=7)


# ----------------------------------------------------------------------------- iEALM


def test_ialm_recovers_paper_instance(problem: RPCAProblem) -> None:
    result = ialm(problem.A, tol=1e-9)
    assert isinstance(result, SolverResult)
    assert result.method == "ialm"
    assert result.converged
    assert result.residual < 1e-9
    assert rel_err(result.L, problem.L) < 1e-7
    assert rel_err(result.S, problem.S) < 1e-8
    assert np.linalg.matrix_rank(result.L, tol=1e-6 * np.linalg.norm(result.L, 2)) == 3


def test_ialm_default_tolerance(problem: RPCAProblem) -> None:
    result = ialm(problem.A)
    assert result.converged
    assert rel_err(result.L, problem.L) < 1e-5


def test_ialm_tall_skinny() -> None:
    p = make_rpca_problem(1000, 40, rank=2, sparsity=0.05, seed=3)
    result = ialm(p.A, tol=1e-9)
    assert rel_err(result.L, p.L) < 1e-6


def test_ialm_partial_observation() -> None:
    p = make_rpca_problem(150, 100, rank=2, sparsity=0.05, observed=0.8, seed=5)
    assert p.mask is not None
    result = ialm(p.A, mask=p.mask, tol=1e-9)
    assert result.converged
    assert rel_err(result.L, p.L) < 1e-6  # the unobserved entries are completed too
    assert not result.S[~p.mask].any()


def test_ialm_float32_stays_float32(problem: RPCAProblem) -> None:
    result = ialm(problem.A.astype(np.float32), tol=1e-5)
    assert result.L.dtype == np.float32
    assert result.S.dtype == np.float32
    assert rel_err(result.L, problem.L) < 1e-2


# ----------------------------------------------------------------------------- GoDec


def test_godec_recovers_with_exact_cardinality(mild_problem: RPCAProblem) -> None:
    p = mild_problem
    result = godec(p.A, 3, outlier_fraction(p), tol=1e-12, max_iter=300)
    assert result.method == "godec"
    assert result.converged
    assert rel_err(result.L, p.L) < 1e-9
    assert rel_err(result.S, p.S) < 1e-9


def test_godec_default_tolerance(mild_problem: RPCAProblem) -> None:
    p = mild_problem
    result = godec(p.A, 3, outlier_fraction(p))
    assert rel_err(result.L, p.L) < 1e-5


def test_godec_is_reproducible(mild_problem: RPCAProblem) -> None:
    p = mild_problem
    first = godec(p.A, 3, outlier_fraction(p), seed=1)
    second = godec(p.A, 3, outlier_fraction(p), seed=1)
    np.testing.assert_array_equal(first.L, second.L)


def test_godec_partial_observation() -> None:
    p = make_rpca_problem(150, 100, rank=2, sparsity=0.05, magnitude=50, observed=0.9, seed=5)
    assert p.mask is not None
    observed_outliers = np.count_nonzero(p.S[p.mask]) / np.count_nonzero(p.mask)
    result = godec(p.A, 2, observed_outliers, mask=p.mask, tol=1e-12, max_iter=300)
    assert rel_err(result.L, p.L) < 1e-6
    assert not result.S[~p.mask].any()


# ----------------------------------------------------------------------------- RPCA GD


def test_rpca_gd_recovers_paper_instance(problem: RPCAProblem) -> None:
    result = rpca_gd(problem.A, 3, 0.05, tol=1e-10)
    assert result.method == "rpca_gd"
    assert result.converged
    assert rel_err(result.L, problem.L) < 1e-6
    assert rel_err(result.S, problem.S) < 1e-8


def test_rpca_gd_default_tolerance(problem: RPCAProblem) -> None:
    result = rpca_gd(problem.A, 3, 0.05)
    assert rel_err(result.L, problem.L) < 1e-3


def test_rpca_gd_partial_observation() -> None:
    p = make_rpca_problem(150, 100, rank=2, sparsity=0.05, observed=0.8, seed=5)
    result = rpca_gd(p.A, 2, 0.05, mask=p.mask, tol=1e-10, max_iter=1000)
    assert rel_err(result.L, p.L) < 1e-6
    assert not result.S[~p.mask].any()


def test_rpca_gd_divergent_step_warns(problem: RPCAProblem) -> None:
    with pytest.warns(ConvergenceWarning, match="diverged"):
        result = rpca_gd(problem.A, 3, 0.05, step=100.0, max_iter=50)
    assert not result.converged


# ----------------------------------------------------------------------------- common


def _run(name: str, p: RPCAProblem, **kwargs) -> SolverResult:
    if name == "ialm":
        return ialm(p.A, **kwargs)
    if name == "godec":
        return godec(p.A, 3, outlier_fraction(p), **kwargs)
    return rpca_gd(p.A, 3, 0.05, **kwargs)


METHODS = ["ialm", "godec", "rpca_gd"]


@pytest.mark.parametrize("name", METHODS)
def test_max_iter_warns(name: str, mild_problem: RPCAProblem) -> None:
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        result = _run(name, mild_problem, max_iter=1)
    assert result.iterations == 1
    assert not result.converged
    assert len(result.residuals) == len(result.changes) == 1


@pytest.mark.parametrize("name", METHODS)
def test_callback_sees_every_iteration(name: str, mild_problem: RPCAProblem) -> None:
    seen: list[Iterate] = []
    result = _run(name, mild_problem, tol=1e-6, callback=seen.append)
    assert [it.iteration for it in seen] == list(range(1, result.iterations + 1))
    assert seen[-1].residual == result.residual


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda A: ialm(A, rho=1.0), "rho"),
        (lambda A: ialm(A, lam=-1.0), "lam"),
        (lambda A: ialm(A, mu=0.0), "mu"),
        (lambda A: ialm(A, max_iter=0), "max_iter"),
        (lambda A: ialm(A, tol=-1.0), "tol"),
        (lambda A: ialm(A[:, :1]), "2 columns"),
        (lambda A: ialm(A, mask=np.ones((3, 3), bool)), "mask shape"),
        (lambda A: ialm(A, mask=np.zeros(A.shape, bool)), "no observed entry"),
        (lambda A: godec(A, 0, 0.05), "rank"),
        (lambda A: godec(A, 3, 1.5), "sparsity"),
        (lambda A: godec(A, 3, 0.05, q=-1), "q"),
        (lambda A: godec(A, 3, 0.05, q=1.5), "q"),
        (lambda A: rpca_gd(A, 100, 0.05), "rank"),
        (lambda A: rpca_gd(A, 3, 0.0), "sparsity"),
        (lambda A: rpca_gd(A, 3, 0.05, step=0.0), "step"),
        (lambda A: rpca_gd(A, 3, 0.05, sparsity_factor=0.5), "sparsity_factor"),
        (lambda A: rpca_gd(A, 3, 0.5, sparsity_factor=2.0), "must be < 1"),
    ],
)
def test_bad_parameters_raise(call, match: str, problem: RPCAProblem) -> None:
    with pytest.raises(InputError, match=match):
        call(problem.A)
