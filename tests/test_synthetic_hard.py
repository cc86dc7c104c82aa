"""The hard synthetic classes: coverage as asked, masks that are the drawn objects, and
moving background that is background in the truth."""

from __future__ import annotations

import numpy as np
import pytest

from bpvideo.synthetic.hard import HARD_CLASSES, make_hard_scene

SIZE = dict(width=96, height=72, frames=60)


@pytest.fixture(scope="module", params=HARD_CLASSES)
def scene(request):
    return make_hard_scene(request.param, **SIZE)


@pytest.mark.parametrize("cover", [30, 50, 70])
def test_crowd_covers_the_asked_fraction_most_of_the_time(cover):
    scene = make_hard_scene(f"cover{cover}", **SIZE)
    per_frame = scene.masks.mean(axis=(1, 2))
    assert abs(per_frame.mean() - cover / 100) < 0.04
    # "most of the time": a covered pixel is covered in more than half of the frames
    covered = scene.masks.any(axis=0)
    assert np.median(scene.masks.mean(axis=0)[covered]) > 0.5
    # and no pixel is hidden for the whole clip in more than a small part of the view
    assert scene.masks.all(axis=0).mean() <= 0.05


def test_masks_are_exactly_the_drawn_objects(scene):
    assert scene.frames.shape == (*scene.masks.shape, 3)
    assert np.array_equal(scene.masks, scene.labels > 0)
    diff = np.abs(scene.frames.astype(int) - scene.backgrounds).max(axis=3)
    # background: the frame's own background plus sensor noise (sd 2; 5 sd in 3 channels)
    assert np.quantile(diff[~scene.masks], 0.9999) <= 12
    # objects: far from what they cover
    assert np.median(diff[scene.masks]) > 40
    assert scene.masks.any()


def test_moving_background_is_background_in_the_truth(scene):
    moves = np.ptp(scene.backgrounds, axis=0).max(axis=2) > 10
    if scene.kind in ("ripples", "leaves"):
        assert scene.dynamic.mean() > 0.25
        # the water or leaves really move, wherever they are said to be, and only there
        assert moves[scene.dynamic].mean() > 0.9
        assert not moves[~scene.dynamic].any()
        # away from the objects the truth is background: the moving pixels are not masked
        far = scene.dynamic & ~scene.masks.any(axis=0)
        assert far.mean() > 0.1 and not scene.masks[:, far].any()
    else:
        assert not scene.dynamic.any() and not moves.any()


def test_stayer_stays_for_80_percent_of_the_clip():
    scene = make_hard_scene("stayer", **SIZE)
    person = scene.labels == 1
    here = person.any(axis=(1, 2))
    assert here[1:-1].all() and not here[0] and not here[-1]  # walks in, and out
    centre = np.array([np.nonzero(p)[1].mean() for p in person[1:-1]])
    stays = np.abs(np.diff(centre)) < 1.5  # sways, does not walk
    assert 0.75 <= stays.mean() <= 0.9


def test_slow_large_object_is_large_slow_and_over_texture():
    scene = make_hard_scene("slow_large", **SIZE)
    area = scene.masks.mean(axis=(1, 2))
    assert area.max() > 0.2
    front = np.array([np.nonzero(m)[1].max() for m in scene.masks if m.any()])
    steps = np.diff(front)
    assert (steps >= 0).all() and 0 < steps.mean() < 1.5  # under 1.5 pixels a frame
    grey = scene.background.astype(float).mean(axis=2)
    assert np.abs(np.diff(grey, axis=1)).mean() > 8  # a textured background


def test_same_seed_same_scene_and_bad_class():
    a = make_hard_scene("cover30", **SIZE, seed=3)
    b = make_hard_scene("cover30", **SIZE, seed=3)
    assert np.array_equal(a.frames, b.frames) and np.array_equal(a.masks, b.masks)
    assert not np.array_equal(a.frames, make_hard_scene("cover30", **SIZE, seed=4).frames)
    with pytest.raises(ValueError, match="unknown class 'fog'"):
        make_hard_scene("fog")
