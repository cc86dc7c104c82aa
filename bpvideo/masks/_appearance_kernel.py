"""The compiled match of :meth:`bpvideo.masks.appearances.Appearances.unexplained` (numba,
a dependency; ``BPVIDEO_NUMBA=0`` turns it off); the numpy path computes the same answer
(tested)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from bpvideo import cores
from bpvideo.solvers.backends.compile_log import watch_compiles

watch_compiles()

__all__ = ["SPLIT_FROM", "unmatched"]

#: The fewest pixels per thread (the threads: :func:`bpvideo.cores.threads`, ``--threads``;
#: one in a thread of the pool that forms blocks of masks side by side).
SPLIT_FROM = 50_000


@numba.njit(cache=True, nogil=True)
def _unmatched(
    samples, valid, own_low, own_high, times, value, at, when, exclude, shifts, radius, need, out
):  # pragma: no cover - compiled
    C = samples.shape[0]
    K = samples.shape[2]
    count = 0
    for p in range(at.shape[0]):
        matches = 0
        for s in range(shifts.shape[0]):
            i = at[p] + shifts[s]
            near = True  # the neighbour's own samples can match (its envelope)
            for c in range(C):
                v = np.int32(value[p, c])
                if v < np.int32(own_low[i, c]) - radius or v > np.int32(own_high[i, c]) + radius:
                    near = False
                    break
            if not near:
                continue
            for k in range(K):
                if not valid[i, k] or abs(times[k] - when[p]) <= exclude:
                    continue
                close = True
                for c in range(C):
                    d = np.int32(samples[c, i, k]) - np.int32(value[p, c])
                    if d > radius or -d > radius:
                        close = False
                        break
                if close:
                    matches += 1
                    if matches >= need:
                        break
            if matches >= need:
                break
        if matches < need:
            out[count] = p
            count += 1
    return count


def unmatched(appearances, value: np.ndarray, at: np.ndarray, when: np.ndarray,
              shifts: np.ndarray, need: int) -> np.ndarray:  # fmt: skip
    """:meth:`~bpvideo.masks.appearances.Appearances._unmatched` of ``appearances``,
    compiled (the same parameters, the same answer: indices into ``at`` of the pixels
    fewer than ``need`` samples match, (q,) intp ndarray)."""
    a = appearances
    value = np.ascontiguousarray(value)
    when = when.astype(np.int64)
    times = a.times.astype(np.int64)
    radius = int(np.floor(a.radius))

    def part(lo: int, hi: int) -> np.ndarray:
        out = np.empty(hi - lo, dtype=np.intp)
        count = _unmatched(a.samples, a.valid, a.own_low, a.own_high, times, value[lo:hi],
                           at[lo:hi], when[lo:hi], a.exclude, shifts, radius, need,
                           out)  # fmt: skip
        return out[:count] + lo

    threads = min(cores.threads(), max(1, len(at) // SPLIT_FROM))
    if threads == 1:
        return part(0, len(at))
    bounds = np.linspace(0, len(at), threads + 1).astype(int)
    with ThreadPoolExecutor(threads) as pool:  # the kernel holds no interpreter lock
        parts = list(pool.map(part, bounds[:-1], bounds[1:]))
    return np.concatenate(parts)
