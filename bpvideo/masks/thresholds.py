"""How far from the background a pixel must be to count as foreground.

``--threshold auto`` sets, for every pixel, the threshold on ``|A - L|`` to

    max(MIN_AUTO_THRESHOLD, k * sensor_noise, k * pixel_noise[pixel])

- ``sensor_noise`` (:func:`temporal_noise`): the noise of the camera and the codec, from
  differences of consecutive frames over entries that both agree with the background.
  Measured on background entries only, it does not grow with the foreground (a residual's
  MAD over all pixels chose 89 grey levels on a scene with 28 % foreground).
- ``pixel_noise`` (``noise="local"``, :func:`model_from_blocks`): each pixel's own spread
  about ``L`` (1.4826 x its median ``|A - L|``, smoothed over 3 x 3 pixels) over sampled
  frames where it agreed with the background. Leaves shaken by wind,
  water and flicker spread wide and get a higher threshold there, as MOG2 and KNN give
  such pixels a wider model.

``k`` (``threshold_k``) and ``MIN_AUTO_THRESHOLD`` were chosen by leave-one-sequence-out
on the dev sequences (docs/quality.md).

A second, pooled test (:func:`pooled_limits`, :attr:`MaskModel.pooled`) finds faint
objects below that floor where the scene is quiet: a pixel is also foreground when the
mean of ``|A - L|`` over the :data:`POOL_BOX` x :data:`POOL_BOX` box around it is
:data:`POOL_K` of its measured spreads above its typical value (both from the window's
sampled frames, in units of each pixel's own noise ``sigma = max(sensor_noise,
pixel_noise)``) and its own ``|A - L|`` exceeds ``POOL_PIXEL_K * sigma``: a box of n
pixels of independent noise varies about sigma / sqrt(n), so an object many pixels wide
and a few grey levels from the background (cars in fog) shows there while each of its
pixels is within the noise of the single-pixel test.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import cv2
import numpy as np

from bpvideo.masks.appearances import Appearances
from bpvideo.masks.options import MaskOptions
from bpvideo.masks.shadows import chromaticity
from bpvideo.robust import masked_median

__all__ = [
    "AGREE_K",
    "MIN_AUTO_THRESHOLD",
    "POOLED",
    "POOL_BOX",
    "POOL_FLOOR",
    "POOL_INDEPENDENT",
    "POOL_K",
    "POOL_LIGHT",
    "POOL_OPEN",
    "POOL_PIXEL_FLOOR",
    "POOL_PIXEL_K",
    "POOL_QUIET",
    "POOL_SHADOWS",
    "POOL_SIGMA_K",
    "POOL_STRONG",
    "MaskModel",
    "SampleBlock",
    "agreement",
    "auto_limit",
    "box_mean",
    "grouped_median",
    "model_from_blocks",
    "pooled_limits",
    "residual_noise",
    "signed_residual",
    "temporal_noise",
    "without_light",
]

#: Smallest automatic threshold, in grey levels (clean footage has almost no noise, but
#: a few grey levels of the background model's own error remain).
MIN_AUTO_THRESHOLD = 8.0
#: 1.4826 x the median absolute value is the standard deviation of Gaussian noise.
MAD_SCALE = 1.4826
#: Side of the box that smooths the per-pixel noise (a median of a few dozen frames).
_SMOOTH = 3
#: An entry agrees with the background within this many noise levels (also the
#: reference background's consistency test, :mod:`bpvideo.background.reference`).
AGREE_K = 4.0
#: ``|Z| < 0.3186`` for a quarter of Gaussian draws: the lower quartile of ``|residual|``
#: over 0.3186 is the noise level while at most three quarters of the entries are
#: foreground.
_QUARTILE_Z = 0.3186
#: A pixel whose own threshold is this many times the global one is moving background
#: (the self-check of ``summary.json``; docs/quality.md).
DYNAMIC_SPREAD = 3.0
#: Whether masks take the pooled test (:func:`pooled_limits`; off by default: it costs
#: dev sequences up to 0.02 of F, docs/method.md).
POOLED = True
#: The pooled test: side of the box whose mean ``|A - L|`` is
#: tested (pixels).
POOL_BOX = 5
#: The threshold on the box mean of the signed ``A - L``: ``POOL_K`` times each pixel's
#: own spread of it over the window's sampled frames (for independent noise sigma / 5
#: for a 5 x 5 box), never below ``POOL_FLOOR`` grey levels.
POOL_K = 8.0
POOL_FLOOR = 2.5
#: ... and the pixel itself must be this many of its noise levels from the background
#: (at least ``POOL_PIXEL_FLOOR`` grey levels), so that the box does not widen the object.
POOL_PIXEL_K = 1.5
POOL_PIXEL_FLOOR = 2.0
#: Whether pixels beyond the global threshold pass the pooled test too (then no
#: background appearance can explain them away).
POOL_STRONG = True
#: Whether the pooled test's pixels skip the shadow test (a faint object on a washed-out
#: view is darker, grey and flat as a shadow on a smooth road is).
POOL_SHADOWS = True
#: The pooled test's pixels are opened by a disk of this radius: a faint object is a
#: solid region of them, the halo or soft edge around a brighter object a thin ring.
POOL_OPEN = 2
#: Only quiet pixels take the pooled test: those whose own noise is at most this many
#: times the quiet part's (the camera's noise, or the lower quartile of the pixels' own):
#: not water, leaves or flicker, whose residuals are neither Gaussian nor independent
#: from pixel to pixel.
POOL_QUIET = 1.5
#: ... and only pixels whose box mean spreads at most this many times as the mean of
#: independent noise would (``sigma / POOL_BOX``): codec blocks, light changes and the
#: background model's own errors move whole patches together, and a box there is no
#: quieter than a pixel.
POOL_INDEPENDENT = 1.1
#: ... and at least this many of the pixel's own noise levels ``sigma``: the pooled test
#: finds objects somewhat under the single-pixel threshold, not every coherent ripple of
#: the background model.
POOL_SIGMA_K = 2.0
#: Side of the squares (pixels) over which :func:`without_light` measures a change of
#: light (0: none measured).
POOL_LIGHT = 16
#: Backgrounds darker than this (grey levels) count as this dark in the relative change.
_LIGHT_DARK = 16.0
#: Sampled frames that measure the box mean's typical value and spread.
POOL_FRAMES = 12
_DEFAULT = MaskOptions()


def residual_noise(residual: np.ndarray) -> float:
    """Noise level of a residual ``A - L`` from its lower quartile (at least 0.5 grey
    levels): right while at most three quarters of the entries are foreground."""
    r = np.abs(np.asarray(residual, dtype=np.float32))
    return max(0.5, float(np.quantile(r, 0.25)) / _QUARTILE_Z) if r.size else 0.5


def agreement(residual: np.ndarray, noise: float | None = None) -> np.ndarray:
    """Where a residual ``A - L`` agrees with the background, when nothing tells: within
    :data:`AGREE_K` noise levels (``noise``, or :func:`residual_noise` of ``residual``).

    Parameters
    ----------
    residual : ndarray
        ``A - L`` or its magnitude.
    noise : float, optional
        The noise level (one for all the blocks of a window).

    Returns
    -------
    bool ndarray of ``residual``'s shape
    """
    noise = residual_noise(residual) if noise is None else noise
    return np.abs(np.asarray(residual, dtype=np.float32)) < AGREE_K * noise


@dataclass
class MaskModel:
    """The thresholds of one window's masks (the residual rule).

    Attributes
    ----------
    threshold : float
        The global threshold in grey levels (a fixed ``--threshold``, or
        ``max(MIN_AUTO_THRESHOLD, k * sensor noise)``).
    noise : float or None
        The sensor noise behind ``threshold`` (None for a fixed threshold).
    local : (H, W) float32 ndarray or None
        Per-pixel thresholds, at least ``threshold`` (``noise="local"``), else None.
    shade : (H, W, 3) float32 ndarray or None
        The :func:`~bpvideo.masks.shadows.chromaticity` of the background's colour, NaN where it
        is unknown, for the shadow test; None keeps shadows.
    appearances : Appearances or None
        The background's appearances in the window (:mod:`bpvideo.masks.appearances`):
        pixels beyond the global threshold are then foreground only where none of them
        explains the pixel, and ``local`` serves only to choose the samples.
    sigma : (H, W) float32 ndarray or None
        Each pixel's own noise for the pooled test (automatic thresholds, with
        :data:`POOLED`): ``max(sensor noise, pixel spread)``.
    pooled : (2, H, W) float32 ndarray or None
        The pooled test's thresholds (:func:`pooled_limits`): on the box mean of
        ``|A - L|``, and on the pixel's own; None: no pooled test.
    """

    threshold: float
    noise: float | None = None
    local: np.ndarray | None = None
    shade: np.ndarray | None = None
    appearances: Appearances | None = None
    sigma: np.ndarray | None = None
    pooled: np.ndarray | None = None

    @property
    def limit_map(self) -> float | np.ndarray:
        """Each pixel's limit of the one-image model: the per-pixel map, or the global
        threshold (whether or not :attr:`appearances` judge the pixels beyond it)."""
        return self.local if self.local is not None else self.threshold

    @property
    def dynamic(self) -> float:
        """Share of the pixels whose own spread sets a threshold above
        :data:`DYNAMIC_SPREAD` times the global one (a background that moves by itself)."""
        if self.local is None:
            return 0.0
        return float(np.mean(self.local > DYNAMIC_SPREAD * self.threshold))

    @property
    def limit(self) -> float | np.ndarray:
        """What ``|A - L|`` is compared with: the per-pixel map, or the global threshold
        (always, with :attr:`appearances`: they judge the pixels beyond it)."""
        if self.local is None or self.appearances is not None:
            return self.threshold
        return self.local


def grouped_median(values: np.ndarray) -> float:
    """Median of integer-valued data, interpolated within its unit bin.

    The plain median of ``|d|`` for integer differences ``d`` jumps from 1 to 2 as the noise
    grows a little; read as a histogram of unit bins (value ``v`` spread over
    ``[v - 1/2, v + 1/2)``), the median moves smoothly.

    Parameters
    ----------
    values : ndarray of non-negative integers (any dtype)

    Returns
    -------
    float
        0.0 for no values.
    """
    v = np.asarray(values).ravel()
    if v.size == 0:
        return 0.0
    counts = np.bincount(np.rint(v).astype(np.int64))
    below = np.cumsum(counts) - counts
    half = v.size / 2.0
    m = int(np.searchsorted(np.cumsum(counts), half))
    return float(max(0.0, m - 0.5 + (half - below[m]) / counts[m]))


def temporal_noise(pairs: np.ndarray, agree: np.ndarray | None = None) -> float:
    """Noise level of the frames from consecutive-frame differences: 1.4826 x the grouped
    median of ``|a_t+1 - a_t - offset_t|`` / sqrt(2), where ``offset_t`` is the pair's
    median difference (a flicker of the whole frame, auto-exposure, is not noise).

    Parameters
    ----------
    pairs : (2, m, k) ndarray
        ``k`` frames (as columns) and the frames right after them (integer grey levels).
    agree : (2, m, k) bool ndarray, optional
        Where each entry agrees with the background: only pairs that both agree count.

    Returns
    -------
    float
    """
    a = np.asarray(pairs)
    diff = a[1].astype(np.float32) - a[0].astype(np.float32)
    both = None if agree is None else agree[0] & agree[1]
    if both is None:
        offset = np.median(diff, axis=0)
    else:
        # per frame (column; pairs of single frames are one column)
        columns = diff.reshape(len(diff), -1).T, both.reshape(len(both), -1).T
        offset = masked_median(*columns, empty=0.0) if both.any() else 0.0
    diff = np.abs(np.rint(diff - offset))
    if both is not None:
        diff = diff[both]
    return MAD_SCALE * grouped_median(diff) / np.sqrt(2.0)


def auto_limit(
    threshold_k: float, sensor: float, local: np.ndarray | None
) -> tuple[float, np.ndarray | None]:
    """The global threshold and the per-pixel map of ``--threshold auto``.

    Parameters
    ----------
    threshold_k : float
        Noise levels a foreground pixel is away from the background.
    sensor : float
        :func:`temporal_noise`.
    local : (H, W) ndarray or None
        Each pixel's spread (``noise="local"``), or None.

    Returns
    -------
    threshold : float
    local : (H, W) float32 ndarray or None
        ``max(threshold, threshold_k * local)``.
    """
    threshold = max(MIN_AUTO_THRESHOLD, threshold_k * sensor)
    if local is None:
        return threshold, None
    return threshold, np.maximum(threshold, threshold_k * local).astype(np.float32)


@dataclass
class SampleBlock:
    """Sampled frames of some consecutive pixels (see :func:`model_from_blocks`).

    Attributes
    ----------
    data, background : (p * C, k) ndarray
        ``A`` and ``L`` of ``k`` sampled frames, one row per pixel and channel (B, G, R
        interleaved per pixel for colour data).
    agree : (p * C, k) bool ndarray or None
        Where an entry agreed with the background (the solve's observed entries).
    colour : (p, k, 3) uint8 ndarray or None
        The sampled frames in colour, for the background's colour (shadow test).
    """

    data: np.ndarray
    background: np.ndarray
    agree: np.ndarray | None = None
    colour: np.ndarray | None = None


def model_from_blocks(
    blocks: Iterable[SampleBlock],
    frame_shape: tuple[int, ...],
    *,
    sensor: float | None,
    threshold: float | str = _DEFAULT.threshold,
    threshold_k: float = _DEFAULT.threshold_k,
    noise: str = _DEFAULT.noise,
) -> MaskModel:
    """The :class:`MaskModel` of a window from sampled frames, a block of pixels at a time.

    Parameters
    ----------
    blocks : iterable of SampleBlock
        Consecutive blocks of pixels covering the frame, in order.
    frame_shape : (H, W) or (H, W, C)
    sensor : float or None
        :func:`temporal_noise` of the window (with ``threshold="auto"``).
    threshold, threshold_k, noise
        As the options of ``separate``.

    Returns
    -------
    MaskModel
    """
    H, W = frame_shape[:2]
    channels = frame_shape[2] if len(frame_shape) == 3 else 1
    local = noise == "local" and threshold == "auto"
    # each block's answers go to their place in float32 at once: the per-block float64
    # medians, then their concatenation, took 0.6 GB at 4K (issue 39)
    spreads = np.empty(H * W, dtype=np.float32) if local else None
    shade = None
    at = 0
    for block in blocks:
        pixels = block.data.shape[0] // channels
        agree = None if block.agree is None else _per_pixel(block.agree, pixels, np.all)
        if spreads is not None:
            residual = np.abs(block.data.astype(np.float32) - block.background)
            spreads[at : at + pixels] = masked_median(_per_pixel(residual, pixels, np.max), agree)
        if block.colour is not None:  # a pixel never seen agree keeps no colour (NaN)
            if shade is None:
                shade = np.empty((H * W, 3), dtype=np.float32)
            medians = [masked_median(block.colour[:, :, c], agree) for c in range(3)]
            shade[at : at + pixels] = chromaticity(np.stack(medians, -1))
        at += pixels
    if shade is not None:  # (the shadow test then fails where it is NaN)
        shade = shade.reshape(H, W, 3)
    if threshold != "auto":
        return MaskModel(float(threshold), None, None, shade)
    spread = None
    if spreads is not None:
        spread = MAD_SCALE * spreads.reshape(H, W)
        unknown = np.isnan(spread)  # never seen agree: foreground in every sampled frame
        if unknown.all():
            spread[:] = 0.0
        elif unknown.any():
            spread[unknown] = np.median(spread[~unknown])
        spread = cv2.blur(spread, (_SMOOTH, _SMOOTH))
    value, limit = auto_limit(threshold_k, sensor or 0.0, spread)
    sigma = None
    if POOLED:
        sigma = np.full((H, W), sensor or 0.0, np.float32)
        if spread is not None:
            np.maximum(sigma, spread, out=sigma)
    return MaskModel(value, sensor, limit, shade, sigma=sigma)


def pooled_limits(
    sigma: np.ndarray, sensor: float, box_means: Iterable[np.ndarray]
) -> np.ndarray | None:
    """The thresholds of the pooled test: on ``|b|``, ``b`` the mean of the signed
    ``A - L`` over a :data:`POOL_BOX` box, :data:`POOL_K` times each pixel's own spread of
    ``b`` (the lower quartile of ``|b|`` over the window's ``box_means``, over 0.3186:
    right while the foreground covers at most three quarters of a pixel's frames), at
    least :data:`POOL_FLOOR`; and on the pixel's own
    ``|A - L|``, ``POOL_PIXEL_K * sigma``, at least :data:`POOL_PIXEL_FLOOR`.

    Only pixels where pooling helps are tested (elsewhere the box threshold is
    infinite): quiet ones (``sigma`` at most :data:`POOL_QUIET` times the larger of the
    camera's noise and the lower quartile of ``sigma``: not water, leaves or flicker),
    whose box mean spreads as the mean of independent noise does (at most
    :data:`POOL_INDEPENDENT` times ``sigma / POOL_BOX``): where the background model's
    error or the light moves whole patches together, a box is no quieter than a pixel.

    Parameters
    ----------
    sigma : (H, W) ndarray
        Each pixel's noise (:attr:`MaskModel.sigma`).
    sensor : float
        The camera's noise (:func:`temporal_noise`).
    box_means : iterable of (H, W) ndarray
        Box means of the signed ``A - L`` of some sampled frames (pixels beyond the
        global threshold left out of them).

    Returns
    -------
    (2, H, W) float32 ndarray or None
        None without :data:`POOLED`, or with no pixel to test (no pooled test).
    """
    if not POOLED:
        return None
    means = list(box_means)
    if not means:
        return None
    stack = np.stack(means)
    # the background model's own offset there (objects that passed leave a trace in L)
    centre = np.median(stack, axis=0).astype(np.float32)
    own = MAD_SCALE * np.median(np.abs(stack - centre), axis=0).astype(np.float32)
    own = cv2.blur(own, (_SMOOTH, _SMOOTH))
    # the quiet part's noise: the camera's, or (integer frames round a low noise up in
    # each pixel's median) the lower quartile of the pixels' own
    quiet = sigma <= POOL_QUIET * max(sensor, float(np.quantile(sigma, 0.25)))
    if not quiet.any():
        return None
    # the view's, not each pixel's: where objects pass often, their own spread is theirs
    if np.median((own / np.maximum(sigma, 1e-3))[quiet]) * POOL_BOX > POOL_INDEPENDENT:
        return None
    box = np.maximum(np.maximum(POOL_FLOOR, POOL_K * own), POOL_SIGMA_K * sigma)
    box[~quiet] = np.inf
    pixel = np.maximum(POOL_PIXEL_FLOOR, POOL_PIXEL_K * sigma)
    return np.stack([box, pixel, centre]).astype(np.float32)


def signed_residual(
    data: np.ndarray, background: np.ndarray, out: np.ndarray | None = None
) -> np.ndarray:
    """``A - L`` of one frame, the mean of the channels (the pooled test's residual).

    Parameters
    ----------
    data, background : (H, W) or (H, W, C) ndarray
        The frame and its background (a grey background serves every channel).
    out : (H, W) float32 ndarray, optional

    Returns
    -------
    (H, W) float32 ndarray
    """
    d = np.asarray(data, np.float32) - np.asarray(background, np.float32)
    if d.ndim == 3:
        d = d.mean(axis=2)
    if out is None:
        return d.astype(np.float32, copy=False)
    np.copyto(out, d)
    return out


def without_light(residual: np.ndarray, background: np.ndarray, strong: np.ndarray) -> None:
    """Take a change of light out of the signed ``residual`` (in place): ``L`` times the
    relative change ``(A - L) / L`` of its neighbourhood (the median over each
    :data:`POOL_LIGHT` square of pixels, then the median of 3 x 3 squares, the
    ``strong`` pixels left out). A cloud, a lamp or the camera's exposure scales whole
    surfaces by a few percent, a faint object changes only the pixels it covers: a
    region of a few squares or less (with :data:`POOL_LIGHT` 0 nothing is taken out).

    Parameters
    ----------
    residual : (H, W) float32 ndarray
        ``A - L`` of one frame (:func:`signed_residual`).
    background : (H, W) or (H, W, C) ndarray
        ``L`` of that frame.
    strong : (H, W) bool ndarray
        The pixels beyond the global threshold.
    """
    side = POOL_LIGHT
    H, W = residual.shape
    if side <= 0 or H < 3 * side or W < 3 * side:
        return
    grey = np.asarray(background, np.float32)
    if grey.ndim == 3:
        grey = grey.mean(axis=2)
    grey = np.maximum(grey, _LIGHT_DARK)
    rel = residual / grey
    rel[strong] = np.nan
    h, w = H // side, W // side
    blocks = rel[: h * side, : w * side].reshape(h, side, w, side).transpose(0, 2, 1, 3)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a square of strong pixels only
        coarse = np.nanmedian(blocks.reshape(h, w, -1), axis=2)
    coarse = np.nan_to_num(coarse).astype(np.float32)
    coarse = cv2.medianBlur(coarse, 3) if min(h, w) >= 3 else coarse
    change = cv2.resize(coarse, (W, H), interpolation=cv2.INTER_LINEAR)
    residual -= change * grey


def box_mean(residual: np.ndarray, strong: np.ndarray) -> np.ndarray:
    """Mean of ``residual`` over the :data:`POOL_BOX` box around each pixel, over the box's
    pixels that are not ``strong`` (next to an object, its halo or a soft shadow, the
    object's own residual must not lift the mean of the pixels around it).

    Parameters
    ----------
    residual : (H, W) float32 ndarray
        ``|A - L|`` of one frame (overwritten: 0 where ``strong``).
    strong : (H, W) bool ndarray
        The pixels beyond the global threshold.

    Returns
    -------
    (H, W) float32 ndarray
    """
    size = (POOL_BOX, POOL_BOX)
    residual[strong] = 0.0
    total = cv2.boxFilter(residual, cv2.CV_32F, size, normalize=False,
                          borderType=cv2.BORDER_REFLECT)  # fmt: skip
    weak = (~strong).view(np.uint8)
    count = cv2.boxFilter(weak, cv2.CV_32F, size, normalize=False, borderType=cv2.BORDER_REFLECT)
    return total / np.maximum(count, 1.0)


def _per_pixel(values: np.ndarray, pixels: int, reduce: Callable) -> np.ndarray:
    """Rows of the channels of one pixel (interleaved) reduced to one row per pixel."""
    if values.shape[0] == pixels:
        return values
    return reduce(values.reshape(pixels, -1, values.shape[1]), axis=1)
