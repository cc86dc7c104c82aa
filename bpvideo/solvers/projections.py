"""The two projections of the best-pair scheme: ``T_alpha`` (sparse) and ``H_r`` (rank).

Pure functions of a matrix (and a :class:`~bpvideo.solvers.backends.Backend` for the
passes over it): a projection's output lies in its set, and projecting twice changes
nothing (property tests in ``tests/solvers/test_projections.py``).
"""

from __future__ import annotations

import math

import numpy as np

from bpvideo.errors import InputError
from bpvideo.solvers._common import array_module
from bpvideo.solvers.backends import Backend, get_backend, to_host

__all__ = ["RankProjector", "project_rank", "project_sparse", "sparse_counts"]


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
        raise InputError(
            "{sparsity=} must be in (0, 1): try {sparsity=0.1}", option=("sparsity", sparsity)
        )
    m, n = shape
    sparsity = min(float(sparsity), 1.0)  # >= 1 keeps all; avoids inf * n for huge values
    k_row = max(1, math.floor(sparsity * n + 1e-9))
    k_col = max(1, math.floor(sparsity * m + 1e-9))
    return min(k_row, n), min(k_col, m)


def project_sparse(
    M: np.ndarray,
    sparsity: float,
    *,
    out: np.ndarray | None = None,
    backend: str | Backend | None = None,
) -> np.ndarray:
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
    backend : {"auto", "numpy", "numba"} or Backend, optional
        Kernels to run (default: numpy's, see
        :func:`~bpvideo.solvers.backends.get_backend`).

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
    each row and column (a selection, not a sort), see
    :meth:`bpvideo.solvers.backends.Backend.thresholds`.
    """
    M = np.asarray(M)
    if M.ndim != 2:
        raise InputError(f"project_sparse needs a 2-D matrix, got shape {M.shape}")
    k_row, k_col = sparse_counts(M.shape, sparsity)
    res = np.array(M, dtype=M.dtype, order="C") if out is None else out
    if res is not M:
        res[...] = M
    kernels = get_backend(backend)
    work = kernels.xp.asarray(res)  # a copy on the GPU for the CUDA backend
    kernels.apply_thresholds(work, kernels.thresholds(work, k_row, k_col))
    if work is not res:
        res[...] = to_host(work)
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
    backend : {"auto", "numpy", "numba"} or Backend, optional
        Kernels of the products (default: numpy's).

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
        backend: str | Backend | None = None,
    ) -> None:
        self.rank = int(rank)
        self.backend = backend
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
        """Exact: eigenvectors of ``T^T T`` (T tall); returns ``P = T V_r, s_r, V_r``.

        ``T`` and ``P`` may be on the GPU; the k x k eigenproblem is solved on the host."""
        G = to_host(T.T @ T)
        if T.dtype != np.float64 and float(np.abs(G).max(initial=0.0)) < _TINY_GRAM:
            # Entries below ~1e-19 square to float32 denormals or zero: the Gram matrix,
            # and the projection, in float64 (a rare path: a matrix of almost nothing).
            T64 = T.astype(np.float64)
            P, s, V = self._gram(T64, r)
            return P.astype(T.dtype), s, V
        w, V = np.linalg.eigh(G.astype(np.float64, copy=False))
        V = V[:, ::-1]
        s = np.sqrt(np.clip(w[::-1], 0, None))
        Vr = V[:, :r].astype(T.dtype)
        return T @ _like(T, Vr), s[:r], V

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
        kernels = get_backend(self.backend)
        M = kernels.xp.asarray(M)  # the long side stays where the backend keeps it
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
                    Y = kernels.matmul(T, V)  # one pass over M
                else:
                    Y = T @ _like(T, V)
                Q = _orthonormal_columns(Y)
                if fast:
                    Z = kernels.t_matmul(T, Q)  # one pass over M; Z = B^T
                else:
                    Z = T.T @ Q.astype(T.dtype, copy=False)
                Z = to_host(Z)  # k x p: the small problems are solved on the host
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
                    P = (Q @ _like(Q, Ub[:, :r] * s[:r])).astype(T.dtype)
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
        U, V = (to_host(f) for f in self.factorize(M))
        return np.matmul(U, V.T, out=out)


#: Below this, a float32 Gram matrix has lost its digits to underflow.
_TINY_GRAM = 1e-30


def _like(X, Y: np.ndarray):
    """``Y`` (a small numpy array) as an array of ``X``'s module and dtype."""
    return array_module(X).asarray(Y, dtype=X.dtype)


def _orthonormal_columns(Y: np.ndarray) -> np.ndarray:
    """Orthonormal basis (float64) of the columns of a tall ``Y``, by Cholesky QR twice.

    Two Cholesky QR passes are as accurate as Householder QR when ``Y`` is not close to
    rank deficient, and several times faster on tall-skinny matrices (a p x p Gram matrix
    and one m x p product each); Householder QR takes over otherwise. ``Y`` may be on the
    GPU (so is the basis); the p x p problems are solved on the host.
    """
    Q = Y.astype(np.float64, copy=False)
    for _ in range(2):
        G = to_host(Q.T @ Q)
        try:
            R = np.linalg.cholesky(G).T
        except np.linalg.LinAlgError:
            return _qr(Q)
        d = np.abs(np.diag(R))
        if not np.all(np.isfinite(R)) or d.min() <= 1e-6 * d.max():
            return _qr(Q)
        Q = Q @ _like(Q, np.linalg.inv(R))
    return Q


def _qr(Q):
    """The Q factor of a tall ``Q`` (on its own device)."""
    return array_module(Q).linalg.qr(Q)[0]


def project_rank(M: np.ndarray, rank: int, *, backend: str | Backend | None = None) -> np.ndarray:
    """Best rank-``rank`` approximation of ``M`` (the projection ``H_r``).

    Parameters
    ----------
    M : (m, n) ndarray
        Matrix to project.
    rank : int
        Target rank, ``1 <= rank``; ranks above ``min(m, n)`` return ``M`` unchanged.
    backend : {"auto", "numpy", "numba"} or Backend, optional
        See :class:`RankProjector`.

    Returns
    -------
    (m, n) ndarray
        ``U_r diag(s_r) V_r^T`` from the r leading singular triplets.
    """
    M = np.asarray(M)
    if rank < 1:
        raise InputError("{rank=} must be >= 1", option=("rank", rank))
    return RankProjector(rank, backend=backend)(M)
