"""Events found as frames stream by are the events of the whole table."""

from __future__ import annotations

import numpy as np
import pytest

from bpvideo.events import FrameTable, detect_events
from bpvideo.events.online import OnlineEvents


def _random_table(rng: np.random.Generator, n: int) -> FrameTable:
    # bursts of activity of random lengths, random shares and boxes, some VFR steps
    share = np.zeros(n)
    t = 0
    while t < n:
        length = int(rng.integers(1, 9))
        if rng.random() < 0.45:
            share[t : t + length] = rng.uniform(0.001, 0.2, min(length, n - t))
        t += length + int(rng.integers(0, 7))
    steps = rng.choice([0.04, 0.04, 0.04, 0.08, 0.5], n)
    times = np.concatenate([[0.0], np.cumsum(steps[:-1])])
    boxes = np.stack([rng.integers(0, 50, n), rng.integers(0, 40, n), rng.integers(1, 20, n),
                      rng.integers(1, 20, n)], axis=1) * (share > 0)[:, None]  # fmt: skip
    return FrameTable(np.arange(1, n + 1) * 3, times, share, (share > 0).astype(int), boxes)


def _offline_rows(table, **options):
    return [(e.row(), e.first, e.last, e.start_seconds, e.end_seconds)
            for e in detect_events(table, fps=25.0, **options)]  # fmt: skip


@pytest.mark.parametrize("seed", range(40))
def test_online_events_equal_the_whole_tables(seed):
    rng = np.random.default_rng(seed)
    table = _random_table(rng, int(rng.integers(1, 160)))
    options = {"threshold": float(rng.choice([0.0, 0.05])), "min_event": int(rng.integers(1, 6)),
               "gap": int(rng.integers(0, 8)), "pad": int(rng.integers(0, 8))}  # fmt: skip
    online = OnlineEvents(25.0, **options)
    lo = 0
    while lo < len(table):  # blocks of random sizes
        hi = lo + int(rng.integers(1, 40))
        online.add(table[lo:hi])
        lo = hi
    got = [(e.row(), e.first, e.last, e.start_seconds, e.end_seconds) for e in online.finish()]
    assert got == _offline_rows(table, **options)


def test_memory_holds_no_more_rows_than_gap_and_pad():
    n = 20_000
    share = np.where((np.arange(n) // 50) % 3 == 0, 0.1, 0.0)
    table = FrameTable(np.arange(1, n + 1), np.arange(n) / 25, share, (share > 0).astype(int),
                       np.ones((n, 4), int))  # fmt: skip
    online = OnlineEvents(25.0, threshold=0, min_event=5, gap=10, pad=7)
    for lo in range(0, n, 64):
        online.add(table[lo : lo + 64])
        assert len(online.ring) <= 7
        assert online.run is None or len(online.run.tail) <= 10
    assert len(online.finish()) == len(range(0, n, 150))


@pytest.mark.parametrize("fps", [0, -1, float("nan"), float("inf")])
def test_a_rate_that_is_not_positive_and_finite_is_refused(fps):
    from bpvideo.errors import InputError

    with pytest.raises(InputError, match=r"^fps=.* must be a finite number > 0"):
        OnlineEvents(fps, threshold=0, min_event=1, gap=0, pad=0)


def test_rows_whose_times_are_not_finite_are_refused():
    from bpvideo.errors import InputError

    online = OnlineEvents(10.0, threshold=0, min_event=1, gap=0, pad=0)
    share = np.array([0.0, 0.2])
    rows = FrameTable(np.arange(1, 3), np.array([np.nan, np.nan]), share, np.array([0, 1]),
                      np.ones((2, 4), int))  # fmt: skip
    with pytest.raises(InputError, match=r"^rows.times holds 2 value"):
        online.add(rows)
    assert online.finish() == []
