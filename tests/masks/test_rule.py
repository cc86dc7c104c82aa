"""Layouts and writers of the faster paths give the same results as the plain ones."""

from __future__ import annotations

import numpy as np
import pytest

from bpvideo.masks import clean_mask, foreground_masks


@pytest.mark.parametrize("frame_shape", [(24, 32), (12, 16, 3)])
def test_masks_of_columns_and_of_frames_agree(frame_shape) -> None:
    rng = np.random.default_rng(0)
    n, m = 30, int(np.prod(frame_shape))
    L = np.repeat(rng.random((m, 1)).astype(np.float32) * 200, n, axis=1)
    A = L + rng.normal(0, 2, (m, n)).astype(np.float32)
    A[: m // 3, ::3] += 80  # blobs of foreground
    by_columns = foreground_masks(A, L, None, frame_shape, min_area=4)
    frames = lambda M: np.ascontiguousarray(M.T).reshape((n, *frame_shape))  # noqa: E731
    by_frames = foreground_masks(frames(A), frames(L), None, frame_shape, min_area=4)
    assert by_columns.threshold == by_frames.threshold
    np.testing.assert_array_equal(by_columns.masks, by_frames.masks)
    assert by_columns.masks[::3].any() and not by_columns.masks[1::3].any()
    assert 1.5 < by_columns.model.noise < 2.5  # the noise drawn: sigma 2


def test_clean_mask_in_place_equals_a_new_mask() -> None:
    rng = np.random.default_rng(1)
    mask = rng.random((40, 50)) > 0.7
    mask[5:20, 5:25] = True
    want = clean_mask(mask.copy(), open_radius=1, close_radius=2, min_area=20)
    got = mask.copy()
    assert clean_mask(got, open_radius=1, close_radius=2, min_area=20, out=got) is got
    np.testing.assert_array_equal(got, want)
    assert want[10, 10] and want.sum() < mask.sum()


@pytest.mark.parametrize(
    ("size", "box"),  # a few tiles around `where`; many tiles: one box around them
    [((60, 80), (10, 30, 20, 50)), ((300, 400), (10, 30, 20, 50)), ((300, 400), (40, 290, 7, 333))],
)
def test_shadow_test_on_some_pixels_equals_the_whole_frame_test(size, box, monkeypatch):
    # pixel by pixel (without the reach to soft edges, the ratio test and the deep cores,
    # which look at the pixels asked about only)
    from bpvideo.masks import shadows
    from bpvideo.masks.shadows import chromaticity, shadow_pixels

    monkeypatch.setattr(shadows, "REACH", 0)
    monkeypatch.setattr(shadows, "RATIO_SPREAD", 0.0)
    monkeypatch.setattr(shadows, "DEEP", 0)
    rng = np.random.default_rng(5)
    frame = rng.integers(0, 256, (*size, 3), dtype=np.uint8)
    grey = frame.astype(np.float32).mean(axis=2)
    background = grey * rng.uniform(1.0, 2.0, grey.shape).astype(np.float32)
    shade = frame.astype(np.float32) * rng.uniform(0.97, 1.03, frame.shape).astype(np.float32)
    shade = chromaticity(shade)
    where = np.zeros(grey.shape, dtype=bool)
    where[box[0] : box[1], box[2] : box[3]] = True
    whole = shadow_pixels(grey, background, frame, shade)
    assert whole[where].any()
    np.testing.assert_array_equal(
        shadow_pixels(grey, background, frame, shade, where), whole & where
    )


def _road_with_shadow_and_car(rng: np.random.Generator):
    """A smooth road (grain below the noise), a cast shadow with a 2-pixel soft edge and
    a grey car as dark as the shadow and of the road's colour, its body a fine pattern
    of darker and lighter patches (returned: frame, road, road colour, the shadow's depth
    from 0 to 1, the car's pixels)."""
    h, w = 120, 200
    colour = np.array([118.0, 122.0, 126.0])  # BGR of the road
    road = colour + rng.normal(0.0, 1.0, (h, w, 1))
    yy, xx = np.mgrid[0:h, 0:w].astype(float)
    inside = np.clip(np.minimum.reduce([xx - 20, 90 - xx, yy - 30, 90 - yy]) / 2.0, 0, 1)
    frame = road * (1.0 - 0.5 * inside)[..., None]
    panels = np.kron(rng.uniform(0.3, 0.7, (24, 18)), np.ones((2, 2)))  # 48 x 36 pixels
    frame[40:88, 130:166] = colour * panels[..., None]
    frame = np.clip(frame + rng.normal(0.0, 2.0, frame.shape), 0, 255).astype(np.uint8)
    car = np.zeros((h, w), dtype=bool)
    car[40:88, 130:166] = True
    return frame, road.mean(axis=2).astype(np.float32), colour, inside, car


def test_a_soft_shadow_on_a_smooth_road_goes_whole_and_a_grey_car_stays(monkeypatch) -> None:
    # the texture test alone misses a shadow's soft edge (it steps in the frame, not in
    # the road): the reach from the solid shadow takes it, and takes nothing of a grey
    # car whose colour passes the brightness and colour tests
    from bpvideo.masks import shadows

    frame, background, colour, inside, car = _road_with_shadow_and_car(np.random.default_rng(3))
    shadow = inside > 0.2  # darker than the road by more than the noise
    grey = frame.astype(np.float32).mean(axis=2)
    shade = np.broadcast_to(shadows.chromaticity(colour), frame.shape).astype(np.float32)
    where = shadow | car
    found = shadows.shadow_pixels(grey, background, frame, shade, where)
    monkeypatch.setattr(shadows, "REACH", 0)
    monkeypatch.setattr(shadows, "DEEP", 0)
    without = shadows.shadow_pixels(grey, background, frame, shade, where)
    edge = shadow & (inside < 1.0)
    assert found[shadow].mean() > 0.95 and found[edge].mean() > 0.7
    assert without[edge].mean() < 0.1
    assert found[car].mean() < 0.05
    assert np.count_nonzero(found & car) == np.count_nonzero(without & car)


def test_a_thin_hard_shadow_on_fine_texture_goes_and_a_dark_object_stays(monkeypatch) -> None:
    # a shadow three pixels wide on tiles of 3 pixels: every 5 x 5 patch straddles its
    # edge, so the texture test fails on it; the ratio to the floor is the same on all
    # of its pixels (0.45), where a dark object of the floor's colour varies with the
    # floor's tiles under it
    from bpvideo.masks import shadows

    rng = np.random.default_rng(4)
    h, w = 60, 90
    colour = np.array([150.0, 170.0, 185.0])
    tiles = np.kron(rng.uniform(-30, 30, (h // 3, w // 3)), np.ones((3, 3)))
    floor = colour + tiles[..., None]
    frame = floor.copy()
    shadow = np.zeros((h, w), dtype=bool)
    for y in range(10, 50):  # a sheared band, as a low sun casts it
        shadow[y, 10 + y // 2 : 13 + y // 2] = True
    frame[shadow] *= 0.45
    dark = np.zeros((h, w), dtype=bool)
    dark[10:50, 60:80] = True
    frame[10:50, 60:80] = colour * rng.uniform(0.4, 0.5, (40, 20, 1))
    frame = np.clip(frame + rng.normal(0.0, 2.0, frame.shape), 0, 255).astype(np.uint8)
    grey = frame.astype(np.float32).mean(axis=2)
    background = floor.mean(axis=2).astype(np.float32)
    shade = shadows.chromaticity(floor).astype(np.float32)
    where = shadow | dark
    found = shadows.shadow_pixels(grey, background, frame, shade, where)
    monkeypatch.setattr(shadows, "RATIO_SPREAD", 0.0)
    without = shadows.shadow_pixels(grey, background, frame, shade, where)
    assert found[shadow].mean() > 0.9 and without[shadow].mean() < 0.5
    # the few pixels of the object that pass the older tests are specks; this one adds
    # almost none
    assert found[dark].mean() < 0.1
    assert np.count_nonzero(found & dark) - np.count_nonzero(without & dark) < 0.01 * dark.sum()


def test_deep_cores_take_what_lies_far_from_other_foreground(monkeypatch) -> None:
    # a dark patch of the floor's colour that neither keeps the floor's texture nor its
    # ratio, beside a bright part of the same blob: with DEEP its pixels further than
    # DEEP from the bright part are taken for a shadow's core, the others stay
    from bpvideo.masks import shadows

    rng = np.random.default_rng(6)
    h, w = 50, 70
    colour = np.array([150.0, 170.0, 185.0])
    floor = colour + rng.uniform(-30, 30, (h, w, 1))
    frame = floor.copy()
    frame[10:40, 10:60] = colour * 0.5  # flat: neither the floor's texture nor its ratio
    frame[10:40, 10:15] = 250.0  # the bright part of the blob
    frame = np.clip(frame + rng.normal(0.0, 1.0, frame.shape), 0, 255).astype(np.uint8)
    grey = frame.astype(np.float32).mean(axis=2)
    background = floor.mean(axis=2).astype(np.float32)
    shade = shadows.chromaticity(floor).astype(np.float32)
    where = np.zeros((h, w), dtype=bool)
    where[10:40, 10:60] = True
    monkeypatch.setattr(shadows, "REACH", 0)
    without = shadows.shadow_pixels(grey, background, frame, shade, where)
    monkeypatch.setattr(shadows, "DEEP", 4)
    found = shadows.shadow_pixels(grey, background, frame, shade, where)
    # (a few 5x5 patches of noise correlate with the floor by chance)
    assert without[10:40, 20:60].mean() < 0.05 and found[10:40, 20:60].mean() > 0.9
    assert found[10:40, 15:19].mean() < 0.05 and not found[:, :15].any()


@pytest.mark.parametrize("radii", [(1, 3), (0, 2), (2, 0), (0, 0)])
def test_clean_mask_equals_the_whole_frame_clean_up(radii) -> None:
    # clean_mask works on the box around the foreground: the same answer as opening,
    # closing and dropping small blobs of the whole frame, blobs at the edges included
    import cv2

    open_r, close_r = radii
    rng = np.random.default_rng(7)
    for _ in range(60):
        mask = np.zeros((90, 120), dtype=bool)
        for _ in range(rng.integers(0, 5)):
            y, x = rng.integers(-8, 95), rng.integers(-8, 125)
            h, w = rng.integers(1, 25, 2)
            ys, xs = slice(max(0, y), max(0, y + h)), slice(max(0, x), max(0, x + w))
            mask[ys, xs] = rng.random(mask[ys, xs].shape) < 0.75
        m = mask.astype(np.uint8)
        for op, r in ((cv2.MORPH_OPEN, open_r), (cv2.MORPH_CLOSE, close_r)):
            if r:
                m = cv2.morphologyEx(m, op, cv2.getStructuringElement(
                    cv2.MORPH_ELLIPSE, (2 * r + 1, 2 * r + 1)))  # fmt: skip
        _, labels, stats, _ = cv2.connectedComponentsWithStats(m, connectivity=8)
        want = (stats[labels, cv2.CC_STAT_AREA] >= 20) & (labels > 0)
        got = clean_mask(mask, open_radius=open_r, close_radius=close_r, min_area=20)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("level", [30.0, 200.0])
def test_texture_test_agrees_with_exact_statistics(level) -> None:
    # both ways of the texture test (a pixel's own patch, a filtered tile) against the
    # correlation and variances of each 5x5 patch computed in float64 about its mean,
    # on nearly flat, bright surfaces where float32 sums of raw grey levels cancel
    from bpvideo.masks import shadows

    rng = np.random.default_rng(11)
    h, w = 96, 128
    # texture from flat to plain (across), the frame's own noise from little to much
    # (down), in units of the flat patches' standard deviation
    unit = shadows.FLAT / 2.0
    b = level + rng.normal(0.0, 1.0, (h, w)) * np.geomspace(0.02, 4.0, w) * unit
    a = 0.7 * b + rng.normal(0.0, 1.0, (h, w)) * np.linspace(0.5, 6.0, h)[:, None] * unit
    a, b = a.astype(np.float32), b.astype(np.float32)
    index = np.arange(h * w)
    patches = np.lib.stride_tricks.sliding_window_view(
        np.pad(np.stack([a, b]).astype(np.float64), ((0, 0), (2, 2), (2, 2)), "reflect"),
        (5, 5), axis=(1, 2),
    ).reshape(2, h * w, 25)  # fmt: skip
    pa, pb = patches - patches.mean(axis=2, keepdims=True)
    var_a, var_b, cov = (pa * pa).mean(1), (pb * pb).mean(1), (pa * pb).mean(1)
    ncc = cov / np.sqrt(np.maximum(var_a * var_b, 1e-6))
    flat = shadows.FLAT**2
    exact = (ncc > shadows.TEXTURE) | ((var_a < flat) & (var_b < flat))
    clear = (np.abs(ncc - shadows.TEXTURE) > 1e-3) & (np.abs(var_a - flat) > 1e-3)
    clear &= np.abs(var_b - flat) > 1e-3
    own = shadows._texture_at(a, b, index)
    tiles = shadows.same_texture(a, b, flat_below=flat).reshape(-1)
    assert 0.05 < exact.mean() < 0.95
    np.testing.assert_array_equal(own[clear], exact[clear])
    np.testing.assert_array_equal(tiles[clear], exact[clear])


def test_shadow_test_of_a_block_equals_frame_by_frame() -> None:
    # frames tested together (uint8 grey, as the pipeline hands them) get the answers
    # each gets alone (float32), tiles and edges included
    from bpvideo.masks.shadows import chromaticity, shadow_pixels

    rng = np.random.default_rng(9)
    k, h, w = 4, 140, 150
    scene = rng.integers(20, 236, (h, w, 3))
    frames = (scene + rng.integers(-3, 4, (k, h, w, 3))).astype(np.uint8)
    grey = frames.mean(axis=3).round().astype(np.uint8)
    background = (grey * rng.uniform(1.0, 2.0, grey.shape)).astype(np.float32)
    shade = chromaticity(scene * rng.uniform(0.97, 1.03, scene.shape))
    where = rng.random(grey.shape) < np.array([0.02, 0.3, 0.9, 0.0])[:, None, None]
    where[1, :70, :70] = True  # a dense tile
    block = shadow_pixels(grey, background, frames, shade, where)
    assert block[1, :64, :64].sum() > 500 and block[0].any() and block[2].any()
    for j in range(k):
        alone = shadow_pixels(grey[j].astype(np.float32), background[j], frames[j], shade, where[j])
        np.testing.assert_array_equal(block[j], alone)


# --- partly observed videos (issue 27) ---------------------------------------------------


def test_unobserved_pixels_are_judged_by_their_observed_neighbours() -> None:
    from bpvideo.masks import judged_on_observed

    rng = np.random.default_rng(0)
    truth = np.zeros((40, 40), bool)
    truth[10:30, 12:28] = True
    seen = rng.random(truth.shape) < 0.4
    judged = judged_on_observed(truth & seen, seen, out=np.empty_like(truth))
    assert np.array_equal(judged[seen], truth[seen])  # observed pixels: as found
    inside, outside = judged[12:28, 14:26], judged[:8]
    assert inside.mean() > 0.95 and not outside.any()


@pytest.mark.parametrize("observe", [0.7, 0.5, 0.4])
def test_masks_of_a_partly_observed_video_keep_the_foreground(observe: float) -> None:
    """--observe below ~0.7 used to lose the masks (F 0.73 at 0.7, 0.155 at 0.5, 0.02 at
    0.4 on this street) while the background stayed right; measured now: 0.972, 0.953,
    0.94 (fully observed 0.985)."""
    import warnings

    import bpvideo
    from tests.conftest import f_measure, street_frames

    frames, truth = street_frames(n=120, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = bpvideo.separate(frames, observe=observe, seed=1)
    assert f_measure(result.masks, truth) >= 0.9


def test_a_region_observed_in_no_frame(tmp_path, caplog) -> None:
    """--mask leaving out a region in every frame: said, never foreground (an object
    crosses it), and no black reference solved there."""
    import cv2

    import bpvideo
    from tests.conftest import street_frames

    frames, truth = street_frames(n=80, seed=0)
    mask = np.full(frames.shape[1:3], 255, np.uint8)
    mask[10:30, 30:60] = 0  # the first object's row crosses it
    cv2.imwrite(str(tmp_path / "mask.png"), mask)
    with caplog.at_level("WARNING", logger="bpvideo"):
        result = bpvideo.separate(frames, mask=str(tmp_path / "mask.png"))
    assert truth[:, 10:30, 30:60].any()
    assert not result.masks[:, 10:30, 30:60].any()
    assert any("600 pixel(s)" in r.getMessage() and "observed in no frame" in r.getMessage()
               for r in caplog.records)  # fmt: skip


def test_clean_up_is_the_same_on_a_view_of_more_pixels() -> None:
    """A mask of 480 lines (speckle, a hole, an object) seen at 1080 lines, 2.25 times the
    pixels a side: cleaned with the options for its view it matches the 480-line cleanup
    brought to that size; with the 480-line pixels it keeps the upscaled speckle."""
    from bpvideo.masks import MaskOptions

    rng = np.random.default_rng(3)
    small = np.zeros((480, 640), dtype=bool)
    for y, x in rng.integers(0, 470, size=(300, 2)):  # specks of 3 x 3 pixels
        small[y : y + 3, x : x + 3] = True
    small[100:180, 200:260] = True  # an object ...
    small[130:134, 220:224] = False  # ... with a hole
    base = MaskOptions()
    assert base.for_view(480, 640) is base and base.for_view(240, 320) is base
    big_options = base.for_view(1080, 1440)
    assert (big_options.open_radius, big_options.close_radius, big_options.min_area) == (2, 7, 127)

    def clean(mask, options):
        return clean_mask(mask, open_radius=options.open_radius,
                          close_radius=options.close_radius, min_area=options.min_area)  # fmt: skip

    import cv2

    want = cv2.resize(clean(small, base).astype(np.uint8), (1440, 1080),
                      interpolation=cv2.INTER_NEAREST).astype(bool)  # fmt: skip
    big = cv2.resize(small.astype(np.uint8), (1440, 1080), interpolation=cv2.INTER_NEAREST) > 0
    scaled, plain = clean(big, big_options), clean(big, base)
    assert (scaled != want).mean() < 0.001
    assert (plain != want).mean() > 5 * (scaled != want).mean()
