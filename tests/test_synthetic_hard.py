"""The hard synthetic classes: coverage as asked, masks that are the drawn objects, and
moving background that is background in the truth; issue 40's adverse classes (near-lens
foliage, a sitter, snow, fog, hard shadows): their properties, and bpvideo's F on each
against the issue's target of 0.8 (strict xfail where it fails today)."""

from __future__ import annotations

import numpy as np
import pytest

from bpvideo import separate
from bpvideo.synthetic.adverse import ADVERSE_CLASSES, ADVERSE_FRAMES, make_adverse_scene
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


# --- issue 40's adverse classes (bpvideo.synthetic.adverse) ---------------------------

SMALL = dict(width=96, height=72)


@pytest.fixture(scope="module", params=ADVERSE_CLASSES)
def adverse(request):
    return make_adverse_scene(request.param, **SMALL)


def test_adverse_truth_is_the_drawn_objects_on_the_still_background(adverse):
    scene = adverse
    assert scene.frames.shape == (*scene.masks.shape, 3)
    assert len(scene.frames) == ADVERSE_FRAMES[scene.kind]
    assert np.array_equal(scene.masks, scene.labels > 0) and scene.masks.any()
    diff = np.abs(scene.frames.astype(int) - scene.backgrounds).max(axis=3)
    background = ~scene.masks
    if scene.kind.startswith("near_lens"):  # its defocused fringe is half seen-through:
        background &= ~scene.masks.any(axis=(1, 2))[:, None, None]  # frames without it
    if scene.shadows is not None:
        assert not (scene.shadows & scene.masks).any()  # a shadow is never foreground
        background &= ~scene.shadows
    # away from objects, shadows and snow: the still background plus sensor noise
    quiet = np.quantile(diff[background], 0.9 if scene.kind == "snow" else 0.9999)
    assert quiet <= 12
    assert not np.ptp(scene.backgrounds, axis=0).any()  # the background itself is still


def test_near_lens_foliage_covers_most_of_the_view_in_bursts():
    scene = make_adverse_scene("near_lens", **SMALL)
    covered = scene.masks.mean(axis=(1, 2))
    full = covered[covered > 0.3]
    assert 0.6 <= np.median(full) <= 0.85  # about 70 % of the pixels while it is in
    # bursts: several separate stretches in, and a still scene in between
    starts = np.count_nonzero(np.diff((covered > 0).astype(int)) == 1)
    assert starts >= 3 and 0.25 <= (covered == 0).mean() <= 0.6
    # it sways by many pixels: its edge moves between frames, over a tenth of the view
    edge = np.array([np.nonzero(m.any(axis=0))[0].max() for m in scene.masks[covered > 0.3]])
    assert np.median(np.abs(np.diff(edge))) >= 2 and np.ptp(edge) > 0.12 * 96
    # defocused: no sharp step inside the foliage (neighbours differ by little)
    grey = scene.frames.astype(float).mean(axis=3)
    inner = scene.masks[:, 1:-1, 1:-1] & scene.masks[:, 1:-1, 2:]
    step = np.abs(np.diff(grey, axis=2))[:, 1:-1, 1:][inner]
    assert np.median(step) < 6


def test_near_lens_print_covers_half_a_printed_surface():
    scene = make_adverse_scene("near_lens_print", **SMALL)
    covered = scene.masks.mean(axis=(1, 2))
    assert 0.4 <= np.median(covered[covered > 0.3]) <= 0.62
    grey = scene.background.astype(float).mean(axis=2)
    assert np.abs(np.diff(grey, axis=1)).mean() > 4  # print: blocks and lines


def test_sitter_enters_then_stays_still_to_the_end():
    scene = make_adverse_scene("sitter", **SMALL)
    here = scene.masks.any(axis=(1, 2))
    assert not here[0] and here[-1] and here.mean() > 0.85
    sits = scene.labels == 2
    assert sits.any(axis=(1, 2)).mean() >= 0.8  # seated for most of the clip
    centre = np.array([np.nonzero(p)[1].mean() for p in sits if p.any()])
    assert np.ptp(centre) <= 2.0  # moves by under a pixel or two


