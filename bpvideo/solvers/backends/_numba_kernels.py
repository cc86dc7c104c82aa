"""The numba kernels of :mod:`bpvideo.solvers.backends.numba` (imported on first use).

Each kernel is compiled on first use and cached on disk (``cache=True``); without a
writable cache it is compiled in each process (a few seconds). The public kernels take
the range of their rows (or chunks, or columns) to compute, as two last arguments.
Reductions are compiled with ``fastmath={"reassoc", "contract"}`` so that they
vectorize. See :mod:`bpvideo.solvers.backends` for what each computes; the numpy backend
is the reference.
"""

from __future__ import annotations

import numba
import numpy as np

from bpvideo.solvers.backends.compile_log import watch_compiles

watch_compiles()  # a compilation (the first run after an install) is logged, not silent

_jit = numba.njit(cache=True, nogil=True, fastmath=False)
_FAST = {"reassoc", "contract"}
# Serial kernels over a range of their rows (or chunks, or columns), run side by side by
# threads of :mod:`bpvideo.solvers.backends.numba` (they hold no interpreter lock): the
# same work as numba's ``parallel=True`` and ``prange`` over the whole range, for a third
# of the compilation (20 -> 7 CPU seconds, the first run after an install; issue 39).
_kjit = numba.njit(cache=True, nogil=True, fastmath=_FAST)


@_jit
def _select(buf, n, kth):
    """Value of rank ``kth`` (0-based, ascending) of ``buf[:n]``; reorders ``buf``.

    On return every entry of ``buf[:kth]`` is <= the value (quickselect).
    """
    lo = 0
    hi = n - 1
    while hi > lo:
        mid = (lo + hi) >> 1
        # median of three to the position hi
        a = buf[lo]
        b = buf[mid]
        c = buf[hi]
        if (a <= b <= c) or (c <= b <= a):
            buf[mid], buf[hi] = buf[hi], buf[mid]
        elif (b <= a <= c) or (c <= a <= b):
            buf[lo], buf[hi] = buf[hi], buf[lo]
        pivot = buf[hi]
        store = lo
        for i in range(lo, hi):
            if buf[i] < pivot:
                buf[store], buf[i] = buf[i], buf[store]
                store += 1
        buf[store], buf[hi] = buf[hi], buf[store]
        # everything equal to the pivot next to it: skip them (many ties, e.g. zeros)
        eq = store + 1
        for i in range(store + 1, hi + 1):
            if buf[i] == pivot:
                buf[eq], buf[i] = buf[i], buf[eq]
                eq += 1
        if kth < store:
            hi = store - 1
        elif kth < eq:
            return pivot
        else:
            lo = eq
    return buf[lo]


@_jit
def _row_cut(row, thr, k):
    n = row.shape[0]
    greater = 0
    equal = 0
    for j in range(n):
        v = abs(row[j])
        greater += v > thr
        equal += v == thr
    need = k - greater
    if equal <= need:
        return n
    seen = 0
    for j in range(n):
        if abs(row[j]) == thr:
            seen += 1
            if seen == need:
                return j
    return n  # pragma: no cover


@_jit
def _kth_bracket(vals, n, k, lo, hi, buf):
    """k-th largest of ``vals[:n]`` (>= 0), searched first among those in ``(lo, hi]``.

    Returns ``(t, greater, equal)``: the value and how many entries are above it and
    equal to it. ``buf`` is scratch of length n. Exact whatever the bracket: when
    fewer than k entries exceed ``lo`` or k entries exceed ``hi`` (the guess was off),
    the whole of ``vals`` is searched. A good bracket (the previous iteration's
    threshold, widened by a few per cent) holds a few entries: one counting pass,
    then a selection on those few.
    """
    above = 0
    g = 0
    for j in range(n):
        v = vals[j]
        above += v > hi
        if v > lo and v <= hi:  # rare: the branch is predicted
            buf[g] = v
            g += 1
    if not (above < k <= above + g):
        for j in range(n):
            buf[j] = vals[j]
        g = n
        above = 0
    t = _select(buf, g, g - (k - above))
    greater = above
    equal = 0
    for j in range(g):
        v = buf[j]
        greater += v > t
        equal += v == t
    return t, greater, equal


@_jit
def _tie_cut(vals, n, t, need):
    """Index of the ``need``-th entry equal to ``t`` in ``vals[:n]`` (n if none)."""
    seen = 0
    for j in range(n):
        if vals[j] == t:
            seen += 1
            if seen == need:
                return j
    return n  # pragma: no cover


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def _low_rank_row(out, D, dense, U, VT, i):
    """Row ``i`` of L into ``out``: from the dense ``D``, or from its factors ``U VT``."""
    n = out.shape[0]
    if dense:
        for j in range(n):
            out[j] = D[i, j]
        return
    for j in range(n):
        out[j] = 0
    for q in range(U.shape[1]):
        u = U[i, q]
        for j in range(n):
            out[j] += u * VT[q, j]


