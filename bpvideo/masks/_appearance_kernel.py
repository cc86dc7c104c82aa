"""The compiled kernel of :meth:`bpvideo.masks.appearances.Appearances.unexplained`
(numba, optional: ``bpvideo[fast]``); the numpy path computes the same answer."""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["unexplained"]


@numba.njit(cache=True, nogil=True, parallel=True)
def _unexplained(
    samples,
    valid,
    low,
    high,
    times,
    frames,
    candidates,
    first,
    exclude,
    shifts,
    radius,
    need,
    out,
):  # pragma: no cover - compiled
    n, H, W = candidates.shape
    K = samples.shape[1]
    C = samples.shape[2]
    for row in numba.prange(n * H):
        j = row // H
        y = row % H
        t = first + j
        for x in range(W):
            if not candidates[j, y, x]:
                continue
            p = y * W + x
            inside = True
            for c in range(C):
                v = np.float32(frames[j, p, c])
                if v < np.float32(low[p, c]) - radius or v > np.float32(high[p, c]) + radius:
                    inside = False
                    break
            if not inside:
                out[j, y, x] = True
                continue
            at = p + (p // W) * 2 + W + 3
            matches = 0
            for s in range(shifts.shape[0]):
                i = at + shifts[s]
                for k in range(K):
                    if not valid[i, k] or abs(times[k] - t) <= exclude:
                        continue
                    close = True
                    for c in range(C):
                        d = np.int32(samples[i, k, c]) - np.int32(frames[j, p, c])
                        if d > radius or -d > radius:
                            close = False
                            break
                    if close:
                        matches += 1
                        if matches >= need:
                            break
                if matches >= need:
                    break
            out[j, y, x] = matches < need


def unexplained(appearances, frames: np.ndarray, candidates: np.ndarray, first: int,
                shifts: np.ndarray, need: int) -> np.ndarray:  # fmt: skip
    """:meth:`~bpvideo.masks.appearances.Appearances.unexplained`, compiled.

    Parameters
    ----------
    appearances : Appearances
    frames : (n, H * W, C) uint8 ndarray
    candidates : (n, H, W) bool ndarray
    first : int
    shifts : (s,) intp ndarray
        Offsets of the neighbours in the padded frame (the pixel itself first).
    need : int
        Matches that explain a pixel.

    Returns
    -------
    (n, H, W) bool ndarray
    """
    a = appearances
    out = np.zeros(candidates.shape, dtype=np.bool_)
    _unexplained(a.samples, a.valid, a.low, a.high, a.times.astype(np.int64),
                 np.ascontiguousarray(frames), np.ascontiguousarray(candidates), first,
                 a.exclude, shifts, np.float32(a.radius), need, out)  # fmt: skip
    return out
