"""A window's thresholds from sampled frames (bpvideo.masks.sample)."""

from __future__ import annotations

import numpy as np
import pytest

from bpvideo.masks import sample as sampler
from bpvideo.masks import sample_model
from bpvideo.pipeline.scale import Background
from bpvideo.settings import SeparateSettings
from bpvideo.sources.video import video_from_frames


def _window(seed: int = 0):
    rng = np.random.default_rng(seed)
    left = rng.uniform(60, 160, (40 * 50, 1)).astype(np.float32)
    right = (1 + 0.05 * rng.standard_normal((30, 1))).astype(np.float32)
    dense = left @ right.T
    frames = np.clip(np.rint(dense + rng.normal(0, 3, dense.shape)), 0, 255).astype(np.uint8)
    planes = np.ascontiguousarray(frames.T).reshape(30, 40, 50)
    bgr = np.repeat(planes[..., None], 3, axis=3)
    video = video_from_frames(list(enumerate(bgr)))
    return video, dense, Background(left=left, right=right)


def test_a_factored_background_gives_the_thresholds_of_the_dense_one() -> None:
    video, dense, factored = _window()
    settings = SeparateSettings().validate()
    by_factors = sampler.window_model(video, factored, settings.masks)
    by_dense = sampler.window_model(video, Background(dense), settings.masks)
    assert by_factors.threshold == pytest.approx(by_dense.threshold, rel=1e-5)
    np.testing.assert_allclose(by_factors.local, by_dense.local, rtol=1e-4)
    np.testing.assert_allclose(by_factors.shade, by_dense.shade, atol=1e-3)


def test_blocks_of_pixels_give_the_thresholds_of_the_whole_frame(monkeypatch) -> None:
    video, dense, factored = _window(1)
    settings = SeparateSettings().validate()
    whole = sampler.window_model(video, factored, settings.masks)
    monkeypatch.setattr(sampler, "BLOCK_PIXELS", 97)  # many blocks, a ragged last one
    blocks = sampler.window_model(video, factored, settings.masks)
    np.testing.assert_array_equal(whole.local, blocks.local)
    # and a window's model is the one sample_model makes of the same frames
    cols = np.unique(np.linspace(0, 28, sampler.SAMPLE_FRAMES).round().astype(int))
    assert len(cols) == 29 and whole.noise == pytest.approx(3.0, rel=0.15)
    model = sample_model(video.data, dense, (40, 50), frames=video.frames)
    assert model.threshold == pytest.approx(whole.threshold, rel=0.05)


def test_support_rule_and_fixed_thresholds() -> None:
    video, _, factored = _window(2)
    support = SeparateSettings(mask_rule="support").validate()
    assert sampler.window_model(video, factored, support.masks) is None
    fixed = SeparateSettings(threshold=25).validate()
    model = sampler.window_model(video, factored, fixed.masks)
    assert model.threshold == 25 and model.local is None and model.noise is None
    assert model.shade is not None  # shadows are still removed
    kept = SeparateSettings(threshold=25, shadows="keep").validate()
    assert sampler.window_model(video, factored, kept.masks).shade is None
