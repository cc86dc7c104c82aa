"""Events of a live stream (bpvideo/sinks/event_lines.py): the events of the finished
run's rules (bpvideo.events), written as soon as they end, the same whatever the blocks the
masks come in."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from bpvideo.events import EVENT_COLUMNS, EventRecorder
from bpvideo.events.online import OnlineEvents
from bpvideo.records import Block
from bpvideo.sinks.event_lines import LiveEventSink

FPS = 10.0
RULES = {"threshold": 0.0, "min_event": 3, "gap": 2, "pad": 1}


def _masks(active: list[int], n: int = 60) -> np.ndarray:
    masks = np.zeros((n, 10, 10), bool)
    for i in active:
        masks[i, 2:4, 3:6] = True
    return masks


def _sink(out: io.StringIO, monkeypatch: pytest.MonkeyPatch) -> LiveEventSink:
    monkeypatch.setattr("sys.stdout", out)
    sink = LiveEventSink("-", OnlineEvents(FPS, **RULES), lambda n: n + 1,
                         lambda frames, numbers: (np.asarray(numbers) - 1.0) / FPS)  # fmt: skip
    sink.open()
    return sink


def _block(masks: np.ndarray, first: int) -> Block:
    frames = np.zeros((*masks.shape, 3), np.uint8)
    return Block(list(range(first, first + len(masks))), frames, frames[..., 0], masks)


def _lines(out: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


@pytest.mark.parametrize("seed", range(4))
def test_the_events_are_those_of_a_finished_run_whatever_the_blocks(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    masks = rng.random((200, 6, 6)) > 0.93  # bursts of foreground at random
    masks[rng.random(200) > 0.4] = False
    recorder = EventRecorder(FPS, **RULES)
    recorder.add(np.arange(1, 201), np.arange(200) / FPS, masks)
    _, expected = recorder.finish()
    out = io.StringIO()
    sink, at = _sink(out, monkeypatch), 0
    while at < 200:
        k = int(rng.integers(1, 9))
        sink.write(_block(masks[at : at + k], at))
        at += k
    sink.close()
    assert _lines(out) == [e.row() for e in expected]


def test_an_event_is_written_when_it_ends_not_at_the_end_of_the_stream(monkeypatch):
    out = io.StringIO()
    sink = _sink(out, monkeypatch)
    masks = _masks(list(range(5, 12)), 40)
    sink.write(_block(masks[:12], 0))
    assert _lines(out) == []  # still going
    sink.write(_block(masks[12:16], 12))  # gap + pad inactive frames after its last
    assert [(e["start_frame"], e["end_frame"]) for e in _lines(out)] == [(5, 13)]
    sink.write(_block(masks[16:], 16))
    sink.close()
    lines = _lines(out)
    assert len(lines) == 1 and list(lines[0]) == list(EVENT_COLUMNS)
    assert lines[0]["start_time"] == "00:00:00.400" and lines[0]["peak_area"] == 0.06
