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
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from bpvideo.errors import Diverged, InputError, callable_argument
from bpvideo.solvers._common import (
    Callback,
    History,
    SolverResult,
    as_float,
    check_mask,
    check_problem,
    check_start,
)
from bpvideo.solvers.backends import Backend, get_backend, to_host
from bpvideo.solvers.projections import RankProjector, project_rank, project_sparse, sparse_counts

__all__ = ["INITS", "best_pair", "initial_point", "ncf", "project_rank", "project_sparse"]


INITS = ("robust", "zeros", "median")

#: Iterations with the exact ``H_r`` before ``best_pair(sweeps=s)`` caps the sweeps.
SWEEP_WARMUP = 3
#: A relative residual above this is divergence: the iterate is that many times further
#: from the data than zero is (a solve starts at 1 from zero, below 1 from the robust
#: start, and only goes down when it converges).
DIVERGED_RESIDUAL = 10.0


def initial_point(
    A: np.ndarray,
    rank: int,
    sparsity: float,
    *,
    init: str = "robust",
    mask: np.ndarray | None = None,
    backend: str | Backend | None = None,
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
    backend : {"auto", "numpy", "numba"} or Backend, optional
        Kernels (default: numpy's, see :func:`~bpvideo.solvers.backends.get_backend`).

    Returns
    -------
    L0, S0 : (m, n) ndarray
    """
    kernels = get_backend(backend)
    A, mask = _on_device(kernels, A, mask)
    S0 = kernels.xp.empty_like(A)
    U, V = _start(A, rank, sparsity, init, mask, S0, kernels)
    L0 = (U @ kernels.xp.asarray(V).T).astype(A.dtype, copy=False)
    return to_host(L0), to_host(S0)


def _on_device(kernels: Backend, A: np.ndarray, mask: np.ndarray | None) -> tuple[Any, Any | None]:
    """``A`` and ``mask`` as C-contiguous arrays of the backend's module (moved to the GPU
    once, in the backend's dtype, for the CUDA backend)."""
    xp = kernels.xp
    dtype = getattr(kernels, "dtype", None)
    if dtype is not None and A.dtype != dtype:
        A = np.asarray(A, dtype=dtype)
    A = xp.ascontiguousarray(xp.asarray(A))
    if mask is not None:
        mask = xp.ascontiguousarray(xp.asarray(mask))
    return A, mask


def _start(
    A: np.ndarray,
    rank: int,
    sparsity: float,
    init: str,
    mask: np.ndarray | None,
    S0: np.ndarray,
    kernels: Backend,
    scratch: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Write ``S0`` of :func:`initial_point` into ``S0``; return the factors of ``L0``.

    ``scratch`` (an m x n buffer, optional) holds ``A - S0`` for the rank-r projection.
    """
    m, n = A.shape
    xp = kernels.xp
    if init not in INITS:
        raise InputError(f"{{init=}} must be one of: {', '.join(INITS)}", option=("init", init))
    if init == "zeros":
        S0[...] = 0
        return xp.zeros((m, 1), dtype=A.dtype), np.zeros((n, 1), dtype=A.dtype)
    med = kernels.row_median(A, mask).astype(A.dtype)[:, None]
    if init == "median":
        S0[...] = 0
        return med, np.ones((n, 1), dtype=A.dtype)
    # S0 = T_alpha(filled - med), filled = A on observed entries and med elsewhere
    xp.subtract(A, med, out=S0)
    if mask is not None:
        xp.multiply(S0, mask, out=S0)
    k_row, k_col = sparse_counts(A.shape, sparsity)
    kernels.apply_thresholds(S0, kernels.thresholds(S0, k_row, k_col))
    # L0 = H_r(filled - S0), exact (Gram matrix), once
    T = xp.subtract(A, S0, out=scratch)
    if mask is not None:
        xp.copyto(T, xp.broadcast_to(med, T.shape), where=~mask)
    return RankProjector(rank, max_sweeps=0, backend=kernels).factorize(T)


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
    tol: float = 1e-3,
    init: str = "robust",
    L0: np.ndarray | None = None,
    S0: np.ndarray | None = None,
    callback: Callback | None = None,
    sweeps: int = 1,
    backend: str | Backend | None = None,
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
    tol : float, default 1e-3
        Stop when the relative change of ``[S; L]`` or the relative residual falls below
        (the CLI's default; the paper's experiments use 1e-4 or less).
    init : {"robust", "zeros", "median"}, default "robust"
        Starting point ``Y_0`` when ``L0``/``S0`` are not given (Algorithm 1 leaves it
        free), see :func:`initial_point`. ``"zeros"`` is the paper's ``Y_0 = 0``.
    L0, S0 : (m, n) ndarray, optional
        Explicit starting point ``Y_0 = [S0; L0]`` (overrides ``init``).
    callback : callable, optional
        Called as ``callback(Iterate)`` after every iteration.
    sweeps : int, default 1
        0: ``H_r`` is exact (subspace iteration run to convergence, ``tol / 100`` on the
        sine of the subspace angle, with the Gram-matrix fallback), Algorithm 1 as
        published. ``s >= 1``: after the first ``SWEEP_WARMUP`` iterations, ``H_r`` runs at
        most ``s`` warm-started subspace sweeps and uses their Ritz approximation (an
        approximation of Algorithm 1: the subspace moves little between iterations, so one
        sweep tracks it; its effect on F-measure is measured in docs/performance.md).
    backend : {"auto", "numpy", "numba", "cuda"} or Backend, optional
        The kernels of the solve, chosen once (default: numpy's, the same bits in every
        run; see :func:`~bpvideo.solvers.backends.get_backend`). ``"cuda"``
        solves on the GPU in float32 (the data moves there once, the results back once)
        and returns arrays of the data's dtype.

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
    >>> from bpvideo.synthetic import make_rpca_problem
    >>> problem = make_rpca_problem(100, 100, rank=2, sparsity=0.05, seed=0)
    >>> result = best_pair(problem.A, 2, 0.05, tol=1e-10, max_iter=500, sweeps=0)
    >>> result.converged, problem.error(result.L) < 1e-6
    (True, True)
    """
    A = as_float(A)
    check_problem(A.shape, rank, sparsity, gamma, a, b, max_iter, tol)
    mask = check_mask(mask, A.shape)
    check_start(L0, S0, A.shape)
    callable_argument("callback", callback)
    kernels = get_backend(backend)
    dtype = A.dtype
    method = "ncf" if (gamma == 1.0 and a == 0.0 and b == 0.0) else "bestpair"
    t0 = time.perf_counter()
    A, mask = _on_device(kernels, A, mask)  # the copy to a GPU counts in result.seconds

    # One BLAS thread: the big products are memory bound, and the small LAPACK calls
    # (QR, SVD, eigh of p x p and n x n matrices) were measured 2 to 15 times slower with
    # two OpenBLAS threads on a busy 2-core machine. numba's threads are separate.
    with threadpool_limits(limits=1, user_api="blas"):
        result = _best_pair(
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
            kernels,
        )
    if A.dtype != dtype:  # a backend that computes in float32
        result.L, result.S = result.L.astype(dtype), result.S.astype(dtype)
        result.factors = tuple(f.astype(dtype) for f in result.factors)
    return result


def _starting_point(
    A: np.ndarray,
    rank: int,
    sparsity: float,
    init: str,
    mask: np.ndarray | None,
    L0: np.ndarray | tuple[np.ndarray, np.ndarray] | None,
    S0: np.ndarray | None,
    W: np.ndarray,
    scratch: np.ndarray,
    kernels: Backend,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """``Y_0``: ``S_0`` written into ``W``; ``L_0`` returned as factors (or dense, as given).

    From ``init`` (:func:`initial_point`) unless ``L0``/``S0`` are given; ``scratch`` is an
    m x n buffer for the robust start.
    """
    m, n = A.shape
    dtype = A.dtype
    xp = kernels.xp
    if L0 is None and S0 is None:
        return _start(A, rank, sparsity, init, mask, W, kernels, scratch=scratch)
    W[...] = 0 if S0 is None else xp.asarray(S0)
    if L0 is None:
        return xp.zeros((m, 1), dtype=dtype), np.zeros((n, 1), dtype=dtype)
    if isinstance(L0, tuple):
        return tuple(xp.asarray(f, dtype=dtype) for f in L0)
    return xp.array(L0, dtype=dtype, order="C")  # dense: kept for two passes


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
    callback: Callback | None,
    method: str,
    t0: float,
    sweeps: int,
    kernels: Backend,
) -> SolverResult:
    """The iteration of :func:`best_pair` on checked arguments.

    Four m x n buffers: ``A``, ``W`` (the last ``W_s``), ``Sp`` (the previous ``S``) and
    ``Wl`` (the last ``W_l``); ``L`` is kept as factors ``(U, V)``. Each iteration is one
    rank-r projection of ``Wl`` (its first product ``Wl V`` comes from the fused pass), the
    column thresholds of ``W`` (one read) and one fused pass that applies ``T_alpha`` to
    ``W``, measures the iterate and takes the next gradient step (see
    :mod:`bpvideo.solvers.backends`). The pass that measures iterate k has already taken the step
    of k + 1; when k is the last, that step is simply not used.
    """
    xp = kernels.xp
    k_row, k_col = sparse_counts(A.shape, sparsity)
    W = xp.empty_like(A)
    Wl = xp.empty_like(A)
    L_k = _starting_point(A, rank, sparsity, init, mask, L0, S0, W, Wl, kernels)
    Sp = W.copy()
    if mask is None:
        norm_A = float(xp.linalg.norm(A))
    elif xp is np:
        norm_A = math.sqrt(float(np.einsum("ij,ij->", A, A * mask, dtype=np.float64)))
    else:
        norm_A = math.sqrt(float(xp.vdot(A, A * mask)))
    norm_A = norm_A or 1.0
    projector = RankProjector(rank, subspace_tol=1e-2 * tol, backend=kernels)
    h = gamma / 2.0

    # Y_{-1} = Y_0: the first step has no inertia. W keeps S_0 (nothing is thresholded).
    block = projector.block(A.shape)
    _, Y, rows = kernels.fused_step(
        W, Sp, Wl, A, mask, None, L_k, L_k, float(a), float(b), h, k_row, block=block
    )
    W, Sp = Sp, W  # W: W_s of step 1, Sp: S_0

    history = History(method, callback, t0)
    converged = False
    k = 0
    thr = None
    Y_spare = None  # two W_l V buffers, used in turn
    for k in range(1, max_iter + 1):
        if sweeps and k > SWEEP_WARMUP:
            projector.max_sweeps, projector.accept_unconverged = sweeps, True
        try:
            L_new = projector.factorize(Wl, MV=Y)  # L_k = H_r(W_l)
        except np.linalg.LinAlgError:  # an SVD of non-finite entries: the step diverged
            raise _diverged(method, k, math.inf, gamma, a, b) from None
        Y_prev = Y
        thr = kernels.thresholds(
            W, k_row, k_col, rows=rows, col_guess=None if thr is None else thr[2]
        )
        block = projector.block(A.shape)
        # S_k = T_alpha(W) over W; the step of k + 1 over Sp and Wl
        sq, Y, rows = kernels.fused_step(
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
        if not residual <= DIVERGED_RESIDUAL or math.isnan(change):  # NaN: never <=
            raise _diverged(method, k, residual, gamma, a, b)
        history.record(k, L_k, Sp, residual, change)
        if change < tol or residual < tol:
            converged = True
            break
    del W, Y, Y_spare
    U, V = (xp.asarray(f) for f in L_k)
    L = xp.matmul(U, V.T, out=Wl)
    return history.result(  # L and S stay on a GPU until read (a DeviceResult)
        L, Sp, k, converged, max_iter=max_iter, tol=tol,
        factors=(to_host(U), to_host(V)), stacklevel=5,
        stopped_by=("relative change", history.changes[-1]),
    )  # fmt: skip


def _diverged(method: str, k: int, residual: float, gamma: float, a: float, b: float) -> Diverged:
    """The error of a solve whose iterates grew without bound at iteration ``k``."""
    fix = "lower {gamma}" if gamma > 1.0 else "lower the inertia ({a}, {b})"
    if gamma > 1.0 and (a or b):
        fix = "lower {gamma} (default 1.1) or the inertia ({a}, {b})"
    return Diverged(
        f"{method} diverged at iteration {k} (relative residual {residual:.3g}; {{gamma=}}, "
        f"{{a={a:g}}}, {{b={b:g}}}): {fix}; nothing was kept",
        option=("gamma", gamma),
    )


def ncf(A: np.ndarray, rank: int, sparsity: float, **kwargs: Any) -> SolverResult:
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
            raise InputError(
                f"ncf fixes {{{key}}}: use best_pair to set it", option=(key, kwargs[key])
            )
    return best_pair(A, rank, sparsity, gamma=1.0, a=0.0, b=0.0, **kwargs)
