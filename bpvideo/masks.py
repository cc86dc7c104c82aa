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

from dataclasses import dataclass

import cv2
import numpy as np

from bpvideo.errors import InputError

__all__ = ["MaskResult", "clean_mask", "foreground_masks", "noise_level"]

#: Smallest automatic threshold, in grey levels: below this, compression noise dominates.
MIN_AUTO_THRESHOLD = 6.0
_NOISE_SAMPLE = 1_000_000
_ROW_BLOCK = 65536


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
    A: np.ndarray, L: np.ndarray, observed: np.ndarray | None = None, *, seed: int = 0
) -> float:
    """Robust standard deviation of the residual ``A - L``: 1.4826 x MAD.

    Estimated on a random sample of at most one million observed entries.

    Parameters
    ----------
    A, L : (m, n) ndarray
        Data and background.
    observed : (m, n) bool ndarray, optional
        Observation mask; unobserved entries are left out.
    seed : int
        Seed of the sample.

    Returns
    -------
    float
    """
    size = A.size
    rng = np.random.default_rng(seed)
    index = rng.integers(0, size, min(size, _NOISE_SAMPLE)) if size > _NOISE_SAMPLE else None
    a, l_ = (A.reshape(-1), L.reshape(-1)) if index is None else (A.flat[index], L.flat[index])
    e = (a - l_).astype(np.float64)
    if observed is not None:
        keep = observed.reshape(-1) if index is None else observed.flat[index]
        e = e[keep]
    if e.size == 0:
        return 0.0
    return float(1.4826 * np.median(np.abs(e - np.median(e))))


def _disk(radius: int) -> np.ndarray:
    return cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1))


def clean_mask(
    mask: np.ndarray, *, open_radius: int = 0, close_radius: int = 0, min_area: int = 0
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

    Returns
    -------
    (H, W) bool ndarray
    """
    m = mask.astype(np.uint8)
    if open_radius > 0:
        m = cv2.morphologyEx(m, cv2.MORPH_OPEN, _disk(open_radius))
    if close_radius > 0:
        m = cv2.morphologyEx(m, cv2.MORPH_CLOSE, _disk(close_radius))
    if min_area > 1 and m.any():
        count, labels, stats, _ = cv2.connectedComponentsWithStats(m, connectivity=8)
        small = stats[:, cv2.CC_STAT_AREA] < min_area
        small[0] = True  # label 0 is the background
        m = (~small[labels]).astype(np.uint8) if count > 1 else m
    return m.astype(bool)


def foreground_masks(
    A: np.ndarray,
    L: np.ndarray,
    S: np.ndarray | None,
    frame_shape: tuple[int, ...],
    *,
    rule: str = "residual",
    threshold: float | str = "auto",
    threshold_k: float = 4.0,
    observed: np.ndarray | None = None,
    open_radius: int = 1,
    close_radius: int = 2,
    min_area: int = 15,
) -> MaskResult:
    """One binary foreground mask per frame.

    Parameters
    ----------
    A, L : (m, n) ndarray
        Data and background, one column per frame.
    S : (m, n) ndarray or None
        Sparse part (needed by the ``"support"`` rule only).
    frame_shape : tuple of int
        ``(H, W)`` or ``(H, W, C)``: how a column maps to a frame. For colour data a pixel
        is foreground when any channel is.
    rule : {"residual", "support"}
        See the module docstring.
    threshold : float or "auto"
        Threshold on ``|A - L|`` in grey levels.
    threshold_k : float
        With ``threshold="auto"``: threshold = ``max(threshold_k * noise, 6)``.
    observed : (m, n) bool ndarray, optional
        Observation mask: unobserved pixels are never foreground before the clean-up.
    open_radius, close_radius, min_area : int
        Clean-up, see :func:`clean_mask`.

    Returns
    -------
    MaskResult
    """
    m, n = A.shape
    if L.shape != A.shape:
        raise InputError(f"background shape {L.shape} differs from data shape {A.shape}")
    noise: float | None = None
    value: float | None = None
    raw = np.empty((m, n), dtype=bool)
    if rule == "support":
        if S is None:
            raise InputError("the support rule needs the sparse part S: use --mask-rule residual")
        np.not_equal(S, 0, out=raw)
    elif rule == "residual":
        if threshold == "auto":
            noise = noise_level(A, L, observed)
            value = max(threshold_k * noise, MIN_AUTO_THRESHOLD)
        else:
            value = float(threshold)
        for lo in range(0, m, _ROW_BLOCK):
            hi = min(m, lo + _ROW_BLOCK)
            np.greater(np.abs(A[lo:hi] - L[lo:hi]), value, out=raw[lo:hi])
    else:
        raise InputError(f"mask rule ({rule!r}) must be one of: residual, support")
    if observed is not None:
        raw &= observed
    frames = raw.T.reshape((n, *frame_shape))
    if frames.ndim == 4:
        frames = frames.any(axis=3)
    out = np.empty(frames.shape, dtype=bool)
    for j in range(n):
        out[j] = clean_mask(
            frames[j], open_radius=open_radius, close_radius=close_radius, min_area=min_area
        )
    return MaskResult(masks=out, threshold=value, noise=noise)
