"""Per-iteration kernels of the best-pair solver: numba when available, numpy otherwise.

Both paths compute the same thing (tested against each other in tests/test_kernels.py).
The solver keeps ``L`` in factored form ``U V^T`` (rank r) and four m x n buffers: the data
``A``, ``W`` (the unthresholded ``W_s`` of the last step), ``Sp`` (the previous ``S``) and
``Wl`` (the last ``W_l``):

- :func:`fused_step`: one pass that finishes iteration k and does the gradient step of
  iteration k + 1: ``S_k = T_alpha(W)`` (thresholds given), ``L_k = U V^T`` and
  ``L_{k-1} = U_p V_p^T`` computed on the fly, the squared norms of the stopping rule, then
  ``W_s = Sa - gamma/2 R`` over ``Sp`` and ``W_l = La - gamma/2 R`` over ``Wl``, where
  ``Sa = S_k + a (S_k - S_{k-1})``, ``Sb = S_k + b (S_k - S_{k-1})`` (same for L) and
  ``R = P_Omega(Sb + Lb - A)``; ``S_k`` is written over ``W``. The numba kernel also
  returns the row thresholds of ``T_alpha`` on the new ``W_s`` (the row is in cache) and
  the first product of the rank-r projection, ``W_l V`` for the warm-started block ``V``.
- :func:`thresholds`: the ``k``-th largest magnitude of every row and column, with the
  index cut-off that breaks ties by index, so that exactly ``k`` entries pass.
- :func:`apply_thresholds`, :func:`matmul`, :func:`t_matmul`, :func:`row_median`: ``T_alpha``
  in place, ``M V``, ``M^T Q`` and the per-row median (observed entries only), as used by
  the starting point and the subspace iteration of ``H_r``.

The numba path is used when numba imports, ``BPVIDEO_NUMBA`` is not ``0`` and the matrix
has at least :data:`NUMBA_MIN_SIZE` entries (see :func:`use_numba`). Its kernels
are compiled on first use and cached on disk (``cache=True``); without a writable cache
they are compiled in each process (a few seconds). Reductions are compiled with
``fastmath={"reassoc", "contract"}`` so that they vectorize: sums are then accumulated in
another order than numpy's, which changes results at the level of rounding only.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

__all__ = [
    "HAVE_NUMBA",
    "apply_thresholds",
    "fused_step",
    "matmul",
    "numba_for",
    "row_median",
    "t_matmul",
    "thresholds",
    "use_numba",
    "warm_up",
]

#: numba is installed (and not disabled by ``BPVIDEO_NUMBA=0``); it is imported when the
#: first kernel runs (or by :func:`warm_up`), not with this module.
HAVE_NUMBA = (
    os.environ.get("BPVIDEO_NUMBA", "1") != "0" and importlib.util.find_spec("numba") is not None
)


#: ``use_numba("auto")`` (the default): matrices with fewer entries run the numpy kernels.
#: Loading numba and its cached kernels costs ~0.55 s of CPU (and holds the interpreter
#: lock while frames are read), more than numba saves on a small solve: at 4800 x 300
#: (a 320x240 clip solved at --solve-scale 0.25) 15 iterations take 0.3 s with numba and
#: 0.65 s without; from about 2**22 entries numba wins by more than it costs.
NUMBA_MIN_SIZE = 1 << 22


def use_numba(flag: bool | str | None = None) -> bool | str:
    """Which kernels run: ``True`` numba, ``False`` numpy, ``"auto"`` numba for matrices of
    at least :data:`NUMBA_MIN_SIZE` entries (the default). Returns the setting, which can
    be passed back to restore it; numba is never used when it is not installed."""
    global _USE
    if flag is not None:
        if flag not in (True, False, "auto"):
            raise ValueError(f"use_numba takes True, False or 'auto', not {flag!r}")
        _USE = flag if HAVE_NUMBA else False
    return _USE


def numba_for(size: int) -> bool:
    """Whether the kernels run by numba on a matrix of ``size`` entries."""
    return _USE is True or (_USE == "auto" and (size >= NUMBA_MIN_SIZE or _WARMING))


_USE: bool | str = "auto" if HAVE_NUMBA else False
#: Set by :func:`warm_up` while it runs the kernels on a tiny problem (nothing else runs
#: them meanwhile: the pipeline waits for the warm-up before solving).
_WARMING = False

#: Selection brackets are the previous thresholds times this and divided by it: wide
#: enough that the new threshold is usually inside (the per-column thresholds of a video
#: move by less than 1 % between iterations, per-row ones by a few per cent), narrow
#: enough that few entries fall inside, so the selection runs on those few.
PIVOT_MARGIN = 0.95


# --- numpy path --------------------------------------------------------------------------


def _ties_cut(absM: np.ndarray, thr: np.ndarray, k: int) -> np.ndarray:
    """Per row: index cut-off so that ``> thr`` plus ties with index ``<= cut`` count k."""
    n = absM.shape[1]
    cut = np.full(absM.shape[0], n, dtype=np.int64)
    at_least = np.count_nonzero(absM >= thr[:, None], axis=1)
    for i in np.flatnonzero(at_least > k):  # ties at the threshold: the first ones pass
        row = absM[i]
        ties = np.flatnonzero(row == thr[i])
        cut[i] = ties[k - np.count_nonzero(row > thr[i]) - 1]
    return cut


def _np_kth(absM: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    n = absM.shape[1]
    if k < n:
        part = np.partition(absM, n - k, axis=1)
        thr = part[:, n - k].copy()
        del part
    else:
        thr = absM.min(axis=1)
    return thr, _ties_cut(absM, thr, k)


#: The numpy kernels split matrices of at least this many entries into :data:`NP_BLOCKS`
#: row (or column) blocks, run side by side by threads (numpy releases the interpreter
#: lock in its loops): a 4800 x 300 solve (a 320x240 clip at --solve-scale 0.25) runs
#: 1.6 times faster on two cores. The split depends on the shape only, so that results
#: do not depend on the machine.
NP_SPLIT_SIZE = 1 << 18
NP_BLOCKS = 2
_POOL: ThreadPoolExecutor | None = None


def _np_map(fn: Callable[[int, int], Any], length: int, size: int) -> list[Any]:
    """``[fn(lo, hi)]`` over the blocks of ``range(length)``, side by side when ``size``
    (entries of the matrix) is large; the first block runs in the calling thread."""
    if size < NP_SPLIT_SIZE or length < 2 * NP_BLOCKS:
        return [fn(0, length)]
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(NP_BLOCKS - 1, thread_name_prefix="bpvideo-numpy")
    bounds = [length * i // NP_BLOCKS for i in range(NP_BLOCKS + 1)]
    futures = [_POOL.submit(fn, lo, hi) for lo, hi in itertools.pairwise(bounds[1:])]
    first = fn(bounds[0], bounds[1])
    return [first, *(f.result() for f in futures)]


def _np_thresholds(W, k_row, k_col):
    m, n = W.shape
    rt, rc = np.empty(m, dtype=W.dtype), np.empty(m, dtype=np.int64)
    ct, cc = np.empty(n, dtype=W.dtype), np.empty(n, dtype=np.int64)

    def rows(lo: int, hi: int) -> None:
        rt[lo:hi], rc[lo:hi] = _np_kth(np.abs(W[lo:hi]), k_row)

    def cols(lo: int, hi: int) -> None:
        absT = np.empty((hi - lo, m), dtype=W.dtype)  # |W|, transposed: columns contiguous
        np.abs(W[:, lo:hi].T, out=absT)
        ct[lo:hi], cc[lo:hi] = _np_kth(absT, k_col)

    _np_map(rows, m, W.size)
    _np_map(cols, n, W.size)
    return rt, rc, ct, cc


def _np_apply(W, rt, rc, ct, cc):
    """``T_alpha`` in place: keep entries among the k largest of their row and column.

    ``W`` may be a block of rows of the matrix: ``cc`` then counts from its first row
    (cut-offs before it are negative).
    """
    absM = np.abs(W)
    m, n = W.shape
    keep = absM >= rt[:, None]
    for i in np.flatnonzero(rc < n):  # rows with ties past their cut-off
        keep[i, rc[i] + 1 :] &= absM[i, rc[i] + 1 :] != rt[i]
    by_col = absM >= ct
    for j in np.flatnonzero(cc < m - 1):
        start = max(int(cc[j]) + 1, 0)
        by_col[start:, j] &= absM[start:, j] != ct[j]
    keep &= by_col
    np.multiply(W, keep, out=W)


def _np_apply_blocks(W, rt, rc, ct, cc):
    def run(lo: int, hi: int) -> None:
        _np_apply(W[lo:hi], rt[lo:hi], rc[lo:hi], ct, cc - lo)

    _np_map(run, W.shape[0], W.size)


def _dense(L, dtype):
    if isinstance(L, np.ndarray):
        return L
    return (L[0].astype(dtype, copy=False) @ L[1].T.astype(dtype, copy=False)).astype(dtype)


def _rows(L, lo: int, hi: int):
    """Rows ``lo:hi`` of a dense ``L``, or of the left factor of ``(U, V)``."""
    return L[lo:hi] if isinstance(L, np.ndarray) else (L[0][lo:hi], L[1])


def _np_fused(W, Sp, Wl, A, mask, thr, L, Lp, a, b, h, VwT):
    """:func:`_np_fused_rows` over row blocks (side by side); sums of the norms added."""
    Y = np.empty((W.shape[0], VwT.shape[0]), dtype=W.dtype) if VwT.shape[0] else None

    def run(lo: int, hi: int) -> dict[str, float]:
        t = None if thr is None else (thr[0][lo:hi], thr[1][lo:hi], thr[2], thr[3] - lo)
        sq, y = _np_fused_rows(
            W[lo:hi], Sp[lo:hi], Wl[lo:hi], A[lo:hi], None if mask is None else mask[lo:hi],
            t, _rows(L, lo, hi), _rows(Lp, lo, hi), a, b, h, VwT,
        )  # fmt: skip
        if Y is not None:
            Y[lo:hi] = y
        return sq

    parts = _np_map(run, W.shape[0], W.size)
    return {key: sum(p[key] for p in parts) for key in parts[0]}, Y


def _np_fused_rows(W, Sp, Wl, A, mask, thr, L, Lp, a, b, h, VwT):
    dt = W.dtype.type
    if thr is not None:
        _np_apply(W, *thr)
    s = W  # S_k
    l_k = _dense(L, W.dtype)
    l_p = _dense(Lp, W.dtype)
    sq = {"S": float(np.vdot(Sp, Sp)), "L": float(np.vdot(l_p, l_p))}
    d_l = l_k - l_p
    d_s = np.subtract(s, Sp, out=Sp)
    sq["dS"] = float(np.vdot(d_s, d_s))
    sq["dL"] = float(np.vdot(d_l, d_l))
    e = A - l_k
    e -= s
    r = d_s + d_l
    r *= dt(b)
    r -= e  # R = Sb + Lb - A
    if mask is not None:
        np.multiply(e, mask, out=e)
        np.multiply(r, mask, out=r)
    sq["E"] = float(np.vdot(e, e))
    del e
    r *= dt(h)
    for X, dX, out in ((s, d_s, Sp), (l_k, d_l, Wl)):
        dX *= dt(a)
        dX += X
        np.subtract(dX, r, out=out)
    Y = Wl @ VwT.T if VwT.shape[0] else None
    return sq, Y


def _np_row_median(A, mask):
    if mask is None:
        return np.median(A, axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-unobserved rows: NaN
        med = np.nanmedian(np.where(mask, A, np.nan), axis=1)
    return np.nan_to_num(med)


# --- numba path (bpvideo._numba_kernels, imported on first use) -------------------------

_NUMBA = None


def _numba():
    """The numba kernel module, imported on first use (numba's import costs ~0.3 s)."""
    global _NUMBA
    if _NUMBA is None:
        from bpvideo import _numba_kernels

        _NUMBA = _numba_kernels
    return _NUMBA


#: Matrices with fewer entries run the kernels on one thread (thread start-up and
#: barriers cost more than they save on small problems, more so on a busy machine).
PARALLEL_MIN_SIZE = 1 << 20


def _threads(size: int) -> int:
    """Threads the kernels use on a matrix of ``size`` entries."""
    return _numba().numba.config.NUMBA_NUM_THREADS if size >= PARALLEL_MIN_SIZE else 1


def _k(name: str, size: int):
    nb = _numba()
    threads = _threads(size)
    if nb.numba.get_num_threads() != threads:
        nb.numba.set_num_threads(threads)
    return nb.KERNELS[name]


_NO_MASK = np.ones((1, 1), dtype=bool)


#: Without a guess, column thresholds are first estimated on every SAMPLE_STEP-th row,
#: and searched within SAMPLE_MARGIN of the estimate.
SAMPLE_STEP = 8
SAMPLE_MARGIN = 0.85


def _bracket(guess, size, dtype, margin=None):
    """Selection brackets ``(lo, hi)`` around threshold guesses (everything: no guess)."""
    if guess is None:
        return np.full(size, -1.0, dtype=dtype), np.full(size, np.inf, dtype=dtype)
    margin = PIVOT_MARGIN if margin is None else margin
    g = np.asarray(guess, dtype=np.float64)
    tiny = 1e-30
    lo = (g * margin - tiny).astype(dtype)
    hi = (g / margin + tiny).astype(dtype)
    return lo, hi


_NO_FACTOR = np.zeros((1, 1))


def _factors_or_dense(L, dtype):
    """Kernel arguments ``(dense array, is dense, U, V^T)`` for a factored or dense L."""
    if isinstance(L, np.ndarray):
        z = _NO_FACTOR.astype(dtype)
        return np.ascontiguousarray(L, dtype=dtype), True, z, z
    U, V = L
    z = _NO_FACTOR.astype(dtype)
    return z, False, np.ascontiguousarray(U, dtype=dtype), np.ascontiguousarray(V.T, dtype=dtype)


def keep_all(shape: tuple[int, int], dtype) -> tuple[np.ndarray, ...]:
    """Thresholds under which every entry passes (``T_alpha`` is the identity)."""
    m, n = shape
    return (
        np.full(m, -1.0, dtype=dtype),
        np.full(m, n, dtype=np.int64),
        np.full(n, -1.0, dtype=dtype),
        np.full(n, m, dtype=np.int64),
    )


# --- dispatch ----------------------------------------------------------------------------


def fused_step(W, Sp, Wl, A, mask, thr, L, Lp, a, b, h, k_row, block=None, row_guess=None, Y=None):
    """Finish iteration k and take the gradient step of k + 1; see the module docstring.

    Parameters
    ----------
    W, Sp, Wl, A : (m, n) ndarray
        ``W_s`` of iteration k (becomes ``S_k``), ``S_{k-1}`` (becomes the new ``W_s``),
        the buffer of ``W_l`` and the data.
    mask : (m, n) bool ndarray or None
        Observation mask.
    thr : tuple of ndarray
        Row and column thresholds of ``T_alpha`` on ``W`` (:func:`keep_all` for none).
    L, Lp : tuple of ndarray, or ndarray
        ``L_k`` and ``L_{k-1}``: factors ``(U, V)`` (``L = U V^T``), or dense m x n arrays
        (an explicit start; they are only read).
    a, b, h : float
        Inertia and half step ``gamma / 2``.
    k_row : int
        Entries per row of ``T_alpha`` (for the row thresholds of the new ``W_s``).
    block : (n, p) ndarray, optional
        Warm block of the rank-r projection: the product ``W_l V`` is returned.
    row_guess : ndarray, optional
        Guess of the row thresholds (speeds up their selection; the result is exact).
    Y : (m, p) float64 ndarray, optional
        Where to write ``W_l V`` (numba path; reused between iterations).

    Returns
    -------
    sq : dict
        Squared norms ``dS`` (``S_k - S_{k-1}``), ``dL``, ``S`` (``S_{k-1}``), ``L``
        (``L_{k-1}``) and ``E`` (``P_Omega(A - L_k - S_k)``).
    Y : (m, p) ndarray or None
        ``W_l V`` when ``block`` is given.
    rows : tuple of ndarray or None
        Row thresholds of ``T_alpha`` on the new ``W_s`` (numba path; None on numpy's).
    """
    m, n = W.shape
    dtype = W.dtype
    VwT = (
        np.zeros((0, n), dtype=dtype)
        if block is None
        else np.ascontiguousarray(block.T, dtype=dtype)
    )
    if not numba_for(W.size):
        sq, Y = _np_fused(W, Sp, Wl, A, mask, thr, L, Lp, a, b, h, VwT)
        return sq, Y, None
    if thr is None:
        thr = keep_all((m, n), dtype)
    rt, rc = np.empty(m, dtype=dtype), np.empty(m, dtype=np.int64)
    if Y is None or Y.shape != (m, VwT.shape[0]):
        Y = np.empty((m, VwT.shape[0]), dtype=np.float64)
    has = mask is not None
    sums = np.empty((min(m, 64), 5), dtype=np.float64)
    _k("fused", W.size)(
        W,
        Sp,
        Wl,
        A,
        mask if has else _NO_MASK,
        has,
        *_factors_or_dense(L, dtype),
        *_factors_or_dense(Lp, dtype),
        *thr,
        dtype.type(a),
        dtype.type(b),
        dtype.type(h),
        k_row,
        *_bracket(row_guess, m, dtype),
        VwT,
        rt,
        rc,
        Y,
        sums,
    )
    ds2, dl2, s2, l2, e2 = (float(v) for v in sums.sum(axis=0))
    sq = {"dS": ds2, "dL": dl2, "S": s2, "L": l2, "E": e2}
    return sq, (Y if block is not None else None), (rt, rc)


def thresholds(W, k_row, k_col, rows=None, col_guess=None):
    """Row and column thresholds of ``T_alpha``: ``(row_thr, row_cut, col_thr, col_cut)``.

    Entry ``(i, j)`` is among the ``k_row`` largest magnitudes of its row when
    ``|W_ij| > row_thr[i]``, or ``|W_ij| == row_thr[i]`` and ``j <= row_cut[i]`` (ties broken
    by index, so exactly ``k_row`` entries pass); the same for columns. ``rows`` reuses
    row thresholds already computed; ``col_guess`` (numba path) is a guess of the column
    thresholds that speeds up the selection without changing its result.
    """
    m = W.shape[0]
    if numba_for(W.size):
        if rows is None:
            rt = np.empty(m, dtype=W.dtype)
            rc = np.empty(m, dtype=np.int64)
            _k("row_thresholds", W.size)(W, k_row, rt, rc)
        else:
            rt, rc = rows
        return (rt, rc, *_nb_col_thresholds(W, k_col, col_guess))
    return _np_thresholds(W, k_row, k_col)


def _nb_col_thresholds(W, k_col, col_guess):
    """Column thresholds and cut-offs of ``T_alpha`` (numba path)."""
    m, n = W.shape
    ct = np.empty(n, dtype=W.dtype)
    cc = np.empty(n, dtype=np.int64)
    groups = _threads(W.size)
    margin = PIVOT_MARGIN
    if col_guess is None and m >= 64 * SAMPLE_STEP and k_col >= 8 * SAMPLE_STEP:
        # no guess: the thresholds of every SAMPLE_STEP-th row, with a wider bracket
        sub = np.ascontiguousarray(W[::SAMPLE_STEP])
        col_guess = _nb_col_thresholds(sub, max(1, round(k_col * sub.shape[0] / m)), None)[0]
        margin = SAMPLE_MARGIN
    lo, hi = _bracket(col_guess, n, W.dtype, margin)
    _k("col_thresholds", W.size)(W, k_col, lo, hi, ct, cc, min(groups, n))
    return ct, cc


def apply_thresholds(W, thr) -> None:
    """``W <- T_alpha(W)`` in place, from :func:`thresholds`."""
    if numba_for(W.size):
        _k("apply", W.size)(W, *thr)
    else:
        _np_apply_blocks(W, *thr)


def matmul(M, V):
    """``M @ V`` for a tall ``M`` (m x n) and a thin ``V`` (n x p), in float64."""
    if numba_for(M.size):
        Y = np.empty((M.shape[0], V.shape[1]), dtype=np.float64)
        _k("matmul", M.size)(M, np.ascontiguousarray(V.T, dtype=M.dtype), Y)
        return Y
    return (M @ V.astype(M.dtype, copy=False)).astype(np.float64)


def t_matmul(M, Q):
    """``M.T @ Q`` for a tall ``M`` (m x n) and a thin ``Q`` (m x p), in float64."""
    if numba_for(M.size):
        chunks = 8 if M.size >= PARALLEL_MIN_SIZE else 1
        out = np.empty((chunks, Q.shape[1], M.shape[1]), dtype=np.float64)
        _k("t_matmul", M.size)(M, np.ascontiguousarray(Q, dtype=M.dtype), out)
        return out.sum(axis=0).T
    return (M.T @ Q.astype(M.dtype, copy=False)).astype(np.float64)


def row_median(A, mask=None) -> np.ndarray:
    """Median of every row of ``A`` over its observed entries (0 where none is)."""
    if numba_for(A.size):
        out = np.empty(A.shape[0], dtype=np.float64)
        has = mask is not None
        _k("row_median", A.size)(A, mask if has else _NO_MASK, has, out)
        return out
    return _np_row_median(A, mask)


def warm_up(dtype: type = np.float32) -> None:
    """Load (or compile) the numba kernels for ``dtype`` now, on a tiny problem.

    Does nothing when numba is off; with ``use_numba("auto")`` the kernels are loaded
    whatever the size (call it only before a solve that will use them: :func:`numba_for`).
    """
    global _WARMING
    if not _USE:
        return
    _WARMING = True
    try:
        _warm_up(dtype)
    finally:
        _WARMING = False


def _warm_up(dtype: type) -> None:
    z = np.zeros((4, 4), dtype=dtype)
    W, Sp, Wl, A = (z.copy() for _ in range(4))
    f = (np.zeros((4, 1), dtype=dtype), np.zeros((4, 1), dtype=dtype))
    _, Y, rows = fused_step(W, Sp, Wl, A, None, None, f, f, 0.5, 0.5, 0.5, 1, block=f[1])
    thr = thresholds(Sp, 1, 1, rows=rows)
    thresholds(Sp, 1, 1)
    apply_thresholds(W, thr)
    t_matmul(Wl, Y)
    matmul(Wl, f[1])
    row_median(A)
    fused_step(W, Sp, Wl, A, np.ones((4, 4), dtype=bool), thr, A, A, 0.5, 0.5, 0.5, 1)
    row_median(A, np.ones((4, 4), dtype=bool))
