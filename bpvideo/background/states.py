"""Two still states at one pixel: which is the background.

The reference image of :mod:`bpvideo.background.reference` is each pixel's median over
its stillest frames. Where a pixel holds two still states, each for long enough, those
frames cannot tell them apart: the empty scene before someone arrives and the person who
then sits there for the rest of the window are both still, and the person, seated for
most of the frames, is what the stillest frames show; a person who stood from the first
frame and then walked away is the same the other way round.

The two states are told apart by their outline, as :mod:`bpvideo.masks.ghosts` tells a
ghost from an object that stays (Sakbot's idea): where the two images differ, across the
outline of that region the image holding the object steps (the object against the scene
behind it), while the empty scene runs on smoothly across it. A region where the
reference steps and the other state runs on takes the other state (:func:`second_state`).

A state that came second and has lasted ``absorb`` frames by the end of the window is
left as it is: across windows such a change becomes background after ``--absorb``
seconds (:func:`bpvideo.background.reference.observe_background`), and so it does within
one.
"""

from __future__ import annotations

import cv2
import numpy as np

from bpvideo import cores
from bpvideo.background import tuning
from bpvideo.background.covered import quietest
from bpvideo.background.light import fit_light
from bpvideo.masks.ghosts import OUTLINE, ghosts
from bpvideo.masks.morphology import disk
from bpvideo.solvers.backends import get_backend

__all__ = ["second_state"]

#: Rows (about) the light of each frame is fitted on.
_FIT_ROWS = 1024

#: Rows (about) each frame's quiet is measured on.
_QUIET_ROWS = 2048


