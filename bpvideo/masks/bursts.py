"""Appearances that come in bursts over a still scene: foreground, not background.

The appearance samples (:mod:`bpvideo.masks.appearances`) keep what a pixel shows as
background, and keep the samples of a pixel that *blinks* (leaves and water that sway in
and out of ``L``'s reach) even beyond its limit. Foliage close to the lens blinks in the
samples too (it covers a pixel for a second, leaves it for a second, a sample every half
second or so), but frame by frame it does something else: it covers the pixel for a long
run of consecutive frames, and between its runs the pixel shows the still scene, also for
long runs. Far leaves and water leave a pixel's reference appearance and come back within
a few frames, and show no long still stretch between.

So a sample is a **burst** when, in the solver's observation of every frame of the window
(the entries that agree with the reference background), its pixel departs from the
reference for at least :data:`BURST_RUN` consecutive frames around the sample (gaps of
up to :data:`BURST_GAP` frames closed: the holes of a branch), with at most
:data:`BURST_HOLES` of that run's frames such gaps, **and** the pixel shows the reference
in runs of at least :data:`BURST_STILL` consecutive frames for at least :data:`BURST_CALM`
of the window's frames (far leaves may be calm for one moment of a window). A burst
sample is foreground whether or not its pixel blinks in the samples
(:func:`~bpvideo.masks.appearances.draw_appearances`).
"""

from __future__ import annotations

import numpy as np

from bpvideo.masks.appearances import build_appearances

__all__ = [
    "BAND_ENTRIES",
    "BURST_CALM",
    "BURST_EXPLAINED",
    "BURST_GAP",
    "BURST_HOLES",
    "BURST_RUN",
    "BURST_STILL",
    "burst_samples",
    "run_lengths",
]

#: Frames a departure from the reference must last around a sample (gaps closed) for the
#: sample to be a burst (None: no sample is).
BURST_RUN: int | None = 10
#: Frames in a row that the pixel must show its reference for them to be a still stretch.
BURST_STILL = 12
#: Share of the window's frames that must lie in such still stretches: the still scene
#: shows between the bursts (leaves far away may be calm for one moment of a window).
BURST_CALM = 0.2
#: Longest gap (frames that agree with the reference) closed inside a departure.
BURST_GAP = 2
#: Whether a burst sample that the window's calm samples explain (a sway by a few
#: pixels, within the 3 x 3 neighbourhood) stays a sample.
BURST_EXPLAINED = True
#: Calm samples of the 3 x 3 neighbourhood that explain a burst sample.
BURST_MATCHES = 2
#: Largest share of a departure's frames that may be such gaps (leaves that blink within a
#: gust fill their departures with gaps; a branch has a few holes).
BURST_HOLES = 0.25
#: Entries of the observation (rows x frames) judged at once: each row's runs are its
#: own, and a band's temporaries (int64 run numbers among them) stay tens of MB at any
#: frame size and window length.
BAND_ENTRIES = 1 << 20


def run_lengths(x: np.ndarray) -> np.ndarray:
    """Length of the run of equal values that holds each entry, along each row.

    Parameters
    ----------
    x : (p, n) bool ndarray

    Returns
    -------
    (p, n) int32 ndarray
    """
    p, n = x.shape
    start = np.ones((p, n), dtype=bool)
    start[:, 1:] = x[:, 1:] != x[:, :-1]
    ids = np.cumsum(start.ravel()) - 1
    return np.bincount(ids).astype(np.int32)[ids].reshape(p, n)


