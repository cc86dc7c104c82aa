"""The comparison methods of the best-pair paper (pure numpy/scipy, no I/O).

Three robust-PCA baselines that the paper of Dutta, Hanzely, Liang and Richtárik compares
against, each a plain function returning the same :class:`~bpvideo.solvers.SolverResult`
as :func:`~bpvideo.solvers.best_pair` (with ``method`` set to ``"ialm"``, ``"godec"`` or
``"rpca_gd"``):

- :func:`ialm`: convex principal component pursuit by the inexact augmented Lagrange
  multiplier method (the paper's "iEALM") [1]_.
- :func:`godec`: GoDec, alternating rank-r and cardinality projections with the rank-r
  step by bilateral random projections [2]_.
- :func:`~bpvideo.solvers.rpca_gd.rpca_gd` (its own module): robust PCA by factorized
  gradient descent with a row/column-wise sparse estimator (the paper's "RPCA GD") [3]_.

RPCA NCF, the fourth user-inferred baseline, is :func:`bpvideo.solvers.ncf`.

All three take the data first and everything else keyword-only, accept an observation
mask (True on observed entries), warn :class:`~bpvideo.errors.ConvergenceWarning` when
they stop at ``max_iter`` and call ``callback(Iterate)`` after every iteration. The
residual history is ``||P_Omega(A - L - S)||_F / ||P_Omega(A)||_F``, as in the solver.

References
----------
.. [1] Z. Lin, M. Chen, Y. Ma, "The Augmented Lagrange Multiplier Method for Exact
   Recovery of Corrupted Low-Rank Matrices", UIUC Technical Report UILU-ENG-09-2215,
   2010 (arXiv:1009.5055).
.. [2] T. Zhou, D. Tao, "GoDec: Randomized Low-rank & Sparse Matrix Decomposition in
   Noisy Case", Proc. 28th International Conference on Machine Learning (ICML), 2011.
.. [3] X. Yi, D. Park, Y. Chen, C. Caramanis, "Fast Algorithms for Robust PCA via
   Gradient Descent", Advances in Neural Information Processing Systems 29 (NIPS), 2016.
.. [4] A. Dutta, F. Hanzely, J. Liang, P. Richtárik, "Best Pair Formulation &
   Accelerated Scheme for Non-convex Principal Component Pursuit", IEEE Trans. Signal
   Processing, 2020.
"""

from __future__ import annotations

import math
import time

import numpy as np

from bpvideo.errors import InputError
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
from bpvideo.solvers.rpca_gd import rpca_gd

__all__ = ["godec", "ialm", "rpca_gd"]


# --------------------------------------------------------------------------- iEALM


