"""Background appearances kept up to date as frames come (a live stream).

A batch window draws its appearances from frames on both sides of every tested frame
(:mod:`bpvideo.masks.appearances`). A live stream has only the past, and the frames of
the last seconds are near every new frame: drawn as a window draws them, something that
lingers would explain itself. So a live stream keeps a **bank** of samples per pixel,
started from the learning window's appearances and then refreshed *conservatively*, as
ViBe refreshes its samples: after each frame is masked, a random share
(``1 / every``) of the pixels its mask calls background, away from its foreground, each
overwrite one of their samples chosen at random. Foreground never enters the bank; a
change the background model takes in (a parked car absorbed by the re-solves, light)
enters it as the masks call it background. The bank's samples live about
``K * every`` frames (a sample survives each write with odds ``1 - 1/K``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from bpvideo.masks.appearances import (
    MARGIN,
    Appearances,
    envelopes,
    near_envelopes,
    padded_index,
)
from bpvideo.masks.morphology import disk

__all__ = ["BANK_MATCHES", "BANK_SAMPLES", "REFRESH_EVERY", "SampleBank"]

#: Samples per pixel at most (the learning window's, which its memory budget bounds:
#: :data:`~bpvideo.masks.budget.SAMPLE_BYTES`).
BANK_SAMPLES = 12

#: Samples of the neighbourhood that must agree with a pixel for it to be background.
BANK_MATCHES = 4
#: A background pixel of a masked frame overwrites one of its samples with odds
#: ``1 / REFRESH_EVERY`` (ViBe's time subsampling factor, 16).
REFRESH_EVERY = 16
#: Frames taken in between two exact computations of the samples' envelopes (in
#: between, a written sample only widens them: a wider envelope tests more pixels, never
#: fewer, so the masks are the same).
REBUILD_FRAMES = 64
#: ``times`` of the bank's samples: so far in the past that no frame is near them.
_LONG_AGO = -(1 << 40)


@dataclass
class SampleBank:
    """Samples of each pixel's background, refreshed by the masks (module docstring).

    Attributes
    ----------
    samples : (C, (H + 2) * (W + 2), K) uint8 ndarray
        As :attr:`Appearances.samples` (padded; a plane per channel).
    valid : ((H + 2) * (W + 2), K) bool ndarray
        Where a sample holds a background appearance.
    shape : (H, W)
        Frame size.
    radius : float
        Match radius by default (the learning window's global threshold).
    every : int
        A background pixel overwrites a sample with odds ``1 / every``.
    settle : int
        Frames a pixel must have been background (away from foreground) before it may
        overwrite a sample: the holes of a mask inside an object that just came do not
        enter the bank.
    quiet : (H, W) int32 ndarray or None
        Frames each pixel has been background so far.
    own_low, own_high : ((H + 2) * (W + 2), C) uint8 ndarray or None
        Envelopes of each pixel's samples (:class:`Appearances`), at least as wide as
        the samples; None until first needed.
    since : int
        Frames taken in since the envelopes were computed exactly.
    """

    samples: np.ndarray
    valid: np.ndarray
    shape: tuple[int, int]
    radius: float
    every: int = REFRESH_EVERY
    settle: int = 0
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))
    quiet: np.ndarray | None = None
    own_low: np.ndarray | None = None
    own_high: np.ndarray | None = None
    since: int = 0

    @classmethod
    def start(cls, first: Appearances, size: int | None = None, every: int | None = None,
              settle: int = 0) -> SampleBank:  # fmt: skip
        """A bank of ``size`` samples (:data:`BANK_SAMPLES`) per pixel holding the
        appearances of a learning window (copies, repeated in turn)."""
        size = min(BANK_SAMPLES, first.samples.shape[2]) if size is None else size
        every = REFRESH_EVERY if every is None else every
        take = np.arange(size) % first.samples.shape[2]
        return cls(first.samples[:, :, take], first.valid[:, take], first.shape,
                   first.radius, every, settle)  # fmt: skip

    def appearances(self, radius: float | None = None) -> Appearances:
        """The bank as :class:`Appearances` to mask new frames with (none excluded),
        matching within ``radius`` (the current model's threshold; :attr:`radius` when
        None)."""
        C, _, K = self.samples.shape
        H, W = self.shape
        if self.own_low is None or self.own_high is None or self.since >= REBUILD_FRAMES:
            padded = (H + 2, W + 2)
            self.own_low, self.own_high, low, high = envelopes(
                self.samples.reshape(C, *padded, K), self.valid.reshape(*padded, K)
            )
            self.since = 0
        else:
            low, high = near_envelopes(self.own_low, self.own_high, self.shape)
        times = np.full(K, _LONG_AGO, dtype=np.intp)
        radius = self.radius if radius is None else radius
        return Appearances(self.samples, self.valid, times, self.shape, radius, 0,
                           low, high, self.own_low, self.own_high, BANK_MATCHES)  # fmt: skip

    def _write(self, at: np.ndarray, slot: np.ndarray | slice, values: np.ndarray) -> None:
        """Samples ``slot`` of the padded pixels ``at`` take ``values`` ((p, C) uint8)."""
        for c in range(self.samples.shape[0]):
            column = values[:, c, None] if isinstance(slot, slice) else values[:, c]
            self.samples[c, at, slot] = column
        self.valid[at, slot] = True
        if self.own_low is not None and self.own_high is not None:
            self.own_low[at] = np.minimum(self.own_low[at], values)
            self.own_high[at] = np.maximum(self.own_high[at], values)

    def refresh(self, frames: np.ndarray, masks: np.ndarray) -> None:
        """Take in the background of masked frames (in place).

        Parameters
        ----------
        frames : (n, H, W, C) or (n, H, W) uint8 ndarray
            The frames, in the bank's channels.
        masks : (n, H, W) bool ndarray
            Their final masks.
        """
        H, W = self.shape
        K = self.samples.shape[2]
        grow = disk(MARGIN)
        if self.quiet is None:
            self.quiet = np.full((H, W), self.settle, dtype=np.int32)
        for frame, mask in zip(frames, masks, strict=True):
            away = cv2.dilate(np.ascontiguousarray(mask).view(np.uint8), grow) == 0
            self.quiet += 1
            self.quiet[~away] = 0
            away &= self.quiet > self.settle
            pixel = np.flatnonzero(away & (self.rng.random((H, W)) * self.every < 1))
            at = padded_index(pixel, W)
            slot = self.rng.integers(0, K, len(at))
            self._write(at, slot, frame.reshape(H * W, -1)[pixel])
            self.since += 1

    def take(self, frame: np.ndarray, where: np.ndarray) -> None:
        """Make ``frame``'s pixels ``where`` (H, W) every sample of theirs (a change taken
        into the background at once)."""
        H, W = self.shape
        pixel = np.flatnonzero(where)
        at = padded_index(pixel, W)
        self._write(at, slice(None), frame.reshape(H * W, -1)[pixel])
        self.since += 1
