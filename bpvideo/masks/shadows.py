"""Cast shadows: pixels darker than the background but of its colour and texture.

A shadow falling on the road or a wall changes a pixel's brightness, not its hue, and
leaves the texture under it (the grain of the asphalt, the edges of tiles) in place;
changedetection.net labels such pixels background (label 50). A pixel of ``|A - L|``
above the threshold is taken for a shadow, and left out of the mask, when

1. its brightness is between :data:`DARKEST` and :data:`LIGHTEST` times the background's;
2. its chromaticity (B, G, R divided by their sum) is within :data:`CHROMA` (L1) of the
   background's (:attr:`bpvideo.masks.thresholds.MaskModel.shade`, of each window);
3. its neighbourhood (:data:`PATCH` x :data:`PATCH`) correlates with the background's
   by at least :data:`TEXTURE` (normalised cross-correlation), or both are flat (standard
   deviation below :data:`FLAT`: a shadow on a smooth road darkens what little grain it
   has below the camera's noise). This keeps dark grey cars and black clothes, whose
   colour passes the first two tests;
4. or it passes the first two tests within :data:`REACH` pixels of a solid shadow (what
   tests 1-3 found, opened by a disk of radius :data:`SOLID`): a shadow's soft edge steps
   in the frame and not in the background, which the texture test takes for an object's
   edge, while the specks of a grey car that pass all three tests are no solid shadow;
5. or, failing the texture test, the ratio ``A / L`` is steady over the pixels of its
   :data:`PATCH` x :data:`PATCH` neighbourhood that pass tests 1-2 (at least
   :data:`RATIO_SUPPORT` of them; spread, standard deviation over mean, below
   :data:`RATIO_SPREAD`) while the background under them is textured (standard deviation
   above :data:`RATIO_TEXTURE`): a shadow scales the background's texture by one factor
   whatever its contrast, and a thin shadow, whose every patch straddles its edge, keeps
   that factor on its own pixels where the patch's correlation is the edge's. An object
   reproduces a textured background scaled only by chance; over a flat background the
   ratio says nothing and this test stays out;
6. optionally (:data:`DEEP` > 0, off by default), or it passes tests 1-2 further than
   :data:`DEEP` pixels from every pixel of ``where`` that fails them: an object shows
   pixels of other brightness or colour (lights, windows, edges) all over, a shadow's
   core none. It removes the long soft shadows of ``sbi_HighwayI`` but also the inside of
   uniformly dark objects (docs/method.md).

The bounds were chosen by leave-one-sequence-out on the dev sequences
(docs/quality.md); without the texture test shadow removal cost cdnet_highway 0.03.
"""

from __future__ import annotations

import cv2
import numpy as np

from bpvideo.masks.morphology import disk

__all__ = [
    "CHROMA",
    "DARKEST",
    "DEEP",
    "FLAT",
    "LIGHTEST",
    "PATCH",
    "RATIO_SPREAD",
    "RATIO_SUPPORT",
    "RATIO_TEXTURE",
    "REACH",
    "SOLID",
    "TEXTURE",
    "chromaticity",
    "same_texture",
    "shadow_pixels",
]

#: Darkest shadow, as a fraction of the background's brightness.
DARKEST = 0.4
#: Faintest shadow: at least this much darker than the background.
LIGHTEST = 0.95
#: Largest chromaticity difference (L1 over B, G, R fractions) of a shadow.
CHROMA = 0.05
#: Side of the patch of the texture test.
PATCH = 5
#: Smallest correlation of a shadow's patch with the background's.
TEXTURE = 0.5
#: Below this standard deviation (grey levels) a shadow's patch, and the background's, are
#: flat: no texture to test.
FLAT = 6.0
#: Radius of the opening that keeps the solid shadows, and pixels by which they reach out
#: to their soft edges (0: no reach).
SOLID = 2
REACH = 3
#: Largest spread (standard deviation over mean) of ``A / L`` over a shadow's
#: neighbours of the same brightness and colour tests (0: no ratio test).
RATIO_SPREAD = 0.04
#: Fewest such neighbours (of ``PATCH ** 2``) for the ratio test.
RATIO_SUPPORT = 8
#: Smallest standard deviation (grey levels) of the background under them: over a flatter
#: background a steady ratio is no evidence.
RATIO_TEXTURE = 3.0
#: A pixel of the brightness and colour tests further than this from every foreground
#: pixel that fails them is a shadow (0, the default: no such test; test 6 of the module).
DEEP = 0
#: Side of the tiles the texture test filters whole (those dense with candidates).
_TILE = 64
#: What filtering one tile costs, in pixels tested on their own patches instead (one
#: 70 x 70 crop ~125 us, a pixel's patch ~0.25 us).
_TILE_COST = 500
#: Pixels tested on their own patches at a time.
_CHUNK = 1024
#: Below this local variance (grey levels squared) a patch is flat for
#: :func:`same_texture` (changed objects: :mod:`bpvideo.background.reference`).
_FLAT = 4.0


