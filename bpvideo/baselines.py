"""The comparison methods of the best-pair paper (pure numpy/scipy, no I/O).

Three robust-PCA baselines that the paper of Dutta, Hanzely, Liang and Richtárik compares
against, each a plain function returning the same :class:`~bpvideo.solver.SolverResult`
as :func:`~bpvideo.solver.best_pair` (with ``method`` set to ``"ialm"``, ``"godec"`` or
``"rpca_gd"``):

- :func:`ialm`: convex principal component pursuit by the inexact augmented Lagrange
  multiplier method (the paper's "iEALM") [1]_.
- :func:`godec`: GoDec, alternating rank-r and cardinality projections with the rank-r
  step by bilateral random projections [2]_.
- :func:`rpca_gd`: robust PCA by factorized gradient descent with a row/column-wise
  sparse estimator (the paper's "RPCA GD") [3]_.

RPCA NCF, the fourth user-inferred baseline, is :func:`bpvideo.solver.ncf`.

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
import warnings
from collections.abc import Callable

import numpy as np

from bpvideo.errors import ConvergenceWarning, InputError
from bpvideo.solver import Iterate, SolverResult, check_problem, project_sparse

__all__ = ["godec", "ialm", "rpca_gd"]


# --------------------------------------------------------------------------- helpers


def _as_float(A: np.ndarray) -> np.ndarray:
    """float32 and float64 stay as they are; anything else becomes float32 (as the solver)."""
    A = np.asarray(A)
    if A.dtype in (np.float32, np.float64):
        return A
    return A.astype(np.float32)


def _check_mask(mask: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray | None:
    """Validate an observation mask; None (or an all-True mask) means fully observed."""
    if mask is None:
        return None
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != shape:
        raise InputError(f"mask shape {mask.shape} differs from data shape {shape}")
    if not mask.any():
        raise InputError("the observation mask has no observed entry: observe some pixels")
    if mask.all():
        return None
    return mask


def _check_positive(name: str, value: float, hint: str) -> None:
    if isinstance(value, bool) or not (math.isfinite(float(value)) and float(value) > 0.0):
        raise InputError(f"{name} ({value}) must be a finite number > 0: {hint}")


def _rel_change(S_new: np.ndarray, L_new: np.ndarray, S: np.ndarray, L: np.ndarray) -> float:
    """``||[S_new; L_new] - [S; L]||_F / ||[S; L]||_F`` (inf when ``[S; L] = 0``)."""
    norm_Y = math.sqrt(float(np.vdot(S, S)) + float(np.vdot(L, L)))
    dS = S_new - S
    dL = L_new - L
    step = math.sqrt(float(np.vdot(dS, dS)) + float(np.vdot(dL, dL)))
    return step / norm_Y if norm_Y > 0 else math.inf


def _residual(
    A_obs: np.ndarray, L: np.ndarray, S: np.ndarray, mask: np.ndarray | None, norm_A: float
) -> float:
    """``||P_Omega(A - L - S)||_F / ||P_Omega(A)||_F``."""
    E = A_obs - L - S
    if mask is not None:
        E[~mask] = 0
    return float(np.linalg.norm(E)) / norm_A


def _warn_max_iter(method: str, max_iter: int, what: str, value: float, tol: float) -> None:
    warnings.warn(
        f"{method} stopped at max_iter ({max_iter}) with {what} {value:.2e} > tol ({tol:g}): "
        "raise max_iter or tol",
        ConvergenceWarning,
        stacklevel=3,
    )


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
    callback: Callable[[Iterate], None] | None = None,
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
    >>> import numpy as np
    >>> from bpvideo.synthetic import make_rpca_problem
    >>> problem = make_rpca_problem(100, 100, rank=2, sparsity=0.05, seed=0)
    >>> result = ialm(problem.A)
    >>> bool(np.linalg.norm(result.L - problem.L) / np.linalg.norm(problem.L) < 1e-5)
    True
    """
    A = _as_float(A)
    if A.ndim != 2 or min(A.shape) < 2:
        raise InputError(
            f"the data must be a 2-D matrix with at least 2 rows and 2 columns, got shape {A.shape}"
        )
    check_problem(A.shape, 1, 0.5, max_iter=max_iter, tol=tol)
    mask = _check_mask(mask, A.shape)
    m, n = A.shape
    if lam is None:
        lam = 1.0 / math.sqrt(max(m, n))
    _check_positive("lam", lam, "the default is 1/sqrt(max(m, n))")
    _check_positive("rho", rho, "the paper uses 1.5")
    if not rho > 1.0:
        raise InputError(f"rho ({rho}) must be > 1: the paper uses 1.5")
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
    _check_positive("mu", mu, "the default is 1.25/||A||_2")
    mu = float(mu)
    mu_bar = mu * 1e7
    # Dual start of Lin et al.: Y = A / J(A), J(A) = max(||A||_2, ||A||_inf / lam).
    Y = D / dtype.type(max(norm_two, float(np.abs(D).max()) / lam))
    L = np.zeros_like(D)
    S = np.zeros_like(D)

    residuals: list[float] = []
    changes: list[float] = []
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
        residual = violation if mask is None else _residual(D, L_new, S_out, mask, norm_fro)
        change = _rel_change(S_new, L_new, S, L)
        residuals.append(residual)
        changes.append(change)
        L, S = L_new, S_new
        if callback is not None:
            callback(Iterate(k, L, S_out, residual, change))
        if violation < tol:
            converged = True
            break

    if not converged:
        _warn_max_iter("ialm", max_iter, "relative residual", violation, tol)
    if mask is not None:
        S = np.where(mask, S, 0).astype(dtype, copy=False)
    return SolverResult(
        L=L,
        S=S,
        iterations=k,
        converged=converged,
        residuals=residuals,
        changes=changes,
        method="ialm",
        seconds=time.perf_counter() - t0,
    )


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
    callback: Callable[[Iterate], None] | None = None,
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
        If a parameter is out of range (see :func:`~bpvideo.solver.check_problem`).

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
    >>> import numpy as np
    >>> from bpvideo.synthetic import make_rpca_problem
    >>> problem = make_rpca_problem(100, 100, rank=2, sparsity=0.05, magnitude=50, seed=0)
    >>> fraction = np.count_nonzero(problem.S) / problem.S.size  # the exact cardinality
    >>> result = godec(problem.A, 2, fraction)
    >>> bool(np.linalg.norm(result.L - problem.L) / np.linalg.norm(problem.L) < 1e-5)
    True
    """
    A = _as_float(A)
    check_problem(A.shape, rank, sparsity, max_iter=max_iter, tol=tol)
    if isinstance(q, bool) or int(q) != q or q < 0:
        raise InputError(f"q ({q}) must be an integer >= 0: the paper uses q = 2")
    mask = _check_mask(mask, A.shape)
    dtype = A.dtype
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()

    X = A if mask is None else np.where(mask, A, 0).astype(dtype, copy=False)
    norm_A = float(np.linalg.norm(X)) or 1.0
    n_obs = X.size if mask is None else int(np.count_nonzero(mask))
    card = min(max(1, round(sparsity * n_obs)), n_obs)
    L = np.zeros_like(X)
    S = np.zeros_like(X)

    residuals: list[float] = []
    changes: list[float] = []
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

        residual = _residual(X, L_new, S_new, mask, norm_A)
        change = _rel_change(S_new, L_new, S, L)
        residuals.append(residual)
        changes.append(change)
        L, S = L_new, S_new
        if callback is not None:
            callback(Iterate(k, L, S, residual, change))
        if residual < tol or change < tol:
            converged = True
            break

    if not converged:
        _warn_max_iter("godec", max_iter, "relative residual", residuals[-1], tol)
    return SolverResult(
        L=L,
        S=S,
        iterations=k,
        converged=converged,
        residuals=residuals,
        changes=changes,
        method="godec",
        seconds=time.perf_counter() - t0,
    )


# --------------------------------------------------------------------------- RPCA GD


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
    callback: Callable[[Iterate], None] | None = None,
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
    (:func:`~bpvideo.solver.project_sparse`) at ``sparsity_factor * sparsity``.

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
    >>> import numpy as np
    >>> from bpvideo.synthetic import make_rpca_problem
    >>> problem = make_rpca_problem(100, 100, rank=2, sparsity=0.05, seed=0)
    >>> result = rpca_gd(problem.A, 2, 0.05)
    >>> bool(np.linalg.norm(result.L - problem.L) / np.linalg.norm(problem.L) < 1e-3)
    True
    """
    A = _as_float(A)
    check_problem(A.shape, rank, sparsity, max_iter=max_iter, tol=tol)
    if isinstance(sparsity_factor, bool) or not (1.0 <= float(sparsity_factor) < math.inf):
        raise InputError(f"sparsity_factor ({sparsity_factor}) must be >= 1: Yi et al. use 1 to 2")
    if not float(sparsity_factor) * float(sparsity) < 1.0:
        raise InputError(
            f"sparsity_factor * sparsity ({sparsity_factor} * {sparsity}) must be < 1: "
            "lower one of them"
        )
    if step is not None:
        _check_positive("step", step, "leave it unset for 0.5/sigma_1")
    mask = _check_mask(mask, A.shape)
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
    residuals: list[float] = []
    changes: list[float] = []
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

            residual = _residual(X, L_new, S_new, mask, norm_A)
            change = _rel_change(S_new, L_new, S, L)
            residuals.append(residual)
            changes.append(change)
            L, S = L_new, S_new
            if not math.isfinite(residual):
                diverged = True
                break
            if callback is not None:
                callback(Iterate(k, L, S, residual, change))
            if residual < tol or change < tol:
                converged = True
                break

    if diverged:
        warnings.warn(
            f"rpca_gd diverged at iteration {k} (step {float(step):.3g}): lower step",
            ConvergenceWarning,
            stacklevel=2,
        )
    elif not converged:
        _warn_max_iter("rpca_gd", max_iter, "relative residual", residuals[-1], tol)
    return SolverResult(
        L=L,
        S=S,
        iterations=k,
        converged=converged,
        residuals=residuals,
        changes=changes,
        method="rpca_gd",
        seconds=time.perf_counter() - t0,
    )
