"""The global light of each frame: a gain (and offset) against a reference image.

Light changes the whole frame at once (clouds, a camera's exposure); objects change a
part. Both fits here are robust to what covers the frame: they start from entries known
to be background (a pixel's still frames) and refine over the entries that agree.
"""

from __future__ import annotations

import numpy as np

from bpvideo import cores
from bpvideo.background import tuning
from bpvideo.masks.thresholds import MAD_SCALE
from bpvideo.robust import masked_median
from bpvideo.solvers.backends import get_backend

__all__ = ["fit_light", "light_base", "mode_ratio", "still_light"]

#: Robust re-weighting passes of the per-frame fits.
_FIT_PASSES = 3


def fit_light(
    data: np.ndarray,
    reference: np.ndarray,
    *,
    still: np.ndarray | None = None,
    noise: float | None = None,
    passes: int = _FIT_PASSES,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Each frame as ``gain * reference + offset``: the global light, fitted robustly.

    The first pass is a least-squares fit over the frame's still entries (background,
    however much of the frame is covered; a fit started from all entries would follow an
    object that covers most of the frame), the next ones over the entries within 2.5
    noise levels of the current fit. A frame with fewer than :data:`_MIN_FIT` still
    entries starts from ``gain = 1`` and its median difference.

    Parameters
    ----------
    data : (m, n) ndarray
        Frames as columns.
    reference : (m,) ndarray
    still : (m, n) bool ndarray, optional
        :func:`still_entries`; the noise level is measured on them (1.4826 x the MAD of
        the residual, at least 0.5 grey levels) when ``noise`` is not given.
    noise : float, optional
    passes : int
        Re-weighting passes after the first fit (0: the noise level is all the caller
        needs; it is measured before them).

    Returns
    -------
    gain, offset : (n,) float32 ndarray
    noise : float
    """
    A = np.asarray(data, dtype=np.float32)
    b = np.asarray(reference, dtype=np.float32)
    m, n = A.shape
    gain = np.ones(n, dtype=np.float32)
    buffers = None
    if still is not None and still.any():
        # the median start is needed only by the frames the still entries cannot fit
        # (a median of every column costs more than the fit itself)
        offset = np.zeros(n, dtype=np.float32)
        buffers = _weights(A, still)
        gain, offset, fitted = _weighted_line(b, *buffers, gain, offset)
        unfit = np.flatnonzero(~fitted)
        if unfit.size:
            offset[unfit] = _median_offset(A[:, unfit], b)
    else:
        offset = _median_offset(A, b)
    resid = np.empty((m, n), dtype=np.float32)

    def residual(lo: int, hi: int) -> None:
        np.subtract(A[lo:hi], b[lo:hi, None] * gain + offset, out=resid[lo:hi])

    cores.by_rows(residual, *A.shape)
    if noise is None:
        noise = _mad_noise(resid[still] if still is not None and still.any() else resid.ravel())
    noise = max(0.5, noise)
    for p in range(passes):
        # the residual of the previous pass's fit, then its agreeing entries (the last
        # pass's residual is not formed: nothing reads it)
        light = None if p == 0 else (gain, offset)
        buffers = _agreeing(A, b, resid, 2.5 * noise, light, buffers)
        gain, offset, _ = _weighted_line(b, *buffers, gain, offset)
    return gain, offset, noise


def _weights(A: np.ndarray, entries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``entries`` as float32 weights, and the weights times ``A``: two (m, n) float32."""
    weights = np.empty(A.shape, dtype=np.float32)
    product = np.empty(A.shape, dtype=np.float32)

    def rows(lo: int, hi: int) -> None:
        weights[lo:hi] = entries[lo:hi]
        np.multiply(weights[lo:hi], A[lo:hi], out=product[lo:hi])

    cores.by_rows(rows, *A.shape)
    return weights, product


