"""The numba backend: compiled kernels of the best-pair solver (numba: a dependency since
issue 39; ``BPVIDEO_NUMBA=0`` turns it off).

See :mod:`bpvideo.solvers.backends` for what each kernel computes; the numpy backend is
the reference, and tests compare the two. The kernels (:mod:`._numba_kernels`) are
compiled on first use and cached on disk (``cache=True``); without a writable cache they
are compiled in each process (a few seconds). They are serial, each over a range of its
rows (or chunks, or columns): :func:`_run` splits the range among ``--threads`` threads
(numba's ``parallel=True`` did the same split at three times the compilation).
Reductions are compiled with ``fastmath={"reassoc", "contract"}`` so that they
vectorize: sums are then accumulated in another order than numpy's, which changes
results at the level of rounding only. Besides the thresholds of the current ``W``,
:meth:`NumbaBackend.fused_step` returns the row thresholds of the next ``W_s`` (its row
is in cache) and the first product of the rank-r projection.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise

import numpy as np

from bpvideo import cores
from bpvideo.solvers.backends.base import exercise, keep_all

__all__ = ["PARALLEL_MIN_SIZE", "NumbaBackend"]

#: Selection brackets are the previous thresholds times this and divided by it: wide
#: enough that the new threshold is usually inside (the per-column thresholds of a video
#: move by less than 1 % between iterations, per-row ones by a few per cent), narrow
#: enough that few entries fall inside, so the selection runs on those few.
PIVOT_MARGIN = 0.95


_NUMBA = None


def _numba():
    """The numba kernel module, imported on first use (numba's import costs ~0.3 s)."""
    global _NUMBA
    if _NUMBA is None:
        from bpvideo.solvers.backends import _numba_kernels

        _NUMBA = _numba_kernels
    return _NUMBA


#: Matrices with fewer entries run the kernels on one thread (thread start-up and
#: barriers cost more than they save on small problems, more so on a busy machine).
PARALLEL_MIN_SIZE = 1 << 20


def _threads(size: int) -> int:
    """Threads the kernels use on a matrix of ``size`` entries (at most ``--threads``:
    :func:`bpvideo.cores.threads`)."""
    if size < PARALLEL_MIN_SIZE:
        return 1
    return max(1, min(_numba().numba.config.NUMBA_NUM_THREADS, cores.threads()))


_POOL: list[ThreadPoolExecutor] = []
_POOL_LOCK = threading.Lock()
# A forked child has none of the parent's threads: it makes its own pool.
os.register_at_fork(after_in_child=_POOL.clear)


def _pool(workers: int) -> ThreadPoolExecutor:
    """A thread pool of at least ``workers`` threads, kept for the process."""
    with _POOL_LOCK:
        if not _POOL or _POOL[0]._max_workers < workers:
            _POOL[:] = [ThreadPoolExecutor(workers, thread_name_prefix="bpvideo-kernel")]
        return _POOL[0]


def _run(name: str, size: int, total: int, *args) -> None:
    """Kernel ``name`` over ``range(total)`` (its rows, chunks or columns), split in
    contiguous parts among :func:`_threads` threads: the caller's, and the others from a
    pool (the kernels hold no interpreter lock). Each index is computed alone, whatever
    the split, so the result does not depend on the number of threads."""
    kernel = getattr(_numba(), name)
    parts = min(_threads(size), total)
    if parts <= 1:
        kernel(*args, 0, total)
        return
    bounds = [part * total // parts for part in range(parts + 1)]
    pool = _pool(parts - 1)
    futures = [pool.submit(kernel, *args, lo, hi) for lo, hi in pairwise(bounds[1:])]
    kernel(*args, bounds[0], bounds[1])
    for future in futures:
        future.result()


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


def _nb_col_thresholds(W, k_col, col_guess):
    """Column thresholds and cut-offs of ``T_alpha``."""
    m, n = W.shape
    ct = np.empty(n, dtype=W.dtype)
    cc = np.empty(n, dtype=np.int64)
    margin = PIVOT_MARGIN
    if col_guess is None and m >= 64 * SAMPLE_STEP and k_col >= 8 * SAMPLE_STEP:
        # no guess: the thresholds of every SAMPLE_STEP-th row, with a wider bracket
        sub = np.ascontiguousarray(W[::SAMPLE_STEP])
        col_guess = _nb_col_thresholds(sub, max(1, round(k_col * sub.shape[0] / m)), None)[0]
        margin = SAMPLE_MARGIN
    lo, hi = _bracket(col_guess, n, W.dtype, margin)
    _run("col_thresholds", W.size, n, W, k_col, lo, hi, ct, cc)
    return ct, cc


class NumbaBackend:
    """The kernels compiled by numba (see :class:`bpvideo.solvers.backends.Backend`)."""

    name = "numba"
    xp = np

    def fused_step(self, W, Sp, Wl, A, mask, thr, L, Lp, a, b, h, k_row, block=None,
                   row_guess=None, Y=None):  # fmt: skip
        """See :meth:`Backend.fused_step`; also returns the row thresholds of the new
        ``W_s``."""
        m, n = W.shape
        dtype = W.dtype
        VwT = (
            np.zeros((0, n), dtype=dtype)
            if block is None
            else np.ascontiguousarray(block.T, dtype=dtype)
        )
        if thr is None:
            thr = keep_all((m, n), dtype)
        rt, rc = np.empty(m, dtype=dtype), np.empty(m, dtype=np.int64)
        if Y is None or Y.shape != (m, VwT.shape[0]):
            Y = np.empty((m, VwT.shape[0]), dtype=np.float64)
        has = mask is not None
        sums = np.empty((min(m, 64), 5), dtype=np.float64)
        _run(
            "fused", W.size, sums.shape[0], W, Sp, Wl, A, mask if has else _NO_MASK, has,
            *_factors_or_dense(L, dtype), *_factors_or_dense(Lp, dtype), *thr,
            dtype.type(a), dtype.type(b), dtype.type(h), k_row,
            *_bracket(row_guess, m, dtype), VwT, rt, rc, Y, sums,
        )  # fmt: skip
        ds2, dl2, s2, l2, e2 = (float(v) for v in sums.sum(axis=0))
        sq = {"dS": ds2, "dL": dl2, "S": s2, "L": l2, "E": e2}
        return sq, (Y if block is not None else None), (rt, rc)

    def thresholds(self, W, k_row, k_col, rows=None, col_guess=None):
        """See :meth:`Backend.thresholds`."""
        if rows is None:
            rt = np.empty(W.shape[0], dtype=W.dtype)
            rc = np.empty(W.shape[0], dtype=np.int64)
            _run("row_thresholds", W.size, W.shape[0], W, k_row, rt, rc)
        else:
            rt, rc = rows
        return (rt, rc, *_nb_col_thresholds(W, k_col, col_guess))

    def apply_thresholds(self, W, thr) -> None:
        """See :meth:`Backend.apply_thresholds`."""
        _run("apply", W.size, W.shape[0], W, *thr)

    def matmul(self, M, V):
        """See :meth:`Backend.matmul`."""
        Y = np.empty((M.shape[0], V.shape[1]), dtype=np.float64)
        _run("matmul", M.size, M.shape[0], M, np.ascontiguousarray(V.T, dtype=M.dtype), Y)
        return Y

    def t_matmul(self, M, Q):
        """See :meth:`Backend.t_matmul`."""
        chunks = 8 if M.size >= PARALLEL_MIN_SIZE else 1
        out = np.empty((chunks, Q.shape[1], M.shape[1]), dtype=np.float64)
        _run("t_matmul", M.size, chunks, M, np.ascontiguousarray(Q, dtype=M.dtype), out)
        return out.sum(axis=0).T

    def row_median(self, A, mask=None):
        """See :meth:`Backend.row_median`."""
        out = np.empty(A.shape[0], dtype=np.float64)
        has = mask is not None
        _run("row_median", A.size, A.shape[0], A, mask if has else _NO_MASK, has, out)
        return out

    def warm_up(self, dtype: type = np.float32) -> None:
        """Load (or compile, once: then cached on disk) the kernels for ``dtype`` now, on
        a tiny problem."""
        exercise(self, dtype)
