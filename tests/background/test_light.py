"""The global light of each frame (bpvideo.background.light)."""

from __future__ import annotations

import numpy as np
import pytest

from bpvideo.background import tuning
from bpvideo.background.light import fit_light, mode_ratio, still_light

from . import same_bits


def _crowded(cover: float, seed: int = 0):
    """A light that swings by +-10 % over 40 frames, seen through a base (a median frame)
    that shows dark people at ``cover`` of the pixels, where every frame's still entries
    show the light ground: (data, base, still, true gains)."""
    rng = np.random.default_rng(seed)
    m, n = 4000, 40
    ground = rng.uniform(120, 220, m).astype(np.float32)
    gain = (1 + 0.1 * np.sin(np.linspace(0, 2 * np.pi, n))).astype(np.float32)
    data = ground[:, None] * gain + rng.normal(0, 2, (m, n)).astype(np.float32)
    base = ground.copy()
    people = rng.random(m) < cover
    base[people] = rng.uniform(20, 60, people.sum())  # the crowd, drawn dark on light ground
    return data, base, np.ones((m, n), dtype=bool), gain


def test_the_light_is_found_where_most_still_entries_disagree_with_the_base() -> None:
    """A base that shows the crowd at 70 % of the pixels: the entries that show what the
    base shows share one ratio (the light); the commonest ratio finds it, the median
    ratio of all entries does not."""
    data, base, still, gain = _crowded(0.7)
    found = still_light(data, base, still)
    np.testing.assert_allclose(found, gain, atol=0.01)


def test_the_median_ratio_is_the_crowds_not_the_lights(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same scene with the median start (RATIO_START = "median"): the disagreeing
    entries lean one way and pull every frame's gain off (why the mode is the start)."""
    data, base, still, gain = _crowded(0.7)
    monkeypatch.setattr(tuning, "RATIO_START", "median")
    found = still_light(data, base, still)
    assert np.abs(found / gain - 1).min() > 0.2


def test_mode_ratio_is_the_commonest_ratio_of_each_column() -> None:
    """40 % of a column's entries at one ratio, the rest spread from 0.5 to 3: the mode is
    that ratio (per column), and a column with no usable entry gives NaN."""
    rng = np.random.default_rng(1)
    m, n = 1000, 5
    truth = np.array([0.8, 1.0, 1.2, 1.5, 1.0], dtype=np.float32)
    ratio = rng.uniform(0.5, 3.0, (m, n)).astype(np.float32)
    shared = rng.random((m, n)) < 0.4
    ratio[shared] = (truth[None, :] * (1 + rng.normal(0, 0.005, (m, n))))[shared]
    usable = np.ones((m, n), dtype=bool)
    usable[:, 4] = False
    found = mode_ratio(ratio, usable)
    np.testing.assert_allclose(found[:4], truth[:4], rtol=0.01)
    assert np.isnan(found[4])


@pytest.mark.parametrize("start", ["mode", "median"])
def test_the_fits_in_row_blocks_side_by_side_give_the_one_calls_bits(
    in_row_blocks, monkeypatch, start
):
    """The light fits form their per-entry work in row blocks side by side (two threads)
    and sum over the rows whole: the same bytes as one call over every row."""
    monkeypatch.setattr(tuning, "RATIO_START", start)
    data, base, _, gain = _crowded(0.3)
    still = np.random.default_rng(1).random(data.shape) < 0.4

    def fits():
        found = still_light(data, base, still)
        return found, fit_light(data, base, still=still), fit_light(data, base, passes=1)

    one, split, threads = in_row_blocks(fits)
    assert same_bits(one, split)
    assert any(name.startswith("bpvideo-rows") for name in threads) and len(threads) == 2
    np.testing.assert_allclose(one[0], gain, atol=0.01)  # (a real fit, not a trivial one)
