"""The online background (bpvideo/pipeline/online.py, bpvideo.LiveSeparator): it follows a
light ramp, absorbs a lasting change after ``absorb`` seconds (and not before), and gives
the masks of ``separate`` on a clip where one model fits every frame."""

from __future__ import annotations

import numpy as np
import pytest

import bpvideo
from bpvideo.background.online import OnlineBackground
from bpvideo.background.reference import short_span
from bpvideo.background.tuning import LEARN_ENDS, LIVE_MOTION_BOX
from bpvideo.pipeline.online import iter_live_blocks
from bpvideo.settings import SeparateSettings
from tests.conftest import f_measure, street_frames

FPS = 25.0


@pytest.fixture(autouse=True)
def resolves_in_stream_time(monkeypatch):
    """Each re-solve finished before the next batch is masked. A stream's re-solves run
    beside it and are swapped in when done, so frames given faster than real time meet
    them a machine-dependent number of frames later: on a loaded machine a later model.
    These tests check what the model follows, not how fast the machine is."""
    offer = OnlineBackground.offer

    def offer_and_wait(self, *args, **kwargs):
        offer(self, *args, **kwargs)
        self._idle.wait()

    monkeypatch.setattr(OnlineBackground, "offer", offer_and_wait)


def _parked(frames: np.ndarray, at: int) -> np.ndarray:
    """``frames`` with a car parked from frame ``at`` on; the car's pixels."""
    frames[at:, 50:62, 10:30] = 180
    where = np.zeros(frames.shape[1:3], bool)
    where[50:62, 10:30] = True
    return where


@pytest.mark.parametrize("absorb", [4.0, 8.0])
def test_a_lasting_change_is_absorbed_after_absorb_seconds(absorb):
    park = 200
    frames, _ = street_frames(n=park + int(absorb * FPS) + 100, w=96, h=72)
    car = _parked(frames, park)
    live = bpvideo.LiveSeparator(fps=FPS, absorb=absorb).fit(frames[:100])
    fixed = bpvideo.BackgroundModel().fit(frames[:100])
    covered = [live.apply(frames[i])[car].mean() for i in range(100, len(frames))]
    after = np.array(covered[park - 100 :])
    assert after[0] > 0.9  # a new car is foreground
    assert (after < 0.5).any(), "the car was never taken into the background"
    absorbed = int(np.argmax(after < 0.5)) / FPS
    assert absorb <= absorbed <= absorb + 2.5  # taken in after absorb seconds, not before
    assert fixed.apply(frames[-1])[car].mean() > 0.9  # a fixed model never takes it in
    assert live.updates >= 1


def test_a_light_ramp_is_followed():
    n = 1200  # 48 s, the light up by half
    frames, truth = street_frames(n=n, w=96, h=72)
    gain = np.linspace(1.0, 1.5, n)[:, None, None, None]
    frames = np.clip(frames * gain, 0, 255).astype(np.uint8)
    live = bpvideo.LiveSeparator(fps=FPS).fit(frames[:100])
    fixed = bpvideo.BackgroundModel().fit(frames[:100])
    masks = live.apply(frames[100:])
    last = slice(-100, None)
    false_live = (masks[last] & ~truth[100:][last]).mean()
    false_fixed = (fixed.apply(frames[last]) & ~truth[last]).mean()
    assert false_live < 0.005
    assert false_fixed > 4 * false_live  # without updates the masks fill
    assert f_measure(masks, truth[100:]) > 0.85


def test_learning_on_the_first_frames_gives_the_masks_of_separate():
    frames, truth = street_frames(n=200, w=96, h=72)
    settings = SeparateSettings().validate()
    batches = ([(i, f)] for i, f in enumerate(frames))
    blocks = list(iter_live_blocks(batches, settings, fps=FPS, name="street", learn=(0, 100)))
    numbers = [n for b in blocks for n in b.numbers]
    assert numbers == list(range(200))
    masks = np.concatenate([b.masks for b in blocks])
    with short_span(LIVE_MOTION_BOX, LEARN_ENDS):  # a live stream's stillness box
        batch = bpvideo.separate(frames[:100]).masks
    assert np.array_equal(masks[:100], batch)  # the first seconds: the solve's own masks
    assert f_measure(masks[100:], truth[100:]) > 0.9


def test_live_separator_learns_on_the_first_seconds_by_itself():
    frames, truth = street_frames(n=150, w=96, h=72)
    live = bpvideo.LiveSeparator(fps=10.0)  # learns on its first 4 s: 40 frames
    got = [live.apply(frame) for frame in frames[:39]]
    assert all(m is None for m in got)
    masks = live.apply(frames[39])
    assert masks.shape == (40, 72, 96)  # the 40 frames learned on, masked at once
    rest = live.apply(frames[40:])
    assert f_measure(np.concatenate([masks, rest]), truth) > 0.85


def test_frames_before_the_learning_span_are_masked_too():
    frames, truth = street_frames(n=160, w=96, h=72)
    settings = SeparateSettings().validate()
    batches = ([(i, f)] for i, f in enumerate(frames))
    blocks = list(iter_live_blocks(batches, settings, fps=FPS, name="street", learn=(30, 130)))
    assert [n for b in blocks for n in b.numbers] == list(range(160))
    masks = np.concatenate([b.masks for b in blocks])
    with short_span(LIVE_MOTION_BOX, LEARN_ENDS):
        assert np.array_equal(masks[30:130], bpvideo.separate(frames[30:130]).masks)
    assert f_measure(masks, truth) > 0.9


@pytest.mark.parametrize("ghost_seconds", [1.0, 0.0])
def test_what_stood_through_the_learning_span_leaves_no_ghost(ghost_seconds, monkeypatch):
    monkeypatch.setattr("bpvideo.background.tuning.GHOST_SECONDS", ghost_seconds)
    frames, truth = street_frames(n=400, w=96, h=72)
    box = np.zeros(frames.shape[1:3], bool)
    box[8:24, 60:88] = True
    frames[:110, 8:24, 60:88] = 30  # a dark box stands through the learning frames, then goes
    live = bpvideo.LiveSeparator(fps=FPS).fit(frames[:100])
    masks = live.apply(frames[100:])
    false = (masks & ~truth[100:])[:, box].mean(axis=1)  # the box's place, per frame
    assert false[20] > 0.5  # the background revealed differs from the model at first
    if ghost_seconds:
        assert false[-100:].max() < 0.05  # judged a ghost, taken in long before absorb
    else:
        assert false[-100:].min() > 0.5  # without the ghost test: foreground until absorb
