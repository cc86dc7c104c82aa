"""Events of a live stream (bpvideo/io/sinks/live_events.py): written as soon as they end,
the same whatever the blocks the masks come in, with the rules of the event outputs."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from bpvideo.io.sinks.live_events import LiveEvents, LiveEventSink
from bpvideo.records import Block


def _masks(active: list[int], n: int = 60) -> np.ndarray:
    masks = np.zeros((n, 10, 10), bool)
    for i in active:
        masks[i, 2:4, 3:6] = True
    return masks


def _detector() -> LiveEvents:
    return LiveEvents(fps=10.0, threshold=0.0, min_event=3, gap=2, pad=1)


@pytest.mark.parametrize("seed", range(5))
def test_events_do_not_depend_on_the_blocks(seed):
    rng = np.random.default_rng(seed)
    masks = rng.random((200, 6, 6)) > 0.93  # bursts of foreground at random
    masks[rng.random(200) > 0.4] = False
    whole = _detector()
    expected = whole.add(list(range(1, 201)), list(range(200)), masks) + whole.finish()
    streamed, at, found = _detector(), 0, []
    while at < 200:
        k = int(rng.integers(1, 9))
        found += streamed.add(list(range(at + 1, min(at + k, 200) + 1)),
                              list(range(at, min(at + k, 200))), masks[at : at + k])  # fmt: skip
        at += k
    found += streamed.finish()
    assert found == expected
    assert len(streamed.rows) == 0


def test_known_events_gap_minimum_and_padding():
    # runs 10-14 and 16-17 (gap of 1 < 2: one event), 30-31 (2 frames < 3: dropped), 40-45
    active = [*range(10, 15), 16, 17, 30, 31, *range(40, 46)]
    ev = _detector()
    events = ev.add(list(range(1, 61)), list(range(60)), _masks(active)) + ev.finish()
    spans = [(e["start_frame"], e["end_frame"]) for e in events]
    assert spans == [(10, 19), (40, 47)]  # mask numbers: index + 1, padded by one frame
    first = events[0]
    assert first["start_time"] == "00:00:00.900" and first["end_time"] == "00:00:01.900"
    assert (first["x"], first["y"], first["w"], first["h"]) == (3, 2, 3, 2)
    assert first["peak_area"] == pytest.approx(0.06)


def test_an_event_is_written_when_it_ends_not_at_the_end_of_the_stream():
    ev = _detector()
    masks = _masks(list(range(5, 12)))
    assert ev.add(list(range(1, 13)), list(range(12)), masks[:12]) == []  # still going
    done = ev.add(list(range(13, 16)), list(range(12, 15)), masks[12:15])  # gap + pad after
    assert [(e["start_frame"], e["end_frame"]) for e in done] == [(5, 13)]
    assert ev.finish() == []


def test_the_sink_writes_json_lines(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    sink = LiveEventSink("-", _detector(), lambda n: n + 1)
    sink.open()
    masks = _masks(list(range(5, 12)), 30)
    frames = np.zeros((30, 10, 10, 3), np.uint8)
    sink.write(Block(list(range(30)), frames, frames[..., 0], masks))
    sink.close()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["event"] for line in lines] == [1]
    assert list(lines[0]) == ["event", "start_frame", "end_frame", "start_time", "end_time",
                              "duration", "peak_area", "x", "y", "w", "h"]  # fmt: skip
