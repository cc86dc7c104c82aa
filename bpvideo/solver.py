"""Best-pair robust PCA by accelerated proximal gradient (pure numpy, no I/O).

The data matrix ``A`` is m x n with one column per frame. The solver looks for a low-rank
``L`` (background) and a sparse ``S`` (foreground) with ``P_Omega(L + S) = P_Omega(A)``,
as the best pair between the affine set X and the non-convex set Y of the paper:

    X = {[S; L] : P_Omega(S + L) = P_Omega(A)}
    Y = {[S; L] : rank(L) <= rank, at most sparsity*n non-zeros per row of S and
                  sparsity*m per column}

Algorithm 1 of Dutta, Hanzely, Liang and Richtárik (2019), with ``Y_k = [S_k; L_k]``::

    Za = Y_k + a (Y_k - Y_{k-1});  Zb = Y_k + b (Y_k - Y_{k-1})
    Y_{k+1} = P_Y(Za - gamma (Zb - P_X(Zb)))

In closed form the gradient step is the same for both blocks: with
``R = P_Omega(Sb + Lb - A)``, ``S_{k+1} = T_alpha(Sa - gamma/2 R)`` and
``L_{k+1} = H_r(La - gamma/2 R)``. The 2m x n stack is never formed.

References
----------
.. [1] A. Dutta, F. Hanzely, J. Liang, P. Richtárik, "Best Pair Formulation & Accelerated
   Scheme for Non-convex Principal Component Pursuit", IEEE Trans. Signal Processing, 2020.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from bpvideo.errors import ConvergenceWarning, InputError

__all__ = [
    "Iterate",
    "RankProjector",
    "SolverResult",
    "best_pair",
    "check_problem",
    "initial_point",
    "ncf",
    "project_rank",
    "project_sparse",
    "sparse_counts",
]


@dataclass
class SolverResult:
    """What a robust-PCA solver returns.

    Attributes
    ----------
    L : (m, n) ndarray
        Low-rank part (the background), same dtype as the data.
    S : (m, n) ndarray
        Sparse part (the foreground).
    iterations : int
        Iterations run.
    converged : bool
        True when a stopping tolerance was met before ``max_iter``.
    residuals : list of float
        Relative residual ``||P_Omega(A - L - S)||_F / ||P_Omega(A)||_F`` after each
        iteration.
    changes : list of float
        Relative change ``||Y_{k+1} - Y_k||_F / ||Y_k||_F`` after each iteration.
    method : str
        Name of the method that produced the result.
    seconds : float
        Wall time of the solve.
    """

    L: np.ndarray
    S: np.ndarray
    iterations: int
    converged: bool
    residuals: list[float] = field(default_factory=list)
    changes: list[float] = field(default_factory=list)
    method: str = "bestpair"
    seconds: float = 0.0

    @property
    def residual(self) -> float:
        """Final relative residual (``nan`` when no iteration ran)."""
        return self.residuals[-1] if self.residuals else float("nan")


@dataclass
class Iterate:
    """The state handed to a solver's ``callback`` after each iteration.

    Attributes
    ----------
    iteration : int
        1-based iteration number.
    L, S : ndarray
        Current iterates (views: copy them to keep them).
    residual : float
        Relative residual after this iteration.
    change : float
        Relative change of ``[S; L]`` in this iteration.
    """

    iteration: int
    L: np.ndarray
    S: np.ndarray
    residual: float
    change: float


def sparse_counts(shape: tuple[int, int], sparsity: float) -> tuple[int, int]:
    """Entries kept per row and per column by :func:`project_sparse`.

    Parameters
    ----------
    shape : tuple of int
        ``(m, n)``.
    sparsity : float
        The paper's alpha, in (0, 1).

    Returns
    -------
    k_row, k_col : int
        ``max(1, floor(alpha * n))`` and ``max(1, floor(alpha * m))``: at most this many
        non-zeros per row and per column (at least one, so that a small sparsity on a short
        clip does not silently force S = 0).
    """
    if not (0.0 < sparsity < math.inf):  # NaN, inf and <= 0 have no meaning (>= 1: keep all)
        raise InputError(f"sparsity ({sparsity}) must be in (0, 1): try --sparsity 0.1")
    m, n = shape
    sparsity = min(float(sparsity), 1.0)  # >= 1 keeps all; avoids inf * n for huge values
    k_row = max(1, math.floor(sparsity * n + 1e-9))
    k_col = max(1, math.floor(sparsity * m + 1e-9))
    return min(k_row, n), min(k_col, m)


def _top_k_mask(absM: np.ndarray, k: int) -> np.ndarray:
    """Boolean mask of exactly ``k`` largest entries of each row (ties broken by index)."""
    n = absM.shape[1]
    keep = np.zeros(absM.shape, dtype=bool)
    if k >= n:
        keep[:] = True
        return keep
    idx = np.argpartition(absM, n - k, axis=1)[:, n - k :]
    np.put_along_axis(keep, idx, True, axis=1)
    return keep


def project_sparse(M: np.ndarray, sparsity: float, *, out: np.ndarray | None = None) -> np.ndarray:
    """The paper's sparse projection ``T_alpha``.

    Keeps ``M[i, j]`` only if it is among the ``alpha * n`` largest magnitudes of row ``i``
    and among the ``alpha * m`` largest of column ``j``; zeroes the rest.

    Parameters
    ----------
    M : (m, n) ndarray
        Matrix to project.
    sparsity : float
        The paper's alpha, in (0, 1). Counts are rounded down, with at least one entry per
        row and column (see :func:`sparse_counts`).
    out : ndarray, optional
        Where to write the result (may be ``M`` itself).

    Returns
    -------
    (m, n) ndarray
        The projection: each row has at most ``k_row`` and each column at most ``k_col``
        non-zeros. Ties are broken by index, so the counts hold exactly.

    Notes
    -----
    The exact projection onto the row-and-column sparse set is expensive; like the paper
    (footnote to its experiments) this is the approximate projection used in all its
    experiments. It is idempotent.
    """
    M = np.asarray(M)
    if M.ndim != 2:
        raise InputError(f"project_sparse needs a 2-D matrix, got shape {M.shape}")
    k_row, k_col = sparse_counts(M.shape, sparsity)
    absM = np.abs(M)
    keep = _top_k_mask(absM, k_row)
    keep &= _top_k_mask(np.ascontiguousarray(absM.T), k_col).T
    if out is None:
        return np.where(keep, M, 0).astype(M.dtype, copy=False)
    np.multiply(M, keep, out=out)
    return out


class RankProjector:
    """Rank-r projection ``H_r`` of tall or wide matrices without a full SVD.

    The top-``rank`` singular subspace is found from the Gram matrix of the short side
    (``M^T M`` when m >= n) and a small symmetric eigensolver, which is exact up to
    floating-point error, and costs one pass of a matrix product instead of an SVD of
    the m x n matrix.

    Parameters
    ----------
    rank : int
        Target rank r >= 1.
    """

    def __init__(self, rank: int) -> None:
        self.rank = int(rank)
        self.singular_values: np.ndarray | None = None

    def __call__(self, M: np.ndarray, *, out: np.ndarray | None = None) -> np.ndarray:
        """Return the best rank-r approximation of ``M`` (into ``out`` when given)."""
        m, n = M.shape
        r = min(self.rank, m, n)
        tall = m >= n
        G = M.T @ M if tall else M @ M.T
        # Accumulate the small eigenproblem in float64: it is tiny and keeps float32 data
        # accurate in the leading subspace.
        w, V = np.linalg.eigh(G.astype(np.float64, copy=False))
        V = V[:, -r:][:, ::-1].astype(M.dtype, copy=False)
        self.singular_values = np.sqrt(np.clip(w[-r:][::-1], 0, None))
        if tall:
            P = M @ V  # m x r
            return np.matmul(P, V.T, out=out)
        P = V.T @ M  # r x n
        return np.matmul(V, P, out=out)


def project_rank(M: np.ndarray, rank: int) -> np.ndarray:
    """Best rank-``rank`` approximation of ``M`` (the projection ``H_r``).

    Parameters
    ----------
    M : (m, n) ndarray
        Matrix to project.
    rank : int
        Target rank, ``1 <= rank``; ranks above ``min(m, n)`` return ``M`` unchanged.

    Returns
    -------
    (m, n) ndarray
        ``U_r diag(s_r) V_r^T`` from the r leading singular triplets.
    """
    M = np.asarray(M)
    if rank < 1:
        raise InputError(f"rank ({rank}) must be >= 1")
    return RankProjector(rank)(M)


def _as_float(A: np.ndarray) -> np.ndarray:
    A = np.asarray(A)
    if A.dtype in (np.float32, np.float64):
        return A
    return A.astype(np.float32)


def check_problem(
    shape: tuple[int, ...],
    rank: int,
    sparsity: float,
    gamma: float = 1.1,
    a: float = 0.5,
    b: float = 0.5,
    max_iter: int = 1,
    tol: float = 0.0,
) -> None:
    """Validate solver parameters against the data shape; raise :class:`InputError`.

    Parameters
    ----------
    shape : tuple of int
        ``(m, n)``: pixels x frames.
    rank, sparsity, gamma, a, b, max_iter, tol
        As in :func:`best_pair`.
    """
    if len(shape) != 2:
        raise InputError(f"the data must be a 2-D matrix (pixels x frames), got shape {shape}")
    m, n = shape
    if n < 2:
        raise InputError(
            f"the input has {n} frame(s); robust PCA needs at least 2: give a longer clip"
        )
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 1:
        raise InputError(f"rank ({rank}) must be a positive integer: try --rank 2")
    if rank >= min(m, n):
        raise InputError(
            f"rank ({rank}) must be < number of frames ({n}) and pixels ({m}): "
            "lower --rank or give more frames"
        )
    if not (0.0 < float(sparsity) < 1.0):
        raise InputError(f"sparsity ({sparsity}) must be in (0, 1): try --sparsity 0.1")
    if not (0.0 < float(gamma) <= 2.0):
        raise InputError(f"gamma ({gamma}) must be in (0, 2]: the paper recommends 1.1")
    for name, value in (("a", a), ("b", b)):
        if not (0.0 <= float(value) < 1.0):
            raise InputError(f"inertia {name} ({value}) must be in [0, 1): the paper uses 0.5")
    if isinstance(max_iter, bool) or int(max_iter) != max_iter or max_iter < 1:
        raise InputError(f"max_iter ({max_iter}) must be a positive integer: try --max-iter 100")
    if not (float(tol) >= 0.0) or not math.isfinite(float(tol)):
        raise InputError(f"tol ({tol}) must be a finite number >= 0: try --tol 1e-4")


INITS = ("robust", "zeros", "median")


def initial_point(
    A: np.ndarray,
    rank: int,
    sparsity: float,
    *,
    init: str = "robust",
    mask: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Starting point ``(L0, S0)`` of the solvers.

    Parameters
    ----------
    A : (m, n) ndarray
        Data.
    rank, sparsity : int, float
        Target rank and sparsity.
    init : {"robust", "zeros", "median"}
        - ``"zeros"``: ``L0 = S0 = 0``, the paper's choice.
        - ``"median"``: ``L0`` = per-row (per-pixel) median of the observed data in every
          column, ``S0 = 0``.
        - ``"robust"``: with ``med`` that median, ``S0 = T_alpha(A - med)`` (the largest
          deviations: outliers, moving objects) and ``L0 = H_r(A - S0)``, unobserved
          entries filled with ``med``. From zeros, the first rank-r step of huge sparse
          entries (the paper's +-500 on N(0, 1) factors) can lock onto the outliers and
          the iteration stalls; this start avoids that (see the README's notes).
    mask : (m, n) bool ndarray, optional
        Observation mask.

    Returns
    -------
    L0, S0 : (m, n) ndarray
    """
    if init == "zeros":
        return np.zeros_like(A), np.zeros_like(A)
    if init not in INITS:
        raise InputError(f"init ({init!r}) must be one of: {', '.join(INITS)}")
    if mask is None:
        med = np.median(A, axis=1, keepdims=True).astype(A.dtype)
        filled = A
    else:
        med = np.nanmedian(np.where(mask, A, np.nan), axis=1, keepdims=True)
        med = np.nan_to_num(med).astype(A.dtype)
        filled = np.where(mask, A, med)
    if init == "median":
        return np.repeat(med, A.shape[1], axis=1), np.zeros_like(A)
    S0 = project_sparse(filled - med, sparsity)
    if mask is not None:
        S0[~mask] = 0
    L0 = RankProjector(rank)(filled - S0)
    return L0, S0


