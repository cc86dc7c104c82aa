"""A background of several appearances per pixel, drawn from the whole window.

The robust-PCA background ``L`` is one image per frame. Where the background itself moves
(water, leaves, flicker) a pixel takes several appearances, and a per-pixel threshold wide
enough to cover them all (``noise="local"``) hides the foreground there too.

So each pixel also keeps a small **set of the appearances it took as background**, as
ViBe, LOBSTER and SuBSENSE keep samples, but drawn from frames spread over the *whole
window*, before and after the tested frame (an online subtractor has only the past), and
only where the solve says background (the sampled frame's own residual within the pixel's
limit, away from anything it calls foreground; where that limit is wide, a solid blob far
from ``L`` that no other sample shows is refused: :func:`draw_appearances`). A pixel is
foreground when it is farther than the *global* threshold (the camera's noise, never a
pixel's own spread) from ``L`` **and** fewer than :data:`MIN_MATCHES` samples of its
3 x 3 neighbourhood lie within that threshold of it in every channel (the neighbourhood,
as SuBSENSE's spatial propagation: a leaf that sways by a pixel is still matched).
Samples from frames near the tested one are not used, so that something that lingers
cannot explain itself.

Frames too large for the samples' memory (:data:`SAMPLE_BYTES`; from 1080p) keep them on
a grid of every ``stride``-th pixel (:func:`sample_grid`): a pixel is matched against the
samples of the 3 x 3 grid points around its cell's (``3 stride`` pixels).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import cv2
import numpy as np

from bpvideo.masks.budget import (
    SAMPLE_BYTES,
    sample_grid,
    sample_times,
)
from bpvideo.masks.envelopes import (
    envelopes,
    frame_envelopes,
    near_envelopes,
    outside_envelope,
    widen,
)
from bpvideo.masks.morphology import disk

__all__ = [
    "BLINK",
    "DOUBT_K",
    "DOUBT_OPEN",
    "EXCLUDE",
    "MARGIN",
    "MIN_MATCHES",
    "SAMPLE_BYTES",
    "WITH_FOREGROUND",
    "Appearances",
    "build_appearances",
    "draw_appearances",
    "envelopes",
    "grid_index",
    "near_envelopes",
    "padded_index",
    "sample_grid",
    "sample_times",
    "use_compiled",
    "warm_up",
]

#: Samples of the neighbourhood that must agree with a pixel for it to be background.
MIN_MATCHES = 2
#: Samples of frames closer than this fraction of the window to the tested frame are not
#: used (an object that lingers must not explain itself).
EXCLUDE = 0.1
#: Pixels (radius) by which what a sampled frame calls foreground is grown before its
#: other pixels are kept as samples (an object's blurred edge is not background).
MARGIN = 2
#: Radius of the opening that clears a sampled frame's speckle before its foreground is
#: grown: as the masks' own clean-up (``open_radius``), isolated pixels beyond their
#: limit are the moving background's, not objects.
SPECKLE = 1
#: A sampled pixel further than this many global thresholds from ``L`` but within its
#: own limit is *doubtful*: it is background only when it is no part of a solid blob
#: (an opening of radius :data:`DOUBT_OPEN`) or when the window's other samples show it
#: again (:func:`draw_appearances`).
DOUBT_K = 2.0
DOUBT_OPEN = 1
#: Whether a doubtful pixel's blob includes the foreground it touches (an object's fringe
#: within the limit is judged with the object; chosen by leave-one-sequence-out,
#: docs/quality.md).
WITH_FOREGROUND = True
#: A pixel *blinks* when, from one sampled frame to the next, it switches between beyond
#: its limit and within it at least this share of the time (None: never): leaves and
#: water that sway in and out of ``L``'s reach, not an object, which comes and goes once.
#: Its sampled pixels beyond the limit are then doubtful, not foreground
#: (:func:`draw_appearances`; chosen by leave-one-sequence-out, docs/quality.md).
BLINK: float | None = 0.6
#: Pixels of a block of frames left to match one by one (within their neighbourhood's
#: envelope) from which the compiled kernel is used, when numba is installed, and kept
#: for the rest of the process: numba's import and cached kernel cost ~0.5 s once, numpy
#: ~1.5 us a pixel more than the kernel (docs/performance.md).
COMPILED_FROM = 150_000
#: Pixels of a frame from which the compiled kernel is used whatever a block holds: an HD
#: window's blocks are of one or two frames, each under :data:`COMPILED_FROM`, but they
#: are many, and the kernel releases the interpreter lock where numpy's many small calls
#: hold it between them (blocks are formed side by side: ``--threads``; issue 39).
COMPILED_FRAME = 640 * 480
#: Offsets of the 3 x 3 neighbourhood, the pixel itself first, then the nearest.
_OFFSETS = sorted(
    ((dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)), key=lambda o: abs(o[0]) + abs(o[1])
)


@dataclass
class Appearances:
    """Background appearances of one window's pixels (see the module docstring).

    Attributes
    ----------
    samples : (C, (H + 2) * (W + 2), K) uint8 ndarray
        Colour (C = 3, BGR) or grey level (C = 1) of each pixel in K frames, a plane per
        channel, with a border of one pixel (never valid); a pixel's samples side by side.
    valid : ((H + 2) * (W + 2), K) bool ndarray
        Where the sample is background.
    times : (K,) intp ndarray
        The window's frame index of each sample.
    shape : (H, W)
        Size of the grid of samples: the frame size when :attr:`stride` is 1, else
        ``(ceil(frame height / stride), ceil(frame width / stride))``.
    radius : float
        Match radius in grey levels, in every channel.
    exclude : int
        Samples within this many frames of the tested one are not used.
    low, high : (H * W, C) uint8 ndarray
        The least and greatest valid sample of each channel over the pixel's 3 x 3
        neighbourhood: a pixel further than :attr:`radius` outside them in a channel is
        matched by no sample (tested first, at the cost of two comparisons).
    own_low, own_high : ((H + 2) * (W + 2), C) uint8 ndarray
        The same over the pixel's own samples (padded as :attr:`samples`): a neighbour
        whose samples all lie further than :attr:`radius` is not looked at.
    need : int or None
        Matches that explain a pixel (None: :data:`MIN_MATCHES`).
    stride : int
        The samples are those of every ``stride``-th pixel of the frames in both
        directions (:func:`sample_grid`); a pixel of a frame is matched against the
        samples of its cell's grid point's neighbourhood (:func:`grid_index`).
    """

    samples: np.ndarray
    valid: np.ndarray
    times: np.ndarray
    shape: tuple[int, int]
    radius: float
    exclude: int
    low: np.ndarray
    high: np.ndarray
    own_low: np.ndarray
    own_high: np.ndarray
    need: int | None = None
    stride: int = 1

    def unexplained(
        self,
        frames: np.ndarray,
        candidates: np.ndarray,
        first: int = 0,
        times: np.ndarray | None = None,
        need: int | None = None,
    ) -> np.ndarray:
        """Which candidate pixels no background appearance explains.

        Parameters
        ----------
        frames : (n, H, W, C) or (n, H, W) uint8 ndarray
            Frames of the window from its frame ``first`` on (as :attr:`samples`; of the
            grid's size :attr:`shape` times :attr:`stride`).
        candidates : (n, H, W) bool ndarray
            Pixels to test (far from ``L``); the answer is False elsewhere.
        first : int
            Window index of ``frames[0]`` (the frames follow one another).
        times : (n,) ndarray, optional
            The window index of each frame instead (frames spread over the window).
        need : int, optional
            Matches that explain a pixel (:attr:`need`, or :data:`MIN_MATCHES`).

        Returns
        -------
        (n, H, W) bool ndarray
        """
        need = need or self.need or MIN_MATCHES
        H, W = candidates.shape[1:]
        grid_w = self.shape[1]
        frames = frames.reshape(len(frames), H * W, -1)
        shifts = np.array([dy * (grid_w + 2) + dx for dy, dx in _OFFSETS], dtype=np.intp)
        if self.stride == 1:
            # the envelope's test on whole frames (OpenCV, uint8): most candidates fail
            # it, and only the few that pass are gathered
            out, maybe = self._outside(frames.reshape(len(frames), H, W, -1), candidates)
            flat = out.reshape(-1)
            index = np.flatnonzero(maybe)
            if not len(index):
                return out
            value = frames.reshape(-1, frames.shape[2])[index]
            cell = index % (H * W)
        else:
            out = np.zeros(candidates.shape, dtype=bool)
            flat = out.reshape(-1)
            index = np.flatnonzero(candidates)
            if not len(index):
                return out
            value = frames.reshape(-1, frames.shape[2])[index]
            cell = grid_index(index % (H * W), W, self.shape, self.stride)
            inside = _within(value, self.low, self.high, cell, self.radius)
            flat[index[~inside]] = True
            index, value, cell = index[inside], value[inside], cell[inside]
        when = index // (H * W)
        when = first + when if times is None else np.asarray(times, dtype=np.intp)[when]
        at = padded_index(cell, grid_w)
        many = len(index) >= COMPILED_FROM or H * W >= COMPILED_FRAME
        kernel = _compiled() if many or _KERNEL else None
        if kernel is not None:
            left = kernel(self, value, at, when, shifts, need)
        else:
            left = self._unmatched(value, at, when, shifts, need)
        flat[index[left]] = True
        return out

    def _outside(self, frames: np.ndarray, candidates: np.ndarray) -> tuple[np.ndarray, ...]:
        """:func:`~bpvideo.masks.envelopes.outside_envelope` of ``frames`` (n, H, W, C)
        with this instance's envelopes widened by :attr:`radius`."""
        return outside_envelope(frames, candidates, *self._widened)

    @cached_property
    def _widened(self) -> tuple[np.ndarray, ...]:
        """The envelopes widened by :attr:`radius` (:func:`~bpvideo.masks.envelopes.widen`),
        made once."""
        return widen(self.low, self.high, self.radius, (*self.shape, self.low.shape[1]))

    def _unmatched(
        self,
        value: np.ndarray,
        at: np.ndarray,
        when: np.ndarray,
        shifts: np.ndarray,
        need: int = MIN_MATCHES,
    ) -> np.ndarray:
        """Indices (into ``at``) of the pixels fewer than ``need`` samples match (numpy:
        the pixel's own samples first, then each neighbour's for the pixels still
        unmatched; a neighbour whose samples all lie further than the radius in a channel
        is skipped).

        Parameters
        ----------
        value : (p, C) uint8 ndarray
            The tested pixels.
        at : (p,) intp ndarray
            Their index in the padded frame.
        when : (p,) intp ndarray
            Their frame's index in the window.
        shifts : (9,) intp ndarray
            Offsets of the neighbours in the padded frame.
        need : int
            Matches that explain a pixel.
        """
        r = int(np.floor(self.radius))
        low = np.clip(value.astype(np.int16) - r, 0, 255).astype(np.uint8)
        high = np.clip(value.astype(np.int16) + r, 0, 255).astype(np.uint8)
        frames, frame_of = np.unique(when, return_inverse=True)
        usable = np.abs(frames[:, None] - self.times) > self.exclude  # (frames, K)
        left = np.arange(len(at))
        matches = np.zeros(len(at), dtype=np.int32)
        for shift in shifts:
            index = at[left] + shift
            near = _within(value[left], self.own_low, self.own_high, index, self.radius)
            some, index = left[near], index[near]
            if len(some):
                close = self.valid[index] & usable[frame_of[some]]  # (q, K)
                for c, plane in enumerate(self.samples):
                    got = plane[index]
                    close &= got >= low[some, c, None]
                    close &= got <= high[some, c, None]
                matches[some] += np.count_nonzero(close, axis=1)
                left = left[matches[left] < need]
            if not len(left):
                break
        return left


def grid_index(pixel: np.ndarray, width: int, shape: tuple[int, int], stride: int) -> np.ndarray:
    """Flat indices in a grid of ``shape`` (every ``stride``-th pixel, from the first) of
    the grid point of the cell (``stride`` x ``stride`` pixels from it) holding each of the
    flat indices ``pixel`` of frames ``width`` wide: on frames upscaled ``stride`` times by
    nearest neighbour, a pixel meets the samples its original pixel met."""
    y, x = np.divmod(pixel, width)
    return (y // stride) * shape[1] + x // stride


def padded_index(pixel: np.ndarray, width: int) -> np.ndarray:
    """Indices in the padded frame (a border of one pixel, as :attr:`Appearances.samples`)
    of the flat indices ``pixel`` of frames ``width`` pixels wide."""
    return pixel + (pixel // width) * 2 + width + 3


def _within(
    value: np.ndarray, low: np.ndarray, high: np.ndarray, at: np.ndarray, radius: float
) -> np.ndarray:
    """Which values lie within ``radius`` of ``[low[at], high[at]]`` in every channel."""
    v = value.astype(np.int16)
    r = int(np.floor(radius))
    ok = v >= low[at].astype(np.int16) - r
    ok &= v <= high[at].astype(np.int16) + r
    return ok.all(axis=1)


_KERNEL: list = []


def use_compiled() -> bool:
    """Load the compiled kernel now, so that every match from here on uses it (a live
    stream's batches are too small to reach :data:`COMPILED_FROM`, and there are many);
    whether it is there (numba installed)."""
    return _compiled() is not None


def warm_up() -> None:
    """Load (or, the first run after an install, compile) the compiled kernel now, for
    colour and grey frames, on a tiny problem: :mod:`bpvideo.pipeline.run` calls it in a
    thread while an HD input's frames are read and solved, so that its compilation is not
    paid in the masks stage (issue 39)."""
    if _compiled() is None:
        return
    rng = np.random.default_rng(0)
    for channels in (3, 1):
        frames = rng.integers(0, 256, (6, 4, 4, channels), dtype=np.uint8)
        modes = build_appearances(frames, np.zeros((6, 4, 4), bool), np.arange(6), 60, 255.0)
        modes.unexplained(frames[:1, ..., 0] if channels == 1 else frames[:1],
                          np.ones((1, 4, 4), bool), first=30)  # fmt: skip


def _compiled():
    """The compiled matching kernel (:mod:`._appearance_kernel`), or None without numba."""
    if not _KERNEL:
        from bpvideo.solvers.backends import HAVE_NUMBA

        if HAVE_NUMBA:
            from bpvideo.masks._appearance_kernel import unmatched

            _KERNEL.append(unmatched)
        else:
            _KERNEL.append(None)
    return _KERNEL[0]


def draw_appearances(
    frames: np.ndarray,
    beyond: np.ndarray,
    doubtful: np.ndarray,
    times: np.ndarray,
    n_frames: int,
    radius: float,
    stride: int = 1,
    bursts: np.ndarray | None = None,
) -> Appearances:
    """The :class:`Appearances` of a window: its sampled frames, less what is foreground
    in them.

    A sampled pixel beyond its own limit is foreground (the one-image model's answer),
    unless the pixel blinks (:data:`BLINK`: leaves whose sway carries them beyond ``L``'s
    reach in one sample and back in the next). One far from ``L`` but within its limit
    (where the background moves, the limit is wide), or beyond it where the pixel blinks,
    is doubtful: a canoe on rippling water, a person behind a swaying branch. It is
    foreground when it is part of a solid blob of doubtful pixels and the appearances of
    the window's *other* samples do not explain it (:meth:`Appearances.unexplained` at
    its own time): leaves and water show their appearances again, an object that passes
    does not.

    Parameters
    ----------
    frames : (K, H, W, C) or (K, H, W) uint8 ndarray
        The sampled frames (BGR, or grey).
    beyond, doubtful : (K, H, W) bool ndarray
        Their pixels beyond their limit, and those far from ``L`` within it.
    times : (K,) ndarray
        Their index in the window.
    n_frames : int
        Frames of the window.
    radius : float
        Match radius (the window's global threshold).
    stride : int
        The sampled frames are the grid of every ``stride``-th pixel of the window's
        (:attr:`Appearances.stride`).
    bursts : (K, H, W) bool ndarray, optional
        Foreground, blinking or not (:func:`~bpvideo.masks.bursts.foreground_bursts`).

    Returns
    -------
    Appearances
    """
    blinking = blinks(beyond)
    blob = doubtful | beyond if WITH_FOREGROUND else doubtful
    if blinking.any():
        doubtful = doubtful | (beyond & blinking)
        beyond = beyond & ~blinking
    if bursts is not None:  # within beyond | doubtful (foreground_bursts)
        beyond, doubtful = beyond | bursts, doubtful & ~bursts
    first = build_appearances(frames, beyond, times, n_frames, radius, stride=stride)
    opening = disk(DOUBT_OPEN)
    solid = np.empty_like(doubtful)
    for k in range(len(doubtful)):
        opened = cv2.morphologyEx(blob[k].view(np.uint8), cv2.MORPH_OPEN, opening)
        solid[k] = opened.view(bool) & doubtful[k]
    if not solid.any():
        return first
    # the sampled frames are the grid itself: matched point for point
    foreground = beyond | replace(first, stride=1).unexplained(frames, solid, times=times)
    del first  # not held while the second is built
    return build_appearances(frames, foreground, times, n_frames, radius, stride=stride)


def blinks(beyond: np.ndarray) -> np.ndarray:
    """Pixels that blink across the sampled frames (:data:`BLINK`).

    Parameters
    ----------
    beyond : (K, H, W) bool ndarray
        The sampled frames' pixels beyond their limit, in time order.

    Returns
    -------
    (H, W) bool ndarray
    """
    if BLINK is None or len(beyond) < 2:
        return np.zeros(beyond.shape[1:], dtype=bool)
    switches = np.count_nonzero(beyond[1:] != beyond[:-1], axis=0)
    return switches >= BLINK * (len(beyond) - 1)


def build_appearances(
    frames: np.ndarray,
    foreground: np.ndarray,
    times: np.ndarray,
    n_frames: int,
    radius: float,
    stride: int = 1,
) -> Appearances:
    """The :class:`Appearances` of a window from its sampled frames.

    Parameters
    ----------
    frames : (K, H, W, C) or (K, H, W) uint8 ndarray
        The sampled frames (BGR, or grey).
    foreground : (K, H, W) bool ndarray
        What the solve calls foreground in them (the residual beyond each pixel's limit).
    times : (K,) ndarray
        Their index in the window.
    n_frames : int
        Frames of the window (for :data:`EXCLUDE`).
    radius : float
        Match radius (the window's global threshold).
    stride : int
        :attr:`Appearances.stride` (the frames are a grid of the window's).

    Returns
    -------
    Appearances
    """
    if frames.ndim == 3:
        frames = frames[..., None]
    K, H, W, C = frames.shape
    # built in place: one strided copy of the frames, no whole copy of the samples between
    samples = np.zeros((C, H + 2, W + 2, K), dtype=np.uint8)
    samples[:, 1:-1, 1:-1, :] = frames.transpose(3, 1, 2, 0)
    valid = np.zeros((H + 2, W + 2, K), dtype=bool)
    kept = np.empty((K, H, W), dtype=bool)  # background samples
    grow = disk(MARGIN)
    speck = disk(SPECKLE)
    for k in range(K):
        fg = np.ascontiguousarray(foreground[k]).view(np.uint8)
        grown = cv2.morphologyEx(fg, cv2.MORPH_OPEN, speck) if SPECKLE else fg
        np.equal(cv2.dilate(grown, grow), 0, out=kept[k])
        valid[1:-1, 1:-1, k] = kept[k]
    own_low, own_high = frame_envelopes(frames, kept)
    low, high = near_envelopes(own_low, own_high, (H, W))
    return Appearances(
        samples.reshape(C, -1, K),
        valid.reshape(-1, K),
        np.asarray(times, dtype=np.intp),
        (H, W),
        float(radius),
        max(1, round(EXCLUDE * n_frames)),
        low,
        high,
        own_low,
        own_high,
        stride=stride,
    )
