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
from threadpoolctl import threadpool_limits

from bpvideo import _kernels
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
    factors : tuple of ndarray or None
        ``(U, V)`` with ``L = U @ V.T`` (``U`` m x r, ``V`` n x r), when the solver keeps
        ``L`` in factored form (best pair and NCF do); None otherwise. Linear maps of the
        frames (resizing) can then act on the r columns of ``U`` instead of all of ``L``.
    """

    L: np.ndarray
    S: np.ndarray
    iterations: int
    converged: bool
    residuals: list[float] = field(default_factory=list)
    changes: list[float] = field(default_factory=list)
    method: str = "bestpair"
    seconds: float = 0.0
    factors: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def residual(self) -> float:
        """Final relative residual (``nan`` when no iteration ran)."""
        return self.residuals[-1] if self.residuals else float("nan")


class Iterate:
    """The state handed to a solver's ``callback`` after each iteration.

    Attributes
    ----------
    iteration : int
        1-based iteration number.
    L : ndarray
        Current low-rank iterate (formed on first access when the solver keeps it in
        factored form; a view or a new array: copy it to keep it).
    S : ndarray
        Current sparse iterate (a view: copy it to keep it).
    residual : float
        Relative residual after this iteration.
    change : float
        Relative change of ``[S; L]`` in this iteration.
    """

    def __init__(
        self,
        iteration: int,
        L: np.ndarray | tuple[np.ndarray, np.ndarray],
        S: np.ndarray,
        residual: float,
        change: float,
    ) -> None:
        self.iteration = iteration
        self._L = L
        self.S = S
        self.residual = residual
        self.change = change

    @property
    def L(self) -> np.ndarray:
        if isinstance(self._L, tuple):
            U, V = self._L
            self._L = U @ V.T
        return self._L

    def __repr__(self) -> str:
        return (
            f"Iterate(iteration={self.iteration}, residual={self.residual:.3g}, "
            f"change={self.change:.3g})"
        )


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
        non-zeros. Ties are broken by index (the lower index is kept), so the counts hold
        exactly.

    Notes
    -----
    The exact projection onto the row-and-column sparse set is expensive; like the paper
    (footnote to its experiments) this is the approximate projection used in all its
    experiments. It is idempotent. It is computed from the ``k``-th largest magnitude of
    each row and column (a selection, not a sort), see :func:`bpvideo._kernels.thresholds`.
    """
    M = np.asarray(M)
    if M.ndim != 2:
        raise InputError(f"project_sparse needs a 2-D matrix, got shape {M.shape}")
    k_row, k_col = sparse_counts(M.shape, sparsity)
    res = np.array(M, dtype=M.dtype, order="C") if out is None else out
    if res is not M:
        res[...] = M
    thr = _kernels.thresholds(res, k_row, k_col)
    _kernels.apply_thresholds(res, thr)
    return res


