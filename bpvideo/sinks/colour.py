"""The colour of ``background.png`` when the solve ran on grey levels (``--gray``, the
default) and the input has colour (:class:`Chroma`).

The grey still (the per-pixel median of the solved background,
:class:`~bpvideo.still.Still`) gives each pixel's luminance. Its colour comes from the
input where the masks say background: the mean of ``frame - grey(frame)`` (per channel,
the frame's offset from its own BT.601 grey level, ``cv2.COLOR_BGR2GRAY``) over the
frames where the pixel is background. The still is ``grey + offset``: since the grey
weights sum to one, its grey level is the grey still's (to rounding and clipping), so the
colour still and the masks agree on the background's brightness; a pixel that is never
background stays grey. The masks are not touched.

Cost: the means are sums of the frames and of their grey levels at background pixels
(``cv2.accumulate``, from uint8, masked), over a sample of the frames: one in ``stride``,
the stride doubled every :data:`SAMPLES` samples, the sums so far halved then (each frame
sampled stands for ``stride`` frames: a mean over all the frames). About
``SAMPLES * log2(n / SAMPLES)`` frames of ``n`` are read (docs/usage.md: times measured).
"""

from __future__ import annotations

import cv2
import numpy as np

__all__ = ["SAMPLES", "Chroma"]

#: Frames sampled at one stride before it doubles: 68 of a 300-frame clip, ~200 of an
#: hour at 25 fps (a mean of colour offsets needs few; each costs ~9 ms at 720p).
SAMPLES = 16


class Chroma:
    """Sums of the input's colours and grey levels at background pixels (see the module
    docstring).

    Parameters
    ----------
    limit : int
        Frames sampled at one stride before the stride doubles.
    """

    def __init__(self, limit: int = SAMPLES) -> None:
        self.limit = limit
        self.stride = 1
        self.count = 0  # frames offered
        self.taken = 0  # frames sampled at the current stride
        self.sums: list[np.ndarray] = []  # (H, W, 3), (H, W), (H, W) float32: colour,
        # grey level and background frames, summed at background pixels

    def add(self, frames: np.ndarray, masks: np.ndarray) -> None:
        """Offer the next frames (k, H, W, 3) uint8 BGR and their masks (k, H, W) bool."""
        for frame, mask in zip(frames, masks, strict=True):
            if self.count % self.stride == 0:
                self._sample(frame, mask)
                self.taken += 1
                if self.taken >= self.limit:  # later samples stand for twice the frames
                    self.stride *= 2
                    self.taken = 0
                    for total in self.sums:
                        total *= 0.5
            self.count += 1

    def _sample(self, frame: np.ndarray, mask: np.ndarray) -> None:
        if not self.sums:
            self.sums = [np.zeros(frame.shape, np.float32),
                         *(np.zeros(frame.shape[:2], np.float32) for _ in range(2))]  # fmt: skip
        colour, grey, seen = self.sums
        background = np.logical_not(mask).view(np.uint8)  # 1 where background
        cv2.accumulate(frame, colour, background)
        cv2.accumulate(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY), grey, background)
        cv2.accumulate(background, seen)

    def colour(self, grey: np.ndarray) -> np.ndarray:
        """The still in colour: (H, W, 3) uint8 BGR of the grey still (H, W) uint8; the
        grey still itself when the input has no colour (every offset rounds to 0)."""
        if not self.sums:
            return grey
        colour, grey_sum, seen = self.sums
        offset = (colour - grey_sum[..., None]) / np.maximum(seen, 1e-6)[..., None]
        still = np.clip(np.rint(grey[..., None] + offset), 0, 255).astype(np.uint8)
        if (still == grey[..., None]).all():
            return grey
        return still