def ialm(
    A: np.ndarray,
    *,
    lam: float | None = None,
    mu: float | None = None,
    rho: float = 1.5,
    mask: np.ndarray | None = None,
    max_iter: int = 500,
    tol: float = 1e-7,
    callback: Callback | None = None,
) -> SolverResult:
    """Principal component pursuit by the inexact augmented Lagrange multiplier method.

    Solves the convex program ``min ||L||_* + lam ||S||_1  s.t.  L + S = A`` by the
    inexact ALM algorithm for RPCA of [1]_ (the "iEALM" of [2]_): with multiplier ``Y`` and penalty
    ``mu``, one soft-thresholding step for ``S``, one singular value thresholding step for
    ``L``, then ``Y += mu (A - L - S)`` and ``mu = min(rho mu, 1e7 mu_0)``.

    Parameters
    ----------
    A : (m, n) ndarray
        Data, one column per frame. float32 stays float32, float64 stays float64, other
        dtypes are converted to float32.
    lam : float, optional
        Weight of ``||S||_1``. Default ``1 / sqrt(max(m, n))``, the value of [1]_ and [2]_
        (the paper writes ``1/sqrt(m)`` with m the larger side).
    mu : float, optional
        Initial penalty. Default ``1.25 / ||A||_2`` (spectral norm), as in [1]_ and [2]_.
    rho : float, default 1.5
        Growth factor of ``mu`` per iteration (> 1), the paper's value.
    mask : (m, n) bool ndarray, optional
        Observation mask Omega, True on observed entries. The problem becomes
        ``min ||L||_* + lam ||P_Omega(S)||_1  s.t.  L + S = P_Omega(A)``: ``S`` is free
        (unpenalised) on unobserved entries, so ``L`` there is filled in by the nuclear
        norm. The returned ``S`` is zero on unobserved entries.
    max_iter : int, default 500
        Iteration limit; reaching it warns :class:`~bpvideo.errors.ConvergenceWarning`.
    tol : float, default 1e-7
        Stop when ``||A - L - S||_F / ||A||_F < tol`` (the standard criterion of [1]_; with
        a mask, the violation of the constraint above over all entries, which bounds the
        residual on the observed ones).
    callback : callable, optional
        Called as ``callback(Iterate)`` after every iteration.

    Returns
    -------
    SolverResult
        ``method="ialm"``.

    Raises
    ------
    InputError
        If the data is not a 2-D matrix with at least two rows and columns, or a parameter
        is out of range.

    Notes
    -----
    Each iteration takes one thin SVD (``full_matrices=False``) of an m x n matrix, which
    costs ``O(m n min(m, n))``: for a tall video matrix the big side is never squared. The
    rank is not a parameter: it and the sparsity are found by the convex program.

    References
    ----------
    .. [1] Z. Lin, M. Chen, Y. Ma, "The Augmented Lagrange Multiplier Method for Exact
       Recovery of Corrupted Low-Rank Matrices", arXiv:1009.5055, 2010.
    .. [2] A. Dutta, F. Hanzely, J. Liang, P. Richtárik, "Best Pair Formulation &
       Accelerated Scheme for Non-convex Principal Component Pursuit", 2020.

    Examples
    --------
    >>> from bpvideo.synthetic import make_rpca_problem
    >>> problem = make_rpca_problem(100, 100, rank=2, sparsity=0.05, seed=0)
    >>> problem.error(ialm(problem.A).L) < 1e-5
    True
    """
    A = as_float(A)
    if A.ndim != 2 or min(A.shape) < 2:
        raise InputError(
            f"the data must be a 2-D matrix with at least 2 rows and 2 columns, got shape {A.shape}"
        )
    check_problem(A.shape, 1, 0.5, max_iter=max_iter, tol=tol)
    mask = check_mask(mask, A.shape, all_true_is_none=True)
    m, n = A.shape
    if lam is None:
        lam = 1.0 / math.sqrt(max(m, n))
    check_positive("lam", lam, "the default is 1/sqrt(max(m, n))")
    check_positive("rho", rho, "the paper uses 1.5")
    if not rho > 1.0:
        raise InputError("{rho=} must be > 1: the paper uses 1.5", option=("rho", rho))
    dtype = A.dtype
    t0 = time.perf_counter()

    D = A if mask is None else np.where(mask, A, 0).astype(dtype, copy=False)
    norm_fro = float(np.linalg.norm(D))
    if norm_fro == 0.0:
        raise InputError("the (observed) data is all zeros: nothing to decompose")
    # Spectral norm from the Gram matrix of the short side (eigenvalues in float64).
    gram = D.T @ D if m >= n else D @ D.T
    norm_two = math.sqrt(max(float(np.linalg.eigvalsh(gram.astype(np.float64)).max()), 0.0))
    if mu is None:
        mu = 1.25 / norm_two
    check_positive("mu", mu, "the default is 1.25/||A||_2")
    mu = float(mu)
    mu_bar = mu * 1e7
    # Dual start of Lin et al.: Y = A / J(A), J(A) = max(||A||_2, ||A||_inf / lam).
    Y = D / dtype.type(max(norm_two, float(np.abs(D).max()) / lam))
    L = np.zeros_like(D)
    S = np.zeros_like(D)

    history = History("ialm", callback, t0)
    converged = False
    violation = math.inf
    k = 0
    for k in range(1, max_iter + 1):
        inv_mu = 1.0 / mu
        # S-step: soft thresholding at lam/mu (no shrinkage on unobserved entries).
        T = D - L + Y * dtype.type(inv_mu)
        S_new = np.sign(T) * np.maximum(np.abs(T) - dtype.type(lam * inv_mu), 0)
        if mask is not None:
            S_new[~mask] = T[~mask]
        # L-step: singular value thresholding at 1/mu, thin SVD.
        U, sv, Vt = np.linalg.svd(D - S_new + Y * dtype.type(inv_mu), full_matrices=False)
        keep = int(np.count_nonzero(sv > inv_mu))
        L_new = (U[:, :keep] * (sv[:keep] - dtype.type(inv_mu))) @ Vt[:keep]
        Z = D - L_new - S_new
        Y += dtype.type(mu) * Z
        mu = min(mu * rho, mu_bar)

        violation = float(np.linalg.norm(Z)) / norm_fro
        S_out = S_new if mask is None else np.where(mask, S_new, 0).astype(dtype, copy=False)
        residual = violation if mask is None else relative_residual(D, L_new, S_out, mask, norm_fro)
        history.record(k, L_new, S_out, residual, relative_change(S_new, L_new, S, L))
        L, S = L_new, S_new
        if violation < tol:
            converged = True
            break

    if mask is not None:
        S = np.where(mask, S, 0).astype(dtype, copy=False)
    return history.result(
        L, S, k, converged, max_iter=max_iter, tol=tol,
        stopped_by=("relative residual", violation),
    )  # fmt: skip