@_kjit
def fused(
    W,
    Sp,
    Wl,
    A,
    mask,
    has_mask,
    LkD,
    dense_k,
    U,
    VT,
    LpD,
    dense_p,
    Up,
    VpT,
    rt,
    rc,
    ct,
    cc,
    a,
    b,
    h,
    k_row,
    row_lo,
    row_hi,
    VwT,
    out_rt,
    out_rc,
    Y,
    sums,
    lo,
    hi,
):
    """Chunks ``lo`` to ``hi`` of the fused step (of ``sums.shape[0]`` chunks of rows)."""
    m, n = W.shape
    p = VwT.shape[0]
    zero = W.dtype.type(0)
    chunks = sums.shape[0]
    # Rows in chunks (one set of row buffers each); each row in short loops over few
    # arrays, so that they vectorize.
    for ch in range(lo, hi):
        lk = np.empty(n, dtype=W.dtype)
        lp = np.empty(n, dtype=W.dtype)
        sk = np.empty(n, dtype=W.dtype)
        buf = np.empty(n, dtype=W.dtype)
        sel = np.empty(n, dtype=W.dtype)
        ok = np.empty(n, dtype=np.bool_)
        c_ds = 0.0
        c_dl = 0.0
        c_s = 0.0
        c_l = 0.0
        c_e = 0.0
        for i in range(ch * m // chunks, (ch + 1) * m // chunks):
            _low_rank_row(lk, LkD, dense_k, U, VT, i)
            _low_rank_row(lp, LpD, dense_p, Up, VpT, i)
            # S_k = T_alpha(W_s) on this row
            Wi = W[i]
            t = rt[i]
            c = rc[i]
            for j in range(n):
                w = Wi[j]
                v = abs(w)
                keep = ((v > t) | ((v == t) & (j <= c))) & (
                    (v > ct[j]) | ((v == ct[j]) & (i <= cc[j]))
                )
                sk[j] = w if keep else zero
            for j in range(n):
                Wi[j] = sk[j]
            if has_mask:  # unobserved entries: R = 0, and no residual
                for j in range(n):
                    ok[j] = mask[i, j]
            else:
                for j in range(n):
                    ok[j] = True
            # measure Y_k and take the gradient step of k + 1
            Spi = Sp[i]
            Wli = Wl[i]
            Ai = A[i]
            a_ds = 0.0
            a_dl = 0.0
            a_s = 0.0
            a_l = 0.0
            a_e = 0.0
            for j in range(n):
                s = sk[j]
                sp = Spi[j]
                l_ = lk[j]
                lq = lp[j]
                ds = s - sp
                dl = l_ - lq
                x = Ai[j]
                o = ok[j]
                r = s + l_ + b * (ds + dl) - x
                e = x - l_ - s
                r = h * r if o else zero
                e = e if o else zero
                Spi[j] = s + a * ds - r
                Wli[j] = l_ + a * dl - r
                a_ds += ds * ds
                a_dl += dl * dl
                a_s += sp * sp
                a_l += lq * lq
                a_e += e * e
            c_ds += a_ds
            c_dl += a_dl
            c_s += a_s
            c_l += a_l
            c_e += a_e
            # first product of the rank-r projection: Y = W_l V
            for q in range(p):
                acc = 0.0
                for j in range(n):
                    acc += Wli[j] * VwT[q, j]
                Y[i, q] = acc
            # row threshold of T_alpha on the new W_s
            for j in range(n):
                buf[j] = abs(Spi[j])
            tv, greater, equal = _kth_bracket(buf, n, k_row, row_lo[i], row_hi[i], sel)
            out_rt[i] = tv
            need = k_row - greater
            if equal > need:
                for j in range(n):
                    buf[j] = abs(Spi[j])
                out_rc[i] = _tie_cut(buf, n, tv, need)
            else:
                out_rc[i] = n
        # per-chunk sums, added up in a fixed order by the caller (deterministic)
        sums[ch, 0] = c_ds
        sums[ch, 1] = c_dl
        sums[ch, 2] = c_s
        sums[ch, 3] = c_l
        sums[ch, 4] = c_e


@_kjit
def row_thresholds(W, k, thr, cut, lo, hi):
    """Rows ``lo`` to ``hi``: their thresholds and cut-offs."""
    n = W.shape[1]
    for i in range(lo, hi):
        buf = np.empty(n, dtype=W.dtype)
        for j in range(n):
            buf[j] = abs(W[i, j])
        t = _select(buf, n, n - k)
        thr[i] = t
        cut[i] = _row_cut(W[i], t, k)


@_kjit
def col_thresholds(W, k, lo, hi, thr, cut, j0, j1):
    """Columns ``j0`` to ``j1`` (one group): their thresholds and cut-offs."""
    m = W.shape[0]
    cap = min(m, 2 * k + 64)
    width = j1 - j0
    # The group streams along the rows (contiguous reads), counting
    # the entries of each column above its bracket and gathering those inside it
    # (see _kth_bracket; a full bracket falls back to the whole column).
    buf = np.empty((width, cap), dtype=W.dtype)
    cnt = np.zeros(width, dtype=np.int64)
    above = np.zeros(width, dtype=np.int64)
    lo_ = lo[j0:j1].copy()
    hi_ = hi[j0:j1].copy()
    for i in range(m):
        Wi = W[i]
        for jj in range(width):
            v = abs(Wi[j0 + jj])
            above[jj] += v > hi_[jj]
            if v > lo_[jj] and v <= hi_[jj]:
                g = cnt[jj]
                if g < cap:
                    buf[jj, g] = v
                    cnt[jj] = g + 1
    col = np.empty(m, dtype=W.dtype)
    for jj in range(width):
        g = cnt[jj]
        up = above[jj]
        if g < cap and up < k <= up + g:
            vals = buf[jj]
        else:  # the guess was off: the whole column
            for i in range(m):
                col[i] = abs(W[i, j0 + jj])
            vals = col
            g = m
            up = 0
        t = _select(vals, g, g - (k - up))
        thr[j0 + jj] = t
        greater = up
        equal = 0
        for i in range(g):
            v = vals[i]
            greater += v > t
            equal += v == t
        need = k - greater
        c = m
        if equal > need:  # more ties than places: the row order breaks them
            seen = 0
            for i in range(m):
                if abs(W[i, j0 + jj]) == t:
                    seen += 1
                    if seen == need:
                        c = i
                        break
        cut[j0 + jj] = c


@_kjit
def apply(W, rt, rc, ct, cc, lo, hi):
    """``T_alpha`` on rows ``lo`` to ``hi``, in place."""
    n = W.shape[1]
    zero = W.dtype.type(0)
    for i in range(lo, hi):
        t = rt[i]
        c = rc[i]
        for j in range(n):
            w = W[i, j]
            v = abs(w)
            keep = ((v > t) | ((v == t) & (j <= c))) & ((v > ct[j]) | ((v == ct[j]) & (i <= cc[j])))
            W[i, j] = w if keep else zero


@_kjit
def matmul(M, VT, Y, lo, hi):
    """Rows ``lo`` to ``hi`` of ``M V``."""
    n = M.shape[1]
    p = VT.shape[0]
    for i in range(lo, hi):
        for q in range(p):
            acc = 0.0
            for j in range(n):
                acc += M[i, j] * VT[q, j]
            Y[i, q] = acc


@_kjit
def t_matmul(M, Q, out, lo, hi):
    """Chunks ``lo`` to ``hi`` (of ``out.shape[0]``) of ``M^T Q``, one partial sum each."""
    m, n = M.shape
    p = Q.shape[1]
    chunks = out.shape[0]
    for ci in range(lo, hi):
        i0 = ci * m // chunks
        i1 = (ci + 1) * m // chunks
        acc = out[ci]
        for q in range(p):
            for j in range(n):
                acc[q, j] = 0.0
        for i in range(i0, i1):
            for q in range(p):
                y = Q[i, q]
                for j in range(n):
                    acc[q, j] += y * M[i, j]


@_kjit
def row_median(A, mask, has_mask, out, lo, hi):
    """Rows ``lo`` to ``hi``: their medians (of the observed entries)."""
    n = A.shape[1]
    for i in range(lo, hi):
        buf = np.empty(n, dtype=A.dtype)
        # int64 from the start: a literal 0 would also compile _select for Literal[int](0)
        g = np.int64(0)
        for j in range(n):
            if not has_mask or mask[i, j]:
                buf[g] = A[i, j]
                g += 1
        if g == 0:
            out[i] = 0.0
            continue
        half = g // 2
        upper = _select(buf, g, half)
        if g % 2:
            out[i] = upper
        else:
            lower = buf[0]
            for j in range(1, half):
                lower = max(lower, buf[j])
            out[i] = (lower + upper) / 2
