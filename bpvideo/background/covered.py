"""Where nothing is ever still: the reference background of pixels covered most of the time.

The reference image of :mod:`bpvideo.background.reference` is each pixel's median over its
stillest frames. Three kinds of scene defeat stillness alone:

- **Nothing near the pixel is ever still** (a crowd that sways in place, a branch in
  front of the lens, water that never stops): even its stillest frames move far more than
  the stillest frames of the quiet part of the view (:func:`never_still`). In a crowd a
  large motion box always holds someone, while the pixel itself is still whenever the
  background shows: such pixels are looked at again with a box of :data:`tuning.SMALL_BOX`
  pixels; where even that finds no still frame, the reference is the median of *all*
  the window's frames (both directions in time: what the pixel shows most of the time),
  none of their entries counts as still, and the summary says how much of the view that
  was (:attr:`Covered.never`).
- **A plain object is the stillest thing there** (a canoe's hull gliding over rippling
  water): the reference then disagrees with the references around it (their median over
  a box of :data:`tuning.GUIDE_BOX` of the smaller side). Such a pixel takes, of its own frames,
  the appearance closest to that guide when it shows it often enough
  (:data:`tuning.GUIDE_SUPPORT`): the water it shows between the hull's passes
  (:func:`guided`). Only pixels whose still frames still move are judged so: a pixel
  whose still frames are truly still keeps its reference, however it differs from its
  neighbours' (on a textured scene the guide is wrong).

- **A plain object passes through a short span** (a trailer across a live stream's first
  seconds, where the leaves behind it never stop): it can cover its pixels for most of
  the span and be the stillest thing they show. What they show before it came and after
  it left is one appearance, which nothing that stays shows: a pixel whose first and last
  few frames (:data:`bpvideo.background.tuning.LEARN_ENDS`) agree while its reference does
  not takes the ends' appearance (:func:`both_ends`). Only where a solve is asked to (a
  live stream's learning span: :func:`bpvideo.background.reference.short_span`); in a
  batch window of hundreds of frames the ends are far apart and the still frames many.

All use what a robust-PCA window has and an online subtractor has not: every frame of
the window, before and after.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import cv2
import numpy as np

from bpvideo import cores
from bpvideo.background import tuning

__all__ = [
    "Covered",
    "both_ends",
    "guided",
    "never_still",
    "quietest",
]


@dataclass
class Covered:
    """What the window's reference could not take from still frames.

    Attributes
    ----------
    never : (m,) bool ndarray
        Rows whose reference is the median of all frames (no still frame found).
    replaced : (m,) bool ndarray
        Rows whose reference was taken from the guide (:func:`guided`).
    """

    never: np.ndarray
    replaced: np.ndarray

    @property
    def fraction(self) -> float:
        """Share of the view with no trusted still frame."""
        return float((self.never | self.replaced).mean()) if self.never.size else 0.0


def _quiet(score: np.ndarray, still: np.ndarray) -> tuple[np.ndarray, float]:
    """Each row's largest motion over its still frames, and the :data:`tuning.QUIET` quantile of
    that over rows."""
    quiet = quietest(score, still)
    finite = quiet[np.isfinite(quiet)]
    return quiet, float(np.quantile(finite, tuning.QUIET)) if finite.size else 0.0


def quietest(score: np.ndarray, still: np.ndarray) -> np.ndarray:
    """Each row's largest motion over its still frames (-inf where it has none): (m,)."""
    m, n = score.shape
    out = np.empty(m, dtype=np.result_type(score.dtype, np.float32))

    def rows(lo: int, hi: int) -> None:
        np.max(np.where(still[lo:hi], score[lo:hi], -np.inf), axis=1, out=out[lo:hi])

    cores.by_rows(rows, m, n)
    return out


def unsettled(score: np.ndarray, still: np.ndarray) -> np.ndarray:
    """Rows whose still frames move more than :data:`tuning.NEVER_STILL_K` times the quiet part
    of the view: (m,) bool."""
    quiet, typical = _quiet(score, still)
    return np.isfinite(quiet) & (quiet > tuning.NEVER_STILL_K * max(typical, 1e-3))


