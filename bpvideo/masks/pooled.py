"""The pooled test: faint objects under the single-pixel threshold.

A box of n pixels of independent noise varies by about sigma / sqrt(n), so an object many
pixels wide and a few grey levels from the background (cars in dense fog) shows in the
mean of ``A - L`` over a :data:`POOL_BOX` x :data:`POOL_BOX` box while each of its pixels
is within the noise of the single-pixel test (:mod:`bpvideo.masks.thresholds`). A pixel
is also foreground when that box mean is far from the box's own typical value, in units
of its own spread over the window's sampled frames (:func:`pooled_limits`), once a change
of light is taken out (:func:`without_light`); only in views where a box is quieter than
a pixel (docs/method.md, "Faint objects").
"""

from __future__ import annotations

import cv2
import numpy as np

from bpvideo.masks.morphology import disk
from bpvideo.masks.thresholds import _SMOOTH, MAD_SCALE, MaskModel

__all__ = [
    "POOLED",
    "POOL_BOX",
    "POOL_FLOOR",
    "POOL_FRAMES",
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
    "box_mean",
    "box_mean_without_light",
    "faint_pixels",
    "pooled_limits",
    "signed_residual",
    "without_light",
]

#: Whether masks take the pooled test (``False``: the masks of the single-pixel test
#: alone).
POOLED = True
#: Side of the box whose mean of ``A - L`` is tested (pixels).
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
#: ... and only in views whose quiet pixels' box mean spreads (at the median) at most
#: this many times as the mean of independent noise would (``sigma / POOL_BOX``): codec
#: blocks, flicker and the background model's own errors move whole patches together,
#: and a box there is no quieter than a pixel.
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
#: Values of the box means' stack whose medians are taken at once (a band of rows).
_BAND_VALUES = 1 << 20


