"""Binary foreground masks from a solution (threshold and clean-up).

Two rules:

- ``"residual"`` (default): a pixel is foreground where ``|A - L|`` exceeds a threshold,
  either fixed (grey levels, 0..255) or automatic, per pixel, from the noise of the
  camera and of each pixel (:mod:`bpvideo.masks.thresholds`); pixels that look like a cast
  shadow on the background are left out (:mod:`bpvideo.masks.shadows`). The background model
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
from bpvideo.masks import pooled
from bpvideo.masks.appearances import Appearances
from bpvideo.masks.morphology import disk
from bpvideo.masks.options import MaskOptions
from bpvideo.masks.sample import sample_model
from bpvideo.masks.shadows import shadow_pixels
from bpvideo.masks.thresholds import MaskModel

__all__ = ["VOTE_SIZE", "MaskResult", "clean_mask", "foreground_masks", "judged_on_observed"]

#: float32 entries of |A - L| computed at a time (a temporary that stays in cache).
_BLOCK = 1 << 21
_DEFAULT = MaskOptions()


@dataclass
class MaskResult:
    """Foreground masks and how they were made.

    Attributes
    ----------
    masks : (n, H, W) bool ndarray
        One mask per frame, True = foreground.
    model : MaskModel or None
        The thresholds (None for the support rule).
    """

    masks: np.ndarray
    model: MaskModel | None

    @property
    def threshold(self) -> float | None:
        """The global threshold in grey levels (None for the support rule)."""
        return None if self.model is None else self.model.threshold


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
    m = np.asarray(m).astype(np.uint8, copy=False)
    if out is None:
        out = np.empty(m.shape, dtype=bool)
    # Only the box around the foreground, with a margin that no opening or closing
    # reaches across, needs the work: outside it the answer is 0, inside it is the
    # whole frame's (OpenCV's morphology treats the box's edge as neutral, as the
    # frame's, and every blob lies inside it).
    x, y, w, h = cv2.boundingRect(m)
    margin = 2 * (open_radius + close_radius) + 1
    y0, y1 = max(0, y - margin), min(m.shape[0], y + h + margin)
    x0, x1 = max(0, x - margin), min(m.shape[1], x + w + margin)
    box = np.zeros((y1 - y0, x1 - x0) if w else (0, 0), dtype=bool)
    if w:
        _clean(m[y0:y1, x0:x1], open_radius, close_radius, min_area, box)
    out[...] = False  # only now: ``out`` may be ``mask``
    out[y0 : y0 + box.shape[0], x0 : x0 + box.shape[1]] = box
    return out


def _clean(
    m: np.ndarray, open_radius: int, close_radius: int, min_area: int, out: np.ndarray
) -> None:
    """:func:`clean_mask` of the uint8 mask ``m`` into the C-contiguous bool ``out``."""
    if open_radius > 0:
        m = cv2.morphologyEx(m, cv2.MORPH_OPEN, disk(open_radius))
    if close_radius > 0:
        m = cv2.morphologyEx(m, cv2.MORPH_CLOSE, disk(close_radius))
    np.not_equal(m, 0, out=out)
    if min_area > 1 and m.any():
        # labels, then areas by counting the foreground's labels (a few times faster than
        # connectedComponentsWithStats, which also finds boxes and centroids)
        count, labels = cv2.connectedComponents(np.ascontiguousarray(m), connectivity=8)
        pixels = np.flatnonzero(out)  # a bool array: several times faster than uint8
        label = labels.reshape(-1)[pixels]
        small = np.bincount(label, minlength=count) < min_area
        if small.any():
            out.reshape(-1)[pixels[small[label]]] = False


def foreground_masks(
    A: np.ndarray,
    L: np.ndarray,
    S: np.ndarray | None,
    frame_shape: tuple[int, ...],
    *,
    rule: str = _DEFAULT.mask_rule,
    threshold: float | str | MaskModel = _DEFAULT.threshold,
    threshold_k: float = _DEFAULT.threshold_k,
    noise: str = _DEFAULT.noise,
    shadows: str = _DEFAULT.shadows,
    observed: np.ndarray | None = None,
    frames: np.ndarray | None = None,
    open_radius: int = _DEFAULT.open_radius,
    close_radius: int = _DEFAULT.close_radius,
    min_area: int = _DEFAULT.min_area,
    appearances: int = _DEFAULT.appearances,
    frame_offset: int = 0,
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
    threshold : float, "auto" or MaskModel, default "auto"
        Threshold on ``|A - L|`` in grey levels; "auto" makes a
        :class:`~bpvideo.masks.thresholds.MaskModel` from the data (:func:`sample_model`); a
        model made beforehand (a window's) is used as it is.
    threshold_k, noise : default 6, "local"
        See :mod:`bpvideo.masks.thresholds` (``threshold="auto"`` only).
    shadows : {"remove", "keep"}, default "remove"
        Leave out pixels that look like cast shadows (needs ``frames``).
    observed : bool ndarray of A's shape, optional
        Observation mask: unobserved pixels are never foreground before the clean-up.
    frames : (n, H, W, 3) uint8 ndarray, optional
        The frames in colour (BGR), for the shadow test.
    open_radius, close_radius, min_area : int, default 1, 3, 25
        Clean-up, see :func:`clean_mask`. Every default is the CLI's
        (:mod:`bpvideo.settings`).
    appearances : int, default 24
        Background appearances per pixel at most (``threshold="auto"`` only; see
        :mod:`bpvideo.masks.appearances`); 0: ``L`` and the thresholds alone.
    frame_offset : int
        Index of ``A``'s first frame in the window whose model ``threshold`` is (samples
        of frames near each tested frame are not used).

    Returns
    -------
    MaskResult
    """
    frames_first = A.ndim == len(frame_shape) + 1
    if L.shape != A.shape:
        raise InputError(f"background shape {L.shape} differs from data shape {A.shape}")
    n = A.shape[0] if frames_first else A.shape[1]
    auto = (threshold_k, noise, shadows, appearances)
    raw, model = _entries(A, L, S, frame_shape, rule, threshold, auto, observed, frames)
    seen = None
    if observed is not None:
        raw &= observed
        seen = _pixel_masks(np.asarray(observed, dtype=bool), frames_first, n, frame_shape)
        if seen.all():
            seen = None
    out = _pixel_masks(raw, frames_first, n, frame_shape)
    del raw
    if model is not None:
        faint = pooled.faint_pixels(A, L, model, frame_shape, out, seen)
        if seen is None and open_radius > 0 and model.appearances is not None:
            _drop_speckle(out, open_radius, faint)  # the same masks in the end, fewer to test
        _explained_away(out, A, L, model, frames, frame_shape, frame_offset, faint)
    _clean_all(out, seen, (open_radius, close_radius, min_area))
    return MaskResult(masks=out, model=model)


