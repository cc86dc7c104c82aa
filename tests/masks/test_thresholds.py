"""Noise levels and automatic thresholds (bpvideo.masks.thresholds)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from bpvideo.masks import foreground_masks, sample_model
from bpvideo.masks.thresholds import (
    MIN_AUTO_THRESHOLD,
    auto_limit,
    grouped_median,
    temporal_noise,
)


def test_grouped_median_moves_smoothly_where_the_plain_median_jumps() -> None:
    # 49 % zeros: the plain median of integers is 1; the grouped one is just above 0.5
    values = np.array([0] * 49 + [1] * 30 + [2] * 21)
    assert np.median(values) == 1
    assert 0.5 < grouped_median(values) < 0.6
    assert grouped_median(np.array([3, 3, 3])) == pytest.approx(3.0)
    assert grouped_median(np.array([], dtype=int)) == 0.0


@pytest.mark.parametrize("sigma", [1.0, 3.0, 8.0])
def test_temporal_noise_recovers_the_noise_of_integer_frames(sigma: float) -> None:
    rng = np.random.default_rng(2)
    scene = rng.integers(30, 220, 20_000).astype(float)
    frames = np.rint(scene + rng.normal(0, sigma, (2, 20_000))).clip(0, 255)
    assert temporal_noise(frames.astype(np.uint8)) == pytest.approx(sigma, rel=0.1)


def test_temporal_noise_counts_only_pairs_that_agree_with_the_background() -> None:
    rng = np.random.default_rng(3)
    frames = np.rint(100 + rng.normal(0, 2, (2, 10_000))).astype(np.uint8)
    frames[1, :7000] = rng.integers(0, 255, 7000)  # 70 % of the pixels: something moved
    agree = np.ones((2, 10_000), dtype=bool)
    agree[:, :7000] = False
    assert temporal_noise(frames, agree) == pytest.approx(2.0, rel=0.1)
    assert temporal_noise(frames) > 10  # counting everything: inflated by the foreground


def test_auto_limit_is_k_noise_levels_with_a_floor_and_per_pixel_maps() -> None:
    threshold, local = auto_limit(6.0, 3.0, None)
    assert threshold == 18.0 and local is None
    assert auto_limit(6.0, 0.1, None)[0] == MIN_AUTO_THRESHOLD
    spread = np.array([[1.0, 5.0]], dtype=np.float32)
    threshold, local = auto_limit(6.0, 2.0, spread)
    np.testing.assert_allclose(local, [[12.0, 30.0]])


def _scene(fraction: float, sigma: float = 2.0, n: int = 40, seed: int = 0):
    """Grey frames of a textured static scene with noise, and a foreground that covers
    ``fraction`` of every frame (a block of random values that sweeps the frame, so that
    every pixel it passes is covered in ``fraction`` of the frames)."""
    rng = np.random.default_rng(seed)
    background = rng.integers(40, 200, (60, 80)).astype(np.float32)
    frames = background + rng.normal(0, sigma, (n, 60, 80))
    rows = max(1, round(fraction * 60))
    cols = min(80, round(fraction * 60 * 80 / rows))
    truth = np.zeros(frames.shape, dtype=bool)
    for j in range(n):  # a block sweeping down the frame, wrapping around
        where = np.roll(np.arange(60) < rows, (j * 7) % 60)
        frames[j, where, :cols] = rng.integers(0, 255, (rows, cols))
        truth[j, where, :cols] = True
    return np.rint(frames).clip(0, 255).astype(np.uint8), background, truth


@pytest.mark.parametrize("fraction", [0.004, 0.3, 0.7])
def test_auto_threshold_does_not_grow_with_the_foreground(fraction: float) -> None:
    frames, background, truth = _scene(fraction)
    L = np.broadcast_to(background, frames.shape)
    model = sample_model(frames, L, (60, 80), observed=~truth, noise="global")
    # the camera's noise is 2 grey levels whatever covers the frame: 6 x 2 = 12
    assert model.noise == pytest.approx(2.0, rel=0.15)
    assert model.threshold == pytest.approx(12.0, rel=0.15)


def test_local_noise_raises_the_threshold_where_the_background_moves() -> None:
    frames, background, _ = _scene(0.0)
    frames = frames.astype(np.int16)
    rng = np.random.default_rng(5)
    frames[:, :, :20] += rng.integers(-25, 26, (frames.shape[0], 60, 20))  # leaves
    frames = frames.clip(0, 255).astype(np.uint8)
    L = np.broadcast_to(background, frames.shape)
    model = sample_model(frames, L, (60, 80))
    assert model.local is not None
    assert model.local[:, 25:].mean() == pytest.approx(model.threshold, rel=0.1)
    assert model.local[:, 2:18].mean() > 3 * model.threshold
    masks = foreground_masks(frames, L, None, (60, 80), shadows="keep").masks
    assert masks.mean() < 0.01  # the leaves are not foreground


def test_masks_are_right_whether_the_foreground_is_small_or_large() -> None:
    for fraction in (0.004, 0.7):
        frames, background, truth = _scene(fraction, seed=7)
        L = np.broadcast_to(background, frames.shape).astype(np.float32)
        # the one-image model (a one-pixel-thick object is speckle to the appearances)
        masks = foreground_masks(frames, L, None, (60, 80), shadows="keep", min_area=0,
                                 open_radius=0, close_radius=0, appearances=0).masks  # fmt: skip
        tp = (masks & truth).sum()
        f = 2 * tp / (masks.sum() + truth.sum())
        assert f > 0.9, (fraction, f)


def test_the_model_of_a_large_frame_holds_float32_maps_not_float64_copies():
    """The thresholds of a frame of many pixels, a block at a time: what stays between the
    blocks is the float32 maps (4 bytes a value), not every block's float64 medians and
    their concatenation (a 4K window took 0.6 GB more)."""
    from bpvideo.masks.thresholds import SampleBlock, model_from_blocks

    rng = np.random.default_rng(0)
    H, W, k, step = 512, 512, 8, 1 << 15
    data = rng.integers(0, 256, (H * W, k), dtype=np.uint8)
    background = data.astype(np.float32) + rng.normal(0, 2, (H * W, k)).astype(np.float32)
    agree = rng.random((H * W, k)) < 0.9
    colour = rng.integers(0, 256, (H * W, k, 3), dtype=np.uint8)

    def blocks():
        for lo in range(0, H * W, step):
            sl = slice(lo, lo + step)
            yield SampleBlock(data[sl], background[sl], agree[sl], colour[sl])

    tracemalloc.start()
    try:
        model = model_from_blocks(blocks(), (H, W), sensor=2.0, noise="local")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert model.shade.shape == (H, W, 3) and model.shade.dtype == np.float32
    # the maps (shade 12 bytes a pixel, spread and limit 4 each) and one block's
    # temporaries: 36 bytes a pixel here; the float64 copies took it to 88
    assert peak < 50 * H * W


def _faint_square(noise: float, seed: int = 5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A quiet grey scene (sensor noise ``noise``) with a square 4 grey levels brighter
    than the background in 12 of 40 frames: frames, background, true masks."""
    rng = np.random.default_rng(seed)
    bg = np.rint(rng.uniform(90, 110, (48, 64)))
    truth = np.zeros((40, 48, 64), dtype=bool)
    truth[14:26, 14:34, 20:44] = True
    frames = bg + 4.0 * truth + rng.normal(0, noise, truth.shape)
    return np.clip(np.rint(frames), 0, 255).astype(np.uint8), np.repeat(bg[None], 40, 0), truth


