"""Binary foreground masks from a solution (threshold and clean-up).

Two rules:

- ``"residual"`` (default): a pixel is foreground where ``|A - L|`` exceeds a threshold,
  either fixed (grey levels, 0..255) or automatic: ``k`` times the robust noise level of
  the residual ``A - L`` (1.4826 x its median absolute deviation). The background model
  ``L`` is what RPCA estimates well; the support of ``S`` is forced to a fixed size by the
  sparsity constraint (``alpha n`` entries per pixel row), so it marks a fixed fraction of
  every pixel's frames as foreground whether anything moved there or not.
- ``"support"``: the paper's rule, ``S != 0``.

Clean-up (both rules): morphological opening (removes speckle), closing (fills holes),
then removal of connected blobs smaller than ``min_area`` pixels.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import cv2
import numpy as np

from bpvideo.errors import InputError
from bpvideo.settings import default

__all__ = ["MaskResult", "clean_mask", "foreground_masks", "mask_threshold", "noise_level"]

#: Smallest automatic threshold, in grey levels: below this, compression noise dominates.
MIN_AUTO_THRESHOLD = 6.0
_NOISE_SAMPLE = 1_000_000
#: float32 entries of |A - L| computed at a time (a temporary that stays in cache).
_BLOCK = 1 << 21


@dataclass
class MaskResult:
    """Foreground masks and how they were made.

    Attributes
    ----------
    masks : (n, H, W) bool ndarray
        One mask per frame, True = foreground.
    threshold : float or None
        Threshold on ``|A - L|`` in grey levels (None for the support rule).
    noise : float or None
        Robust noise level of the residual (None for a fixed threshold or the support rule).
    """

    masks: np.ndarray
    threshold: float | None
    noise: float | None


def noise_level(
    A: np.ndarray,
    L: np.ndarray | Callable[[np.ndarray], np.ndarray],
    observed: np.ndarray | None = None,
    *,
    seed: int = 0,
) -> float:
    """Robust standard deviation of the residual ``A - L``: 1.4826 x MAD.

    Estimated on a sample of at most one million observed entries: every ``k``-th entry
    in memory order from an offset set by ``seed``, with ``k`` coprime to the number of
    columns, so that the sample spreads over every column and row (a strided view: no
    random gather).

    Parameters
    ----------
    A : ndarray
        Data (any real dtype).
    L : ndarray of A's shape, or callable
        Background; or a function that returns the entries of the background at flat
        (C-order) indices of ``A``, for a background that is not held whole.
    observed : bool ndarray, optional
        Observation mask of A's shape; unobserved entries are left out.
    seed : int
        Chooses the offset of the sample.

    Returns
    -------
    float
    """
    size = A.size
    k = max(1, -(-size // _NOISE_SAMPLE))
    cols = A.shape[-1] if A.ndim > 1 else 1
    while k > 1 and math.gcd(k, cols) != 1:
        k += 1
    offset = seed % k
    a = A.reshape(-1)[offset::k]
    if callable(L):
        sample = np.asarray(L(np.arange(offset, size, k)), dtype=np.float32)
    else:
        sample = L.reshape(-1)[offset::k]
    e = np.subtract(a, sample, dtype=np.float32)
    if observed is not None:
        e = e[observed.reshape(-1)[offset::k]]
    if e.size == 0:
        return 0.0
    e -= np.median(e)
    np.abs(e, out=e)
    return float(1.4826 * np.median(e))


def mask_threshold(
    A: np.ndarray,
    L: np.ndarray | Callable[[np.ndarray], np.ndarray],
    observed: np.ndarray | None = None,
    *,
    threshold: float | str = default("threshold"),
    threshold_k: float = default("threshold_k"),
) -> tuple[float, float | None]:
    """The threshold of the residual rule on ``|A - L|``, and the noise level behind it.

    Parameters
    ----------
    A, L, observed
        As for :func:`noise_level` (``L`` only read for ``threshold="auto"``).
    threshold : float or "auto", default "auto"
        A fixed threshold in grey levels, or ``max(threshold_k * noise, 6)``.
    threshold_k : float, default 5
        See ``threshold``.

    Returns
    -------
    threshold : float
    noise : float or None
        None for a fixed threshold.
    """
    if threshold != "auto":
        return float(threshold), None
    noise = noise_level(A, L, observed)
    return max(threshold_k * noise, MIN_AUTO_THRESHOLD), noise


def _disk(radius: int) -> np.ndarray:
    return cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1))


def clean_mask(
    mask: np.ndarray,
    *,
    open_radius: int = 0,
    close_radius: int = 0,
    min_area: int = 0,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Open, close, and drop small blobs of one binary mask.

    Parameters
    ----------
    mask : (H, W) bool or uint8 ndarray
        Foreground mask.
    open_radius, close_radius : int
        Radii of the elliptical structuring elements (0 = skip).
    min_area : int
        Connected components (8-connected) with fewer pixels are removed (0 = keep all).
    out : (H, W) bool ndarray, optional
        C-contiguous destination (may be ``mask`` itself).

    Returns
    -------
    (H, W) bool ndarray
        ``out`` when given.
    """
    m = mask.view(np.uint8) if mask.dtype == bool and mask.flags.c_contiguous else mask
    m = m.astype(np.uint8, copy=False)
    if open_radius > 0:
        m = cv2.morphologyEx(m, cv2.MORPH_OPEN, _disk(open_radius))
    if close_radius > 0:
        m = cv2.morphologyEx(m, cv2.MORPH_CLOSE, _disk(close_radius))
    if out is None:
        out = np.empty(m.shape, dtype=bool)
    dest = out.view(np.uint8)
    if min_area > 1 and m.any():
        # labels, then areas by counting (3 times faster than connectedComponentsWithStats,
        # which also finds boxes and centroids; the same labels and areas)
        count, labels = cv2.connectedComponents(m, connectivity=8)
        keep = np.bincount(labels.ravel(), minlength=count) >= min_area
        keep[0] = False  # label 0 is the background
        if count > 1 and not keep[1:].all():
            np.take(keep.view(np.uint8), labels, out=dest)
            return out
    np.not_equal(m, 0, out=out)
    return out


