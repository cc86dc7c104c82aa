"""The reference background of a window, and the entries of the data it explains.

Batch robust PCA has a blind spot: an object that stays in place for much of a window
(a person who sits down, a parked car) is, for a low-rank model, part of the background,
and a large object covering much of the frame pulls the low-rank fit towards itself. Both
are answered before the solve, at the solve scale:

1. **Motion.** For every pixel and frame, the largest frame-to-frame change in a box
   around the pixel within ``reach`` frames (:func:`motion_score`). A person who stands
   "still" still sways and breathes; an empty background changes only by noise.
2. **Still entries.** Each pixel's stillest :data:`tuning.STILL_FRAMES_FRACTION` of the frames
   (:func:`still_entries`); their per-pixel median is the *reference image*: what the
   pixel shows when nothing moves near it (the idea of LaBGen's motion-guided background
   initialisation; see docs/method.md).
3. **Background-consistent entries.** Each frame is fitted to the reference by a robust
   gain and offset (global illumination changes); an entry is observed when it agrees
   with that fit within :data:`tuning.CONSISTENT_K` noise levels, or is still
   (:func:`consistent_entries`).

The solver then runs on the observed entries only: the paper's partial observation
``P_Omega`` (:func:`observe_background`). People who linger are simply not observed, so
they cannot enter ``L``; ``L`` keeps its rank-r freedom for what the whole scene does
(light changes).

Between windows a :class:`Reference` is carried: the reference image and, per pixel, how
many frames in a row it has disagreed with what the pixel shows. A change older than the
absorption time (``absorb`` seconds) becomes background, as GSOC and KNN absorb a parked
car; a person who sits down for less than that stays foreground.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass

import cv2
import numpy as np

from bpvideo import cores
from bpvideo.background import covered, states, tuning
from bpvideo.background.light import fit_light, light_base, still_light
from bpvideo.masks.shadows import same_texture
from bpvideo.solvers.backends import get_backend

__all__ = [
    "Reference",
    "auto_sparsity",
    "changed_objects",
    "consistent_entries",
    "motion_score",
    "observe_background",
    "reference_image",
    "short_span",
    "still_entries",
]


@dataclass(frozen=True)
class _Span:
    """A short span's rules (:func:`short_span`)."""

    box: float
    ends: int


#: The rules of :func:`short_span` in the thread that set them (None: a batch window's).
_SPAN: contextvars.ContextVar[_Span | None] = contextvars.ContextVar("short_span", default=None)


def motion_score(
    data: np.ndarray, frame_shape: tuple[int, int], *, box: int, reach: int
) -> np.ndarray:
    """Largest nearby change of every entry: box-filtered ``|frame - previous frame|``,
    maximum over ``reach`` frames on either side.

    Parameters
    ----------
    data : (m, n) ndarray
        Frames as columns (grey, solve scale).
    frame_shape : (h, w)
        How a column is a frame (``m = h * w``).
    box : int
        Side of the box filter in pixels.
    reach : int
        Frames on either side whose change counts.

    Returns
    -------
    (m, n) float32 ndarray
    """
    h, w = frame_shape
    n = data.shape[1]
    frames = np.ascontiguousarray(data.T, dtype=np.float32).reshape(n, h, w)
    change = np.empty_like(frames)

    def changes(lo: int, hi: int) -> None:  # a frame's change is its own: frames side by side
        first = max(lo, 1)
        np.abs(frames[first:hi] - frames[first - 1 : hi - 1], out=change[first:hi])
        if lo == 0:  # the first frame's change is the second's
            change[0] = np.abs(frames[1] - frames[0]) if n > 1 else 0.0
        for j in range(lo, hi):
            change[j] = cv2.blur(change[j], (box, box))

    cores.in_blocks(changes, n, data.size)
    score = cv2.transpose(change.reshape(n, h * w)) if h * w < 2**31 else change.reshape(n, -1).T
    # running maximum along time: a dilation by a 1 x (2 reach + 1) line (OpenCV's, not
    # scipy.ndimage's maximum_filter1d, whose import alone costs ~0.35 s per run)
    line = np.ones((1, 2 * reach + 1), dtype=np.uint8)
    return cv2.dilate(np.ascontiguousarray(score), line, borderType=cv2.BORDER_REPLICATE)


