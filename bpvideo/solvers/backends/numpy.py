"""The numpy backend: the reference kernels of the best-pair solver (always available).

See :mod:`bpvideo.solvers.backends` for what each kernel computes. Matrices of at least
:data:`NP_SPLIT_SIZE` entries are split into :data:`NP_BLOCKS` row (or column) blocks run
side by side by threads (numpy releases the interpreter lock in its loops).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from bpvideo import cores
from bpvideo.robust import masked_median

__all__ = ["NP_BLOCKS", "NP_SPLIT_SIZE", "NumpyBackend"]


def _np_kth(
    absM: np.ndarray, k: int, row: Callable[[int], np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``absM``: the k-th largest value ``thr`` and the tie cut-off ``cut``.

    ``cut`` is the index up to which entries equal to ``thr`` pass, so that ``> thr``
    plus those ties count k (``n``: no tie to break). ``absM`` is partitioned in place
    (its values are kept, not their order); ``row(i)`` gives row i's values in their
    order, read only for the rows with ties (rare: a row's k-th largest value repeated).
    """
    m, n = absM.shape
    cut = np.full(m, n, dtype=np.int64)
    if k >= n:
        return absM.min(axis=1), cut
    absM.partition(n - k, axis=1)
    thr = absM[:, n - k].copy()
    # more than k entries >= thr exactly when one below the k-th place equals it
    tied = absM[:, : n - k].max(axis=1) == thr
    for i in np.flatnonzero(tied):  # the first ties pass
        values = row(int(i))
        ties = np.flatnonzero(values == thr[i])
        cut[i] = ties[k - np.count_nonzero(values > thr[i]) - 1]
    return thr, cut


#: The numpy kernels split matrices of at least this many entries into :data:`NP_BLOCKS`
#: row (or column) blocks, run side by side by threads (numpy releases the interpreter
#: lock in its loops): a 4800 x 300 solve (a 320x240 clip at --solve-scale 0.25) runs
#: 1.6 times faster on two cores. The split depends on the shape only, so that results
#: do not depend on the machine.
NP_SPLIT_SIZE = 1 << 18
#: The blocks: the two halves of :func:`bpvideo.cores.halves`.
NP_BLOCKS = 2


def _np_map(fn: Callable[[int, int], Any], length: int, size: int) -> list[Any]:
    """``[fn(lo, hi)]`` over the halves of ``range(length)`` when ``size`` (entries of
    the matrix) is large (:func:`bpvideo.cores.halves`: side by side where the caller may
    use more than one thread, ``--threads``; else one after the other, the same blocks:
    the same sums); else ``[fn(0, length)]``."""
    if size < NP_SPLIT_SIZE or length < 2 * NP_BLOCKS:
        return [fn(0, length)]
    return cores.halves(fn, length)


def _np_thresholds(W, k_row, k_col):
    m, n = W.shape
    rt, rc = np.empty(m, dtype=W.dtype), np.empty(m, dtype=np.int64)
    ct, cc = np.empty(n, dtype=W.dtype), np.empty(n, dtype=np.int64)

    def rows(lo: int, hi: int) -> None:
        rt[lo:hi], rc[lo:hi] = _np_kth(np.abs(W[lo:hi]), k_row, lambda i: np.abs(W[lo + i]))

    def cols(lo: int, hi: int) -> None:
        absT = np.empty((hi - lo, m), dtype=W.dtype)  # |W|, transposed: columns contiguous
        np.abs(W[:, lo:hi].T, out=absT)
        ct[lo:hi], cc[lo:hi] = _np_kth(absT, k_col, lambda j: np.abs(W[:, lo + j]))

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


def _dense(L, dtype, xp=np):
    """``L`` as an m x n array of ``xp``: as given, or ``U V^T`` of factors ``(U, V)``."""
    if not isinstance(L, tuple):
        return L
    U, V = (xp.asarray(f).astype(dtype, copy=False) for f in L)
    return (U @ V.T).astype(dtype, copy=False)


def _rows(L, lo: int, hi: int):
    """Rows ``lo:hi`` of a dense ``L``, or of the left factor of ``(U, V)``."""
    return (L[0][lo:hi], L[1]) if isinstance(L, tuple) else L[lo:hi]


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


