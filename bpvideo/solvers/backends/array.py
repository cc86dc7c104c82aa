"""Kernels written once against an array module ``xp``: numpy here, CuPy on a GPU.

:class:`ArrayBackend` implements :class:`~bpvideo.solvers.backends.Backend` with array
operations that numpy and CuPy share (no loop over rows in Python, no ``partition`` in a
loop), so that the CUDA backend (:mod:`.cuda`, ``ArrayBackend`` on CuPy) is the same code
that the test suite runs on numpy: ``ArrayBackend()`` must give the numpy backend's
thresholds exactly and its iterates to rounding.

The gradient step is the numpy backend's own (:func:`.numpy._np_fused_rows`, given
``xp``). ``T_alpha``'s thresholds are selected without sorting rows or columns
(:func:`kth_largest`): CuPy's ``partition`` sorts whenever ``k > 1024`` (a column of a
1080p frame has 2 million entries, ``k`` is ten per cent of them), so the selection
counts, per row or column, the entries above a bracket ``(lo, hi]`` around a guess of the
threshold (the previous iteration's: thresholds move by a few per cent between
iterations), gathers the few entries inside and sorts only those, keyed by
``(segment, magnitude)`` in one 64-bit radix sort. Rows or columns whose threshold falls
outside their bracket are redone with an open bracket. Without a guess (the first
iteration) the bracket comes from order statistics of a strided sample, or, for short
rows, from ``xp.partition`` (CuPy selects there without sorting: ``k <= 1024``).

Exact zeros are never gathered: when a row's threshold is 0, ``T_alpha`` gives the same
result whichever zeros pass, and its cut-off is reported as the row's length.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bpvideo.solvers._common import array_module
from bpvideo.solvers.backends.base import exercise
from bpvideo.solvers.backends.numpy import _np_fused_rows

__all__ = [
    "PIVOT_MARGIN",
    "SAMPLE_MIN",
    "SAMPLE_STEP",
    "ArrayBackend",
    "bracket_missed",
    "kth_largest",
    "select_in_brackets",
]

#: Brackets around a guess of the thresholds: ``(guess * margin, guess / margin]``; the
#: numba backend's margin, measured there (few entries inside, the threshold rarely out).
PIVOT_MARGIN = 0.95
#: Without a guess, rows or columns of at least ``SAMPLE_MIN * SAMPLE_STEP`` entries get
#: their bracket from every ``SAMPLE_STEP``-th entry (sampled order statistics, a band of
#: ``SAMPLE_SIGMAS`` standard deviations of the sampled rank either side).
SAMPLE_STEP = 16
SAMPLE_MIN = 256
SAMPLE_SIGMAS = 6.0

_LOW32 = 0xFFFFFFFF


def _keys(xp: Any, segment: Any, values: Any) -> Any:
    """64-bit sort keys: segment ascending, then magnitude descending (float32 bits of a
    non-negative number order as the number does)."""
    bits = values.view(xp.uint32).astype(xp.uint64)
    return (segment.astype(xp.uint64) << xp.uint64(32)) | (xp.uint64(_LOW32) - bits)


def _along(v: Any, axis: int) -> Any:
    """A per-segment vector shaped to broadcast against the matrix."""
    return v[None, :] if axis == 0 else v[:, None]


def _pick(xp: Any, seg: Any, vals: Any, index: Any) -> Any:
    """The candidates at ``index`` once sorted by segment, then by magnitude descending."""
    if vals.dtype == np.float32:
        chosen = xp.sort(_keys(xp, seg, vals))[index]
        bits = (xp.uint64(_LOW32) - (chosen & xp.uint64(_LOW32))).astype(xp.uint32)
        return bits.view(xp.float32)
    # float64 (tests, direct calls): the 64-bit magnitude does not fit in one key
    order = xp.lexsort(xp.stack([-vals, seg.astype(vals.dtype)]))
    return vals[order][index]


def _cut_offs(xp, seg, pos, vals, thr, above, k, n_seg, length):
    """Index cut-offs: where ties at the threshold stop passing (``length``: all pass)."""
    at = thr[seg]
    gt = above + xp.bincount(seg[vals > at], minlength=n_seg)
    tie = vals == at
    ties = xp.bincount(seg[tie], minlength=n_seg)
    keep = k - gt  # ties that pass, the lowest indices first (>= 1)
    if not bool(xp.any(gt + ties > k)):
        return xp.full(n_seg, length, dtype=xp.int64)
    key = (seg[tie].astype(xp.uint64) << xp.uint64(32)) | pos[tie].astype(xp.uint64)
    starts = xp.cumsum(ties) - ties
    last = xp.sort(key)[xp.minimum(starts + keep - 1, len(key) - 1)] & xp.uint64(_LOW32)
    return xp.where(gt + ties > k, last.astype(xp.int64), length)


def _bracket(xp, absM, k, axis, guess, margin):
    """``(lo, hi)`` per segment: the k-th largest magnitude is expected in ``(lo, hi]``."""
    length, n_seg = absM.shape[axis], absM.shape[1 - axis]
    dtype = absM.dtype
    if guess is not None:
        g = xp.asarray(guess, dtype=xp.float64)
        return (g * margin - 1e-30).astype(dtype), (g / margin + 1e-30).astype(dtype)
    if length >= SAMPLE_MIN * SAMPLE_STEP:
        sample = absM[::SAMPLE_STEP] if axis == 0 else absM[:, ::SAMPLE_STEP]
        ls = sample.shape[axis]
        ks = k * ls / length
        band = SAMPLE_SIGMAS * math.sqrt(ks * (1 - ks / ls)) + 2
        high_rank, low_rank = math.floor(ks - band), math.ceil(ks + band)  # 1-based, largest
        lo = xp.full(n_seg, -1.0, dtype=dtype)
        hi = xp.full(n_seg, np.inf, dtype=dtype)
        kth = [ls - r for r in (high_rank, low_rank) if 1 <= r <= ls]
        if kth:
            part = xp.partition(sample, kth, axis=axis)
            if 1 <= high_rank <= ls:
                hi = xp.take(part, ls - high_rank, axis=axis)
            if 1 <= low_rank <= ls:
                lo = xp.take(part, ls - low_rank, axis=axis)
        return lo, hi
    # short rows (frames): the exact threshold by selection; the bracket holds its ties
    thr = xp.take(xp.partition(absM, length - k, axis=axis), length - k, axis=axis)
    return xp.nextafter(thr, xp.asarray(-1.0, dtype=dtype)), thr


def kth_largest(
    absM: Any, k: int, axis: int, guess: Any = None, margin: float = PIVOT_MARGIN
) -> tuple[Any, Any]:
    """The ``k``-th largest entry of every column (``axis=0``) or row (``axis=1``).

    Parameters
    ----------
    absM : (m, n) ndarray of numpy or CuPy
        Magnitudes (non-negative).
    k : int
        Rank, ``1 <= k <=`` the length of a row (column).
    axis : {0, 1}
        Along columns (one threshold per column) or rows.
    guess : ndarray, optional
        Expected thresholds (speeds up the selection; the result is exact).
    margin : float
        Width of the bracket around ``guess``.

    Returns
    -------
    thr : ndarray
        The k-th largest value per segment.
    cut : (n_seg,) int64 ndarray
        Index cut-off: entries ``> thr``, and ``== thr`` at an index ``<= cut``, are exactly
        ``k`` (ties are broken by index, see :meth:`Backend.thresholds`).
    """
    xp = array_module(absM)
    length, n_seg = absM.shape[axis], absM.shape[1 - axis]
    if k >= length:
        return absM.min(axis=axis), xp.full(n_seg, length, dtype=xp.int64)
    lo, hi = _bracket(xp, absM, k, axis, guess, margin)
    lo = xp.maximum(lo, 0)  # zeros are never candidates
    for _ in range(2):
        above = xp.count_nonzero(absM > _along(hi, axis), axis=axis)
        inside = (absM > _along(lo, axis)) & (absM <= _along(hi, axis))
        count = xp.count_nonzero(inside, axis=axis)
        missed = bracket_missed(xp, above, count, lo, k)
        if not bool(xp.any(missed)):
            break
        lo = xp.where(missed, xp.asarray(0, dtype=lo.dtype), lo)
        hi = xp.where(missed, xp.asarray(np.inf, dtype=hi.dtype), hi)
    idx = xp.nonzero(inside)
    del inside
    seg, pos = (idx[1], idx[0]) if axis == 0 else idx
    return select_in_brackets(xp, seg, pos, absM[idx], above, count, k, length)


def bracket_missed(xp: Any, above: Any, count: Any, lo: Any, k: int) -> Any:
    """Per segment: its k-th largest magnitude is not in its bracket ``(lo, hi]``, given
    the counts of entries above ``hi`` and inside (``lo >= 0``; fewer than k non-zero
    entries in all means a threshold of 0, which a bracket from 0 holds)."""
    return (above >= k) | ((above + count < k) & (lo > 0))


def select_in_brackets(xp, seg, pos, vals, above, count, k, length):
    """The thresholds and cut-offs of :func:`kth_largest` from the candidates inside the
    brackets (segment, position in it, magnitude; any order) and the counts per segment
    of entries above and inside (every bracket holding its threshold)."""
    n_seg = len(above)
    zero = above + count < k  # fewer than k non-zero entries: the threshold is 0
    if len(vals):
        # the (k - above)-th largest candidate of each segment, once they are sorted
        index = xp.cumsum(count) - count + xp.maximum(k - above, 1) - 1
        thr = _pick(xp, seg, vals, xp.minimum(index, len(vals) - 1))
        thr = xp.where(zero, xp.asarray(0, dtype=vals.dtype), thr)
        cut = _cut_offs(xp, seg, pos, vals, thr, above, k, n_seg, length)
    else:
        thr = xp.zeros(n_seg, dtype=vals.dtype)
        cut = xp.full(n_seg, length, dtype=xp.int64)
    return thr, xp.where(zero, length, cut)


class ArrayBackend:
    """The kernels on an array module (see :class:`bpvideo.solvers.backends.Backend`).

    Parameters
    ----------
    xp : module, default numpy
        numpy or CuPy. The buffers of a solve are arrays of ``xp``; the factors' right
        block and other n-sized arrays may be numpy arrays (moved when used).
    """

    name = "array"
    #: The solver converts the data to this dtype (None: keeps float32 and float64).
    dtype: type | None = None

    def __init__(self, xp: Any = np) -> None:
        self.xp = xp
        self._k_col: int | None = None  # of the last thresholds() call
        self._next: tuple[Any, ...] | None = None  # column thresholds, selected ahead

    def fused_step(self, W, Sp, Wl, A, mask, thr, L, Lp, a, b, h, k_row, block=None,
                   row_guess=None, Y=None):  # fmt: skip
        """See :meth:`Backend.fused_step`; also returns the row thresholds of the new
        ``W_s`` (selected around ``row_guess``), and selects its column thresholds around
        those of ``thr`` in the same passes, for :meth:`thresholds` to return."""
        sq, Y = self._step(W, Sp, Wl, A, mask, thr, L, Lp, a, b, h, block)
        self._next = None
        rows = cols = None
        if thr is not None and row_guess is not None and self._k_col is not None:
            rows, cols = self._select_both(Sp, k_row, self._k_col, row_guess, thr[2])
            if cols is not None:
                self._next = (Sp, self._k_col, thr[2], cols)
        if rows is None:
            rows = kth_largest(self.xp.abs(Sp), k_row, 1, row_guess)
        return sq, Y, rows

    def _select_both(self, M, k_row, k_col, row_guess, col_guess):
        """Row and column thresholds of ``M`` from brackets around guesses, in one counting
        pass and one gathering pass for both; rows or columns whose threshold left its
        bracket are selected again on their own (:func:`kth_largest`, no guess)."""
        xp = self.xp
        m, n = M.shape
        if k_row >= n or k_col >= m:
            return None, None
        rlo, rhi = _bracket(xp, M, k_row, 1, row_guess, PIVOT_MARGIN)
        clo, chi = _bracket(xp, M, k_col, 0, col_guess, PIVOT_MARGIN)
        rlo, clo = xp.maximum(rlo, 0), xp.maximum(clo, 0)
        r_above, r_in, c_above, c_in = self.bracket_counts(M, rlo, rhi, clo, chi)
        sides = []
        for lo, hi, above, count, k in ((rlo, rhi, r_above, r_in, k_row),
                                        (clo, chi, c_above, c_in, k_col)):  # fmt: skip
            missed = bracket_missed(xp, above, count, lo, k)
            off = xp.asarray(np.inf, dtype=lo.dtype)  # an empty bracket: no candidate
            lo, hi = xp.where(missed, off, lo), xp.where(missed, off, hi)
            above, count = xp.where(missed, 0, above), xp.where(missed, 0, count)
            sides.append((lo, hi, above, count, k, missed))
        flags = self.bracket_flags(M, *sides[0][:2], *sides[1][:2])
        idx = xp.nonzero(flags)
        del flags
        vals = xp.abs(M[idx])
        out = []
        for axis, (lo, hi, above, count, k, missed) in zip((1, 0), sides, strict=True):
            seg, pos = (idx[0], idx[1]) if axis == 1 else (idx[1], idx[0])
            sel = (vals > lo[seg]) & (vals <= hi[seg])
            length = M.shape[axis]
            thr, cut = select_in_brackets(xp, seg[sel], pos[sel], vals[sel], above, count, k,
                                          length)  # fmt: skip
            redo = xp.flatnonzero(missed)
            if len(redo):
                again = xp.abs(M[redo] if axis == 1 else M[:, redo])
                thr[redo], cut[redo] = kth_largest(again, k, axis)
            out.append((thr, cut))
        return out[0], out[1]

    def bracket_counts(self, M, rlo, rhi, clo, chi):
        """Per row and per column of ``M``: entries whose magnitude is above the bracket
        ``(lo, hi]`` and inside it (int64 ``r_above, r_in, c_above, c_in``)."""
        xp = self.xp
        absM = xp.abs(M)
        above = absM > rhi[:, None]
        inside = (absM > rlo[:, None]) & ~above
        r_above, r_in = xp.count_nonzero(above, axis=1), xp.count_nonzero(inside, axis=1)
        above = absM > chi[None, :]
        inside = (absM > clo[None, :]) & ~above
        return r_above, r_in, xp.count_nonzero(above, axis=0), xp.count_nonzero(inside, axis=0)

    def bracket_flags(self, M, rlo, rhi, clo, chi):
        """Entries of ``M`` inside their row's or their column's bracket (bool)."""
        absM = self.xp.abs(M)
        by_row = (absM > rlo[:, None]) & (absM <= rhi[:, None])
        return by_row | ((absM > clo[None, :]) & (absM <= chi[None, :]))

    def _step(self, W, Sp, Wl, A, mask, thr, L, Lp, a, b, h, block):
        """``T_alpha`` on ``W``, then the numpy backend's gradient step on ``xp``."""
        xp = self.xp
        if thr is not None:
            self.apply_thresholds(W, thr)
        n = W.shape[1]
        VwT = (
            xp.zeros((0, n), dtype=W.dtype)
            if block is None
            else xp.ascontiguousarray(xp.asarray(block).T, dtype=W.dtype)
        )
        return _np_fused_rows(W, Sp, Wl, A, mask, None, L, Lp, a, b, h, VwT, xp=xp)

    def thresholds(self, W, k_row, k_col, rows=None, col_guess=None):
        """See :meth:`Backend.thresholds` (the columns selected ahead by :meth:`fused_step`
        when they are of this ``W`` and guess)."""
        ahead, self._next, self._k_col = self._next, None, k_col
        if (
            ahead is not None
            and rows is not None
            and ahead[0] is W
            and ahead[1] == k_col
            and ahead[2] is col_guess
        ):
            return (*rows, *ahead[3])
        absW = self.xp.abs(W)
        rows = kth_largest(absW, k_row, 1) if rows is None else rows
        return (*rows, *kth_largest(absW, k_col, 0, col_guess))

    def apply_thresholds(self, W, thr) -> None:
        """See :meth:`Backend.apply_thresholds` (every entry at once, no loop over ties)."""
        xp = self.xp
        rt, rc, ct, cc = (xp.asarray(t) for t in thr)
        m, n = W.shape
        absW = xp.abs(W)
        at = absW == rt[:, None]
        at &= xp.arange(n)[None, :] <= rc[:, None]
        keep = absW > rt[:, None]
        keep |= at
        at = absW == ct[None, :]
        at &= xp.arange(m)[:, None] <= cc[None, :]
        at |= absW > ct[None, :]
        keep &= at
        del absW, at
        xp.multiply(W, keep, out=W)

    def matmul(self, M, V):
        """See :meth:`Backend.matmul`."""
        return (M @ self.xp.asarray(V).astype(M.dtype, copy=False)).astype(self.xp.float64)

    def t_matmul(self, M, Q):
        """See :meth:`Backend.t_matmul`."""
        return (M.T @ self.xp.asarray(Q).astype(M.dtype, copy=False)).astype(self.xp.float64)

    def row_median(self, A, mask=None):
        """See :meth:`Backend.row_median`."""
        xp = self.xp
        if mask is None:
            return xp.median(A, axis=1)
        mask = xp.asarray(mask)
        seen = mask.any(axis=1, keepdims=True)  # rows with no observed entry: median 0
        return xp.nanmedian(xp.where(mask, A, xp.where(seen, xp.nan, 0)), axis=1)

    def warm_up(self, dtype: type = np.float32) -> None:
        """Run every kernel once on a tiny problem (CuPy compiles its kernels then)."""
        exercise(self, dtype)