# --------------------------------------------------------------------------- GoDec


def _brp_low_rank(M: np.ndarray, rank: int, q: int, rng: np.random.Generator) -> np.ndarray:
    """Rank-``rank`` approximation of ``M`` by bilateral random projection with ``q`` power steps.

    ``Y2 = (M^T M)^(q+1) G`` for a Gaussian n x r matrix ``G`` (orthonormalised after every
    product, which spans the same subspace as Zhou and Tao's unnormalised recursion and
    keeps it accurate in floating point), ``Q = orth(Y2)``, return ``M Q Q^T``.
    """
    n = M.shape[1]
    Y2 = rng.standard_normal((n, rank)).astype(M.dtype, copy=False)
    for _ in range(q + 1):
        Y1, _r = np.linalg.qr(M @ Y2)
        Y2, _r = np.linalg.qr(M.T @ Y1)
    return (M @ Y2) @ Y2.T


def godec(
    A: np.ndarray,
    rank: int,
    sparsity: float,
    *,
    q: int = 2,
    mask: np.ndarray | None = None,
    max_iter: int = 100,
    tol: float = 1e-7,
    seed: int | np.random.Generator | None = 0,
    callback: Callback | None = None,
) -> SolverResult:
    """GoDec: randomized low-rank plus sparse decomposition (Zhou and Tao [1]_).

    Alternates ``L = H_r(A - S)``, the rank-r step computed by bilateral random projections
    (BRP) with ``q`` power iterations, and ``S = P_k(A - L)``, which keeps the ``k``
    entries of largest magnitude, for ``min ||A - L - S||_F^2  s.t.  rank(L) <= r,
    card(S) <= k``.

    Parameters
    ----------
    A : (m, n) ndarray
        Data, one column per frame. float32 stays float32, float64 stays float64, other
        dtypes are converted to float32.
    rank : int
        Target rank r of ``L`` (``1 <= r < min(m, n)``).
    sparsity : float
        Fraction of entries kept in ``S``, in (0, 1): the cardinality is
        ``k = round(sparsity * m * n)`` (of the observed entries when a mask is given).
        Note this is a global count, not the per-row/per-column alpha of ``T_alpha``.
    q : int, default 2
        Power iterations of the BRP, the paper's value (``q >= 0``).
    mask : (m, n) bool ndarray, optional
        Observation mask Omega, True on observed entries. Unobserved entries are free:
        they are filled by the current low-rank estimate before each rank-r step, and
        ``S`` is zero there.
    max_iter : int, default 100
        Iteration limit (Zhou and Tao's default); reaching it warns
        :class:`~bpvideo.errors.ConvergenceWarning`.
    tol : float, default 1e-7
        Stop when the relative residual ``||P_Omega(A - L - S)||_F / ||P_Omega(A)||_F`` or
        the relative change of ``[S; L]`` falls below.
    seed : int, Generator or None, default 0
        Seed of the random projections.
    callback : callable, optional
        Called as ``callback(Iterate)`` after every iteration.

    Returns
    -------
    SolverResult
        ``method="godec"``.

    Raises
    ------
    InputError
        If a parameter is out of range (see :func:`~bpvideo.solvers.check_problem`).

    Notes
    -----
    Every step costs a few m x n by n x r products and two QR factorizations of thin
    matrices: no SVD. The BRP rank-r step is exact once ``A - S`` has rank r, so on exact
    low-rank plus sparse data GoDec can converge to machine precision, within its regime:

    - It starts, as Zhou and Tao's code, from ``L = A, S = 0``, so the first rank-r step
      sees the outliers. When they dwarf ``L`` (the paper's synthetic instance: values up
      to 500 against a unit-variance ``L``), that step locks onto the largest outliers and
      GoDec stalls at a wrong fixed point (measured: relative error in ``L`` of order 1 at
      magnitude 200-500, 1e-12 at magnitude <= 100, m = n = 100, rank 2). The paper runs
      GoDec on video only.
    - The cardinality is a hard count: when it exceeds the true number of outliers the
      extra entries absorb part of ``L`` and ``A = L + S`` is met by a slightly wrong pair
      (relative error in ``L`` ~1e-3 with 5 % kept against 3.7 % true outliers).

    Partial observation is handled by imputation (not in Zhou and Tao's paper).

    References
    ----------
    .. [1] T. Zhou, D. Tao, "GoDec: Randomized Low-rank & Sparse Matrix Decomposition in
       Noisy Case", ICML 2011.

    Examples
    --------
    >>> from bpvideo.synthetic import make_rpca_problem
    >>> problem = make_rpca_problem(100, 100, rank=2, sparsity=0.05, magnitude=50, seed=0)
    >>> fraction = (problem.S != 0).mean()  # the exact cardinality
    >>> problem.error(godec(problem.A, 2, fraction).L) < 1e-5
    True
    """
    A = as_float(A)
    check_problem(A.shape, rank, sparsity, max_iter=max_iter, tol=tol)
    if isinstance(q, bool) or int(q) != q or q < 0:
        raise InputError("{q=} must be an integer >= 0: the paper uses q = 2", option=("q", q))
    mask = check_mask(mask, A.shape, all_true_is_none=True)
    dtype = A.dtype
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()

    X = A if mask is None else np.where(mask, A, 0).astype(dtype, copy=False)
    norm_A = float(np.linalg.norm(X)) or 1.0
    n_obs = X.size if mask is None else int(np.count_nonzero(mask))
    card = min(max(1, round(sparsity * n_obs)), n_obs)
    L = np.zeros_like(X)
    S = np.zeros_like(X)

    history = History("godec", callback, t0)
    converged = False
    k = 0
    for k in range(1, max_iter + 1):
        M = X - S
        if mask is not None and k > 1:
            M[~mask] = L[~mask]
        L_new = _brp_low_rank(M, rank, q, rng)
        T = X - L_new
        if mask is not None:
            T[~mask] = 0
        flat = np.abs(T).ravel()
        idx = np.argpartition(flat, flat.size - card)[flat.size - card :]
        S_new = np.zeros_like(X)
        S_new.flat[idx] = T.flat[idx]

        residual = relative_residual(X, L_new, S_new, mask, norm_A)
        change = relative_change(S_new, L_new, S, L)
        history.record(k, L_new, S_new, residual, change)
        L, S = L_new, S_new
        if residual < tol or change < tol:
            converged = True
            break
    return history.result(L, S, k, converged, max_iter=max_iter, tol=tol)