def _np_fused_rows(W, Sp, Wl, A, mask, thr, L, Lp, a, b, h, VwT, xp=np):
    """The fused step on rows of the matrix (all of them, or a block); ``T_alpha`` first
    when ``thr`` is given. Written against the array module ``xp`` (numpy, or CuPy for
    :mod:`.cuda`): the one implementation of the step for both."""
    dt = W.dtype.type
    if thr is not None:
        _np_apply(W, *thr)
    s = W  # S_k
    l_k = _dense(L, W.dtype, xp)
    l_p = _dense(Lp, W.dtype, xp)
    sq = {"S": float(xp.vdot(Sp, Sp)), "L": float(xp.vdot(l_p, l_p))}
    d_l = l_k - l_p
    d_s = xp.subtract(s, Sp, out=Sp)
    sq["dS"] = float(xp.vdot(d_s, d_s))
    sq["dL"] = float(xp.vdot(d_l, d_l))
    e = A - l_k
    e -= s
    r = d_s + d_l
    r *= dt(b)
    r -= e  # R = Sb + Lb - A
    if mask is not None:
        xp.multiply(e, mask, out=e)
        xp.multiply(r, mask, out=r)
    sq["E"] = float(xp.vdot(e, e))
    del e
    r *= dt(h)
    for X, dX, out in ((s, d_s, Sp), (l_k, d_l, Wl)):
        dX *= dt(a)
        dX += X
        xp.subtract(dX, r, out=out)
    Y = Wl @ VwT.T if VwT.shape[0] else None
    return sq, Y


def _np_row_median(A, mask):
    """Each row's median (of its ``mask`` entries), row blocks side by side: a row's
    median is its own, so the blocks give the same bits as one call."""
    # np.median keeps a float dtype (float32 in, float32 out); masked_median is float64
    floating = mask is None and np.issubdtype(A.dtype, np.floating)
    out = np.empty(A.shape[0], dtype=A.dtype if floating else np.float64)

    def rows(lo: int, hi: int) -> None:
        if mask is None:
            out[lo:hi] = np.median(A[lo:hi], axis=1)
        else:  # an all-unobserved row: 0
            out[lo:hi] = masked_median(A[lo:hi], mask[lo:hi], empty=0.0)

    _np_map(rows, A.shape[0], A.size)
    return out


class NumpyBackend:
    """The kernels in numpy (see :class:`bpvideo.solvers.backends.Backend`)."""

    name = "numpy"
    xp = np

    def fused_step(self, W, Sp, Wl, A, mask, thr, L, Lp, a, b, h, k_row, block=None,
                   row_guess=None, Y=None):  # fmt: skip
        """See :meth:`Backend.fused_step`; returns no row thresholds (``rows`` None)."""
        n = W.shape[1]
        VwT = (
            np.zeros((0, n), dtype=W.dtype)
            if block is None
            else np.ascontiguousarray(block.T, dtype=W.dtype)
        )
        sq, Y = _np_fused(W, Sp, Wl, A, mask, thr, L, Lp, a, b, h, VwT)
        return sq, Y, None

    def thresholds(self, W, k_row, k_col, rows=None, col_guess=None):
        """See :meth:`Backend.thresholds` (``rows`` and ``col_guess`` are not needed)."""
        return _np_thresholds(W, k_row, k_col)

    def apply_thresholds(self, W, thr) -> None:
        """See :meth:`Backend.apply_thresholds`."""
        _np_apply_blocks(W, *thr)

    def matmul(self, M, V):
        """See :meth:`Backend.matmul`."""
        return (M @ V.astype(M.dtype, copy=False)).astype(np.float64)

    def t_matmul(self, M, Q):
        """See :meth:`Backend.t_matmul`."""
        return (M.T @ Q.astype(M.dtype, copy=False)).astype(np.float64)

    def row_median(self, A, mask=None):
        """See :meth:`Backend.row_median`."""
        return _np_row_median(A, mask)

    def warm_up(self, dtype: type = np.float32) -> None:
        """Nothing to load."""
