"""A background of several appearances per pixel, drawn from the whole window.

The robust-PCA background ``L`` is one image per frame (rank r: the scene under a few
lights). Where the background itself moves (water, leaves, flicker) a pixel takes several
appearances, and a per-pixel threshold wide enough to cover them all (``noise="local"``)
hides the foreground there too: on a canoe over rippling water it lost 93 % of the canoe.

So each pixel also keeps a small **set of the appearances it took as background**, as
ViBe, LOBSTER and SuBSENSE keep samples, but drawn from frames spread over the *whole
window*, before and after the tested frame (an online subtractor has only the past), and
only where the solve says background (the sampled frame's own residual within the pixel's
limit, away from anything it calls foreground). A pixel is foreground when it is farther
than the *global* threshold (the camera's noise, never a pixel's own spread) from ``L``
**and** fewer than :data:`MIN_MATCHES` samples of its 3 x 3 neighbourhood lie within that
threshold of it in every channel (the neighbourhood, as SuBSENSE's spatial propagation: a
leaf that sways by a pixel is still matched). Samples from frames near the tested one
are not used, so that something that lingers cannot explain itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

__all__ = [
    "EXCLUDE",
    "MARGIN",
    "MIN_MATCHES",
    "SAMPLE_BYTES",
    "Appearances",
    "build_appearances",
    "sample_times",
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
#: Bytes the samples of one window may take (fewer samples of large frames).
SAMPLE_BYTES = 96 << 20
#: Fewest samples worth keeping (below, the one-image background is used).
MIN_SAMPLES = 6
#: Candidate pixels of a block of frames from which the compiled kernel is used, when numba
#: is installed (its import and cached kernel cost ~0.5 s once; numpy's gathers ~1 us a
#: pixel).
COMPILED_FROM = 100_000
#: Offsets of the 3 x 3 neighbourhood, the pixel itself first, then the nearest.
_OFFSETS = sorted(
    ((dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)), key=lambda o: abs(o[0]) + abs(o[1])
)


@dataclass
class Appearances:
    """Background appearances of one window's pixels (see the module docstring).

    Attributes
    ----------
    samples : ((H + 2) * (W + 2), K, C) uint8 ndarray
        Colour (C = 3, BGR) or grey level (C = 1) of each pixel in K frames, with a border
        of one pixel (never valid); a pixel's samples side by side.
    valid : ((H + 2) * (W + 2), K) bool ndarray
        Where the sample is background.
    times : (K,) intp ndarray
        The window's frame index of each sample.
    shape : (H, W)
        Frame size.
    radius : float
        Match radius in grey levels, in every channel.
    exclude : int
        Samples within this many frames of the tested one are not used.
    low, high : (H * W, C) uint8 ndarray
        The least and greatest valid sample of each channel over the pixel's 3 x 3
        neighbourhood: a pixel further than :attr:`radius` outside them in a channel is
        matched by no sample (tested first, at the cost of two comparisons).
    """

    samples: np.ndarray
    valid: np.ndarray
    times: np.ndarray
    shape: tuple[int, int]
    radius: float
    exclude: int
    low: np.ndarray
    high: np.ndarray

    def unexplained(self, frames: np.ndarray, candidates: np.ndarray, first: int = 0) -> np.ndarray:
        """Which candidate pixels no background appearance explains.

        Parameters
        ----------
        frames : (n, H, W, C) or (n, H, W) uint8 ndarray
            Frames of the window from its frame ``first`` on (as :attr:`samples`).
        candidates : (n, H, W) bool ndarray
            Pixels to test (far from ``L``); the answer is False elsewhere.
        first : int
            Window index of ``frames[0]``.

        Returns
        -------
        (n, H, W) bool ndarray
        """
        H, W = self.shape
        frames = frames.reshape(len(frames), H * W, -1)
        shifts = np.array([dy * (W + 2) + dx for dy, dx in _OFFSETS], dtype=np.intp)
        kernel = _compiled() if np.count_nonzero(candidates) >= COMPILED_FROM else None
        if kernel is not None:
            return kernel(self, frames, candidates, first, shifts, MIN_MATCHES)
        out = np.zeros(candidates.shape, dtype=bool)
        for j in range(len(frames)):
            pixels = np.flatnonzero(candidates[j])
            if not len(pixels):
                continue
            use = np.abs(self.times - (first + j)) > self.exclude
            value = frames[j][pixels]
            inside = self._inside(value, pixels)
            out[j].reshape(-1)[pixels[~inside]] = True
            pixels, value = pixels[inside], value[inside]
            at = pixels + (pixels // W) * 2 + W + 3  # the same pixel, in the padded frame
            left = self._unmatched(use, value, at, shifts)
            out[j].reshape(-1)[pixels[left]] = True
        return out

    def _inside(self, value: np.ndarray, pixels: np.ndarray) -> np.ndarray:
        """Which pixels lie within :attr:`radius` of their envelope in every channel."""
        r = self.radius
        v = value.astype(np.float32)
        ok = v >= self.low[pixels] - r
        ok &= v <= self.high[pixels].astype(np.float32) + r
        return ok.all(axis=1)

    def _unmatched(
        self, use: np.ndarray, value: np.ndarray, at: np.ndarray, shifts: np.ndarray
    ) -> np.ndarray:
        """Indices (into ``at``) of the pixels fewer than :data:`MIN_MATCHES` samples
        match (numpy: the pixel's own samples first, then each neighbour's for the pixels
        still unmatched)."""
        samples, valid = self.samples[:, use], self.valid[:, use]
        value = value.astype(np.int16)[:, None, :]
        left = np.arange(len(at))
        matches = np.zeros(len(at), dtype=np.int32)
        for shift in shifts:
            index = at[left] + shift
            near = samples[index].astype(np.int16)  # (p, K, C)
            np.subtract(near, value[left], out=near)
            np.abs(near, out=near)
            close = near.max(axis=2) <= self.radius
            close &= valid[index]
            matches[left] += np.count_nonzero(close, axis=1)
            left = left[matches[left] < MIN_MATCHES]
            if not len(left):
                break
        return left


_KERNEL: list = []


def _compiled():
    """The compiled matching kernel (:mod:`._appearance_kernel`), or None without numba."""
    if not _KERNEL:
        from bpvideo.solvers.backends import HAVE_NUMBA

        if HAVE_NUMBA:
            from bpvideo.masks._appearance_kernel import unexplained

            _KERNEL.append(unexplained)
        else:
            _KERNEL.append(None)
    return _KERNEL[0]


def sample_times(n: int, frame_pixels: int, channels: int, samples: int) -> np.ndarray:
    """The window's frames whose appearances are kept: evenly spaced over all ``n``
    frames, at most ``samples`` and at most what :data:`SAMPLE_BYTES` holds.

    Returns
    -------
    (K,) intp ndarray
        Empty when fewer than :data:`MIN_SAMPLES` fit.
    """
    fit = SAMPLE_BYTES // max(1, frame_pixels * (channels + 1))
    k = min(samples, n, int(fit))
    if k < MIN_SAMPLES:
        return np.zeros(0, dtype=np.intp)
    return np.unique(np.linspace(0, n - 1, k).round().astype(np.intp))


def build_appearances(
    frames: np.ndarray,
    foreground: np.ndarray,
    times: np.ndarray,
    n_frames: int,
    radius: float,
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

    Returns
    -------
    Appearances
    """
    if frames.ndim == 3:
        frames = frames[..., None]
    K, H, W, C = frames.shape
    samples = np.zeros((K, H + 2, W + 2, C), dtype=np.uint8)
    samples[:, 1:-1, 1:-1] = frames
    valid = np.zeros((K, H + 2, W + 2), dtype=bool)
    grow = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * MARGIN + 1, 2 * MARGIN + 1))
    speck = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * SPECKLE + 1, 2 * SPECKLE + 1))
    for k in range(K):
        fg = np.ascontiguousarray(foreground[k]).view(np.uint8)
        grown = cv2.morphologyEx(fg, cv2.MORPH_OPEN, speck) if SPECKLE else fg
        valid[k, 1:-1, 1:-1] = cv2.dilate(grown, grow) == 0
    exclude = max(1, round(EXCLUDE * n_frames))
    low, high = _envelope(samples, valid)
    return Appearances(
        np.ascontiguousarray(samples.reshape(K, -1, C).transpose(1, 0, 2)),
        np.ascontiguousarray(valid.reshape(K, -1).T),
        np.asarray(times, dtype=np.intp),
        (H, W),
        float(radius),
        exclude,
        low,
        high,
    )


def _envelope(samples: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:attr:`Appearances.low` and :attr:`~Appearances.high` of padded samples
    ``(K, H + 2, W + 2, C)`` and their validity ``(K, H + 2, W + 2)``: (H * W, C) each
    (255 and 0 where no valid sample is near)."""
    C = samples.shape[3]
    low = np.where(valid[..., None], samples, np.uint8(255)).min(axis=0)
    high = np.where(valid[..., None], samples, np.uint8(0)).max(axis=0)
    square = np.ones((3, 3), dtype=np.uint8)
    low = cv2.erode(low, square, borderType=cv2.BORDER_CONSTANT, borderValue=255)
    high = cv2.dilate(high, square, borderType=cv2.BORDER_CONSTANT, borderValue=0)
    return (low[1:-1, 1:-1].reshape(-1, C), high[1:-1, 1:-1].reshape(-1, C))