def shadow_pixels(
    grey: np.ndarray,
    background: np.ndarray,
    frame: np.ndarray,
    shade: np.ndarray,
    where: np.ndarray | None = None,
) -> np.ndarray:
    """The pixels of one frame, or of a block of frames, that look like a shadow on the
    background.

    Parameters
    ----------
    grey : (H, W) or (k, H, W) ndarray
        The frame(s) in grey levels (uint8 or float).
    background : (H, W) or (k, H, W) ndarray
        The background ``L`` of the frame(s), grey levels.
    frame : (H, W, 3) or (k, H, W, 3) uint8 ndarray
        The frame(s) in colour (BGR).
    shade : (H, W, 3) float32 ndarray
        The background's :func:`chromaticity` (NaN where its colour is unknown).
    where : bool ndarray of ``grey``'s shape, optional
        The pixels to test (the foreground, usually a small part of the frame); the
        others are never a shadow, and the solid shadows that reach out to their edges
        are found among these. None: all of them.

    Returns
    -------
    bool ndarray of ``grey``'s shape
    """
    single = np.ndim(grey) == 2
    # a block of frames is tested at once (the selections below cost per call, not per
    # pixel); a pixel's answer is the same either way
    a, b, colour = (np.ascontiguousarray(x) for x in (grey, background, frame))
    if single:
        a, b, colour = a[None], b[None], colour[None]
    plane = a.shape[1] * a.shape[2]
    # every test on the pixels asked about only: at 1080p a full-frame float pass costs
    # more than the foreground's few pixels
    index = np.arange(a.size) if where is None else np.flatnonzero(where)
    bv = np.maximum(_gather(b, index), 0.0)
    ratio = (_gather(a, index) + 1.0) / (bv + 1.0)
    index = index[(ratio > DARKEST) & (ratio < LIGHTEST)]
    if index.size:
        chroma = chromaticity(colour.reshape(-1, 3)[index])
        ref_chroma = shade.reshape(-1, 3)[index % plane]  # NaN (unknown colour): never
        index = index[np.abs(chroma - ref_chroma).sum(axis=1) < CHROMA]
    candidate = np.zeros(a.shape, dtype=bool)
    if index.size:
        colour_like = np.zeros(a.shape, dtype=bool)
        colour_like.reshape(-1)[index] = True
        same = _texture_near(a, b, index)
        if RATIO_SPREAD > 0 and not same.all():
            rest = np.flatnonzero(~same)
            for lo in range(0, rest.size, _CHUNK):
                part = rest[lo : lo + _CHUNK]
                same[part] = _ratio_steady(a, b, colour_like, index[part])
        candidate.reshape(-1)[index[same]] = True
        if REACH:
            _reach_edges(candidate, colour_like)
        if DEEP:
            _deep_cores(candidate, colour_like, where)
    return candidate[0] if single else candidate


def _deep_cores(shadow: np.ndarray, colour_like: np.ndarray, where: np.ndarray | None) -> None:
    """Add to ``shadow`` (k, H, W) the pixels of ``colour_like`` further than :data:`DEEP`
    pixels from every pixel of ``where`` that is not ``colour_like`` (in place)."""
    near = disk(DEEP)
    for j in range(len(shadow)):
        if not colour_like[j].any():
            continue
        other = (
            ~colour_like[j] if where is None else where.reshape(shadow.shape)[j] & ~colour_like[j]
        )
        reached = cv2.dilate(other.view(np.uint8), near).view(bool)
        shadow[j] |= colour_like[j] & ~reached


