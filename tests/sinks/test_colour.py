"""The colour of a grey still (:class:`~bpvideo.sinks.colour.Chroma`)."""

from __future__ import annotations

import cv2
import numpy as np

from bpvideo.sinks.colour import Chroma


def test_colour_comes_from_background_pixels_only() -> None:
    rng = np.random.default_rng(1)
    background = rng.integers(20, 230, (12, 16, 3), dtype=np.uint8)
    frames = np.repeat(background[None], 200, axis=0)
    masks = np.zeros((200, 12, 16), bool)
    masks[:, 2:6, 3:9] = True  # a foreground of another colour, always there but ...
    frames[:, 2:6, 3:9] = (0, 0, 255)
    frames[::10, 2:6, 3:9] = background[2:6, 3:9]  # ... gone in one frame of ten
    masks[::10] = False
    masks[:, 10:, 14:] = True  # never background: grey
    chroma = Chroma(limit=8)  # the stride doubles several times over 200 frames
    for k in range(0, 200, 7):
        chroma.add(frames[k : k + 7], masks[k : k + 7])
    grey = cv2.cvtColor(background, cv2.COLOR_BGR2GRAY)
    still = chroma.colour(grey)
    seen = np.ones((12, 16), bool)
    seen[10:, 14:] = False
    assert np.abs(still[seen].astype(int) - background[seen]).max() <= 1
    assert (still[~seen] == grey[~seen][:, None]).all()
    assert np.abs(cv2.cvtColor(still, cv2.COLOR_BGR2GRAY).astype(int) - grey)[seen].max() <= 1


def test_grey_input_gives_a_grey_still() -> None:
    rng = np.random.default_rng(2)
    grey = rng.integers(0, 256, (30, 9, 11), dtype=np.uint8)
    chroma = Chroma()
    chroma.add(np.repeat(grey[..., None], 3, axis=3), rng.random((30, 9, 11)) < 0.3)
    still = chroma.colour(grey[0])
    assert still.shape == (9, 11) and (still == grey[0]).all()