def never_still(
    score: np.ndarray,
    still: np.ndarray,
    fine: Callable[[], tuple[np.ndarray, np.ndarray]] | None = None,
    rows: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The rows with no still frame, and the still entries to use.

    Parameters
    ----------
    score : (m, n) ndarray
        :func:`~bpvideo.background.reference.motion_score` (rows: pixels and channels).
    still : (m, n) bool ndarray
        :func:`~bpvideo.background.reference.still_entries` of ``score``.
    fine : callable, optional
        ``fine()`` gives the motion score with a box of :data:`tuning.SMALL_BOX` and its still
        entries (made only when some row is unsettled).
    rows : (m,) bool ndarray, optional
        :func:`unsettled` of ``score`` and ``still``, when the caller has it.

    Returns
    -------
    never : (m,) bool ndarray
        Rows still unsettled after the second look.
    still : (m, n) bool ndarray
        ``still``, with the second look's still entries where it settled a row and every
        frame of the ``never`` rows (their reference is then the median of all frames).
    """
    never = unsettled(score, still) if rows is None else rows.copy()
    if not never.any():
        return never, still
    still = still.copy()
    if fine is not None:
        small, small_still = fine()
        again = unsettled(small, small_still)
        settled = never & ~again
        still[settled] = small_still[settled]
        never &= again
    still[never] = True
    return never, still


def guided(
    data: np.ndarray,
    frame_shape: tuple[int, int],
    own: np.ndarray,
    noise: float,
    where: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """References that disagree with their neighbours', replaced by the pixel's own
    appearance closest to the neighbours' (see the module docstring).

    Parameters
    ----------
    data : (m, n) ndarray
        Frames as columns (pixels with their channels side by side), solve scale.
    frame_shape : (h, w)
    own : (m,) ndarray
        The reference image from the still frames.
    noise : float
        Noise level of the frames about ``own`` (grey levels).
    where : (m,) bool ndarray
        The rows that may be replaced (:func:`unsettled`).

    Returns
    -------
    reference : (m,) float32 ndarray
    replaced : (m,) bool ndarray
        Rows whose reference was replaced (their still frames are not background).
    """
    h, w = frame_shape
    m = data.shape[0]
    channels = m // (h * w)
    image = np.clip(np.rint(own), 0, 255).astype(np.uint8).reshape(h, w, channels)
    side = max(3, round(tuning.GUIDE_BOX * min(h, w)) | 1)
    guide = np.stack([cv2.medianBlur(np.ascontiguousarray(image[..., c]), side)
                      for c in range(channels)], -1)  # fmt: skip
    guide = guide.reshape(m).astype(np.float32)
    limit = tuning.GUIDE_K * max(noise, 1.0)
    out = np.asarray(own, dtype=np.float32).copy()
    replaced = np.zeros(m, dtype=bool)
    rows = np.flatnonzero((np.abs(out - guide) > limit) & where)
    if not rows.size:
        return out, replaced
    values = np.asarray(data[rows], dtype=np.float32)  # (r, n)
    target = guide[rows, None]
    closest = np.take_along_axis(values, np.argmin(np.abs(values - target), 1)[:, None], 1)
    near = np.abs(values - closest) < tuning.NEAR_K * max(noise, 1.0)
    enough = (near.mean(axis=1) >= tuning.GUIDE_SUPPORT) & (
        np.abs(closest[:, 0] - guide[rows]) < limit
    )
    if enough.any():
        out[rows[enough]] = _median_where(values[enough], near[enough])
        replaced[rows[enough]] = True
    return out, replaced


def both_ends(
    data: np.ndarray, own: np.ndarray, still: np.ndarray, noise: float, frames: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """References of pixels that show one appearance at both ends of the span and another
    in between, replaced by the ends' (see the module docstring).

    Parameters
    ----------
    data : (m, n) ndarray
        Frames as columns (pixels with their channels side by side), solve scale.
    own : (m,) ndarray
        The reference image from the still frames.
    still : (m, n) bool ndarray
        The still entries ``own`` is the median of.
    noise : float
        Noise level of the frames about ``own`` (grey levels).
    frames : int
        Frames at each end; spans shorter than four times that are left as they are.

    Returns
    -------
    reference : (m,) float32 ndarray
    still : (m, n) bool ndarray
        ``still``, with the entries that show the ends' appearance on the rows replaced.
    replaced : (m,) bool ndarray
    """
    m, n = data.shape
    out = np.asarray(own, dtype=np.float32).copy()
    replaced = np.zeros(m, dtype=bool)
    if frames < 1 or n < 4 * frames:
        return out, still, replaced
    first = np.median(np.asarray(data[:, :frames], np.float32), axis=1)
    last = np.median(np.asarray(data[:, -frames:], np.float32), axis=1)
    ends = 0.5 * (first + last)
    limit = tuning.ENDS_K * max(noise, 1.0)
    rows = np.flatnonzero((np.abs(first - last) < limit) & (np.abs(out - ends) > limit))
    if not rows.size:
        return out, still, replaced
    values = np.asarray(data[rows], dtype=np.float32)
    near = np.abs(values - ends[rows, None]) < limit
    enough = near.sum(axis=1) >= tuning.ENDS_SUPPORT
    rows, near, values = rows[enough], near[enough], values[enough]
    if rows.size:
        still = still.copy()
        still[rows] = near
        out[rows] = _median_where(values, near)
        replaced[rows] = True
    return out, still, replaced


def _median_where(values: np.ndarray, near: np.ndarray) -> np.ndarray:
    """Per row of (r, n) ``values``, the median of its ``near`` entries: (r,)."""
    return np.nanmedian(np.where(near, values, np.nan), axis=1)