def _clean_all(out: np.ndarray, seen: np.ndarray | None, radii: tuple[int, int, int]) -> None:
    """:func:`clean_mask` of every mask of ``out`` (in place) with ``radii`` (open, close,
    min area), judged on the observed pixels ``seen`` first when some are not."""
    open_radius, close_radius, min_area = radii
    never = None if seen is None else ~seen.any(axis=0)
    for j in range(len(out)):
        if seen is not None:
            judged_on_observed(out[j], seen[j], out=out[j])
        clean_mask(out[j], open_radius=open_radius, close_radius=close_radius,
                   min_area=min_area, out=out[j])  # fmt: skip
        if never is not None:
            out[j][never] = False  # seen in no frame: never foreground


def _drop_speckle(out: np.ndarray, radius: int, faint: np.ndarray | None = None) -> None:
    """Clear the pixels of each mask that its opening by ``radius`` would clear (in place),
    the opening of the candidates ``out`` with the ``faint`` ones (which join them later).

    The clean-up starts with that opening, and an opening of any subset ``X`` of a mask
    ``A`` equals the opening of ``X`` within the opening of ``A`` (every disk inside ``X``
    lies inside ``A``): so pixels outside the opening of the candidates never reach the
    final masks, whatever the tests between decide, and need no test.
    """
    opening = disk(radius)
    for j in range(len(out)):
        mask = out[j] if faint is None else out[j] | faint[j]
        if mask.any():
            out[j] &= cv2.morphologyEx(mask.view(np.uint8), cv2.MORPH_OPEN, opening).view(bool)