def _run_sums(x: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Sum of ``values`` over the run of equal ``x`` that holds each entry (as
    :func:`run_lengths`)."""
    p, n = x.shape
    start = np.ones((p, n), dtype=bool)
    start[:, 1:] = x[:, 1:] != x[:, :-1]
    ids = np.cumsum(start.ravel()) - 1
    sums = np.bincount(ids, weights=values.ravel().astype(np.float64))
    return sums[ids].reshape(p, n)


def burst_samples(observed: np.ndarray, times: np.ndarray) -> np.ndarray | None:
    """Which samples of each row are bursts (module docstring).

    Parameters
    ----------
    observed : (m, n) bool ndarray
        Where each row (pixel) of every frame of the window agrees with the reference
        background.
    times : (K,) ndarray
        The sampled frames.

    Returns
    -------
    (m, K) bool ndarray, or None when :data:`BURST_RUN` is None or no sample is one.
    """
    if BURST_RUN is None:
        return None
    observed = np.asarray(observed, dtype=bool)
    m, n = observed.shape
    t = np.asarray(times, dtype=np.intp)
    out = np.empty((m, len(t)), dtype=bool)
    band = max(1, BAND_ENTRIES // max(n, 1))
    for lo in range(0, m, band):
        out[lo : lo + band] = _band_bursts(observed[lo : lo + band], t)
    return out if out.any() else None


def _band_bursts(observed: np.ndarray, t: np.ndarray) -> np.ndarray:
    """:func:`burst_samples` of some rows, (rows, len(t)) bool (None never)."""
    assert BURST_RUN is not None
    m, n = observed.shape
    away = ~observed
    if BURST_GAP:
        # a short run that agrees, between two that depart, is a hole of the departure
        length = run_lengths(away)
        inner = np.zeros((m, n), dtype=bool)
        inner[:, 1:-1] = True
        edge_run = _edge_runs(away)
        hole = observed & (length <= BURST_GAP) & inner & ~edge_run
        closed = away | hole
    else:
        hole = np.zeros((m, n), dtype=bool)
        closed = away
    length = run_lengths(closed)
    calm = np.count_nonzero(~closed & (length >= BURST_STILL), axis=1) >= BURST_CALM * n
    run = length[:, t]
    holes = _run_sums(closed, hole)[:, t]
    return closed[:, t] & (run >= BURST_RUN) & (holes <= BURST_HOLES * run) & calm[:, None]


def _edge_runs(x: np.ndarray) -> np.ndarray:
    """Entries of the first and the last run of each row (they touch the window's ends)."""
    p, n = x.shape
    start = np.ones((p, n), dtype=bool)
    start[:, 1:] = x[:, 1:] != x[:, :-1]
    run = np.cumsum(start, axis=1)
    return (run == 1) | (run == run[:, -1:])


def foreground_bursts(
    frames: np.ndarray,
    beyond: np.ndarray,
    doubtful: np.ndarray,
    bursts: np.ndarray,
    times: np.ndarray,
    n_frames: int,
    radius: float,
) -> np.ndarray:
    """The burst samples that are foreground: far from ``L`` (beyond their limit or
    doubtful) and, with :data:`BURST_EXPLAINED`, not explained by the window's calm
    samples (near ``L``, no burst) in their 3 x 3 neighbourhood: an occluder brings what
    the still scene around the pixel never shows; a branch far away that sways by a few
    pixels brings what its neighbours show when calm.

    Parameters
    ----------
    frames : (K, H, W, C) or (K, H, W) uint8 ndarray
        The sampled frames (BGR, or grey), of the samples' grid.
    beyond, doubtful : (K, H, W) bool ndarray
        Their pixels beyond their limit, and those far from ``L`` within it.
    bursts : (K, H, W) bool ndarray
        :func:`burst_samples` on the grid.
    times : (K,) ndarray
        The sampled frames' index in the window.
    n_frames : int
        Frames of the window.
    radius : float
        Match radius (the window's global threshold).

    Returns
    -------
    (K, H, W) bool ndarray
    """
    bursts = bursts & (beyond | doubtful)
    if not BURST_EXPLAINED or not bursts.any():
        return bursts
    calm = build_appearances(frames, beyond | doubtful | bursts, times, n_frames, radius)
    return calm.unexplained(frames, bursts, times=times, need=BURST_MATCHES)
