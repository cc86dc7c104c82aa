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
"""

from __future__ import annotations

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
    "MaskModel",
    "SampleBlock",
    "agreement",
    "auto_limit",
    "grouped_median",
    "model_from_blocks",
    "residual_noise",
    "shade_from_blocks",
    "temporal_noise",
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
        Each pixel's own noise for the pooled test (:mod:`bpvideo.masks.pooled`;
        automatic thresholds): ``max(sensor noise, pixel spread)``.
    pooled : (3, H, W) float32 ndarray or None
        The pooled test's maps (:func:`bpvideo.masks.pooled.pooled_limits`): the
        threshold on the box mean of ``A - L``, on the pixel's own, and the box
        mean's typical value; None: no pooled test.
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
        if block.colour is not None:
            if shade is None:
                shade = np.empty((H * W, 3), dtype=np.float32)
            shade[at : at + pixels] = _block_shade(block.colour, agree)
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
    sigma = np.full((H, W), sensor or 0.0, np.float32)  # (the pooled test's noise)
    if spread is not None:
        np.maximum(sigma, spread, out=sigma)
    return MaskModel(value, sensor, limit, shade, sigma=sigma)


def shade_from_blocks(
    blocks: Iterable[tuple[np.ndarray, np.ndarray | None]], frame_shape: tuple[int, ...]
) -> np.ndarray:
    """:attr:`MaskModel.shade` from the sampled frames' colours alone, as
    :func:`model_from_blocks` forms it from its blocks' (so that the two can run apart).

    Parameters
    ----------
    blocks : iterable of (colour, agree)
        Consecutive blocks of pixels covering the frame, in order: the colour, (p, k, 3)
        uint8, and the agreement, (p * C, k) bool or None, of :class:`SampleBlock`.
    frame_shape : (H, W) or (H, W, C)

    Returns
    -------
    (H, W, 3) float32 ndarray
    """
    H, W = frame_shape[:2]
    shade = np.empty((H * W, 3), dtype=np.float32)
    at = 0
    for colour, agree in blocks:
        pixels = colour.shape[0]
        every = None if agree is None else _per_pixel(agree, pixels, np.all)
        shade[at : at + pixels] = _block_shade(colour, every)
        at += pixels
    return shade.reshape(H, W, 3)


def _block_shade(colour: np.ndarray, agree: np.ndarray | None) -> np.ndarray:
    """The chromaticity of the median colour of each pixel of a block over its agreeing
    samples, (p, 3) float32 (NaN where it never agreed: no colour)."""
    medians = [masked_median(colour[:, :, c], agree) for c in range(3)]
    return chromaticity(np.stack(medians, -1))


def _per_pixel(values: np.ndarray, pixels: int, reduce: Callable) -> np.ndarray:
    """Rows of the channels of one pixel (interleaved) reduced to one row per pixel."""
    if values.shape[0] == pixels:
        return values
    return reduce(values.reshape(pixels, -1, values.shape[1]), axis=1)