def still_entries(score: np.ndarray, fraction: float = tuning.STILL_FRAMES_FRACTION) -> np.ndarray:
    """Each row's ``max(tuning.MIN_STILL, fraction * n)`` entries of least motion (ties included).

    Parameters
    ----------
    score : (m, n) ndarray
        :func:`motion_score`.
    fraction : float
        Fraction of the frames.

    Returns
    -------
    (m, n) bool ndarray
    """
    m, n = score.shape
    k = min(n, max(tuning.MIN_STILL, int(fraction * n)))
    out = np.empty((m, n), dtype=bool)

    def rows(lo: int, hi: int) -> None:  # a row's k-th value is its own
        kth = np.partition(score[lo:hi], k - 1, axis=1)[:, k - 1 : k]
        np.less_equal(score[lo:hi], kth, out=out[lo:hi])

    cores.by_rows(rows, m, n)
    return out


def reference_image(data: np.ndarray, still: np.ndarray) -> np.ndarray:
    """Per-row median of ``data`` over the ``still`` entries: (m,) float32."""
    data = np.ascontiguousarray(data, dtype=np.float32)
    backend = get_backend("auto")
    return np.asarray(backend.row_median(data, np.ascontiguousarray(still)), dtype=np.float32)


def consistent_entries(
    data: np.ndarray,
    reference: np.ndarray,
    *,
    still: np.ndarray | None = None,
    noise: float | None = None,
    k: float = tuning.CONSISTENT_K,
) -> tuple[np.ndarray, float]:
    """Entries that the reference explains, after a robust gain and offset per frame.

    Parameters
    ----------
    data : (m, n) ndarray
        Frames as columns.
    reference : (m,) ndarray
        :func:`reference_image`, or a given empty scene.
    still : (m, n) bool ndarray, optional
        :func:`still_entries`: counted as consistent, and the fit starts from them
        (:func:`fit_light`).
    noise : float, optional
        The noise level, when known (a reference carried from a previous window).
    k : float
        Noise levels within which an entry is consistent.

    Returns
    -------
    observed : (m, n) bool ndarray
    noise : float
        The noise level used, grey levels at the solve scale.
    """
    A = np.asarray(data, dtype=np.float32)
    b = np.asarray(reference, dtype=np.float32)[:, None]
    gain, offset, noise = fit_light(A, b[:, 0], still=still, noise=noise)
    observed = np.empty(A.shape, dtype=bool)
    limit = k * noise

    def rows(lo: int, hi: int) -> None:
        np.less(np.abs(A[lo:hi] - (b[lo:hi] * gain + offset)), limit, out=observed[lo:hi])
        if still is not None:
            observed[lo:hi] |= still[lo:hi]

    cores.by_rows(rows, *A.shape)
    return observed, noise


@dataclass
class Reference:
    """What one window hands on to the next about its background.

    Attributes
    ----------
    image : (m,) float32 ndarray
        The reference image at the solve scale.
    age : (m,) int32 ndarray
        Per entry of a column (pixel and channel), the frames for which ``image`` has been
        kept against what the pixel shows when still (a lasting change not yet absorbed).
    noise : float or None
        Noise level of the frames about ``image`` (None for a given empty scene, until a
        window has measured it).
    columns : (m, k) float32 ndarray or None
        The solved background of the window's last frames at the solve scale: the next
        window solves them with its own frames, observed everywhere, so that the two
        backgrounds meet without a jump.
    covered : float
        Share of the view where the window found no trusted still frame
        (:class:`~bpvideo.background.covered.Covered`).
    """

    image: np.ndarray
    age: np.ndarray
    noise: float | None = None
    columns: np.ndarray | None = None
    covered: float = 0.0

    @classmethod
    def given(cls, image: np.ndarray) -> Reference:
        """An empty scene given by the user (``--background-from``), (m,) at solve scale."""
        image = np.asarray(image, dtype=np.float32).ravel()
        return cls(image=image, age=np.zeros(image.shape, dtype=np.int32))


@contextlib.contextmanager
def short_span(box: float, ends: int = 0) -> Iterator[None]:
    """Within the block, in this thread, solve windows of a few seconds (a live stream's):
    measure motion with a box of ``box`` (a fraction of the smaller frame side) instead
    of :data:`tuning.MOTION_BOX`, and where ``ends`` > 0, let a pixel whose first and last
    ``ends`` frames agree take their appearance (:func:`~bpvideo.background.covered.both_ends`).
    See :data:`bpvideo.background.tuning.LIVE_MOTION_BOX` and ``LEARN_ENDS``."""
    token = _SPAN.set(_Span(box, ends))
    try:
        yield
    finally:
        _SPAN.reset(token)


