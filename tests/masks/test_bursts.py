"""Appearances that come in bursts over a still scene (near-lens foliage) are foreground
samples; those that blink (far leaves, water) or never leave a still stretch are not
(:mod:`bpvideo.masks.bursts`)."""

from __future__ import annotations

import tracemalloc

import numpy as np

from bpvideo.masks import appearances as ap
from bpvideo.masks import bursts
from bpvideo.masks.bursts import burst_samples, run_lengths


def _series(pattern: str, repeat: int = 1) -> np.ndarray:
    """A row of observed entries: '.' agrees with the reference, '#' departs."""
    return np.array([c == "." for c in pattern * repeat])


def test_run_lengths_along_rows():
    x = np.array([[1, 1, 0, 1, 1, 1], [0, 0, 0, 0, 0, 0]], dtype=bool)
    assert run_lengths(x).tolist() == [[2, 2, 1, 3, 3, 3], [6] * 6]


def test_a_branch_in_bursts_over_a_still_scene_is_a_burst_blinking_leaves_are_not():
    observed = np.stack(
        [
            # a branch: 20 frames still, then 25 covered (one hole of 2 frames), and again
            _series("." * 20 + "#" * 11 + ".." + "#" * 12 + "." * 20 + "#" * 25 + "." * 30),
            # far leaves: leave the reference and come back every frame or two
            _series(".#", 60),
            _series("..##.#", 20),
            # a gust of leaves: 30 frames away, but blinking back (a third of them) within
            _series("." * 40 + "##." * 10 + "." * 50),
            # a pixel that is never still for long: departs in long runs, no still stretch
            _series("#" * 15 + "." * 5, 6),
        ]
    )
    times = np.array([5, 25, 31, 35, 40, 50, 70, 80, 100, 110])
    found = burst_samples(observed, times)
    assert found is not None
    # every sample under the branch, in its hole (frame 31) too
    assert found[0].tolist() == [False, True, True, True, True, False, True, True, False, False]
    assert not found[1:].any()


def test_short_departures_are_no_bursts_and_the_rule_can_be_turned_off(monkeypatch):
    # an object that passes in 6 frames: a departure, not a burst (it is foreground
    # already when it is far from L; the rule is for what the samples would keep)
    observed = _series("." * 30 + "#" * 6 + "." * 30)[None]
    assert burst_samples(observed, np.array([10, 33, 50])) is None
    long = _series("." * 30 + "#" * 20 + "." * 30)[None]
    assert burst_samples(long, np.array([10, 40, 60])).tolist() == [[False, True, False]]
    monkeypatch.setattr(bursts, "BURST_RUN", None)
    assert burst_samples(long, np.array([10, 40, 60])) is None


def test_burst_samples_are_refused_even_where_the_pixel_blinks():
    # 12 samples of a 12 x 12 patch that a branch covers in every other sample: the pixel
    # blinks in the samples, so its samples beyond the limit would be kept (the branch
    # shows again in other samples); as bursts they are foreground.
    frames = np.full((12, 12, 12), 100, dtype=np.uint8)
    frames[1::2, 2:10, 2:10] = 60
    beyond = frames != 100
    doubtful = np.zeros(frames.shape, dtype=bool)
    times = np.arange(12) * 15
    kept = ap.draw_appearances(frames, beyond, doubtful, times, 180, 10.0).valid
    assert kept.reshape(14, 14, 12)[6, 6, 1::2].all()
    valid = ap.draw_appearances(frames, beyond, doubtful, times, 180, 10.0, bursts=beyond).valid
    valid = valid.reshape(14, 14, 12)[1:-1, 1:-1]
    assert not valid[5, 5, 1::2].any() and valid[5, 5, ::2].all()


def test_a_burst_the_calm_samples_show_nearby_stays_a_sample(monkeypatch):
    # 12 samples of a grey 100 scene. In every other sample a dark occluder (60) covers
    # one patch, and leaves (160) fill another patch whose calm samples show them in
    # every other pixel (a sway of a pixel): both are bursts, only the occluder brings
    # what the calm scene around it never shows.
    frames = np.full((12, 12, 12), 100, dtype=np.uint8)
    checker = (np.add.outer(np.arange(4), np.arange(4)) % 2).astype(bool)
    frames[::2, 7:11, 7:11][:, checker] = 160
    frames[1::2, 1:5, 1:5] = 60
    frames[1::2, 7:11, 7:11] = 160
    bursts_ = np.zeros(frames.shape, dtype=bool)
    bursts_[1::2, 1:5, 1:5] = bursts_[1::2, 7:11, 7:11] = True
    times = np.arange(12) * 15
    args = (frames, bursts_, np.zeros_like(bursts_), bursts_, times, 180, 10.0)
    found = bursts.foreground_bursts(*args)
    assert found[1::2, 1:5, 1:5].all() and not found[:, 7:11, 7:11].any()
    monkeypatch.setattr(bursts, "BURST_EXPLAINED", False)
    assert np.array_equal(bursts.foreground_bursts(*args), bursts_)


def test_a_long_window_is_judged_a_band_of_rows_at_a_time(monkeypatch):
    """Each row's runs are its own: bands of rows give the answer of the whole
    observation at once, and hold a band's temporaries (int64 run numbers among them),
    not the whole window's (120 MB for this one at once)."""
    rng = np.random.default_rng(3)
    m, n = 20_000, 300
    # runs of about 12 frames: some rows calm between bursts, some blinking
    observed = np.cumsum(rng.random((m, n)) < 1 / 12, axis=1) % 2 == 0
    observed[: m // 2, ::7] = True  # and blinking rows, with holes in the departures
    times = np.arange(5, n, 25)
    tracemalloc.start()
    try:
        banded = burst_samples(observed, times)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40 * 2**20, peak / 2**20
    monkeypatch.setattr(bursts, "BAND_ENTRIES", m * n)  # one band: the whole window
    whole = burst_samples(observed, times)
    assert banded is not None and 0 < banded.mean() < 0.5
    assert np.array_equal(banded, whole)
