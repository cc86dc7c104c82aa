"""The reference background (bpvideo.background.reference) and what it does for the masks."""

from __future__ import annotations

import numpy as np
import pytest

import bpvideo
from bpvideo.background.reference import (
    Reference,
    auto_sparsity,
    changed_objects,
    consistent_entries,
    motion_score,
    observe_background,
    still_entries,
)
from bpvideo.background.tuning import MIN_STILL

from . import same_bits


def _f(masks: np.ndarray, truth: np.ndarray) -> float:
    tp = np.count_nonzero(masks & truth)
    return 2 * tp / max(1, np.count_nonzero(masks) + np.count_nonzero(truth))


def _lingering(n: int = 60, stay: int = 40, seed: int = 0):
    """BGR frames: a textured scene, and a textured "person" who stands swaying by a pixel
    for the first ``stay`` frames, then is gone; noise of 2 grey levels."""
    rng = np.random.default_rng(seed)
    scene = rng.integers(40, 200, (60, 80, 3)).astype(np.float32)
    person = rng.integers(0, 255, (24, 14, 3)).astype(np.float32)
    frames = np.repeat(scene[None], n, axis=0)
    truth = np.zeros((n, 60, 80), dtype=bool)
    for j in range(stay):
        dy, dx = (j % 3) - 1, ((j // 3) % 3) - 1  # sway
        frames[j, 20 + dy : 44 + dy, 40 + dx : 54 + dx] = person
        truth[j, 20 + dy : 44 + dy, 40 + dx : 54 + dx] = True
    frames += rng.normal(0, 2, frames.shape)
    return np.rint(frames).clip(0, 255).astype(np.uint8), truth


def test_a_person_who_stays_two_thirds_of_the_clip_is_foreground() -> None:
    frames, truth = _lingering()
    found = _f(bpvideo.separate(frames).masks, truth)
    assert found > 0.9
    # plain robust PCA takes much of the person for background (the blind spot answered);
    # compared on the one-image masks, where the reference alone answers it (the
    # appearances' refusal of what no other sample shows recovers part of it too)
    alone = _f(bpvideo.separate(frames, appearances=0).masks, truth)
    plain = _f(bpvideo.separate(frames, background_from="none", appearances=0).masks, truth)
    assert alone > 0.9 and alone > plain + 0.15


def test_a_given_empty_scene_finds_even_a_person_who_never_moves() -> None:
    frames, truth = _lingering()
    frames[:40], truth[:40] = frames[0], truth[0]  # perfectly still: nothing tells it
    assert _f(bpvideo.separate(frames).masks, truth) < 0.5
    given = bpvideo.separate(frames, background_from="45:60").masks
    assert _f(given, truth) > 0.9


@pytest.mark.parametrize("fraction", [0.004, 0.3, 0.7])
def test_masks_hold_whatever_share_of_the_frame_is_foreground(fraction: float) -> None:
    # (an object that sweeps a pixel so fast that the scene is never still there is a
    # limit of the reference background: docs/method.md)
    rng = np.random.default_rng(3)
    scene = rng.integers(40, 120, (60, 80)).astype(np.float32)
    frames = scene + rng.normal(0, 2, (120, 60, 80))
    rows = max(1, round(fraction * 60))
    cols = min(80, round(fraction * 4800 / rows))
    thing = rng.integers(180, 256, (rows, cols))  # a textured object, brighter than the scene
    truth = np.zeros(frames.shape, dtype=bool)
    for j in range(120):  # it moves down a row every 2 frames (wrapping): every pixel sees
        where = (j // 2 + np.arange(rows)) % 60  # it in `fraction` of the frames
        frames[j, where, :cols] = thing
        truth[j, where, :cols] = True
    frames = np.rint(frames).clip(0, 255).astype(np.uint8)
    result = bpvideo.separate(frames, min_area=0, open_radius=0, close_radius=0)
    assert _f(result.masks, truth) > 0.9
    assert result.report.masks["threshold"] == pytest.approx(12.0, rel=0.25)  # 6 x noise 2


def test_still_entries_are_the_least_moving_frames_of_each_pixel() -> None:
    score = np.array([[5.0, 1, 3, 2, 4, 0], [0, 0, 0, 0, 0, 0]])
    still = still_entries(score, fraction=0.5)
    np.testing.assert_array_equal(still[0], [False, True, False, True, False, True])
    assert still[1].all()  # ties are all still
    assert still_entries(score, fraction=0.01)[0].sum() == MIN_STILL


def test_motion_score_is_zero_on_a_still_scene_and_spreads_around_a_change() -> None:
    data = np.full((12 * 16, 30), 100.0, dtype=np.float32)
    assert not motion_score(data, (12, 16), box=3, reach=2).any()
    data[5 * 16 + 8, 15] = 200.0  # one pixel changes in one frame
    score = motion_score(data, (12, 16), box=3, reach=2).reshape(12, 16, 30)
    assert score[5, 8, 13:18].min() > 0 and score[5, 8, 19] == 0  # reach: 2 frames on
    assert score[4, 7, 15] > 0 and score[0, 0, 15] == 0  # box: the neighbours only


def test_consistent_entries_follow_a_global_light_change() -> None:
    rng = np.random.default_rng(4)
    reference = rng.uniform(20, 200, 500).astype(np.float32)
    gains = np.linspace(0.8, 1.2, 10)
    data = reference[:, None] * gains + 5 + rng.normal(0, 1, (500, 10))
    data[:50, 3] += 80  # an object in frame 3
    observed, _ = consistent_entries(data, reference, still=np.zeros((500, 10), bool),
                                         noise=1.0)  # fmt: skip
    assert not observed[:50, 3].any()
    assert observed[50:].mean() > 0.98  # the light changed, the background agrees


def test_changed_objects_tells_an_object_from_the_light() -> None:
    rng = np.random.default_rng(5)
    previous = rng.uniform(30, 200, (40, 50)).astype(np.float32)
    own = previous * 1.3  # a lamp switched on: the same texture, brighter
    own[10:20, 10:20] = rng.uniform(30, 200, (10, 10))  # someone sat down: new texture
    changed = changed_objects(own.ravel(), previous.ravel(), (40, 50), noise=1.0)
    changed = changed.reshape(40, 50)
    assert changed[12:18, 12:18].all()
    assert changed[25:, 25:].mean() < 0.02


def test_a_reference_is_kept_across_windows_until_the_absorption_time() -> None:
    rng = np.random.default_rng(6)
    scene = rng.uniform(30, 200, (24, 32)).astype(np.float32)
    first = np.repeat(scene.reshape(-1, 1), 20, axis=1) + rng.normal(0, 1, (768, 20))
    _, ref = observe_background(first, (24, 32))
    moved = scene.copy()
    moved[5:15, 5:15] = rng.uniform(30, 200, (10, 10))  # a chair put there, still
    later = np.repeat(moved.reshape(-1, 1), 20, axis=1) + rng.normal(0, 1, (768, 20))
    chair = np.zeros((24, 32), dtype=bool)
    chair[6:14, 6:14] = True
    observed, ref2 = observe_background(later, (24, 32), previous=ref, absorb_frames=50)
    # still the old reference (but for the few pixels the new texture left as they were)
    assert observed.reshape(24, 32, 20)[chair].mean() < 0.2
    kept = ref2.age.reshape(24, 32)[chair] == 20
    assert kept.mean() > 0.9
    around = np.ones((24, 32), dtype=bool)
    around[4:16, 4:16] = False  # the moved block and a pixel's margin
    assert (ref2.age.reshape(24, 32)[around] == 0).all()
    ref2.age[ref2.age > 0] = 45  # nearly absorbed: the next 20 frames pass the 50
    observed, ref3 = observe_background(later, (24, 32), previous=ref2, absorb_frames=50)
    assert observed.reshape(24, 32, 20)[chair].mean() > 0.95  # the chair is background now
    assert (ref3.age.reshape(24, 32)[chair] == 0).all()


def test_given_reference_has_no_noise_until_a_window_measures_it() -> None:
    reference = Reference.given(np.zeros((4, 5)))
    assert reference.image.shape == (20,) and reference.noise is None
    assert not reference.age.any()


def test_auto_sparsity_is_the_foreground_found_within_bounds() -> None:
    observed = np.ones((100, 50), dtype=bool)
    assert auto_sparsity(observed) == 0.05
    for i in range(100):  # 30 % of every row and of every column
        observed[i, (i + np.arange(15)) % 50] = False
    assert auto_sparsity(observed) == pytest.approx(0.3)
    assert auto_sparsity(np.zeros((10, 10), dtype=bool)) == 0.5


def test_a_fixed_sparsity_reaches_the_solver_unchanged() -> None:
    frames, _ = _lingering(n=30, stay=10)
    report = bpvideo.separate(frames, sparsity=0.07).report.to_dict()
    assert report["windows"]["list"][0]["sparsity"] == 0.07
    auto = bpvideo.separate(frames).report.to_dict()["windows"]["list"][0]["sparsity"]
    assert 0.05 <= auto <= 0.5


def test_reference_image_is_one_light_when_the_light_swings() -> None:
    """Still frames differ from pixel to pixel; under a light that swings by +-8 %, their
    plain median mixes gains. The reference is taken on frames brought to one light."""
    rng = np.random.default_rng(3)
    h, w, n = 30, 40, 80
    scene = rng.uniform(40, 200, h * w).astype(np.float32)
    gain = 1 + 0.08 * np.sin(np.linspace(0, 2 * np.pi, n))
    data = scene[:, None] * gain[None] + rng.normal(0, 1.5, (h * w, n)).astype(np.float32)
    observed, ref = observe_background(data, (h, w))
    # one image: a single gain maps it to the scene (the mean light, within noise)
    fitted = np.polyfit(scene, ref.image, 1)
    assert np.abs(ref.image - np.polyval(fitted, scene)).max() < 3.0
    assert observed.mean() > 0.99  # nothing moves: every entry is background


def test_colour_rows_are_read_as_each_pixels_channels_side_by_side() -> None:
    """A colour window (B, G, R of pixel 0, then pixel 1...) gives, channel for channel,
    the entries its grey planes give."""
    frames, _ = _lingering()
    grey = frames[..., 1].reshape(len(frames), -1).T.astype(np.float32)
    colour = np.repeat(grey, 3, axis=0)  # three equal channels, interleaved
    obs_grey, ref_grey = observe_background(grey, (60, 80))
    obs_colour, ref_colour = observe_background(colour, (60, 80))
    # equal up to entries on the edge of the noise band (sums over three times the rows)
    assert np.mean(obs_colour[1::3] != obs_grey) < 1e-3
    assert np.all(obs_colour[0::3] == obs_colour[2::3])
    np.testing.assert_allclose(ref_colour.image[2::3], ref_grey.image, atol=0.05)


def test_a_crowd_that_covers_most_of_the_view_leaves_the_ground_as_reference(monkeypatch) -> None:
    """People standing in place over 70 % of the view: the median frame shows them at
    most pixels, so the light must not be measured as the median ratio to it (every
    frame's gain goes false and the reference with it); with the commonest ratio most of
    the reference is the ground."""
    from bpvideo.background import tuning
    from bpvideo.synthetic.hard import make_hard_scene

    scene = make_hard_scene("cover70", 96, 72, 100)
    n, h, w, _ = scene.frames.shape
    data = scene.frames.reshape(n, -1).T.astype(np.float32)

    def ground() -> float:
        image = observe_background(data, (h, w))[1].image.reshape(h, w, 3)
        return float((np.abs(image - scene.background).max(axis=-1) < 12).mean())

    found = ground()
    monkeypatch.setattr(tuning, "RATIO_START", "median")
    assert found > 0.55 > 0.3 > ground()


def _trailer(n: int = 40, seed: int = 0) -> np.ndarray:
    """(100*100, n) grey columns: a textured ground; a plain band (a trailer's side) over
    rows 40-60 for the first 30 frames, with a spot of texture that flickers 5 px to the
    right of pixel (50, 50); then the ground alone."""
    rng = np.random.default_rng(seed)
    ground = 100 + rng.integers(-20, 20, (100, 100)).astype(np.float32)
    frames = np.repeat(ground[None], n, axis=0)
    frames[:30, 40:61] = 200
    frames[:30:2, 48:53, 55:58] = 0
    frames += rng.normal(0, 1, frames.shape).astype(np.float32)
    return np.ascontiguousarray(frames.reshape(n, -1).T)


def test_a_wider_motion_box_sees_a_plain_object_move_by_its_texture():
    """Pixel (50, 50) shows the plain band for 30 frames, the ground for 10: only a box that
    reaches the band's texture tells the band's frames from still ones."""
    from bpvideo.background.reference import short_span

    pixel = 50 * 100 + 50
    band = 0
    for seed in range(5):
        data = _trailer(seed=seed)
        narrow = observe_background(data, (100, 100))[1].image[pixel]
        with short_span(0.12):
            wide = observe_background(data, (100, 100))[1].image[pixel]
        assert abs(wide - data[pixel, -1]) < 10  # the ground, whose frames alone are still
        band += abs(narrow - 200) < 10  # the band's frames are as still as the ground's
    assert band >= 3


def test_a_short_span_is_set_for_its_own_thread_only():
    import threading

    from bpvideo.background.reference import short_span

    data = _trailer()
    narrow = observe_background(data, (100, 100))[1].image
    seen = []
    thread = threading.Thread(target=lambda: seen.append(observe_background(data, (100, 100))))
    with short_span(0.12):
        wide = observe_background(data, (100, 100))[1].image
        thread.start()
        thread.join()
    assert not np.array_equal(wide, narrow)
    assert np.array_equal(seen[0][1].image, narrow)  # the other thread used MOTION_BOX


@pytest.mark.parametrize("scene", ["cover70", "lingering"])
def test_observe_background_in_row_blocks_side_by_side_gives_the_one_calls_bits(
    in_row_blocks, scene
) -> None:
    """Every per-row step of a window's observation (the motion's still entries, the
    unsettled rows, the light fits, the second states, the consistent entries) formed in
    row blocks side by side by two threads: the same bytes as one call over every row,
    for a first window (a crowd over 70 % of the view) and for the next one, handed the
    previous reference (a person who stays, then leaves)."""
    from bpvideo.synthetic.hard import make_hard_scene

    if scene == "cover70":
        frames = make_hard_scene("cover70", 96, 72, 100).frames
    else:
        frames = _lingering(n=80, stay=50)[0]
    n, h, w, _ = frames.shape
    data = frames.reshape(n, -1).T.astype(np.float32)

    def observe():
        first = observe_background(data[:, :60], (h, w), absorb_frames=30)
        later = observe_background(data[:, 20:], (h, w), previous=first[1], absorb_frames=30,
                                   new_from=40)  # fmt: skip
        return first, later

    one, split, threads = in_row_blocks(observe)
    assert same_bits(one, split)
    assert len(threads) == 2
    (observed, ref), (_, later) = one
    assert 0.1 < observed.mean() < 0.99 and ref.noise > 0.5 and later.noise > 0.5


@pytest.mark.parametrize("n", [2, 3, 40])
def test_motion_score_of_frames_side_by_side_is_the_one_calls(in_row_blocks, n) -> None:
    """The frames' changes formed in two blocks of frames side by side (the first frame's
    change is the second's, whichever block holds that): the one call's bits."""
    rng = np.random.default_rng(n)
    data = rng.integers(0, 255, (30 * 40, n)).astype(np.float32)
    one, split, threads = in_row_blocks(lambda: motion_score(data, (30, 40), box=3, reach=2))
    assert same_bits(one, split) and len(threads) == 2
    assert np.array_equal(one[:, 0] > 0, one[:, 1] > 0)
