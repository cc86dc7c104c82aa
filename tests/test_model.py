"""``bpvideo.LiveSeparator`` (bpvideo/model.py): what it refuses, before any frame is taken
in (the model's behaviour on streams is in tests/pipeline/test_online.py)."""

from __future__ import annotations

import numpy as np
import pytest

import bpvideo
from bpvideo.errors import InputError


def _frames(n: int = 40, h: int = 24, w: int = 32) -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.normal(100, 2, (n, h, w)).clip(0, 255).astype(np.uint8)


@pytest.mark.parametrize("fps", [0, -1, float("nan"), float("inf"), None, "fast"])
def test_a_rate_that_is_not_a_positive_number_is_refused_naming_fps(fps):
    with pytest.raises(InputError, match=r"^fps=") as error:
        bpvideo.LiveSeparator(fps=fps)
    assert error.value.option == ("fps", fps)


def test_a_frame_of_another_size_than_the_model_is_refused_with_both_sizes():
    live = bpvideo.LiveSeparator(fps=10).fit(_frames())
    before = live.updates
    with pytest.raises(InputError, match=r"is 40x30 but the background was learned on 32x24"):
        live.apply(np.zeros((30, 40), np.uint8))
    with pytest.raises(InputError, match=r"frame 1 given to apply is 40x30"):
        live.apply([_frames(1)[0], np.zeros((30, 40, 3), np.uint8)])
    assert live.apply(_frames(1)[0]).shape == (24, 32)  # the model is still usable
    assert live.updates == before


def test_a_frame_of_another_size_while_learning_is_refused():
    live = bpvideo.LiveSeparator(fps=10)
    assert live.apply(_frames(3)) is None
    with pytest.raises(InputError, match=r"is 40x30 but the first frame given was 32x24"):
        live.apply(np.zeros((30, 40), np.uint8))


@pytest.mark.parametrize("level", [0, 100])
def test_a_still_scene_without_noise_is_learned(level: int):
    # All-black frames (a covered lens, night) failed with ZeroDivisionError, a flat grey
    # scene with LinAlgError: the background spans nothing / its coefficients no spread.
    still = np.full((12, 24, 32), level, np.uint8)
    seen = still[:2].copy()
    seen[:, 8:16, 10:20] = 200
    model = bpvideo.BackgroundModel().fit(still)
    masks = model.apply(seen)
    assert not model.apply(still[:1]).any()
    assert masks[:, 8:16, 10:20].mean() > 0.8 and masks.sum() <= 2 * 8 * 10