def best_pair(
    A: np.ndarray,
    rank: int,
    sparsity: float,
    *,
    gamma: float = 1.1,
    a: float = 0.5,
    b: float = 0.5,
    mask: np.ndarray | None = None,
    max_iter: int = 100,
    tol: float = 1e-4,
    init: str = "robust",
    L0: np.ndarray | None = None,
    S0: np.ndarray | None = None,
    callback: Callable[[Iterate], None] | None = None,
) -> SolverResult:
    """Best-pair robust PCA by accelerated proximal gradient (Algorithm 1 of [1]_).

    Parameters
    ----------
    A : (m, n) ndarray
        Data, one column per frame. float32 stays float32, float64 stays float64, other
        dtypes are converted to float32.
    rank : int
        Target rank r of the background ``L`` (``1 <= r < min(m, n)``).
    sparsity : float
        Target sparsity alpha of the foreground ``S`` in (0, 1): at most ``alpha n``
        non-zeros per row and ``alpha m`` per column.
    gamma : float, default 1.1
        Step size in (0, 2].
    a, b : float, default 0.5
        Inertial parameters ``a_k = a``, ``b_k = b`` in [0, 1). ``gamma=1, a=b=0`` is
        alternating projections (RPCA NCF, see :func:`ncf`).
    mask : (m, n) bool ndarray, optional
        Observation mask Omega, True on observed entries. None means fully observed.
    max_iter : int, default 100
        Iteration limit; reaching it warns :class:`~bpvideo.errors.ConvergenceWarning`.
    tol : float, default 1e-4
        Stop when the relative change of ``[S; L]`` or the relative residual falls below.
    init : {"robust", "zeros", "median"}, default "robust"
        Starting point ``Y_0`` when ``L0``/``S0`` are not given (Algorithm 1 leaves it
        free), see :func:`initial_point`. ``"zeros"`` is the paper's ``Y_0 = 0``.
    L0, S0 : (m, n) ndarray, optional
        Explicit starting point ``Y_0 = [S0; L0]`` (overrides ``init``).
    callback : callable, optional
        Called as ``callback(Iterate)`` after every iteration.

    Returns
    -------
    SolverResult
        ``L``, ``S``, iteration count, convergence flag and histories.

    Raises
    ------
    InputError
        If a parameter is out of range or the mask's shape differs from ``A``'s.

    References
    ----------
    .. [1] A. Dutta, F. Hanzely, J. Liang, P. Richtárik, "Best Pair Formulation &
       Accelerated Scheme for Non-convex Principal Component Pursuit", 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from bpvideo.synthetic import make_rpca_problem
    >>> problem = make_rpca_problem(100, 100, rank=2, sparsity=0.05, seed=0)
    >>> result = best_pair(problem.A, 2, 0.05, tol=1e-10, max_iter=500)
    >>> bool(np.linalg.norm(result.L - problem.L) / np.linalg.norm(problem.L) < 1e-6)
    True
    """
    A = _as_float(A)
    check_problem(A.shape, rank, sparsity, gamma, a, b, max_iter, tol)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != A.shape:
            raise InputError(f"mask shape {mask.shape} differs from data shape {A.shape}")
        if not mask.any():
            raise InputError("the observation mask has no observed entry: observe some pixels")
    dtype = A.dtype
    method = "ncf" if (gamma == 1.0 and a == 0.0 and b == 0.0) else "bestpair"
    t0 = time.perf_counter()

    if L0 is None and S0 is None:
        L, S = initial_point(A, rank, sparsity, init=init, mask=mask)
    else:
        L = np.zeros_like(A) if L0 is None else np.array(L0, dtype=dtype)
        S = np.zeros_like(A) if S0 is None else np.array(S0, dtype=dtype)
    L_prev, S_prev = L.copy(), S.copy()
    A_obs = A if mask is None else np.where(mask, A, 0).astype(dtype, copy=False)
    norm_A = float(np.linalg.norm(A_obs)) or 1.0
    half_step = dtype.type(gamma / 2.0)
    projector = RankProjector(rank)

    residuals: list[float] = []
    changes: list[float] = []
    converged = False
    k = 0
    for k in range(1, max_iter + 1):
        dS = S - S_prev
        dL = L - L_prev
        Sa = S + dtype.type(a) * dS
        La = L + dtype.type(a) * dL
        if a == b:
            Sb, Lb = Sa, La
        else:
            Sb = S + dtype.type(b) * dS
            Lb = L + dtype.type(b) * dL
        # Gradient of the smooth part: Zb - P_X(Zb) = 1/2 [R; R], R = P_Omega(Sb + Lb - A).
        R = Sb + Lb - A
        if mask is not None:
            R[~mask] = 0
        R *= half_step
        S_new = project_sparse(Sa - R, sparsity)
        L_new = projector(La - R)

        norm_Y = math.sqrt(float(np.vdot(S, S)) + float(np.vdot(L, L)))
        step = math.sqrt(
            float(np.vdot(S_new - S, S_new - S)) + float(np.vdot(L_new - L, L_new - L))
        )
        change = step / norm_Y if norm_Y > 0 else math.inf
        E = A - L_new - S_new
        if mask is not None:
            E[~mask] = 0
        residual = float(np.linalg.norm(E)) / norm_A
        residuals.append(residual)
        changes.append(change)
        S_prev, L_prev, S, L = S, L, S_new, L_new
        if callback is not None:
            callback(Iterate(k, L, S, residual, change))
        if change < tol or residual < tol:
            converged = True
            break

    if not converged:
        warnings.warn(
            f"{method} stopped at max_iter ({max_iter}) with relative change "
            f"{changes[-1]:.2e} > tol ({tol:g}): raise --max-iter or --tol",
            ConvergenceWarning,
            stacklevel=2,
        )
    return SolverResult(
        L=L,
        S=S,
        iterations=k,
        converged=converged,
        residuals=residuals,
        changes=changes,
        method=method,
        seconds=time.perf_counter() - t0,
    )


def ncf(A: np.ndarray, rank: int, sparsity: float, **kwargs) -> SolverResult:
    """RPCA NCF: alternating projections, the special case ``gamma=1, a=b=0``.

    Parameters
    ----------
    A : (m, n) ndarray
        Data, one column per frame.
    rank, sparsity
        As in :func:`best_pair`.
    **kwargs
        Any other keyword of :func:`best_pair` except ``gamma``, ``a`` and ``b``.

    Returns
    -------
    SolverResult
    """
    for key in ("gamma", "a", "b"):
        if key in kwargs:
            raise InputError(f"ncf fixes {key}; use best_pair to set it")
    return best_pair(A, rank, sparsity, gamma=1.0, a=0.0, b=0.0, **kwargs)