def _explained_away(
    out: np.ndarray,
    A: np.ndarray,
    L: np.ndarray,
    model: MaskModel,
    frames: np.ndarray | None,
    frame_shape: tuple[int, ...],
    first: int,
    faint: np.ndarray | None = None,
) -> None:
    """Clear from the masks ``out`` the pixels a background appearance explains, add the
    ``faint`` ones (within the global threshold of the background, every appearance
    would explain them: their own noise limits them instead), then clear cast shadows
    (in place)."""
    if model.appearances is not None and out.any():
        looks = _looks(A, frames, model.appearances, frame_shape)
        out &= model.appearances.unexplained(looks, out, first)
    if faint is not None and not pooled.POOL_SHADOWS:
        out |= faint
    if model.shade is not None and frames is not None and out.any():
        grey, bg = _grey_frames(A, L, A.ndim == len(frame_shape) + 1, frame_shape)
        out &= ~shadow_pixels(grey, bg, frames, model.shade, out)
    if faint is not None and pooled.POOL_SHADOWS:
        out |= faint


#: Side of the square whose observed pixels decide an unobserved pixel of a mask.
VOTE_SIZE = 5


def judged_on_observed(mask: np.ndarray, seen: np.ndarray, out: np.ndarray) -> np.ndarray:
    """A mask of a partly observed frame, judged on its observed pixels: an unobserved
    pixel is foreground when most observed pixels around it (``VOTE_SIZE`` square) are.

    Without this the clean-up (an opening) erases the foreground of a sparsely observed
    frame (at 40 % observed a person is a scatter of pixels); with it the clean-up sees
    the shapes the observed pixels draw.

    Parameters
    ----------
    mask, seen : (H, W) bool ndarray
        The foreground found on observed pixels (False elsewhere), and which pixels were
        observed.
    out : (H, W) bool ndarray
        Where the result goes (may be ``mask``).
    """
    size = (VOTE_SIZE, VOTE_SIZE)
    fg = cv2.boxFilter(mask.view(np.uint8), cv2.CV_32F, size, normalize=False)
    obs = cv2.boxFilter(seen.view(np.uint8), cv2.CV_32F, size, normalize=False)
    vote = (2 * fg > obs) & (obs > 0)
    np.copyto(out, np.where(seen, mask, vote))
    return out


def _entries(
    A: np.ndarray,
    L: np.ndarray,
    S: np.ndarray | None,
    frame_shape: tuple[int, ...],
    rule: str,
    threshold: float | str | MaskModel,
    auto: tuple[float, str, str, int],
    observed: np.ndarray | None,
    frames: np.ndarray | None,
) -> tuple[np.ndarray, MaskModel | None]:
    """The foreground entries (A's shape) under ``rule``, and the thresholds they used
    (``auto``: ``threshold_k``, ``noise``, ``shadows``, ``appearances`` of an automatic
    threshold)."""
    threshold_k, noise, shadows, appearances = auto
    frames_first = A.ndim == len(frame_shape) + 1
    model: MaskModel | None = None
    raw = np.empty(A.shape, dtype=bool)
    if rule == "support":
        if S is None:
            raise InputError(
                "{mask_rule=} needs the sparse part S: use {mask_rule='residual'}",
                option=("mask_rule", rule),
            )
        np.not_equal(S, 0, out=raw)
    elif rule == "residual":
        model = threshold if isinstance(threshold, MaskModel) else sample_model(
            A, L, frame_shape, observed=observed, frames=frames if shadows == "remove" else None,
            threshold=threshold, threshold_k=threshold_k, noise=noise, appearances=appearances,
        )  # fmt: skip
        _exceeds(A, L, model, frames_first, frame_shape, raw)
    else:
        raise InputError(
            "{mask_rule=} must be one of: residual, support", option=("mask_rule", rule)
        )
    return raw, model