def observe_background(
    data: np.ndarray,
    frame_shape: tuple[int, int],
    *,
    previous: Reference | None = None,
    absorb_frames: int | None = None,
    new_from: int = 0,
    mask: np.ndarray | None = None,
    guided: bool = True,
) -> tuple[np.ndarray, Reference]:
    """The entries of a window the solver observes, and the reference handed on.

    The window's own reference is the median of each pixel's still frames. With a
    ``previous`` reference (the previous window's, or a given empty scene), a pixel whose
    own reference differs from it by more than light does (:func:`changed_objects`: other
    texture, not just brighter or darker) keeps the previous one, until it has done so for
    ``absorb_frames`` frames: someone who sat down stays foreground, a lamp switched on
    does not.

    Parameters
    ----------
    data : (m, n) ndarray
        The window's frames as columns (grey, or each pixel's channels side by side; solve scale).
    frame_shape : (h, w)
        Frame size at the solve scale (a column holds ``m / (h w)`` channels).
    previous : Reference, optional
        The previous window's reference, or a given empty scene.
    absorb_frames : int, optional
        Frames after which a lasting change becomes background (None: never).
    new_from : int
        First column not shared with the previous window (ages count new frames only).
    mask : (m, n) bool ndarray, optional
        The user's observation mask: unobserved entries are never still nor observed.
    guided : bool
        Whether :func:`~bpvideo.background.covered.guided` may replace references.

    Returns
    -------
    observed : (m, n) bool ndarray
        Entries consistent with the reference, and still entries where the window's own
        reference is used.
    reference : Reference
        For the next window.
    """
    h, w = frame_shape
    span = _SPAN.get()
    box = max(3, round((tuning.MOTION_BOX if span is None else span.box) * min(h, w)))
    score = _score(data, frame_shape, box, mask)
    loose, never, still = _unsettled(data, frame_shape, score, still_entries(score), mask, guided)
    if mask is not None:
        still &= mask
    own = _own_reference(data, still, mask)
    noise = fit_light(data, own, still=still, passes=0)[2]  # the fit itself comes below
    if span is not None and span.ends:
        own, still = covered.both_ends(data, own, still, noise, span.ends)[:2]
        if mask is not None:
            still &= mask
    own, still = states.second_state(data, frame_shape, own, score, still, noise, absorb_frames)[:2]
    replaced = np.zeros(len(own), dtype=bool)
    if loose is not None:
        own, replaced = covered.guided(data, frame_shape, own, noise, loose)
    kept = np.zeros(own.shape, dtype=bool)
    age = np.zeros(own.shape, dtype=np.int32)
    if previous is not None:
        kept = changed_objects(own, previous.image, frame_shape, noise)
        if absorb_frames is not None:
            kept &= previous.age + (data.shape[1] - new_from) < absorb_frames
        age = np.where(kept, previous.age + (data.shape[1] - new_from), 0).astype(np.int32)
    image = np.where(kept, previous.image, own).astype(np.float32) if kept.any() else own
    still &= ~(kept | never | replaced)[:, None]
    observed = consistent_entries(data, image, still=still, noise=noise)[0]
    if mask is not None:
        observed &= mask
    return observed, Reference(image, age, noise, covered=covered.Covered(never, replaced).fraction)


