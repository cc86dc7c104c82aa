"""Two still states at one pixel: the one whose outline is no edge is the background."""

from __future__ import annotations

import numpy as np
import pytest

from bpvideo.background import reference, states, tuning
from bpvideo.synthetic.adverse import make_adverse_scene

from . import same_bits

SHAPE = (48, 64)
#: Where the "person" sits: a plain dark block on a smooth grey ramp.
BLOCK = (slice(18, 36), slice(24, 40))


def _scene(seed: int, arrive: int, leave: int, n: int = 100):
    """``n`` frames (columns) of a smooth horizontal ramp (grey 60-180, noise sd 2) with a
    plain block (grey 30) over :data:`BLOCK` in frames ``arrive`` to ``leave - 1``."""
    rng = np.random.default_rng(seed)
    ramp = np.tile(np.linspace(60, 180, SHAPE[1]), (SHAPE[0], 1))
    frames = np.repeat(ramp[None], n, axis=0) + rng.normal(0, 2, (n, *SHAPE))
    frames[arrive:leave, BLOCK[0], BLOCK[1]] = 30 + rng.normal(0, 2, (leave - arrive, 18, 16))
    block = np.zeros(SHAPE, dtype=bool)
    block[BLOCK] = True
    return frames.reshape(n, -1).T.astype(np.float32), ramp.ravel(), block.ravel()


def _second_state(data: np.ndarray, still_from: int, absorb: int | None = None):
    """:func:`states.second_state` with the reference taken from ten still frames from
    ``still_from`` on (the frames the stillest tenth gave, as on a sitter)."""
    score = reference.motion_score(data, SHAPE, box=3, reach=tuning.MOTION_REACH)
    still = np.zeros(data.shape, dtype=bool)
    still[:, still_from : still_from + 10] = True
    own = reference.reference_image(data, still)
    return own, states.second_state(data, SHAPE, own, score, still, 2.0, absorb)


def test_the_empty_scene_before_a_sitter_replaces_the_sitter():
    data, ramp, block = _scene(0, arrive=20, leave=100)
    own, (ref, still, replaced) = _second_state(data, still_from=50)
    assert np.abs(own[block] - 30).max() < 5  # the blind spot: the reference is the sitter
    assert replaced[block].mean() > 0.95 and not replaced[~block].any()
    assert np.abs(ref[block] - ramp[block]).max() < 5 and np.array_equal(ref[~block], own[~block])
    # the empty scene's frames are now the still ones of those pixels (but those within
    # the motion's reach of the arrival)
    assert still[block][:, :18].mean() > 0.95 and not still[block][:, 20:].any()


def test_an_object_that_left_is_not_taken_for_the_background():
    # the reference is the scene after someone who stood there for 70 frames left
    data, _, _ = _scene(1, arrive=0, leave=70)
    own, (ref, _, replaced) = _second_state(data, still_from=80)
    assert not replaced.any() and np.array_equal(ref, own)


def test_a_stay_longer_than_absorb_is_background_within_the_window():
    data, _, block = _scene(2, arrive=20, leave=100)
    own, (ref, _, replaced) = _second_state(data, still_from=50, absorb=60)
    assert not replaced.any() and np.array_equal(ref, own)  # seated for 80 frames
    assert _second_state(data, still_from=50, absorb=90)[1][2][block].mean() > 0.95


def test_observe_background_takes_the_scene_before_a_sitter_unless_switched_off(monkeypatch):
    data, ramp, block = _scene(3, arrive=20, leave=100)
    # the empty scene's frames flicker a little more than the sitter's (someone walking
    # up moves the air; on a real sitter, the walk in): the stillest tenth is the sitter's
    data[:, :20] += np.random.default_rng(4).normal(0, 2, (data.shape[0], 20))
    for on, shows in ((False, 30.0), (True, ramp[block])):
        monkeypatch.setattr(tuning, "STATES", on)
        image = reference.observe_background(data, SHAPE)[1].image
        assert np.abs(image[block] - shows).mean() < 5


def test_a_region_whose_reference_shows_the_object_on_one_part_takes_the_scene_on_it(
    monkeypatch,
):
    # the stillest frames showed the sitter on the block's left half and the empty scene
    # on its right half: one region, the reference stepping on part of its outline only
    # (judged so where weather moves the view: here everywhere)
    monkeypatch.setattr(tuning, "STATES_WEATHER", 0.0)
    data, ramp, block = _scene(5, arrive=20, leave=100)
    left = block.reshape(SHAPE).copy()
    left[:, BLOCK[1].start + 8 :] = False
    left = left.ravel()
    score = reference.motion_score(data, SHAPE, box=3, reach=tuning.MOTION_REACH)
    still = np.zeros(data.shape, dtype=bool)
    still[:, 50:60] = True
    still[~left, 50:60] = False
    still[~left, 5:15] = True
    own = reference.reference_image(data, still)
    assert np.abs(own[left] - 30).max() < 5
    assert np.abs(own[block & ~left] - ramp[block & ~left]).max() < 5
    ref, _, replaced = states.second_state(data, SHAPE, own, score, still, 2.0)
    assert replaced[left].mean() > 0.95 and not replaced[~left].any()
    assert np.abs(ref[block] - ramp[block]).max() < 5


@pytest.mark.parametrize("change", [{"STATES_FRAME_QUIET": None}, {"STATES_IN_TIME": False}])
def test_the_road_under_a_car_that_stopped_in_falling_snow(monkeypatch, change):
    # specks in every box of every frame: no frame before the car stopped is as still as
    # the stillest (fewest specks) of the quiet pixels, unless each frame's own quiet
    # says what still is; and the car drove in over the road, so the region where the
    # states differ holds a car that stays and the road it uncovered
    scene = make_adverse_scene("snow", width=96, height=72)
    data = scene.frames.mean(axis=3, dtype=np.float32).reshape(len(scene.frames), -1).T
    stopped = scene.masks[-12:].all(axis=0).ravel()
    road = scene.background.mean(axis=2).ravel()

    def on_road() -> float:
        image = reference.observe_background(data, (72, 96))[1].image
        return float((np.abs(image - road)[stopped] < 8).mean())

    assert on_road() > 0.9
    for name, value in change.items():
        monkeypatch.setattr(tuning, name, value)
    assert on_road() < 0.7


def test_second_states_in_row_blocks_side_by_side_give_the_one_calls_bits(in_row_blocks):
    """The deviations, the calm entries and the absorbed rows formed in row blocks side
    by side by two threads: the same bytes as one call over every row."""
    data, _, block = _scene(0, arrive=20, leave=100)
    one, split, threads = in_row_blocks(lambda: _second_state(data, still_from=50, absorb=200))
    assert same_bits(one, split) and len(threads) == 2
    assert one[1][2][block].all()  # the scene before the sitter taken