def pooled_limits(sigma: np.ndarray, sensor: float, box_means: np.ndarray) -> np.ndarray | None:
    """The thresholds of the pooled test: on ``|b - centre|``, ``b`` the mean of the signed
    ``A - L`` over a :data:`POOL_BOX` box and ``centre`` its median over the window's
    ``box_means`` (objects that passed leave a trace in ``L``), :data:`POOL_K` times each
    pixel's own spread of ``b`` (``MAD_SCALE`` times its median absolute deviation from
    ``centre``, smoothed over the neighbourhood), at least :data:`POOL_FLOOR`; and on the
    pixel's own
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
    box_means : (k, H, W) float32 ndarray
        Box means of the signed ``A - L`` of some sampled frames (pixels beyond the
        global threshold left out of them).

    Returns
    -------
    (3, H, W) float32 ndarray or None
        The box limit, the pixel limit and ``centre``; None without :data:`POOLED`, or
        with no pixel to test (no pooled test).
    """
    if not POOLED:
        return None
    stack = box_means
    if not len(stack):
        return None
    # the quiet part's noise: the camera's, or (integer frames round a low noise up in
    # each pixel's median) the lower quartile of the pixels' own
    quiet = sigma <= POOL_QUIET * max(sensor, float(np.quantile(sigma, 0.25)))
    if not quiet.any():
        return None
    # the background model's own offset there (objects that passed leave a trace in L),
    # and the spread about it: each pixel's own medians, taken a band of rows at a time
    # (the sorts' copies of a band, not of the whole stack: it runs beside the appearances)
    centre = np.empty(stack.shape[1:], dtype=np.float32)
    own = np.empty(stack.shape[1:], dtype=np.float32)
    band = max(1, _BAND_VALUES // max(1, stack[0, 0].size * len(stack)))
    for y in range(0, stack.shape[1], band):
        part = stack[:, y : y + band]
        centre[y : y + band] = np.median(part, axis=0)
        spread = np.median(np.abs(part - centre[y : y + band]), axis=0).astype(np.float32)
        own[y : y + band] = MAD_SCALE * spread
    own = cv2.blur(own, (_SMOOTH, _SMOOTH))
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
        d = _channel_mean(d)
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
        grey = _channel_mean(grey)
    grey = np.maximum(grey, _LIGHT_DARK)
    rel = residual / grey
    rel[strong] = np.nan
    h, w = H // side, W // side
    blocks = rel[: h * side, : w * side].reshape(h, side, w, side).transpose(0, 2, 1, 3)
    coarse = _nan_median(blocks.reshape(h, w, -1))
    coarse = cv2.medianBlur(coarse, 3) if min(h, w) >= 3 else coarse
    change = cv2.resize(coarse, (W, H), interpolation=cv2.INTER_LINEAR)
    residual -= change * grey


def _channel_mean(values: np.ndarray) -> np.ndarray:
    """The mean of the channels of (H, W, C) float32 ``values``: (H, W) (OpenCV's
    transform, many times faster than ``mean(axis=2)``)."""
    c = values.shape[2]
    if c > 4:
        return values.mean(axis=2)
    return cv2.transform(values, np.full((1, c), 1.0 / c, np.float32))


def _nan_median(values: np.ndarray) -> np.ndarray:
    """``np.nanmedian`` over the last axis of float32 ``values``, 0 where all are NaN
    (a sort: NaN go last; several times faster than ``nanmedian`` on small rows)."""
    ordered = np.sort(values, axis=-1)
    count = values.shape[-1] - np.isnan(values).sum(axis=-1)
    low = np.take_along_axis(ordered, np.maximum(count - 1, 0)[..., None] // 2, -1)[..., 0]
    high = np.take_along_axis(ordered, np.minimum(count // 2, values.shape[-1] - 1)[..., None], -1)[
        ..., 0
    ]
    return np.where(count > 0, (low + high) / 2, 0.0).astype(np.float32)


def box_mean(residual: np.ndarray, strong: np.ndarray) -> np.ndarray:
    """Mean of ``residual`` over the :data:`POOL_BOX` box around each pixel, over the box's
    pixels that are not ``strong`` (next to an object, its halo or a soft shadow, the
    object's own residual must not lift the mean of the pixels around it).

    Parameters
    ----------
    residual : (H, W) float32 ndarray
        The signed ``A - L`` of one frame (overwritten: 0 where ``strong``).
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


def box_mean_without_light(
    residual: np.ndarray, background: np.ndarray, strong: np.ndarray
) -> np.ndarray:
    """:func:`box_mean` of the signed ``residual`` once :func:`without_light` took the
    change of light out of it: what :func:`pooled_limits` is given for the sampled frames
    and what :func:`faint_pixels` tests, so that both are in the same units.

    Parameters
    ----------
    residual : (H, W) float32 ndarray
        The signed ``A - L`` of one frame (:func:`signed_residual`; overwritten).
    background : (H, W) or (H, W, C) ndarray
        ``L`` of that frame.
    strong : (H, W) bool ndarray
        The pixels beyond the global threshold.

    Returns
    -------
    (H, W) float32 ndarray
    """
    without_light(residual, background, strong)
    return box_mean(residual, strong)


def faint_pixels(
    A: np.ndarray,
    L: np.ndarray,
    model: MaskModel,
    frame_shape: tuple[int, ...],
    strong: np.ndarray,
    seen: np.ndarray | None = None,
) -> np.ndarray | None:
    """The pooled test (:func:`pooled_limits`): (n, H, W) bool,
    the pixels beyond the pixel limit whose box mean of the signed ``A - L`` (the mean of
    the channels; the box's ``strong`` pixels, beyond the global threshold, left out) is
    beyond the box limit either way, opened by ``POOL_OPEN``, then grown by half the box into
    pixels beyond the pixel limit; ``strong`` pixels only with ``POOL_STRONG``; observed
    pixels only (``seen``, (n, H, W) bool, when some are not). None without the test."""
    if model.pooled is None:
        return None
    box_limit, pixel_limit, centre = model.pooled
    frames_first = A.ndim == len(frame_shape) + 1
    n = len(strong)
    H, W = frame_shape[:2]
    out = np.zeros((n, H, W), dtype=bool)
    r = np.empty((H, W), dtype=np.float32)
    for j in range(n):
        a = A[j] if frames_first else A[:, j].reshape(frame_shape)
        b = L[j] if frames_first else L[:, j].reshape(frame_shape)
        signed_residual(a, b, out=r)
        near = np.abs(r) > pixel_limit
        if not near.any():
            continue
        if not POOL_STRONG:
            near &= ~strong[j]
        mean = np.abs(box_mean_without_light(r, b, strong[j]) - centre)
        np.logical_and(near, mean > box_limit, out=out[j])
        found = out[j].view(np.uint8)
        if POOL_OPEN and out[j].any():  # solid regions only: no object's halo
            found = cv2.morphologyEx(found, cv2.MORPH_OPEN, disk(POOL_OPEN))
        if found.any():  # then out to the object's edge, where its box is half outside
            grown = cv2.dilate(found, disk(POOL_BOX // 2)).view(bool)
            np.logical_and(near, grown, out=out[j])
        else:
            out[j] = False
    if seen is not None:
        out &= seen
    return out