def _own_reference(data: np.ndarray, still: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """The median of each row's still entries, (m,) float32.

    Still frames differ from pixel to pixel: under changing light, their median would mix
    gains. It is taken on frames brought to one light, fitted to the median frame (every
    pixel sees the same sequence of lights, so that median is one light).
    """
    if not tuning.ONE_LIGHT:
        return reference_image(data, still)
    gain = still_light(data, light_base(data, mask), still)
    A = np.asarray(data, np.float32)
    flat = np.empty(A.shape, dtype=np.float32)
    light = np.maximum(gain, 1e-3)

    def rows(lo: int, hi: int) -> None:
        np.divide(A[lo:hi], light, out=flat[lo:hi])

    cores.by_rows(rows, *A.shape)
    return reference_image(flat, still)


def _unsettled(
    data: np.ndarray,
    frame_shape: tuple[int, int],
    score: np.ndarray,
    still: np.ndarray,
    mask: np.ndarray | None,
    guided: bool,
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """The rows :func:`~bpvideo.background.covered.guided` may replace (None: it is not
    to), the rows with no still frame and the still entries to use
    (:func:`~bpvideo.background.covered.never_still`): one look at the unsettled rows
    (:func:`~bpvideo.background.covered.unsettled`) serves both."""
    guide = tuning.GUIDED and guided
    rows = covered.unsettled(score, still) if tuning.NEVER_STILL or guide else None
    never = np.zeros(len(still), dtype=bool)
    if tuning.NEVER_STILL:
        fine = lambda: _fine(data, frame_shape, mask)  # noqa: E731
        never, still = covered.never_still(score, still, fine, rows)
    return rows if guide else None, never, still


def _fine(
    data: np.ndarray, frame_shape: tuple[int, int], mask: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """The motion score with the small box of :mod:`~bpvideo.background.covered`, and its
    still entries."""
    score = _score(data, frame_shape, tuning.SMALL_BOX, mask)
    return score, still_entries(score)


def _score(
    data: np.ndarray, frame_shape: tuple[int, int], box: int, mask: np.ndarray | None
) -> np.ndarray:
    """:func:`motion_score` of every row (each channel's, summed over the pixel's
    channels; rows hold a pixel's channels side by side), infinite where unobserved."""
    h, w = frame_shape
    channels = data.shape[0] // (h * w)
    score = motion_score(data[::channels], frame_shape, box=box, reach=tuning.MOTION_REACH)
    for c in range(1, channels):
        score += motion_score(data[c::channels], frame_shape, box=box, reach=tuning.MOTION_REACH)
    if channels > 1:
        score = np.repeat(score, channels, axis=0)
    if mask is not None:
        score[~mask] = np.inf
    return score


def changed_objects(
    own: np.ndarray, previous: np.ndarray, frame_shape: tuple[int, int], noise: float
) -> np.ndarray:
    """Pixels where an object, not the light, changed between two reference images.

    Light keeps the texture under it; an object replaces it (the texture test of
    :mod:`bpvideo.masks.shadows`). A pixel is a change of light when its textured neighbourhood
    correlates with the previous one. Elsewhere (flat patches: a wall, a plain shirt) the
    light is judged by its neighbours: the ratio ``own / previous`` averaged over the
    pixels that are unchanged or a change of light (a box of :data:`tuning.LIGHT_BOX` of the
    frame) is the local gain, and a pixel further than :data:`tuning.CONSISTENT_K` noise levels
    from ``previous`` times that gain changed by an object.

    Parameters
    ----------
    own, previous : (m,) ndarray
        Reference images (grey, or each pixel's channels side by side).
    frame_shape : (h, w)
    noise : float
        Noise level, grey levels.

    Returns
    -------
    (m,) bool ndarray
    """
    h, w = frame_shape
    planes = len(own) // (h * w)
    box = max(3, round(tuning.LIGHT_BOX * min(h, w)))
    out = []
    for c in range(planes):
        a = np.asarray(own[c::planes], np.float32).reshape(h, w)
        b = np.asarray(previous[c::planes], np.float32).reshape(h, w)
        differs = np.abs(a - b) > tuning.CONSISTENT_K * noise
        light = same_texture(a, b, flat=False)
        trusted = (~differs | light).astype(np.float32)
        ratio = (a + 1.0) / (np.maximum(b, 0.0) + 1.0)
        weight = cv2.blur(trusted, (box, box))
        gain = np.where(
            weight > 1e-3, cv2.blur(ratio * trusted, (box, box)) / np.maximum(weight, 1e-3), 1.0
        )
        lit = (np.maximum(b, 0.0) + 1.0) * gain - 1.0
        out.append((np.abs(a - lit) > tuning.CONSISTENT_K * noise) & ~light)
    return np.stack([o.ravel() for o in out], axis=1).ravel()


def auto_sparsity(observed: np.ndarray) -> float:
    """The alpha of ``sparsity="auto"``: the foreground the reference found.

    The 95th percentile, over pixels and over frames, of the fraction of entries the
    reference background does not explain (a pixel's share of frames with something in
    front of it; a frame's share of pixels), within :data:`tuning.AUTO_SPARSITY_BOUNDS`.

    Parameters
    ----------
    observed : (m, n) bool ndarray
        :func:`observe_background`.

    Returns
    -------
    float
    """
    missing = ~observed
    rows = float(np.quantile(missing.mean(axis=1), 0.95))
    cols = float(np.quantile(missing.mean(axis=0), 0.95))
    low, high = tuning.AUTO_SPARSITY_BOUNDS
    return float(np.clip(max(rows, cols), low, high))