def foreground_masks(
    A: np.ndarray,
    L: np.ndarray,
    S: np.ndarray | None,
    frame_shape: tuple[int, ...],
    *,
    rule: str = default("mask_rule"),
    threshold: float | str = default("threshold"),
    threshold_k: float = default("threshold_k"),
    observed: np.ndarray | None = None,
    open_radius: int = default("open_radius"),
    close_radius: int = default("close_radius"),
    min_area: int = default("min_area"),
) -> MaskResult:
    """One binary foreground mask per frame.

    Parameters
    ----------
    A, L : (m, n) or (n, *frame_shape) ndarray
        Data and background, one column per frame, or frame by frame.
    S : ndarray or None
        Sparse part, of the same shape (needed by the ``"support"`` rule only).
    frame_shape : tuple of int
        ``(H, W)`` or ``(H, W, C)``: how a column maps to a frame. For colour data a pixel
        is foreground when any channel is.
    rule : {"residual", "support"}, default "residual"
        See the module docstring.
    threshold : float or "auto", default "auto"
        Threshold on ``|A - L|`` in grey levels.
    threshold_k : float, default 5
        With ``threshold="auto"``: threshold = ``max(threshold_k * noise, 6)``.
    observed : bool ndarray of A's shape, optional
        Observation mask: unobserved pixels are never foreground before the clean-up.
    open_radius, close_radius, min_area : int, default 1, 3, 25
        Clean-up, see :func:`clean_mask`. Every default is the CLI's
        (:mod:`bpvideo.settings`).

    Returns
    -------
    MaskResult
    """
    frames_first = A.ndim == len(frame_shape) + 1
    if L.shape != A.shape:
        raise InputError(f"background shape {L.shape} differs from data shape {A.shape}")
    n = A.shape[0] if frames_first else A.shape[1]
    noise: float | None = None
    value: float | None = None
    raw = np.empty(A.shape, dtype=bool)
    if rule == "support":
        if S is None:
            raise InputError(
                "{mask_rule=} needs the sparse part S: use {mask_rule='residual'}",
                option=("mask_rule", rule),
            )
        np.not_equal(S, 0, out=raw)
    elif rule == "residual":
        value, noise = mask_threshold(A, L, observed, threshold=threshold, threshold_k=threshold_k)
        rows = max(1, _BLOCK // (A[0].size if A.ndim > 1 else 1))
        tmp = np.empty((min(rows, len(A)), *A.shape[1:]), dtype=np.float32)
        for lo in range(0, len(A), rows):
            hi = min(len(A), lo + rows)
            t = tmp[: hi - lo]
            np.subtract(A[lo:hi], L[lo:hi], out=t)
            np.abs(t, out=t)
            np.greater(t, value, out=raw[lo:hi])
    else:
        raise InputError(
            "{mask_rule=} must be one of: residual, support", option=("mask_rule", rule)
        )
    if observed is not None:
        raw &= observed
    if frames_first:
        frames = raw
    elif raw.ndim == 2 and max(raw.shape) < 2**31:  # one transposed copy, by OpenCV
        frames = cv2.transpose(raw.view(np.uint8)).view(bool).reshape((n, *frame_shape))
    else:  # pragma: no cover - more than 2**31 rows
        frames = np.ascontiguousarray(raw.T).reshape((n, *frame_shape))
    del raw
    if frames.ndim == 4:
        frames = frames.any(axis=3)
    for j in range(n):
        clean_mask(
            frames[j],
            open_radius=open_radius,
            close_radius=close_radius,
            min_area=min_area,
            out=frames[j],
        )
    return MaskResult(masks=frames, threshold=value, noise=noise)