def _other_still(
    data: np.ndarray, own: np.ndarray, score: np.ndarray, still: np.ndarray, noise: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Each row's frames of a second still state: unlike ``own``, as still as the quiet
    part of the view, and alike one another (within :data:`tuning.CONSISTENT_K` noise
    levels of their median).

    Returns
    -------
    value : (m,) float32 ndarray
        Their median at the reference's light (NaN where there are too few,
        :data:`tuning.STATES_SUPPORT`).
    entries : (m, n) bool ndarray
    busy : (m,) bool ndarray
        Rows unlike ``own`` in more than :data:`tuning.STATES_BUSY` of the frames.
    own_time : (m,) float32 ndarray or None
        The mean index of the frames like ``own`` (NaN where none is); None unless
        :data:`tuning.STATES_IN_TIME` and weather moves the whole view.
    """
    m, n = data.shape
    # each frame brought to the reference's light (a lamp, the camera's exposure change
    # every pixel: no second state); a global gain and offset per frame, fitted on a
    # sample of the rows
    sample = slice(None, None, max(1, m // _FIT_ROWS))
    gain, offset = fit_light(data[sample], own[sample], still=still[sample], noise=noise)[:2]
    A = np.asarray(data, np.float32)
    light = np.maximum(gain, 1e-3)
    dev = np.empty((m, n), dtype=np.float32)
    unlike = np.empty((m, n), dtype=bool)
    busy = np.empty(m, dtype=bool)

    def deviations(lo: int, hi: int) -> None:
        d = dev[lo:hi]
        np.subtract(A[lo:hi], offset, out=d)
        d /= light
        d -= own[lo:hi, None]
        np.abs(d, out=d)
        np.greater(d, tuning.CONSISTENT_K * noise, out=unlike[lo:hi])
        busy[lo:hi] = unlike[lo:hi].mean(axis=1) > tuning.STATES_BUSY

    cores.by_rows(deviations, m, n)
    limit, weather = _still_motion(score, still)
    # the judgement in time order only where weather moves the whole view (measured on
    # the dev set without it: cdnet_office 0.916 -> 0.906, PeopleAndFoliage 0.891 -> 0.867)
    own_time = _mean_time(~unlike) if weather and tuning.STATES_IN_TIME else None
    calm = tuning.STATES_MOTION_K * limit
    far = tuning.STATES_K * max(noise, 1.0)
    other = np.empty((m, n), dtype=bool)
    count = np.empty(m, dtype=np.intp)

    def others(lo: int, hi: int) -> None:
        np.less_equal(score[lo:hi], calm, out=other[lo:hi])
        other[lo:hi] &= dev[lo:hi] > far
        count[lo:hi] = np.count_nonzero(other[lo:hi], axis=1)

    cores.by_rows(others, m, n)
    fewest = max(tuning.MIN_STILL, int(np.ceil(tuning.STATES_SUPPORT * n)))
    rows = np.flatnonzero(count >= fewest)
    value = np.full(m, np.nan, dtype=np.float32)
    entries = np.zeros((m, n), dtype=bool)
    if not rows.size:
        return value, entries, busy, own_time
    values = (np.asarray(data[rows], np.float32) - offset) / np.maximum(gain, 1e-3)
    median = get_backend("auto").row_median
    first = median(values, np.ascontiguousarray(other[rows]))
    near = other[rows] & (np.abs(values - first[:, None]) < tuning.CONSISTENT_K * max(noise, 1.0))
    enough = np.count_nonzero(near, axis=1) >= fewest
    rows, near, values = rows[enough], near[enough], values[enough]
    if rows.size:
        value[rows] = median(np.ascontiguousarray(values), np.ascontiguousarray(near))
        entries[rows] = near
    return value, entries, busy, own_time


def _mean_time(entries: np.ndarray) -> np.ndarray:
    """Mean frame index of each row's ``entries`` ((m, n) bool): (m,) float32, NaN where
    a row has none."""
    count = np.count_nonzero(entries, axis=1)
    total = entries @ np.arange(entries.shape[1], dtype=np.float32)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (total / count).astype(np.float32)


def _still_motion(score: np.ndarray, still: np.ndarray) -> tuple[np.ndarray, bool]:
    """What still looks like in each frame: (1, n) float32, the :data:`tuning.QUIET`
    quantile over pixels of the still frames' motion, or, with
    :data:`tuning.STATES_FRAME_QUIET`, of the frame's own motion where that is larger.

    Falling snow or rain puts specks in every box of every frame: each frame's motion is
    then that of its weather, well above the still frames' (picked among all the frames
    for their fewest specks), and no frame of the scene before a car stopped was "still".
    The quiet part of the frame itself moves by its weather, and a pixel no busier than
    three times that shows a state. Only where the quietest pixels of the frames move,
    in the median frame, more than :data:`tuning.STATES_WEATHER` times the still
    frames' quiet: in a crowd the quiet part of a frame is still. Also whether it is so
    (weather)."""
    quiet = quietest(score, still)
    finite = quiet[np.isfinite(quiet)]
    typical = max(float(np.quantile(finite, tuning.QUIET)) if finite.size else 0.0, 1e-3)
    out = np.full((1, score.shape[1]), typical, dtype=np.float32)
    if tuning.STATES_FRAME_QUIET is None or not score.size:
        return out, False
    # each frame's quantiles over an even sample of the rows (a quantile needs no more)
    sample = np.sort(score[:: max(1, len(score) // _QUIET_ROWS)].T, axis=1)
    count = np.count_nonzero(np.isfinite(sample), axis=1)  # infinite ones sort last
    if not count.all():
        return out, False
    weather, each = (
        sample[np.arange(len(sample)), np.floor(q * (count - 1)).astype(np.intp)]
        for q in (tuning.STATES_WEATHER_QUANTILE, tuning.STATES_FRAME_QUIET)
    )
    moving = bool(np.median(weather) > tuning.STATES_WEATHER * typical)
    if moving:  # everywhere, all along
        np.fmax(out[0], each, out=out[0])
    return out, moving


def second_state(
    data: np.ndarray,
    frame_shape: tuple[int, int],
    own: np.ndarray,
    score: np.ndarray,
    still: np.ndarray,
    noise: float,
    absorb_frames: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """References replaced by a pixel's second still state where the outline says that
    the reference holds an object (see the module docstring).

    Parameters
    ----------
    data : (m, n) ndarray
        Frames as columns (pixels with their channels side by side), solve scale.
    frame_shape : (h, w)
    own : (m,) ndarray
        The reference image from the still frames.
    score : (m, n) ndarray
        The motion score of the entries (:func:`~bpvideo.background.reference.motion_score`).
    still : (m, n) bool ndarray
        The still entries ``own`` is the median of.
    noise : float
        Noise level of the frames about ``own`` (grey levels).
    absorb_frames : int, optional
        Frames after which a state that came second is background (None: never).

    Returns
    -------
    reference : (m,) float32 ndarray
    still : (m, n) bool ndarray
        ``still``, with the second state's entries on the replaced rows.
    replaced : (m,) bool ndarray

    Notes
    -----
    Does nothing unless :data:`tuning.STATES`. The second state's entries are settled
    ones, never where ``score`` is infinite (outside a user's observation mask).
    """
    h, w = frame_shape
    m = data.shape[0]
    channels = m // (h * w)
    out = np.asarray(own, dtype=np.float32).copy()
    replaced = np.zeros(m, dtype=bool)
    if not tuning.STATES:
        return out, still, replaced
    value, entries, busy, own_time = _other_still(data, out, score, still, noise)
    has = np.isfinite(value).reshape(h, w, channels).all(axis=2)
    if not has.any():
        return out, still, replaced
    first = out.reshape(h, w, channels).mean(axis=2)
    second = np.where(np.isfinite(value), value, out).reshape(h, w, channels).mean(axis=2)
    busy = busy.reshape(h, w, channels).any(axis=2)
    later = np.zeros_like(has)
    if own_time is not None:
        later = (_mean_time(entries) > own_time).reshape(h, w, channels).mean(axis=2) > 0.5
        later &= has
    taken = _judged(first, second, has, later, busy)
    if absorb_frames is not None and taken.any():
        taken &= ~_absorbed(entries, still, absorb_frames).reshape(h, w, channels).any(axis=2)
    if not taken.any():
        return out, still, replaced
    rows = np.repeat(taken.ravel(), channels) & np.isfinite(value)
    out[rows] = value[rows]
    still = still.copy()
    still[rows] = entries[rows]
    replaced[rows] = True
    return out, still, replaced


def _judged(
    first: np.ndarray, second: np.ndarray, has: np.ndarray, later: np.ndarray, busy: np.ndarray
) -> np.ndarray:
    """The pixels of ``has`` ((h, w) bool) whose reference ``first`` holds an object
    where their second state ``second`` does not, by the outline of their region:
    (h, w) bool. ``later``: the pixels of ``has`` whose second state came after the
    reference's (none: the reference is judged against the second state).

    Where a car drove in and stopped for the last third of the window, the stillest
    frames at one pixel show the road and at its neighbour the car, and where it drove
    in slowly, the car came first and the road after: the region where the two states
    differ holds an object that stays, one that left, and pixels of each where the
    reference shows the object or the scene. So the region is judged on the image of
    each pixel's earlier state and that of its later one, in two parts: where the later
    state is the brighter and where it is the darker (an object and the scene it covers
    differ one way over much of it, a car that came and one that left the other way);
    the outline of a part where it meets the other part does not vote. A part where the
    later state steps at the outline holds an object that stays (the earlier state is
    the scene), one where the earlier steps an object that left."""
    border = tuning.STATES_BORDER
    if not later.any():
        return ghosts(second, first, has, busy, border=border)
    early = np.where(later, first, second)
    late = np.where(later, second, first)
    out = np.zeros_like(has)
    brighter = late > early
    ring = disk(OUTLINE)
    for part, other in ((has & brighter, has & ~brighter), (has & ~brighter, has & brighter)):
        near = cv2.dilate(other.view(np.uint8), ring).view(bool)
        stays = ghosts(early, late, part, busy, border, near)  # the late state steps
        left = ghosts(late, early, part, busy, border, near)  # the early one steps
        out |= (stays & ~later) | (left & later)
    return out


def _absorbed(entries: np.ndarray, still: np.ndarray, absorb_frames: int) -> np.ndarray:
    """Rows whose reference state came after the second state and has lasted
    ``absorb_frames`` frames by the end of the window: (m,) bool."""
    m, n = entries.shape
    index = np.arange(n)
    last_other = np.empty(m, dtype=index.dtype)
    first_own = np.empty(m, dtype=index.dtype)

    def rows(lo: int, hi: int) -> None:
        np.max(np.where(entries[lo:hi], index, -1), axis=1, out=last_other[lo:hi])
        own = still[lo:hi] & ~entries[lo:hi]
        np.min(np.where(own, index, n), axis=1, out=first_own[lo:hi])

    cores.by_rows(rows, m, n)
    return (first_own > last_other) & (n - 1 - last_other >= absorb_frames)