def _agreeing(
    A: np.ndarray,
    b: np.ndarray,
    resid: np.ndarray,
    limit: float,
    light: tuple[np.ndarray, np.ndarray] | None,
    out: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The weights of the entries of ``resid`` within ``limit`` (1 or 0), and the weights
    times ``A``, (m, n) float32 each; ``resid`` first brought to ``light`` (a gain and an
    offset per column: ``A - (gain b + offset)``) when given. ``out``: the two arrays to
    fill (their values are not read)."""
    if out is None:
        out = np.empty(A.shape, dtype=np.float32), np.empty(A.shape, dtype=np.float32)
    weights, product = out

    def rows(lo: int, hi: int) -> None:
        r = resid[lo:hi]
        if light is not None:
            np.subtract(A[lo:hi], b[lo:hi, None] * light[0] + light[1], out=r)
        weights[lo:hi] = np.abs(r) < limit
        np.multiply(weights[lo:hi], A[lo:hi], out=product[lo:hi])

    cores.by_rows(rows, *A.shape)
    return weights, product


def still_light(data: np.ndarray, base: np.ndarray, still: np.ndarray) -> np.ndarray:
    """Each frame's light against ``base``: one gain, fitted on its still entries only.

    Still entries are background whatever covers the rest of the frame, so a person who
    walks up to the camera cannot pass for a change of light. The gain is fitted through
    the origin (light multiplies; a free offset as well made the pair ill-determined
    where a frame's still entries span few grey levels: gains of 0.86 with offsets of +25
    on steady frames of cdnet_office), from the median ratio over the still entries, then
    by least squares over those within 2.5 noise levels of it (``base`` may be foreground
    where someone sat for most of the window); a frame with fewer than :data:`_MIN_FIT`
    still entries keeps gain 1.

    Parameters
    ----------
    data : (m, n) ndarray
    base : (m,) ndarray
        :func:`light_base`.
    still : (m, n) bool ndarray

    Returns
    -------
    (n,) float32 ndarray
    """
    A = np.asarray(data, dtype=np.float32)
    b = np.asarray(base, dtype=np.float32)
    m, n = A.shape
    # Started from the commonest ratio, then refined by least squares over the entries
    # that agree with it.
    ratio, usable = _ratios(A, b, still)
    if tuning.RATIO_START == "mode":
        start = mode_ratio(ratio, usable)
    else:  # per frame (column); a frame with no usable entry: NaN
        start = masked_median(ratio.T, usable.T)
    del ratio
    enough = usable.sum(0) >= _MIN_FIT
    gain = np.where(enough & np.isfinite(start), start, 1.0).astype(np.float32)
    if not still.any():
        return gain
    resid = np.empty((m, n), dtype=np.float32)

    def residual(lo: int, hi: int) -> None:
        np.subtract(A[lo:hi], b[lo:hi, None] * gain, out=resid[lo:hi])

    cores.by_rows(residual, *A.shape)
    # the band of agreement: the mode's own bins, or 2.5 noise levels about the median (a
    # noise level measured over every still entry is the spread of the disagreeing ones
    # where most disagree)
    band: np.ndarray | float
    if tuning.RATIO_START == "mode":
        band = (1.5 * tuning.RATIO_BIN) * np.maximum(b, 1.0)[:, None]
    else:
        band = 2.5 * max(0.5, _mad_noise(resid[still]))
    buffers = np.empty((m, n), dtype=np.float32), np.empty((m, n), dtype=np.float32)
    for p in range(_FIT_PASSES):
        # the residual of the previous pass's gain (the last pass's is not formed)
        _agreeing_still(A, b, resid, still, band, gain if p else None, buffers)
        gain = _weighted_gain(b, *buffers, gain)
    return gain


def _ratios(A: np.ndarray, b: np.ndarray, still: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``A / max(b, 1)`` per entry ((m, n) float32), and the ``still`` entries of a base
    above 8 grey levels ((m, n) bool)."""
    ratio = np.empty(A.shape, dtype=np.float32)
    usable = np.empty(A.shape, dtype=bool)

    def rows(lo: int, hi: int) -> None:
        np.divide(A[lo:hi], np.maximum(b[lo:hi], 1.0)[:, None], out=ratio[lo:hi])
        np.logical_and(still[lo:hi], b[lo:hi, None] > 8.0, out=usable[lo:hi])

    cores.by_rows(rows, *A.shape)
    return ratio, usable


def _agreeing_still(
    A: np.ndarray,
    b: np.ndarray,
    resid: np.ndarray,
    still: np.ndarray,
    band: np.ndarray | float,
    gain: np.ndarray | None,
    out: tuple[np.ndarray, np.ndarray],
) -> None:
    """Fill ``out`` with the weights of the ``still`` entries of ``resid`` within ``band``
    ((m, 1) or one value) and the weights times ``A``; ``resid`` first brought to
    ``gain`` (``A - gain b``) when given."""
    weights, product = out

    def rows(lo: int, hi: int) -> None:
        if gain is not None:
            np.subtract(A[lo:hi], b[lo:hi, None] * gain, out=resid[lo:hi])
        limit = band[lo:hi] if isinstance(band, np.ndarray) else band
        np.multiply(still[lo:hi], np.abs(resid[lo:hi]) < limit, out=weights[lo:hi])
        np.multiply(weights[lo:hi], A[lo:hi], out=product[lo:hi])

    cores.by_rows(rows, *A.shape)


def mode_ratio(ratio: np.ndarray, usable: np.ndarray) -> np.ndarray:
    """Per column, the commonest value of ``ratio`` over the ``usable`` entries.

    The log ratios are binned (:data:`tuning.RATIO_BIN`, within a factor of e either way), the
    counts smoothed over three bins, and the median of the entries within the peak's bin
    and its two neighbours returned: a light shared by a minority of the entries is found
    when the others spread.

    Parameters
    ----------
    ratio : (m, n) float ndarray
        Frame over base, per entry.
    usable : (m, n) bool ndarray

    Returns
    -------
    (n,) float32 ndarray
        NaN for a column with no usable entry.
    """
    n = ratio.shape[1]
    out = np.full(n, np.nan, dtype=np.float32)
    starts = range(0, n, _MODE_COLUMNS)

    def blocks(lo: int, hi: int) -> None:
        for c0 in starts[lo:hi]:  # a few columns at a time: small temporaries
            cols = slice(c0, min(n, c0 + _MODE_COLUMNS))
            out[cols] = _mode_ratio_block(ratio[:, cols], usable[:, cols])

    # each column's answer is its own: the blocks' two halves side by side
    cores.in_blocks(blocks, len(starts), ratio.size)
    return out


#: Columns :func:`mode_ratio` bins at a time.
_MODE_COLUMNS = 16


def _mode_ratio_block(ratio: np.ndarray, usable: np.ndarray) -> np.ndarray:
    """:func:`mode_ratio` of a few columns."""
    n = ratio.shape[1]
    bins = round(2.0 / tuning.RATIO_BIN) + 1
    logs = np.log(np.maximum(ratio, 1e-6, dtype=np.float32))
    usable = usable & (np.abs(logs) < 1.0)
    code = np.rint(np.clip(logs, -1.0, 1.0) / tuning.RATIO_BIN).astype(np.int32) + bins // 2
    del logs
    flat = (code + (bins * np.arange(n, dtype=np.int32))[None, :])[usable]
    counts = np.bincount(flat, minlength=bins * n).reshape(n, bins).astype(np.float32)
    smooth = counts.copy()
    smooth[:, 1:] += counts[:, :-1]
    smooth[:, :-1] += counts[:, 1:]
    peak = np.argmax(smooth, axis=1).astype(np.int32)
    near = usable & (np.abs(code - peak[None, :]) <= 1)
    return masked_median(ratio.T, near.T).astype(np.float32)


def _weighted_gain(b: np.ndarray, w: np.ndarray, wA: np.ndarray, gain: np.ndarray) -> np.ndarray:
    """Per column, the weighted least-squares ``a = g b`` (``wA``: ``w * A``, (m, n)
    float32); columns with too few weights keep their ``gain``."""
    sw, sbb, sab = w.sum(0), w.T @ (b * b), wA.T @ b
    ok = (sw >= _MIN_FIT) & (sbb > 1e-6)
    return np.where(ok, sab / np.where(ok, sbb, 1.0), gain).astype(np.float32)


def _mad_noise(values: np.ndarray) -> float:
    """1.4826 x the median absolute deviation: the standard deviation of Gaussian noise."""
    return MAD_SCALE * float(np.median(np.abs(values - np.median(values))))


def light_base(data: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Per-pixel median over :data:`tuning.LIGHT_BASE_FRAMES` frames spread over the window.

    Parameters
    ----------
    data : (m, n) ndarray
        Frames as columns.
    mask : (m, n) bool ndarray, optional
        Observed entries (the median is over those; a pixel never observed gives 0).

    Returns
    -------
    (m,) float32 ndarray
    """
    n = data.shape[1]
    cols = np.unique(np.linspace(0, n - 1, min(n, tuning.LIGHT_BASE_FRAMES)).round().astype(int))
    picked = np.asarray(data[:, cols], dtype=np.float32)
    observed = None if mask is None else np.ascontiguousarray(mask[:, cols])
    # the backend's row medians: a row's median is its own, the rows' blocks side by side
    return np.asarray(get_backend("auto").row_median(picked, observed), dtype=np.float32)


#: Fewest entries a frame's light is fitted on.
_MIN_FIT = 10


def _median_offset(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per column of ``A``, the median of ``A - b``: the offset of a frame at gain 1."""
    return np.median(A - b[:, None], axis=0).astype(np.float32)


def _weighted_line(
    b: np.ndarray,
    w: np.ndarray,
    wA: np.ndarray,
    gain: np.ndarray,
    offset: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column, the weighted least-squares ``a = g b + c`` (``wA``: ``w * A``, (m, n)
    float32); columns with too few weights or no spread of ``b`` keep their ``gain`` and
    ``offset``. Also returns which columns were fitted ((n,) bool)."""
    # the sums over rows run whole, on the whole arrays: one order of summation
    sw, sb, sbb = w.sum(0), w.T @ b, w.T @ (b * b)
    sa, sab = wA.sum(0), wA.T @ b
    det = sw * sbb - sb * sb
    ok = (sw >= _MIN_FIT) & (det > 1e-9 * np.maximum(sw * sbb, 1e-30))
    safe = np.where(ok, det, 1.0)
    gain = np.where(ok, (sw * sab - sb * sa) / safe, gain).astype(np.float32)
    offset = np.where(ok, (sa - gain * sb) / np.maximum(sw, 1), offset).astype(np.float32)
    return gain, offset, ok
