"""The live sample bank (conservative refresh: foreground never enters, background does)
and the ghost test (a region whose outline is the model's edge, not the frame's)."""

from __future__ import annotations

import numpy as np

from bpvideo.masks.appearances import build_appearances
from bpvideo.masks.bank import SampleBank
from bpvideo.masks.ghosts import ghosts


def _bank(value: int, shape=(20, 30), k: int = 6, size: int = 12, every: int = 4) -> SampleBank:
    """A bank whose learning window showed ``value`` everywhere, in ``k`` grey frames."""
    frames = np.full((k, *shape), value, dtype=np.uint8)
    first = build_appearances(frames, np.zeros(frames.shape, bool), np.arange(k) * 10, 100, 8.0)
    return SampleBank.start(first, size=size, every=every)


def _matched(bank: SampleBank, frame: np.ndarray) -> np.ndarray:
    """Which pixels of a grey frame the bank explains."""
    frames = frame[None]
    return ~bank.appearances().unexplained(frames, np.ones(frames.shape, bool))[0]


def test_the_bank_starts_from_the_learning_window_repeated_to_its_size():
    bank = _bank(50, k=6, size=12)
    assert bank.samples.shape[2] == 12
    assert _matched(bank, np.full((20, 30), 52, np.uint8)).all()
    assert not _matched(bank, np.full((20, 30), 90, np.uint8)).any()


def test_background_enters_the_bank_and_foreground_never_does():
    bank = _bank(50)
    frame = np.full((20, 30), 120, dtype=np.uint8)
    mask = np.zeros((20, 30), dtype=bool)
    mask[5:15, 10:20] = True  # foreground there
    for _ in range(200):  # every 4: each pixel writes ~50 times into 12 samples
        bank.refresh(frame[None], mask[None])
    matched = _matched(bank, frame)
    grown = np.zeros_like(mask)
    grown[3:17, 8:22] = True  # the foreground grown by the margin (2 px)
    assert matched[~grown].all()  # the new background is in the bank
    assert not matched[mask].any()  # the foreground is not
    assert _matched(bank, np.full((20, 30), 50, np.uint8))[mask].all()  # old samples kept


def test_the_refresh_is_random_and_slow():
    bank = _bank(50, every=16)
    frame = np.full((1, 20, 30), 120, dtype=np.uint8)
    bank.refresh(frame, np.zeros(frame.shape, bool))
    written = (bank.samples[0].reshape(22, 32, -1)[1:-1, 1:-1] == 120).any(axis=2)
    assert 0.02 < written.mean() < 0.12  # about one pixel in 16


def test_a_change_taken_in_fills_every_sample():
    bank = _bank(50)
    where = np.zeros((20, 30), dtype=bool)
    where[2:6, 2:6] = True
    bank.take(np.full((20, 30), 200, np.uint8), where)
    matched = _matched(bank, np.full((20, 30), 200, np.uint8))
    assert matched[3:5, 3:5].all() and not matched[10:, 10:].any()


def _scene() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A plain scene with soft texture, and the same with a box (edges of its own)."""
    rng = np.random.default_rng(0)
    plain = np.clip(100 + rng.normal(0, 2, (60, 80)), 0, 255).astype(np.float32)
    boxed = plain.copy()
    boxed[20:40, 25:55] = 200
    region = np.zeros((60, 80), dtype=bool)
    region[20:40, 25:55] = True
    return plain, boxed, region


def test_the_background_revealed_is_a_ghost():
    plain, boxed, region = _scene()
    # the model holds a box the frame no longer shows
    assert ghosts(plain, boxed, region)[region].all()


def test_an_object_that_stays_is_not_a_ghost():
    plain, boxed, region = _scene()
    assert not ghosts(boxed, plain, region).any()  # the frame shows a box the model lacks
    # nor a box standing where the model had a box of another grey: both outlines are edges
    other = plain.copy()
    other[20:40, 25:55] = 20
    assert not ghosts(boxed, other, region).any()


def test_each_of_several_regions_is_judged_on_its_own():
    """A ghost and an object in one call: each region is judged by its own outline."""
    plain, boxed, region = _scene()
    frame, model = plain.copy(), boxed.copy()  # the box left: a ghost
    frame[5:15, 5:20] = 220  # a new object the model lacks
    obj = np.zeros_like(region)
    obj[5:15, 5:20] = True
    found = ghosts(frame, model, region | obj)
    assert found[region].all() and not found[obj].any()


def test_a_region_bordered_by_more_foreground_is_not_judged():
    """The background revealed borders the scene; the old part of a person who stands is
    bordered by the rest of them, and is not judged (its outline runs through them)."""
    plain, boxed, region = _scene()
    assert ghosts(plain, boxed, region, region)[region].all()  # bordered by the scene
    below = region.copy()
    below[40:44, 25:55] = True  # young foreground under the region: a quarter of its band
    assert ghosts(plain, boxed, region, below)[region].all()
    around = np.zeros_like(region)
    around[16:44, 21:59] = True  # young foreground all round it
    assert not ghosts(plain, boxed, region, around).any()
    assert ghosts(plain, boxed, region)[region].all()  # no foreground given: judged


def test_small_regions_are_not_judged():
    plain, boxed, _ = _scene()
    speck = np.zeros((60, 80), dtype=bool)
    speck[20:24, 25:29] = True  # 16 pixels
    assert not ghosts(plain, boxed, speck).any()


def test_envelopes_kept_between_rebuilds_give_the_same_masks():
    rng = np.random.default_rng(1)
    frames = rng.integers(0, 256, (6, 20, 30, 3), dtype=np.uint8)
    first = build_appearances(frames, np.zeros((6, 20, 30), bool), np.arange(6) * 10, 100, 12.0)
    kept, exact = SampleBank.start(first, every=2), SampleBank.start(first, every=2)
    kept.appearances()  # envelopes computed once, then widened as samples are written
    tested = rng.integers(0, 256, (4, 20, 30, 3), dtype=np.uint8)
    everywhere = np.ones((4, 20, 30), bool)
    for _ in range(10):
        new = rng.integers(0, 256, (3, 20, 30, 3), dtype=np.uint8)
        masks = rng.random((3, 20, 30)) < 0.2
        kept.refresh(new, masks)
        exact.refresh(new, masks)
        exact.own_low = None  # computed again from the samples
        assert np.array_equal(kept.samples, exact.samples)
        got = kept.appearances().unexplained(tested, everywhere)
        assert np.array_equal(got, exact.appearances().unexplained(tested, everywhere))
