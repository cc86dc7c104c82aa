"""Pixels with no trusted still frame: found by their motion; a reference unlike its
neighbours' replaced by the pixel's own appearance closest to theirs."""

from __future__ import annotations

import numpy as np
import pytest

from bpvideo import separate
from bpvideo.background import covered, reference, tuning
from bpvideo.background.reference import still_entries
from bpvideo.synthetic.hard import make_hard_scene


def test_rows_whose_stillest_frames_move_are_unsettled():
    score = np.ones((10, 30), dtype=np.float32)
    score[7:] = 9.0
    assert covered.unsettled(score, still_entries(score)).tolist() == [False] * 7 + [True] * 3


def test_never_still_rows_take_every_frame_unless_a_second_look_settles_them():
    rng = np.random.default_rng(0)
    score = rng.uniform(0.5, 1.5, (20, 50)).astype(np.float32)
    score[15:] += 10.0  # five pixels never drop to the others' stillness
    still = still_entries(score)
    never, used = covered.never_still(score, still)
    assert never.tolist() == [False] * 15 + [True] * 5
    assert used[15:].all() and np.array_equal(used[:15], still[:15])
    # a second look (a smaller box) that finds them as still as the rest settles them
    fine = rng.uniform(0.5, 1.5, (20, 50)).astype(np.float32)
    never, used = covered.never_still(score, still, lambda: (fine, still_entries(fine)))
    assert not never.any() and np.array_equal(used[15:], still_entries(fine)[15:])


def _water_under_a_hull(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """40 x 40 pixels of "water" (grey 120 +- 20, new in every frame), 50 frames; a 4 x 12
    plain hull (grey 40) over rows 18-21, columns 14-25 in 35 of them; the reference the
    still frames gave (the hull where it lies)."""
    rng = np.random.default_rng(seed)
    frames = 120 + rng.uniform(-20, 20, (50, 40, 40))
    frames[:35, 18:22, 14:26] = 40
    hull = np.zeros((40, 40), dtype=bool)
    hull[18:22, 14:26] = True
    own = np.where(hull, 40.0, 120.0).astype(np.float32).ravel()
    return frames.reshape(50, -1).T.astype(np.float32), own, hull.ravel()


def test_guided_reference_takes_the_water_under_a_hull():
    data, own, hull = _water_under_a_hull(2)
    everywhere = np.ones(len(own), dtype=bool)
    ref, replaced = covered.guided(data, (40, 40), own, 2.0, everywhere)
    assert not replaced[~hull].any() and replaced[hull].mean() > 0.95
    assert np.abs(ref[replaced] - 120).max() < 20
    assert np.array_equal(ref[~hull], own[~hull])


def test_guided_reference_leaves_settled_pixels_alone():
    data, own, _ = _water_under_a_hull(3)
    ref, replaced = covered.guided(data, (40, 40), own, 2.0, np.zeros(len(own), dtype=bool))
    assert not replaced.any() and np.array_equal(ref, own)


def test_guided_reference_keeps_a_pixel_that_never_shows_its_guide():
    frames = np.full((30, 20, 20), 100.0)
    frames[:, 8:12, 8:12] = 200  # always there: nothing else to choose
    data = frames.reshape(30, -1).T.astype(np.float32)
    own = data[:, 0].copy()
    ref, replaced = covered.guided(data, (20, 20), own, 2.0, np.ones(400, dtype=bool))
    assert not replaced.any() and np.array_equal(ref, own)


def _f(masks, truth):
    return 2 * np.count_nonzero(masks & truth) / (np.count_nonzero(masks) + np.count_nonzero(truth))


@pytest.mark.slow
def test_a_boat_on_rippling_water_is_not_taken_as_background(monkeypatch):
    scene = make_hard_scene("ripples")
    assert _f(separate(scene.frames).masks, scene.masks) > 0.9
    # A motion box that always holds ripples, over a long reach (0.12 of the side, 5
    # frames): the plain hull is then the stillest thing at its pixels. The guide alone
    # gives the water back.
    monkeypatch.setattr(tuning, "MOTION_BOX", 0.12)
    monkeypatch.setattr(tuning, "MOTION_REACH", 5)
    guided = separate(scene.frames)
    one_image = separate(scene.frames, appearances=0).masks
    monkeypatch.setattr(tuning, "GUIDED", False)
    unguided = separate(scene.frames).masks
    assert _f(guided.masks, scene.masks) > 0.9 > 0.5 > _f(unguided, scene.masks)
    # the guide goes with the appearances: the one-image model is never guided
    assert np.array_equal(one_image, separate(scene.frames, appearances=0).masks)
    assert _f(one_image, scene.masks) < 0.5
    # the summary's self-check says how much of the view had no trusted still frame
    assert 0.01 < guided.report["masks"]["self_check"]["covered"] < 0.5


def _trailer_passing(seed: int, n: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """60 x 80 pixels of leaves (a texture, and grey +- 12 new in every frame); a plain band
    (grey 220 +- 1) over rows 20-39 from frame 10 to frame 49: the ground shows at both
    ends of the span. Frames as columns, and the band's pixels."""
    rng = np.random.default_rng(seed)
    ground = rng.uniform(60, 140, (60, 80))
    frames = ground + rng.uniform(-12, 12, (n, 60, 80))
    frames[10:50, 20:40] = 220 + rng.normal(0, 1, (40, 20, 80))
    band = np.zeros((60, 80), dtype=bool)
    band[20:40] = True
    return np.ascontiguousarray(frames.reshape(n, -1).T, dtype=np.float32), band.ravel()


@pytest.mark.parametrize("seed", [0, 1])
def test_a_plain_object_that_came_and_went_in_a_short_span_is_not_its_background(seed):
    """The band is the stillest thing its pixels show (two thirds of the span): the still
    frames give it as the reference; with the ends looked at, the ground the band hid,
    which the first and last frames show alike."""
    data, band = _trailer_passing(seed)
    ground = data[:, :5].mean(axis=1)
    with reference.short_span(0.06):
        plain = reference.observe_background(data, (60, 80))[1].image
    with reference.short_span(0.06, ends=5):
        ends = reference.observe_background(data, (60, 80))[1].image
    assert np.mean(np.abs(plain[band] - 220) < 10) > 0.9  # taken for background
    assert np.mean(np.abs(ends[band] - ground[band]) < 15) > 0.9
    # elsewhere the ground either way (near the band the guide of :func:`guided` moves)
    assert np.mean(np.abs(ends[~band] - ground[~band]) < 15) > 0.99


def test_the_ends_leave_what_arrived_and_stayed():
    """A band that arrives and stays to the end of the span: the ends disagree, nothing is
    replaced; nor in a span shorter than four times the frames at each end."""
    data, band = _trailer_passing(0)
    arrived = data.copy()
    arrived[band, 50:] = 220
    noise = 2.0
    still = np.ones(data.shape, dtype=bool)
    own = np.median(arrived, axis=1)
    got, used, replaced = covered.both_ends(arrived, own, still, noise, 5)
    assert not replaced[band].any() and np.array_equal(got[band], own[band])
    short = data[:, 5:20]
    assert not covered.both_ends(short, short[:, 7], short > 0, noise, 5)[2].any()
    got, used, replaced = covered.both_ends(data, np.median(data, axis=1), still, noise, 5)
    assert replaced[band].mean() > 0.9 and not used[replaced][:, 10:50].any()