class RankProjector:
    """Rank-r projection ``H_r`` of tall or wide matrices without a full SVD.

    Block subspace iteration on the long side with ``p = r + oversample`` columns, warm
    started from the previous call's right singular vectors (the solver calls it once per
    iteration on a slowly changing matrix): ``Y = M V``, ``Q = qr(Y)``, ``B = Q^T M``
    (computed as ``(M^T Q)^T``), and the small SVD of ``B`` gives the Ritz triplets. It
    sweeps until the top-r right subspace stops moving, ``||(I - V V^T) V_new||_2 <= eps``,
    with ``eps = max(subspace_tol, 50 * machine epsilon)``; each sweep costs two passes
    over ``M``. If ``max_sweeps`` sweeps do not converge it falls back to the exact Gram
    matrix of the short side and a symmetric eigensolver, so the result is always the best
    rank-r approximation to within ``eps`` in the subspace.

    Parameters
    ----------
    rank : int
        Target rank r >= 1.
    oversample : int, default 5
        Extra columns of the block (faster convergence: the rate is
        ``sigma_{p+1} / sigma_r`` per sweep).
    subspace_tol : float, default 0.0
        Tolerance on the sine of the angle between successive subspaces (floored at 50
        machine epsilons of the data's dtype).
    max_sweeps : int, default 30
        Sweeps before the Gram fallback (0: always the Gram matrix).
    seed : int, default 0
        Seed of the random first block.

    Attributes
    ----------
    singular_values : ndarray or None
        The r leading singular values of the last matrix projected.
    sweeps : int
        Sweeps in the last call (0 when the Gram matrix was used).
    total_sweeps, fallbacks : int
        Counters over all calls.
    """

    def __init__(
        self,
        rank: int,
        *,
        oversample: int = 5,
        subspace_tol: float = 0.0,
        max_sweeps: int = 30,
        seed: int = 0,
    ) -> None:
        self.rank = int(rank)
        self.oversample = int(oversample)
        self.subspace_tol = float(subspace_tol)
        self.max_sweeps = int(max_sweeps)
        self.seed = seed
        self.singular_values: np.ndarray | None = None
        self.sweeps = 0
        self.total_sweeps = 0
        self.fallbacks = 0
        self._V: np.ndarray | None = None
        #: ``(U, V)`` with the last result ``= U @ V.T`` (``U`` m x r, ``V`` n x r).
        self.factors: tuple[np.ndarray, np.ndarray] | None = None
        #: When True, ``max_sweeps`` sweeps that have not converged return their Ritz
        #: approximation instead of falling back to the Gram matrix.
        self.accept_unconverged = False

    def _gram(self, T: np.ndarray, r: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Exact: eigenvectors of ``T^T T`` (T tall); returns ``P = T V_r, s_r, V_r``."""
        G = T.T @ T
        w, V = np.linalg.eigh(G.astype(np.float64, copy=False))
        V = V[:, ::-1]
        s = np.sqrt(np.clip(w[::-1], 0, None))
        Vr = V[:, :r].astype(T.dtype)
        return T @ Vr, s[:r], V

    def _shape(self, shape: tuple[int, int]) -> tuple[int, int, int, bool]:
        """``(r, k, p, sweeping)`` for an m x n matrix: rank, short side, block width."""
        m, n = shape
        r = min(self.rank, m, n)
        k = min(m, n)
        p = min(k, r + self.oversample)
        return r, k, p, p < k and k > 2 * p and self.max_sweeps > 0

    def block(self, shape: tuple[int, int]) -> np.ndarray | None:
        """The n x p block ``V`` that the next call on a tall m x n matrix multiplies first.

        The solver computes ``M V`` in the same pass that writes ``M`` and hands it to
        :meth:`factorize` as ``MV``. None when the next call will not use a block (wide
        matrices, the Gram path).
        """
        _, k, p, sweeping = self._shape(shape)
        if shape[0] < shape[1] or not sweeping:
            return None
        if self._V is None or self._V.shape != (k, p):
            rng = np.random.default_rng(self.seed)
            self._V = np.linalg.qr(rng.standard_normal((k, p)))[0]
        return self._V

    def factorize(
        self, M: np.ndarray, MV: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Factors ``(U, V)`` of the best rank-r approximation ``U @ V.T`` of ``M``.

        Parameters
        ----------
        M : (m, n) ndarray
            Matrix to project.
        MV : (m, p) ndarray, optional
            ``M @ self.block(M.shape)``, already computed (tall ``M`` only).

        Returns
        -------
        U : (m, r) ndarray
        V : (n, r) ndarray
            Of ``M``'s dtype; ``V`` has orthonormal columns.
        """
        m, n = M.shape
        tall = m >= n
        T = M if tall else M.T  # tall view, no copy
        r, k, p, sweeping = self._shape(M.shape)
        eps = max(self.subspace_tol, 50 * float(np.finfo(T.dtype).eps))
        fast = T.flags.c_contiguous  # the kernels stream along rows
        self.sweeps = 0
        P = Vr = None
        if sweeping:
            V = self.block(M.shape) if tall else self._V
            if V is None or V.shape != (k, p):
                rng = np.random.default_rng(self.seed)
                V = np.linalg.qr(rng.standard_normal((k, p)))[0]
            for sweep in range(1, self.max_sweeps + 1):
                if sweep == 1 and MV is not None and tall:
                    Y = MV
                elif fast:
                    Y = _kernels.matmul(T, V)  # one pass over M
                else:
                    Y = T @ V.astype(T.dtype, copy=False)
                Q = _orthonormal_columns(Y)
                if fast:
                    Z = _kernels.t_matmul(T, Q)  # one pass over M; Z = B^T
                else:
                    Z = T.T @ Q.astype(T.dtype, copy=False)
                Ub, s, Vbt = np.linalg.svd(Z.T.astype(np.float64, copy=False), full_matrices=False)
                Vnew = Vbt.T  # k x p, orthonormal, descending
                # sine of the angle between the old and new top-r right subspaces
                Vo = V[:, :r]
                D = Vnew[:, :r] - Vo @ (Vo.T @ Vnew[:, :r])
                moved = float(np.linalg.norm(D, 2))
                V = Vnew
                if moved <= eps or (sweep == self.max_sweeps and self.accept_unconverged):
                    # converged, or the Ritz approximation of the last sweep (warm
                    # started: one sweep tracks a slowly moving subspace, see best_pair's
                    # ``sweeps``)
                    self.sweeps = sweep
                    P = (Q @ (Ub[:, :r] * s[:r])).astype(T.dtype)
                    Vr = Vnew[:, :r].astype(T.dtype)
                    self.singular_values = s[:r]
                    break
            self._V = V
            self.total_sweeps += self.sweeps if P is not None else self.max_sweeps
        if P is None:
            if sweeping:
                self.fallbacks += 1
            P, s, Vfull = self._gram(T, r)
            self.singular_values = s
            Vr = Vfull[:, :r].astype(T.dtype)
            if p < k:
                self._V = Vfull[:, :p].copy()
        self.factors = (P, Vr) if tall else (Vr, P)
        return self.factors

    def __call__(self, M: np.ndarray, *, out: np.ndarray | None = None) -> np.ndarray:
        """Return the best rank-r approximation of ``M`` (into ``out`` when given)."""
        U, V = self.factorize(M)
        return np.matmul(U, V.T, out=out)


def _orthonormal_columns(Y: np.ndarray) -> np.ndarray:
    """Orthonormal basis (float64) of the columns of a tall ``Y``, by Cholesky QR twice.

    Two Cholesky QR passes are as accurate as Householder QR when ``Y`` is not close to
    rank deficient, and several times faster on tall-skinny matrices (a p x p Gram matrix
    and one m x p product each); Householder QR takes over otherwise.
    """
    Q = np.asarray(Y, dtype=np.float64)
    for _ in range(2):
        G = Q.T @ Q
        try:
            R = np.linalg.cholesky(G).T
        except np.linalg.LinAlgError:
            return np.linalg.qr(Q)[0]
        d = np.abs(np.diag(R))
        if not np.all(np.isfinite(R)) or d.min() <= 1e-6 * d.max():
            return np.linalg.qr(Q)[0]
        Q = Q @ np.linalg.inv(R)
    return Q


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

#: Iterations with the exact ``H_r`` before ``best_pair(sweeps=s)`` caps the sweeps.
SWEEP_WARMUP = 3


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
    A = np.ascontiguousarray(A)
    S0 = np.empty_like(A)
    U, V = _start(A, rank, sparsity, init, None if mask is None else np.asarray(mask), S0)
    return (U @ V.T).astype(A.dtype, copy=False), S0


def _start(
    A: np.ndarray,
    rank: int,
    sparsity: float,
    init: str,
    mask: np.ndarray | None,
    S0: np.ndarray,
    scratch: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Write ``S0`` of :func:`initial_point` into ``S0``; return the factors of ``L0``.

    ``scratch`` (an m x n buffer, optional) holds ``A - S0`` for the rank-r projection.
    """
    m, n = A.shape
    if init not in INITS:
        raise InputError(f"init ({init!r}) must be one of: {', '.join(INITS)}")
    if init == "zeros":
        S0[...] = 0
        return np.zeros((m, 1), dtype=A.dtype), np.zeros((n, 1), dtype=A.dtype)
    med = _kernels.row_median(A, mask).astype(A.dtype)[:, None]
    if init == "median":
        S0[...] = 0
        return med, np.ones((n, 1), dtype=A.dtype)
    # S0 = T_alpha(filled - med), filled = A on observed entries and med elsewhere
    np.subtract(A, med, out=S0)
    if mask is not None:
        np.multiply(S0, mask, out=S0)
    k_row, k_col = sparse_counts(A.shape, sparsity)
    _kernels.apply_thresholds(S0, _kernels.thresholds(S0, k_row, k_col))
    # L0 = H_r(filled - S0), exact (Gram matrix), once
    T = np.subtract(A, S0, out=scratch)
    if mask is not None:
        np.copyto(T, np.broadcast_to(med, T.shape), where=~mask)
    return RankProjector(rank, max_sweeps=0).factorize(T)


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
    sweeps: int = 0,
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
    sweeps : int, default 0
        0: ``H_r`` is exact (subspace iteration run to convergence, ``tol / 100`` on the
        sine of the subspace angle, with the Gram-matrix fallback). ``s >= 1``: after the
        first ``SWEEP_WARMUP`` iterations, ``H_r`` runs at most ``s`` warm-started subspace
        sweeps and uses their Ritz approximation (an approximation of Algorithm 1: the
        subspace moves little between iterations, so one sweep tracks it; its effect on
        F-measure is measured in the README's Performance section).

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
    method = "ncf" if (gamma == 1.0 and a == 0.0 and b == 0.0) else "bestpair"
    t0 = time.perf_counter()

    # One BLAS thread: the big products are memory bound, and the small LAPACK calls
    # (QR, SVD, eigh of p x p and n x n matrices) were measured 2 to 15 times slower with
    # two OpenBLAS threads on a busy 2-core machine. numba's threads are separate.
    with threadpool_limits(limits=1, user_api="blas"):
        return _best_pair(
            A,
            rank,
            sparsity,
            gamma,
            a,
            b,
            mask,
            max_iter,
            tol,
            init,
            L0,
            S0,
            callback,
            method,
            t0,
            int(sweeps),
        )


def _best_pair(
    A: np.ndarray,
    rank: int,
    sparsity: float,
    gamma: float,
    a: float,
    b: float,
    mask: np.ndarray | None,
    max_iter: int,
    tol: float,
    init: str,
    L0: np.ndarray | tuple[np.ndarray, np.ndarray] | None,
    S0: np.ndarray | None,
    callback: Callable[[Iterate], None] | None,
    method: str,
    t0: float,
    sweeps: int = 0,
) -> SolverResult:
    """The iteration of :func:`best_pair` on checked arguments.

    Four m x n buffers: ``A``, ``W`` (the last ``W_s``), ``Sp`` (the previous ``S``) and
    ``Wl`` (the last ``W_l``); ``L`` is kept as factors ``(U, V)``. Each iteration is one
    rank-r projection of ``Wl`` (its first product ``Wl V`` comes from the fused pass), the
    column thresholds of ``W`` (one read) and one fused pass that applies ``T_alpha`` to
    ``W``, measures the iterate and takes the next gradient step (see
    :mod:`bpvideo._kernels`). The pass that measures iterate k has already taken the step
    of k + 1; when k is the last, that step is simply not used.
    """
    A = np.ascontiguousarray(A)
    m, n = A.shape
    dtype = A.dtype
    if mask is not None:
        mask = np.ascontiguousarray(mask)
    k_row, k_col = sparse_counts(A.shape, sparsity)
    W = np.empty_like(A)
    Wl = np.empty_like(A)
    L_k: np.ndarray | tuple[np.ndarray, np.ndarray]
    if L0 is None and S0 is None:
        L_k = _start(A, rank, sparsity, init, mask, W, scratch=Wl)
    else:
        W[...] = 0 if S0 is None else S0
        if L0 is None:
            L_k = (np.zeros((m, 1), dtype=dtype), np.zeros((n, 1), dtype=dtype))
        elif isinstance(L0, tuple):
            L_k = tuple(np.asarray(f, dtype=dtype) for f in L0)
        else:
            L_k = np.array(L0, dtype=dtype, order="C")  # dense: kept for two passes
    Sp = W.copy()
    if mask is None:
        norm_A = float(np.linalg.norm(A))
    else:
        norm_A = math.sqrt(float(np.einsum("ij,ij->", A, A * mask, dtype=np.float64)))
    norm_A = norm_A or 1.0
    projector = RankProjector(rank, subspace_tol=1e-2 * tol)
    h = gamma / 2.0

    # Y_{-1} = Y_0: the first step has no inertia. W keeps S_0 (nothing is thresholded).
    block = projector.block(A.shape)
    _, Y, rows = _kernels.fused_step(
        W, Sp, Wl, A, mask, None, L_k, L_k, float(a), float(b), h, k_row, block=block
    )
    W, Sp = Sp, W  # W: W_s of step 1, Sp: S_0

    residuals: list[float] = []
    changes: list[float] = []
    converged = False
    k = 0
    thr = None
    Y_spare = None  # two W_l V buffers, used in turn
    for k in range(1, max_iter + 1):
        if sweeps and k > SWEEP_WARMUP:
            projector.max_sweeps, projector.accept_unconverged = sweeps, True
        L_new = projector.factorize(Wl, MV=Y)  # L_k = H_r(W_l)
        Y_prev = Y
        thr = _kernels.thresholds(
            W, k_row, k_col, rows=rows, col_guess=None if thr is None else thr[2]
        )
        block = projector.block(A.shape)
        # S_k = T_alpha(W) over W; the step of k + 1 over Sp and Wl
        sq, Y, rows = _kernels.fused_step(
            W,
            Sp,
            Wl,
            A,
            mask,
            thr,
            L_new,
            L_k,
            float(a),
            float(b),
            h,
            k_row,
            block=block,
            row_guess=thr[0],
            Y=Y_spare,
        )
        Y_spare = Y_prev
        W, Sp = Sp, W  # W: the next W_s, Sp: S_k
        L_k = L_new
        norm_Y = math.sqrt(sq["S"] + sq["L"])
        change = math.sqrt(sq["dS"] + sq["dL"]) / norm_Y if norm_Y > 0 else math.inf
        residual = math.sqrt(sq["E"]) / norm_A
        residuals.append(residual)
        changes.append(change)
        if callback is not None:
            callback(Iterate(k, L_k, Sp, residual, change))
        if change < tol or residual < tol:
            converged = True
            break
    del W, Y, Y_spare
    S = Sp
    U, V = L_k
    L = np.matmul(U, V.T, out=Wl)

    if not converged:
        warnings.warn(
            f"{method} stopped at max_iter ({max_iter}) with relative change "
            f"{changes[-1]:.2e} > tol ({tol:g}): raise --max-iter or --tol",
            ConvergenceWarning,
            stacklevel=3,
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
        factors=(U, V),
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