def test_snow_specks_are_many_small_and_short_lived():
    scene = make_adverse_scene("snow", **SMALL)
    bright = (scene.frames.astype(int) - scene.backgrounds).min(axis=3) > 60
    bright &= ~scene.masks
    per_frame = bright.mean(axis=(1, 2))
    assert 0.01 <= per_frame.mean() <= 0.08 and per_frame.min() > 0
    # short-lived: hardly a pixel stays a speck for 3 frames in a row
    assert (bright[:-2] & bright[1:-1] & bright[2:]).mean() < 0.05 * bright.mean()
    # the car drives in slowly from the right edge
    right = np.array([np.nonzero(m.any(axis=0))[0].min() for m in scene.masks if m.any()])
    assert right[0] > 0.8 * 96 and (np.diff(right) <= 0).all() and np.diff(right).mean() > -3


def test_fog_objects_are_faint():
    scene = make_adverse_scene("fog", **SMALL)
    diff = np.abs(scene.frames.astype(float) - scene.backgrounds).mean(axis=3)
    assert 3 <= np.median(diff[scene.masks]) <= 15  # a few grey levels from the road
    grey = scene.background.astype(float).mean(axis=2)
    assert np.ptp(np.quantile(grey, [0.02, 0.98])) < 40  # the whole view is washed out


def test_shadows_are_hard_and_on_texture():
    scene = make_adverse_scene("shadows", **SMALL)
    assert scene.shadows.mean() > 0.005
    grey = scene.frames.astype(float).mean(axis=3)
    under = scene.backgrounds.astype(float).mean(axis=3)
    ratio = grey[scene.shadows] / np.maximum(under[scene.shadows], 1)
    assert np.median(ratio) < 0.55  # a hard shadow: under half the light
    assert np.abs(np.diff(under[0], axis=1)).mean() > 5  # on a textured floor


def test_adverse_same_seed_same_scene_and_bad_class():
    a = make_adverse_scene("snow", **SMALL, seed=3)
    b = make_adverse_scene("snow", **SMALL, seed=3)
    assert np.array_equal(a.frames, b.frames) and np.array_equal(a.masks, b.masks)
    assert not np.array_equal(a.frames, make_adverse_scene("snow", **SMALL, seed=4).frames)
    with pytest.raises(ValueError, match="unknown class 'rain'"):
        make_adverse_scene("rain")
    with pytest.raises(ValueError, match="at least 32 x 24 x 10"):
        make_adverse_scene("fog", frames=5)


def _f(masks: np.ndarray, truth: np.ndarray) -> float:
    return 2 * np.count_nonzero(masks & truth) / (np.count_nonzero(masks) + np.count_nonzero(truth))


#: What bpvideo gets wrong on each class today (F at 96x72 under the issue's 0.8). Strict:
#: a change that reaches 0.8 fails its test until the marker is removed.
FAILING_TODAY = {
    "fog": "the pooled test finds 0.66 of the faint cars at 96x72 (0.81 at 160x120)",
}


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind",
    [
        pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=FAILING_TODAY[k]))
        if k in FAILING_TODAY
        else k
        for k in ADVERSE_CLASSES
    ],
)
def test_adverse_class_reaches_the_issue_target(kind):
    scene = make_adverse_scene(kind, **SMALL)
    assert _f(separate(scene.frames).masks, scene.masks) >= 0.8


@pytest.mark.slow
def test_near_lens_foliage_is_background_with_bursts_background():
    # without the bursts rule the foliage recurs in the samples and is taken for a
    # background appearance: what the default (bursts="foreground") is for
    scene = make_adverse_scene("near_lens", **SMALL)
    assert _f(separate(scene.frames, bursts="background").masks, scene.masks) < 0.7


@pytest.mark.slow
def test_pooled_test_finds_the_faint_cars_in_fog():
    # under every single-pixel threshold (F 0.00 without the pooled test); short of the
    # issue's 0.8 at this size (0.81 at 160x120, docs/quality.md), at no cost in precision
    scene = make_adverse_scene("fog", **SMALL)
    masks = separate(scene.frames).masks
    assert _f(masks, scene.masks) >= 0.6
    assert np.count_nonzero(masks & scene.masks) >= 0.97 * np.count_nonzero(masks)