def test_pooled_test_finds_a_faint_object_below_every_single_pixel_threshold(monkeypatch) -> None:
    from bpvideo.masks import pooled

    frames, bg, truth = _faint_square(1.0)
    found = foreground_masks(frames, bg.astype(np.float32), None, (48, 64)).masks
    assert found[truth].mean() > 0.7 and truth[found].mean() > 0.95
    # each pixel is 4 grey levels off, under the floor of the single-pixel test
    monkeypatch.setattr(pooled, "POOLED", False)
    alone = foreground_masks(frames, bg.astype(np.float32), None, (48, 64)).masks
    assert alone[truth].mean() < 0.05


def test_pooled_test_stays_off_where_the_residual_is_correlated_across_pixels() -> None:
    # the box mean of noise that is the same over 8 x 8 blocks (a codec's blocks, the
    # background model's own error, a change of light) varies as much as one pixel's:
    # no pooled test in that view, where independent noise of the same level takes it
    from bpvideo.masks.pooled import box_mean, pooled_limits

    rng = np.random.default_rng(7)
    sigma = np.full((64, 64), 4.0, np.float32)
    calm = np.zeros((64, 64), dtype=bool)

    def boxes(blocky: bool) -> np.ndarray:
        out = []
        for _ in range(12):
            n = rng.normal(0, 4, (8, 8) if blocky else (64, 64))
            n = np.kron(n, np.ones((8, 8))) if blocky else n
            out.append(box_mean(n.astype(np.float32), calm))
        return np.stack(out)

    independent = pooled_limits(sigma, 4.0, boxes(False))
    assert independent is not None and np.isfinite(independent[0]).all()
    assert np.median(independent[0]) < 0.5 * 6.0 * 4.0  # half the single-pixel threshold
    assert pooled_limits(sigma, 4.0, boxes(True)) is None
    # a pixel whose own spread is twice the camera's (water, leaves) takes no pooled test
    sigma[:8] = 8.0
    assert np.isinf(pooled_limits(sigma, 4.0, boxes(False))[0][:8]).all()


def test_a_change_of_light_is_taken_out_and_a_faint_object_kept() -> None:
    from bpvideo.masks.pooled import without_light

    rng = np.random.default_rng(3)
    bg = rng.uniform(60, 200, (96, 128)).astype(np.float32)
    frame = bg * 0.95  # the exposure drops 5 %: every surface darkens in proportion
    frame[40:52, 50:66] -= 6.0  # and a faint object, 12 x 16 pixels
    r = frame - bg
    without_light(r, bg, np.zeros(r.shape, dtype=bool))
    outside = np.ones(r.shape, dtype=bool)
    outside[36:56, 46:70] = False
    assert np.abs(r[outside]).max() < 1.0  # was up to 10 grey levels
    assert np.median(r[40:52, 50:66]) < -5.0