def _pixel_masks(
    raw: np.ndarray, frames_first: bool, n: int, frame_shape: tuple[int, ...]
) -> np.ndarray:
    """(n, H, W) bool masks of entries ``raw`` (A's shape): frame by frame, a pixel set
    where any of its channels is."""
    if frames_first:
        out = raw
    elif raw.ndim == 2 and max(raw.shape) < 2**31:  # one transposed copy, by OpenCV
        out = cv2.transpose(raw.view(np.uint8)).view(bool).reshape((n, *frame_shape))
    else:  # pragma: no cover - more than 2**31 rows
        out = np.ascontiguousarray(raw.T).reshape((n, *frame_shape))
    if out.ndim == 4:  # any channel, one channel at a time: ten times .any(axis=3)'s speed
        channels = out
        out = channels[..., 0].copy()
        for c in range(1, channels.shape[3]):
            out |= channels[..., c]
    return out


def _exceeds(
    A: np.ndarray,
    L: np.ndarray,
    model: MaskModel,
    frames_first: bool,
    frame_shape: tuple[int, ...],
    out: np.ndarray,
) -> None:
    """``out = |A - L| > model.limit``, a block of frames (or rows) at a time."""
    limit = model.limit
    if isinstance(limit, np.ndarray):
        if len(frame_shape) == 3:  # one threshold per pixel, for each of its channels
            limit = np.repeat(limit[..., None], frame_shape[2], axis=2)
        limit = limit.reshape(frame_shape) if frames_first else limit.reshape(-1, 1)
    rows = max(1, _BLOCK // (A[0].size if A.ndim > 1 else 1))
    tmp = np.empty((min(rows, len(A)), *A.shape[1:]), dtype=np.float32)
    for lo in range(0, len(A), rows):
        hi = min(len(A), lo + rows)
        t = tmp[: hi - lo]
        np.subtract(A[lo:hi], L[lo:hi], out=t)
        np.abs(t, out=t)
        lim = limit if not isinstance(limit, np.ndarray) or frames_first else limit[lo:hi]
        np.greater(t, lim, out=out[lo:hi])


def _looks(
    A: np.ndarray,
    frames: np.ndarray | None,
    appearances: Appearances,
    frame_shape: tuple[int, ...],
) -> np.ndarray:
    """The frames as the appearances hold them: BGR ``frames``, or ``A``'s own
    channels as uint8 frames."""
    if frames is not None and appearances.samples.shape[0] == 3:
        return frames
    if A.ndim != len(frame_shape) + 1:  # columns
        A = A.T.reshape((A.shape[1], *frame_shape))
    return np.clip(np.rint(A), 0, 255).astype(np.uint8)


def _grey_frames(
    A: np.ndarray, L: np.ndarray, frames_first: bool, frame_shape: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """The frames of ``A`` and of ``L`` in grey levels, (n, H, W): grey frames as they are
    (uint8 or float), others converted frame by frame to float32."""
    if frames_first and len(frame_shape) == 2:
        return A, L
    n = A.shape[0] if frames_first else A.shape[1]
    grey = np.empty((n, *frame_shape[:2]), dtype=np.float32)
    bg = np.empty_like(grey)
    for j in range(n):
        a = A[j] if frames_first else A[:, j].reshape(frame_shape)
        b = L[j] if frames_first else L[:, j].reshape(frame_shape)
        a = np.asarray(a, dtype=np.float32)
        b = np.asarray(b, dtype=np.float32)
        if a.ndim == 3:
            a = cv2.cvtColor(a, cv2.COLOR_BGR2GRAY)
            b = cv2.cvtColor(b, cv2.COLOR_BGR2GRAY)
        grey[j], bg[j] = a, b
    return grey, bg
