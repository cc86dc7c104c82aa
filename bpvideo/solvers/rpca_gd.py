"""RPCA GD: robust PCA by gradient descent on the factors (Yi, Park, Chen, Caramanis 2016).

One of the comparison methods of the best-pair paper (see :mod:`bpvideo.solvers.baselines`
for the others); a plain function returning a :class:`~bpvideo.solvers.SolverResult`.

References
----------
.. [1] X. Yi, D. Park, Y. Chen, C. Caramanis, "Fast Algorithms for Robust PCA via
   Gradient Descent", Advances in Neural Information Processing Systems 29 (NIPS), 2016.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np

from bpvideo.errors import ConvergenceWarning, InputError
from bpvideo.solvers._common import (
    Callback,
    History,
    SolverResult,
    as_float,
    check_mask,
    check_positive,
    check_problem,
    relative_change,
    relative_residual,
)
from bpvideo.solvers.projections import project_sparse

__all__ = ["rpca_gd"]


def rpca_gd(
    A: np.ndarray,
    rank: int,
    sparsity: float,
    *,
    step: float | None = None,
    sparsity_factor: float = 1.5,
    mask: np.ndarray | None = None,
    max_iter: int = 500,
    tol: float = 1e-7,
    callback: Callback | None = None,
) -> SolverResult:
    """Robust PCA by gradient descent on the factors (Yi, Park, Chen and Caramanis [1]_).

    ``L = U V^T`` with U (m x r) and V (n x r). Initialization: ``S_0 = T(A)``,
    ``U_0 V_0^T`` = the rank-r truncated SVD of ``A - S_0`` with the singular values split
    evenly (``U_0 = U_r Sigma_r^(1/2)``, ``V_0 = V_r Sigma_r^(1/2)``). Then repeat::

        S = T(A - U V^T)                     # row/column-wise sparse estimator
        E = U V^T + S - A
        U <- U - step (E V + 1/2 U (U^T U - V^T V))
        V <- V - step (E^T U + 1/2 V (V^T V - U^T U))

    the gradient step on ``1/2 ||U V^T + S - A||_F^2 + 1/8 ||U^T U - V^T V||_F^2``
    (Algorithm 1 of [1]_). ``T`` is the ``T_alpha`` sparse estimator of the paper
    (:func:`~bpvideo.solvers.project_sparse`) at ``sparsity_factor * sparsity``.

    Parameters
    ----------
    A : (m, n) ndarray
        Data, one column per frame. float32 stays float32, float64 stays float64, other
        dtypes are converted to float32.
    rank : int
        Target rank r of ``L`` (``1 <= r < min(m, n)``).
    sparsity : float
        Target sparsity alpha of ``S`` in (0, 1): at most ``alpha n`` non-zeros per row and
        ``alpha m`` per column.
    step : float, optional
        Step size eta. Default ``0.5 / sigma_1(U_0 V_0^T)``, the recommendation of [1]_
        (its code's ``step_const = 0.5`` over the top singular value of the initial
        estimate).
    sparsity_factor : float, default 1.5
        Yi et al.'s gamma >= 1: the estimator keeps ``sparsity_factor * sparsity`` per row
        and column. 1.5 is the value of the authors' demo (their analysis uses 2, their
        code's bare default 1); a margin above 1 matters under partial observation, where
        the observed outliers per row fluctuate above ``p * sparsity * n``. The product
        must stay below 1.
    mask : (m, n) bool ndarray, optional
        Observation mask Omega, True on observed entries. As in [1]_: with ``p`` the
        observed fraction, the estimator runs on ``P_Omega(A - U V^T)`` at
        ``p * sparsity_factor * sparsity``, the initial SVD is of ``P_Omega(A - S_0) / p``
        and the data gradient is ``P_Omega(E) / p``. ``S`` is zero on unobserved entries.
    max_iter : int, default 500
        Iteration limit; reaching it warns :class:`~bpvideo.errors.ConvergenceWarning`.
    tol : float, default 1e-7
        Stop when the relative residual ``||P_Omega(A - L - S)||_F / ||P_Omega(A)||_F`` or
        the relative change of ``[S; L]`` falls below.
    callback : callable, optional
        Called as ``callback(Iterate)`` after every iteration.

    Returns
    -------
    SolverResult
        ``method="rpca_gd"``; ``L = U V^T`` and ``S = T(A - L)`` of the last iterate.

    Raises
    ------
    InputError
        If a parameter is out of range (see :func:`~bpvideo.solver.check_problem`).

    Notes
    -----
    The optional projection of the factors onto incoherent sets of [1]_ is left out, as
    in the authors' code by default. One SVD (thin) at the start; each iteration is a few
    m x n by n x r products and one ``T_alpha``.

    References
    ----------
    .. [1] X. Yi, D. Park, Y. Chen, C. Caramanis, "Fast Algorithms for Robust PCA via
       Gradient Descent", NIPS 2016.

    Examples
    --------
    >>> from bpvideo.synthetic import make_rpca_problem
    >>> problem = make_rpca_problem(100, 100, rank=2, sparsity=0.05, seed=0)
    >>> problem.error(rpca_gd(problem.A, 2, 0.05).L) < 1e-3
    True
    """
    A = as_float(A)
    check_problem(A.shape, rank, sparsity, max_iter=max_iter, tol=tol)
    if isinstance(sparsity_factor, bool) or not (1.0 <= float(sparsity_factor) < math.inf):
        raise InputError(
            "{sparsity_factor=} must be >= 1: Yi et al. use 1 to 2",
            option=("sparsity_factor", sparsity_factor),
        )
    if not float(sparsity_factor) * float(sparsity) < 1.0:
        raise InputError(
            f"{{sparsity_factor=}} times {{sparsity}} ({sparsity}) must be < 1: lower one of them",
            option=("sparsity_factor", sparsity_factor),
        )
    if step is not None:
        check_positive("step", step, "leave it unset for 0.5/sigma_1")
    mask = check_mask(mask, A.shape, all_true_is_none=True)
    dtype = A.dtype
    t0 = time.perf_counter()

    X = A if mask is None else np.where(mask, A, 0).astype(dtype, copy=False)
    norm_A = float(np.linalg.norm(X)) or 1.0
    p = 1.0 if mask is None else float(np.count_nonzero(mask)) / mask.size
    level = sparsity_factor * sparsity * p

    def estimate_sparse(R: np.ndarray) -> np.ndarray:
        if mask is not None:
            R[~mask] = 0
        return project_sparse(R, level)

    # Phase I: sparse estimate, then a balanced rank-r factorization of the rest.
    S = estimate_sparse(X.copy())
    Ur, sv, Vt = np.linalg.svd((X - S) / dtype.type(p), full_matrices=False)
    root = np.sqrt(sv[:rank]).astype(dtype, copy=False)
    U = Ur[:, :rank] * root
    V = Vt[:rank].T * root
    if step is None:
        if not sv[0] > 0:
            raise InputError("the data minus its sparse estimate is zero: nothing to fit")
        step = 0.5 / float(sv[0])
    eta = dtype.type(step)
    half_eta = dtype.type(step / 2.0)
    inv_p = dtype.type(1.0 / p)
    L = U @ V.T
    S = estimate_sparse(X - L)  # S = T(A - U V^T) throughout Phase II

    # Phase II: gradient descent on the factors.
    history = History("rpca_gd", callback, t0)
    converged = diverged = False
    k = 0
    with np.errstate(over="ignore", invalid="ignore"):  # divergence is reported below
        for k in range(1, max_iter + 1):
            E = X - L - S  # minus the gradient of the data term w.r.t. U V^T
            if mask is not None:
                E[~mask] = 0
            E *= inv_p
            UtU = U.T @ U
            VtV = V.T @ V
            U_new = U + eta * (E @ V) - half_eta * (U @ (UtU - VtV))
            V_new = V + eta * (E.T @ U) - half_eta * (V @ (VtV - UtU))
            U, V = U_new, V_new
            L_new = U @ V.T
            S_new = estimate_sparse(X - L_new)

            residual = relative_residual(X, L_new, S_new, mask, norm_A)
            change = relative_change(S_new, L_new, S, L)
            diverged = not math.isfinite(residual)
            history.record(k, L_new, S_new, residual, change, notify=not diverged)
            L, S = L_new, S_new
            if diverged:
                break
            if residual < tol or change < tol:
                converged = True
                break

    if diverged:
        warnings.warn(
            f"rpca_gd diverged at iteration {k} (step {float(step):.3g}): lower step",
            ConvergenceWarning,
            stacklevel=2,
        )
    return history.result(L, S, k, converged, max_iter=max_iter, tol=tol, warn=not diverged)
