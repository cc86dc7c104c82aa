"""Ghosts: foreground that is the background revealed, not an object.

A model learned on a few seconds holds whatever stood or passed slowly through them (a
truck that filled the road for the whole learning span, a person who stood there). When
it goes, the background it uncovers differs from the model and is masked until the model
takes it in: a *ghost*. A ghost and an object that stays are told apart by their outline
(the idea of Cucchiara et al.'s Sakbot): across an object's outline *the frame* steps (the
object against the scene behind it) and the model need not; across a ghost's outline
*the model* steps (the border of what was there) while the frame runs on, one background
on both sides. The step is measured between the local means of a thin band inside and a
thin band outside the outline, so that texture on both sides (leaves, windows) averages
out instead of counting as edges.
"""

from __future__ import annotations

import cv2
import numpy as np

from bpvideo.masks.morphology import disk

__all__ = ["BORDER_YOUNG", "EDGE_RATIO", "OUTLINE", "SMALLEST", "STEP", "ghosts"]

#: A point of a region's outline votes "ghost" where the model steps by more than
#: :data:`STEP` grey levels and the frame by less than this share of that, "object" the
#: other way round; a ghost has more than twice as many votes of its own.
EDGE_RATIO = 0.5
STEP = 10.0
#: Width in pixels of the bands inside and outside a region's outline (masks are cleaned
#: by openings and closings: their borders sit near, not on, edges).
OUTLINE = 3
#: Side of the square over which the bands' local means are taken.
SIDE = 9
#: Regions smaller than this many pixels are not judged (their outlines are noise).
SMALLEST = 25
#: A region is not judged when more than this share of the band around it (outside,
#: :data:`OUTLINE` wide) is foreground too: the background revealed borders the scene,
#: where the old part of a person who stands is bordered by the rest of them and its
#: outline runs through them. Chosen by the live replay's leave-one-out
#: (docs/performance.md); None: every region is judged.
BORDER_YOUNG: float | None = 0.65


def _steps(image: np.ndarray, inner: np.ndarray, outer: np.ndarray, band: np.ndarray) -> np.ndarray:
    """At each pixel of ``band``, the difference between the local means of ``image`` on
    ``inner`` and on ``outer`` (float32 image, uint8 0/1 masks; 0 where either is absent)."""
    size = (SIDE, SIDE)
    means = []
    for side in (inner, outer):
        weight = cv2.boxFilter(side.astype(np.float32), -1, size, normalize=False)
        total = cv2.boxFilter(image * side, -1, size, normalize=False)
        means.append((total[band], weight[band]))
    (ti, wi), (to, wo) = means
    both = (wi > 0) & (wo > 0)
    out = np.zeros(len(ti), dtype=np.float32)
    out[both] = np.abs(ti[both] / wi[both] - to[both] / wo[both])
    return out


def ghosts(
    frame: np.ndarray,
    background: np.ndarray,
    regions: np.ndarray,
    foreground: np.ndarray | None = None,
    border: float | None = None,
    ignore: np.ndarray | None = None,
) -> np.ndarray:
    """The regions of ``regions`` that are ghosts of ``background`` in ``frame``.

    Parameters
    ----------
    frame, background : (H, W) ndarray
        The frame and the model's background of it, in grey levels.
    regions : (H, W) bool ndarray
        Foreground to judge (each connected region on its own).
    foreground : (H, W) bool ndarray, optional
        The frame's whole foreground (``regions`` and the rest): regions bordered by more
        than ``border`` of it are not judged.
    border : float, optional
        The largest share of a region's surrounding band that may be ``foreground``
        (None: :data:`BORDER_YOUNG`).
    ignore : (H, W) bool ndarray, optional
        Where outline points do not vote (and the band is not ``foreground``).

    Returns
    -------
    (H, W) bool ndarray
        The pixels of the regions judged ghosts.
    """
    out = np.zeros(regions.shape, dtype=bool)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(regions.view(np.uint8), 8)
    judged = [i for i in range(1, count) if stats[i, cv2.CC_STAT_AREA] >= SMALLEST]
    if not judged:
        return out
    frame = np.asarray(frame, dtype=np.float32)
    background = np.asarray(background, dtype=np.float32)
    ring = disk(OUTLINE)
    pad = OUTLINE + SIDE
    border = BORDER_YOUNG if border is None else border
    for i in judged:
        x, y, w, h = stats[i, :4]
        y0, y1 = max(0, y - pad), min(regions.shape[0], y + h + pad)
        x0, x1 = max(0, x - pad), min(regions.shape[1], x + w + pad)
        region = (labels[y0:y1, x0:x1] == i).view(np.uint8)
        outer = cv2.dilate(region, ring, borderValue=0) - region
        crop = (slice(y0, y1), slice(x0, x1))
        if foreground is not None and border is not None:
            young = outer.view(bool) & foreground[crop]
            if ignore is not None:
                young &= ~ignore[crop]
            if np.count_nonzero(young) > border * np.count_nonzero(outer):
                continue
        inner = region - cv2.erode(region, ring, borderValue=1)
        band = (inner | outer).view(bool)
        if ignore is not None:
            band &= ~ignore[crop]
        of_frame = _steps(frame[crop], inner, outer, band)
        of_model = _steps(background[crop], inner, outer, band)
        model_only = np.count_nonzero((of_model > STEP) & (of_frame < EDGE_RATIO * of_model))
        frame_only = np.count_nonzero((of_frame > STEP) & (of_model < EDGE_RATIO * of_frame))
        if model_only > 2 * frame_only:
            out[crop] |= region.view(bool)
    return out
