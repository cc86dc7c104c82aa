"""Fused per-iteration kernels of the best-pair solver: numba when available, numpy otherwise.

Both paths compute the same thing (tested against each other in tests/test_kernels.py):

- :func:`gradient_step`: from ``S, S_prev, L, L_prev, A`` (and the mask), write
  ``W_s = Sa - gamma/2 R`` over ``S_prev`` and ``W_l = La - gamma/2 R`` over ``L_prev`` in
  place, where ``Sa = S + a (S - S_prev)``, ``Sb = S + b (S - S_prev)`` (same for L) and
  ``R = P_Omega(Sb + Lb - A)``. The numba kernel also returns the row thresholds of
  ``T_alpha`` (the row is in cache) and ``||W_l||_F^2``.
- :func:`thresholds`: the ``k``-th largest magnitude of every row and column, with the
  index cut-off that breaks ties by index, so that exactly ``k`` entries pass.
- :func:`finish`: ``S_new = T_alpha(W_s)`` in place, and in the same pass the squared norms
  that the stopping rule needs: ``||S_new - S||``, ``||L_new - L||``, ``||S||``, ``||L||``
  and ``||P_Omega(A - L_new - S_new)||``.

The numba path is used when numba imports and ``BPVIDEO_NUMBA`` is not ``0``. Its kernels
are compiled on first use and cached on disk (``cache=True``); without a writable cache
they are compiled in each process (about a second or two).
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["HAVE_NUMBA", "finish", "gradient_step", "thresholds", "use_numba", "warm_up"]

try:  # pragma: no cover - depends on the environment
    if os.environ.get("BPVIDEO_NUMBA", "1") == "0":
        raise ImportError("disabled by BPVIDEO_NUMBA=0")
    import numba

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover
    numba = None
    HAVE_NUMBA = False


def use_numba(flag: bool | None = None) -> bool:
    """Whether the numba kernels are used (set it with ``flag``; returns the setting)."""
    global _USE
    if flag is not None:
        _USE = bool(flag) and HAVE_NUMBA
    return _USE


_USE = HAVE_NUMBA


# --- numpy path --------------------------------------------------------------------------


def _np_gradient_step(S, Sp, L, Lp, A, mask, a, b, h, scratch):
    dt = S.dtype.type
    np.subtract(S, Sp, out=Sp)  # dS
    np.subtract(L, Lp, out=Lp)  # dL
    np.add(Sp, Lp, out=scratch)
    scratch *= dt(b)
    scratch += S
    scratch += L
    scratch -= A  # R = Sb + Lb - A
    if mask is not None:
        np.multiply(scratch, mask, out=scratch)
    scratch *= dt(h)
    for X, dX in ((S, Sp), (L, Lp)):
        dX *= dt(a)
        dX += X
        dX -= scratch


def _ties_cut(absM: np.ndarray, thr: np.ndarray, k: int) -> np.ndarray:
    """Per row: index cut-off so that ``> thr`` plus ties with index ``<= cut`` count k."""
    n = absM.shape[1]
    cut = np.full(absM.shape[0], n, dtype=np.int64)
    greater = (absM > thr[:, None]).sum(axis=1)
    equal = (absM == thr[:, None]).sum(axis=1)
    need = k - greater
    for i in np.flatnonzero(equal > need):
        ties = np.flatnonzero(absM[i] == thr[i])
        cut[i] = ties[need[i] - 1]
    return cut


def _np_thresholds(W, k_row, k_col, scratch):
    m, n = W.shape
    absM = np.abs(W, out=scratch)
    part = scratch.copy() if k_row < n else None
    if part is None:
        row_thr = absM.min(axis=1)
    else:
        part.partition(n - k_row, axis=1)
        row_thr = part[:, n - k_row].copy()
        del part
    row_cut = _ties_cut(absM, row_thr, k_row)
    absT = np.ascontiguousarray(absM.T)
    if k_col < m:
        work = absT.copy()
        work.partition(m - k_col, axis=1)
        col_thr = work[:, m - k_col].copy()
        del work
    else:
        col_thr = absT.min(axis=1)
    col_cut = _ties_cut(absT, col_thr, k_col)
    return row_thr, row_cut, col_thr, col_cut


def _keep(absM: np.ndarray, thr: np.ndarray, cut: np.ndarray) -> np.ndarray:
    idx = np.arange(absM.shape[1])
    return (absM > thr[:, None]) | ((absM == thr[:, None]) & (idx[None, :] <= cut[:, None]))


def _np_finish(Ws, S, L, Ln, A, mask, rt, rc, ct, cc, scratch):
    absM = np.abs(Ws, out=scratch)
    keep = _keep(absM, rt, rc)
    keep &= _keep(absM.T, ct, cc).T
    np.multiply(Ws, keep, out=Ws)
    del keep
    sq = {}
    np.subtract(Ws, S, out=scratch)
    sq["dS"] = float(np.vdot(scratch, scratch))
    np.subtract(Ln, L, out=scratch)
    sq["dL"] = float(np.vdot(scratch, scratch))
    sq["S"] = float(np.vdot(S, S))
    sq["L"] = float(np.vdot(L, L))
    np.subtract(A, Ln, out=scratch)
    scratch -= Ws
    if mask is not None:
        np.multiply(scratch, mask, out=scratch)
    sq["E"] = float(np.vdot(scratch, scratch))
    return sq


# --- numba path --------------------------------------------------------------------------

if HAVE_NUMBA:  # pragma: no branch
    _jit = numba.njit(cache=True, nogil=True, fastmath=False)
    _pjit = numba.njit(cache=True, nogil=True, parallel=True, fastmath=False)

    @_jit
    def _select(buf, n, kth):
        """Value of rank ``kth`` (0-based, ascending) of ``buf[:n]``; reorders ``buf``."""
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
            if v > thr:
                greater += 1
            elif v == thr:
                equal += 1
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
    def _select_above(buf, hi, n, k, piv):
        """k-th largest of ``buf[:n]``, searched first among the entries above ``piv``.

        ``hi`` is scratch of length n. Exact for any pivot: when at least ``k`` entries
        exceed ``piv`` the k-th largest is among them (one compaction pass, then a
        selection on the few), otherwise the whole of ``buf`` is searched.
        """
        g = 0
        for j in range(n):
            v = buf[j]
            if v > piv:
                hi[g] = v
                g += 1
        if g >= k:
            return _select(hi, g, g - k)
        return _select(buf, n, n - k)

    def _nb_gradient_step_py(
        S, Sp, L, Lp, A, mask, has_mask, a, b, h, k_row, row_piv, row_thr, row_cut
    ):
        m, n = S.shape
        wl2 = 0.0
        for i in numba.prange(m):
            buf = np.empty(n, dtype=S.dtype)
            hi = np.empty(n, dtype=S.dtype)
            acc = 0.0
            for j in range(n):
                s = S[i, j]
                ds = s - Sp[i, j]
                l_ = L[i, j]
                dl = l_ - Lp[i, j]
                r = s + l_ + b * (ds + dl) - A[i, j]
                if has_mask and not mask[i, j]:
                    r = 0.0
                r = h * r
                ws = s + a * ds - r
                wl = l_ + a * dl - r
                Sp[i, j] = ws
                Lp[i, j] = wl
                buf[j] = abs(ws)
                acc += wl * wl
            wl2 += acc
            t = _select_above(buf, hi, n, k_row, row_piv[i])
            row_thr[i] = t
            row_cut[i] = _row_cut(Sp[i], t, k_row)
        return wl2

    def _nb_row_thresholds_py(W, k, thr, cut):
        m, n = W.shape
        for i in numba.prange(m):
            buf = np.empty(n, dtype=W.dtype)
            for j in range(n):
                buf[j] = abs(W[i, j])
            t = _select(buf, n, n - k)
            thr[i] = t
            cut[i] = _row_cut(W[i], t, k)

    def _nb_col_thresholds_py(W, k, piv, thr, cut, block):
        m, n = W.shape
        nblocks = (n + block - 1) // block
        for bi in numba.prange(nblocks):
            j0 = bi * block
            j1 = min(n, j0 + block)
            width = j1 - j0
            # entries above each column's pivot (a guess of its threshold: the previous
            # iteration's, a little lower), gathered row by row along contiguous rows
            buf = np.empty((width, m), dtype=W.dtype)
            cnt = np.zeros(width, dtype=np.int64)
            for i in range(m):
                for jj in range(width):
                    v = abs(W[i, j0 + jj])
                    if v > piv[j0 + jj]:
                        buf[jj, cnt[jj]] = v
                        cnt[jj] += 1
            for jj in range(width):
                col = buf[jj]
                g = cnt[jj]
                if g < k:  # the pivot was too high: search the whole column (exact)
                    for i in range(m):
                        col[i] = abs(W[i, j0 + jj])
                    g = m
                t = _select(col, g, g - k)
                thr[j0 + jj] = t
                # ties: every entry >= t is among the g gathered (t > pivot); the row order
                # is only needed when there are more ties than places, which is rare
                greater = 0
                equal = 0
                for i in range(g):
                    v = col[i]
                    if v > t:
                        greater += 1
                    elif v == t:
                        equal += 1
                need = k - greater
                c = m
                if equal > need:
                    seen = 0
                    for i in range(m):
                        if abs(W[i, j0 + jj]) == t:
                            seen += 1
                            if seen == need:
                                c = i
                                break
                cut[j0 + jj] = c

    def _nb_finish_py(Ws, S, L, Ln, A, mask, has_mask, rt, rc, ct, cc):
        m, n = Ws.shape
        ds2 = 0.0
        dl2 = 0.0
        s2 = 0.0
        l2 = 0.0
        e2 = 0.0
        for i in numba.prange(m):
            t = rt[i]
            c = rc[i]
            a_ds = 0.0
            a_dl = 0.0
            a_s = 0.0
            a_l = 0.0
            a_e = 0.0
            for j in range(n):
                w = Ws[i, j]
                v = abs(w)
                keep = (v > t or (v == t and j <= c)) and (v > ct[j] or (v == ct[j] and i <= cc[j]))
                snew = w if keep else 0.0
                Ws[i, j] = snew
                s = S[i, j]
                l_ = L[i, j]
                ln = Ln[i, j]
                d = snew - s
                a_ds += d * d
                d = ln - l_
                a_dl += d * d
                a_s += s * s
                a_l += l_ * l_
                e = A[i, j] - ln - snew
                if has_mask and not mask[i, j]:
                    e = 0.0
                a_e += e * e
            ds2 += a_ds
            dl2 += a_dl
            s2 += a_s
            l2 += a_l
            e2 += a_e
        return ds2, dl2, s2, l2, e2

    # One compiled (and disk-cached) parallel variant of each kernel; small problems run
    # it on one thread (a second, serial variant of the same function would share its
    # cache entry and be recompiled in every process).
    _PARALLEL = {
        "gradient_step": _pjit(_nb_gradient_step_py),
        "row_thresholds": _pjit(_nb_row_thresholds_py),
        "col_thresholds": _pjit(_nb_col_thresholds_py),
        "finish": _pjit(_nb_finish_py),
    }

#: Matrices with fewer entries run the kernels on one thread (thread start-up and
#: barriers cost more than they save on small problems, more so on a busy machine).
PARALLEL_MIN_SIZE = 1 << 20


def _k(name: str, size: int):
    threads = numba.config.NUMBA_NUM_THREADS if size >= PARALLEL_MIN_SIZE else 1
    if numba.get_num_threads() != threads:
        numba.set_num_threads(threads)
    return _PARALLEL[name]


_NO_MASK = np.ones((1, 1), dtype=bool)


# --- dispatch ----------------------------------------------------------------------------


def gradient_step(S, Sp, L, Lp, A, mask, a, b, h, k_row, scratch=None, row_guess=None):
    """Write ``W_s`` over ``Sp`` and ``W_l`` over ``Lp``; see the module docstring.

    ``row_guess`` (numba path): a guess of the row thresholds (the previous iteration's);
    it only speeds up the selection, the result is exact whatever it is.

    Returns
    -------
    row thresholds or None
        ``(row_thr, row_cut)`` of ``T_alpha`` on ``W_s`` from the numba path (None from
        the numpy path, which needs ``scratch``, an m x n buffer).
    """
    if _USE:
        m = S.shape[0]
        rt = np.empty(m, dtype=S.dtype)
        rc = np.empty(m, dtype=np.int64)
        has = mask is not None
        _k("gradient_step", S.size)(
            S,
            Sp,
            L,
            Lp,
            A,
            mask if has else _NO_MASK,
            has,
            a,
            b,
            h,
            k_row,
            _pivots(row_guess, m, S.dtype),
            rt,
            rc,
        )
        return rt, rc
    _np_gradient_step(S, Sp, L, Lp, A, mask, a, b, h, scratch)
    return None


def _pivots(guess, size, dtype):
    """Selection pivots from threshold guesses: a little below them (-1: no guess)."""
    if guess is None:
        return np.full(size, -1.0, dtype=dtype)
    return (np.asarray(guess) * PIVOT_MARGIN).astype(dtype) - dtype.type(1e-30)


#: Pivots are the previous thresholds times this: low enough that usually at least k
#: entries are above it, so the selection runs on about k entries instead of all.
PIVOT_MARGIN = 0.97


def thresholds(W, k_row, k_col, rows=None, scratch=None, col_guess=None):
    """Row and column thresholds of ``T_alpha``: ``(row_thr, row_cut, col_thr, col_cut)``.

    Entry ``(i, j)`` is among the ``k_row`` largest magnitudes of its row when
    ``|W_ij| > row_thr[i]``, or ``|W_ij| == row_thr[i]`` and ``j <= row_cut[i]`` (ties broken
    by index, so exactly ``k_row`` entries pass); the same for columns. ``rows`` reuses
    row thresholds already computed; ``col_guess`` (numba path) is a guess of the column
    thresholds that speeds up the selection without changing its result.
    """
    m, n = W.shape
    if _USE:
        if rows is None:
            rt = np.empty(m, dtype=W.dtype)
            rc = np.empty(m, dtype=np.int64)
            _k("row_thresholds", W.size)(W, k_row, rt, rc)
        else:
            rt, rc = rows
        ct = np.empty(n, dtype=W.dtype)
        cc = np.empty(n, dtype=np.int64)
        _k("col_thresholds", W.size)(W, k_col, _pivots(col_guess, n, W.dtype), ct, cc, 16)
        return rt, rc, ct, cc
    if scratch is None:
        scratch = np.empty_like(W)
    return _np_thresholds(W, k_row, k_col, scratch)


def finish(Ws, S, L, Ln, A, mask, thr, scratch=None):
    """``Ws <- T_alpha(Ws)`` in place, and the squared norms of the stopping rule.

    Returns
    -------
    dict
        ``dS``, ``dL``, ``S``, ``L``, ``E``: squared Frobenius norms of ``S_new - S``,
        ``L_new - L``, ``S``, ``L`` and ``P_Omega(A - L_new - S_new)``.
    """
    rt, rc, ct, cc = thr
    if _USE:
        has = mask is not None
        ds2, dl2, s2, l2, e2 = _k("finish", Ws.size)(
            Ws, S, L, Ln, A, mask if has else _NO_MASK, has, rt, rc, ct, cc
        )
        return {"dS": ds2, "dL": dl2, "S": s2, "L": l2, "E": e2}
    if scratch is None:
        scratch = np.empty_like(Ws)
    return _np_finish(Ws, S, L, Ln, A, mask, rt, rc, ct, cc, scratch)


def warm_up(dtype: type = np.float32) -> None:
    """Load (or compile) the numba kernels for ``dtype`` now, on a tiny problem."""
    if not _USE:
        return
    z = np.zeros((4, 4), dtype=dtype)
    S, Sp, L, Lp, A = (z.copy() for _ in range(5))
    rows = gradient_step(S, Sp, L, Lp, A, None, 0.5, 0.5, 0.5, 1)
    thr = thresholds(Sp, 1, 1, rows=rows)
    thresholds(Sp, 1, 1)
    finish(Sp, S, L, Lp, A, None, thr)