def _ratio_steady(a: np.ndarray, b: np.ndarray, like: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Whether ``a / b`` ((k, H, W) C-contiguous) is steady over the pixels of ``like``
    (bool, the same shape: those of the brightness and colour tests) in the
    :data:`PATCH` x :data:`PATCH` patch of each flat index of ``index`` (N,), over a
    textured background (test 5 of the module). Returns (N,) bool."""
    where = _patch_indices(a.shape, index)
    w = like.reshape(-1).take(where)  # (PATCH**2, N)
    pa = a.reshape(-1).take(where).astype(np.float32, copy=False)
    pb = np.maximum(b.reshape(-1).take(where).astype(np.float32, copy=False), 0.0)
    ratio = (pa + 1.0) / (pb + 1.0)
    n = w.sum(axis=0)
    k = np.maximum(n, 1).astype(np.float32)
    ratio = np.where(w, ratio, 0.0)
    mean_r = ratio.sum(axis=0) / k
    var_r = (ratio * ratio).sum(axis=0) / k - mean_r * mean_r
    pb = np.where(w, pb - pb[len(pb) // 2], 0.0)  # about the centre: shift-free sums
    mean_b = pb.sum(axis=0) / k
    var_b = (pb * pb).sum(axis=0) / k - mean_b * mean_b
    steady = np.maximum(var_r, 0.0) < (RATIO_SPREAD * mean_r) ** 2
    return steady & (var_b > RATIO_TEXTURE * RATIO_TEXTURE) & (n >= RATIO_SUPPORT)


def _reach_edges(shadow: np.ndarray, colour_like: np.ndarray) -> None:
    """Add to ``shadow`` (k, H, W) the pixels of ``colour_like`` (those of the brightness
    and colour tests) within :data:`REACH` of its solid part (in place)."""
    solid = disk(SOLID)
    reach = disk(REACH)
    for j in range(len(shadow)):
        found = shadow[j].view(np.uint8)
        if not found.any():
            continue
        core = cv2.morphologyEx(found, cv2.MORPH_OPEN, solid) if SOLID else found
        shadow[j] |= colour_like[j] & cv2.dilate(core, reach).view(bool)


def _gather(x: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``x.flat[index]`` (C-contiguous ``x``) in float32."""
    return x.reshape(-1)[index].astype(np.float32, copy=False)


def chromaticity(colour: np.ndarray) -> np.ndarray:
    """B, G, R as fractions of their sum (each plus one, so that black has a colour).

    Parameters
    ----------
    colour : (..., 3) ndarray
        BGR colours; NaN (unknown) colours give NaN.

    Returns
    -------
    (..., 3) float32 ndarray
    """
    c = np.asarray(colour, dtype=np.float32) + np.float32(1.0)
    return c / c.sum(axis=-1, keepdims=True)


def _texture_near(a: np.ndarray, b: np.ndarray, index: np.ndarray) -> np.ndarray:
    """:func:`same_texture` of ``a`` and ``max(b, 0)`` ((k, H, W) C-contiguous) at the flat
    indices ``index``, two ways that agree up to rounding: a :data:`_TILE` x :data:`_TILE`
    tile of a frame holding more than :data:`_TILE_COST` of them is filtered whole; the
    others are tested on their own patches, :data:`_CHUNK` at a time (temporaries that
    stay in cache).

    Returns
    -------
    (N,) bool ndarray
        One answer per pixel of ``index``.
    """
    h, w = a.shape[1:]
    frame_of, at = np.divmod(index, h * w)
    rows, cols = np.divmod(at, w)
    tiles_y, tiles_x = -(-h // _TILE), -(-w // _TILE)
    tile_of = (frame_of * tiles_y + rows // _TILE) * tiles_x + cols // _TILE
    dense_tile = np.bincount(tile_of) > _TILE_COST
    in_dense = dense_tile[tile_of]
    dense = np.flatnonzero(dense_tile)
    same = np.empty(index.size, dtype=bool)
    sparse = np.flatnonzero(~in_dense)
    for lo in range(0, sparse.size, _CHUNK):
        part = sparse[lo : lo + _CHUNK]
        same[part] = _texture_at(a, b, index[part])
    if dense.size:
        out = np.zeros(a.shape, dtype=bool)
        r = PATCH // 2 + 1  # each tile is filtered with a margin: the same neighbours
        for tile in dense.tolist():
            j, ty, tx = tile // (tiles_y * tiles_x), tile // tiles_x % tiles_y, tile % tiles_x
            y0, x0 = ty * _TILE, tx * _TILE
            y1, x1 = min(h, y0 + _TILE), min(w, x0 + _TILE)
            cy0, cx0 = max(0, y0 - r), max(0, x0 - r)
            cy1, cx1 = min(h, y1 + r), min(w, x1 + r)
            crop_b = np.maximum(b[j, cy0:cy1, cx0:cx1], 0.0)
            tested = same_texture(a[j, cy0:cy1, cx0:cx1], crop_b, flat_below=FLAT * FLAT)
            out[j, y0:y1, x0:x1] = tested[y0 - cy0 : y1 - cy0, x0 - cx0 : x1 - cx0]
        same[in_dense] = out.reshape(-1)[index[in_dense]]
    return same


def _texture_at(a: np.ndarray, b: np.ndarray, index: np.ndarray) -> np.ndarray:
    """:func:`same_texture` of ``a`` and ``max(b, 0)`` ((H, W) or (k, H, W)) at the flat
    indices ``index`` (N,), from their own :data:`PATCH` x :data:`PATCH` patches (borders
    reflected as OpenCV's filters do). Returns (N,) bool."""
    where = _patch_indices(a.shape, index)
    pa = np.ascontiguousarray(a).reshape(-1).take(where).astype(np.float32, copy=False)
    pb = np.ascontiguousarray(b).reshape(-1).take(where).astype(np.float32, copy=False)
    np.maximum(pb, 0.0, out=pb)
    # about each patch's centre: the statistics are shift-free, and float32 sums of
    # small values keep the variance of a nearly flat patch exact
    pa -= pa[len(pa) // 2]
    pb -= pb[len(pb) // 2]
    n = len(pa)
    mean_a, mean_b = pa.sum(axis=0) / n, pb.sum(axis=0) / n
    var_a = (pa * pa).sum(axis=0) / n - mean_a * mean_a
    var_b = (pb * pb).sum(axis=0) / n - mean_b * mean_b
    cov = (pa * pb).sum(axis=0) / n - mean_a * mean_b
    return _similar(var_a, var_b, cov, flat=True, flat_below=FLAT * FLAT)


def _patch_indices(shape: tuple[int, ...], index: np.ndarray) -> np.ndarray:
    """The flat indices (PATCH**2, N) of the :data:`PATCH` x :data:`PATCH` patch of each
    flat index of ``index`` (N,) in an array of ``shape`` ((H, W) or (k, H, W)), borders
    reflected as OpenCV's filters do."""
    h, w = shape[-2:]
    r = PATCH // 2
    steps = np.arange(-r, r + 1)
    # one row per place in the patch, one column per pixel: sums over the patch are then
    # sums of contiguous rows
    where = (steps[:, None] * w + steps).reshape(-1, 1) + index  # (PATCH**2, N)
    frame_of, at = np.divmod(index, h * w)
    rows, cols = np.divmod(at, w)
    edge = np.flatnonzero((rows < r) | (rows >= h - r) | (cols < r) | (cols >= w - r))
    if edge.size:
        ys = _reflect(rows[edge, None] + steps, h) * w + (frame_of[edge] * (h * w))[:, None]
        xs = _reflect(cols[edge, None] + steps, w)
        where[:, edge] = (ys[:, :, None] + xs[:, None, :]).reshape(edge.size, -1).T
    return where


def _reflect(v: np.ndarray, n: int) -> np.ndarray:
    """Indices ``v`` outside ``[0, n)`` reflected about the edge pixel (OpenCV's
    BORDER_REFLECT_101)."""
    v = np.abs(v)
    return np.clip(np.where(v >= n, 2 * (n - 1) - v, v), 0, n - 1)


def same_texture(
    a: np.ndarray, b: np.ndarray, *, flat: bool = True, flat_below: float = _FLAT
) -> np.ndarray:
    """Where the :data:`PATCH` x :data:`PATCH` patches of two images correlate by at least
    :data:`TEXTURE`, or are both flat (with ``flat``): the same surface, whatever the light
    on it.

    Parameters
    ----------
    a, b : (H, W) ndarray
        Grey-level images.
    flat : bool, default True
        Whether two flat patches count as the same (no texture to tell them apart).
    flat_below : float
        Local variance (grey levels squared) below which a patch is flat.

    Returns
    -------
    (H, W) bool ndarray
    """
    # less each image's mean: the statistics are shift-free, and float32 box sums of
    # values near zero keep the variance of a nearly flat patch
    a = np.asarray(a, dtype=np.float32)
    b = np.asarray(b, dtype=np.float32)
    a = a - np.float32(a.mean()) if a.size else a
    b = b - np.float32(b.mean()) if b.size else b
    box = (PATCH, PATCH)
    mean_a, mean_b = cv2.blur(a, box), cv2.blur(b, box)
    var_a = cv2.sqrBoxFilter(a, -1, box) - mean_a * mean_a
    var_b = cv2.sqrBoxFilter(b, -1, box) - mean_b * mean_b
    cov = cv2.blur(a * b, box) - mean_a * mean_b
    return _similar(var_a, var_b, cov, flat=flat, flat_below=flat_below)


def _similar(
    var_a: np.ndarray, var_b: np.ndarray, cov: np.ndarray, *, flat: bool, flat_below: float
) -> np.ndarray:
    """Where two patches of these variances and covariance correlate by at least
    :data:`TEXTURE` (or, with ``flat``, are both flat: variances below ``flat_below``)."""
    ncc = cov / np.sqrt(np.maximum(var_a * var_b, 1e-6))
    both_flat = (var_a < flat_below) & (var_b < flat_below)
    if flat:
        return (ncc > TEXTURE) | both_flat
    return (ncc > TEXTURE) & ~both_flat
