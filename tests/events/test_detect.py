"""Events from per-frame activity: known answers on synthetic tables and masks."""

from __future__ import annotations

import numpy as np
import pytest

from bpvideo.events import EventRecorder, FrameTable, active_runs, detect_events, spans, timecode
from bpvideo.events.table import frame_rows


def _active(text: str) -> np.ndarray:
    return np.array([c == "1" for c in text])


def _table(share: list[float], fps: float = 10.0, times: list[float] | None = None) -> FrameTable:
    n = len(share)
    boxes = np.array([[i, 2, 3, 4] if s > 0 else [0, 0, 0, 0] for i, s in enumerate(share)])
    seconds = np.array(times if times else np.arange(n) / fps)
    blobs = (np.array(share) > 0).astype(int)
    return FrameTable(np.arange(1, n + 1), seconds, np.array(share, dtype=float), blobs, boxes)


def test_runs_are_the_stretches_of_active_frames():
    assert active_runs(_active("0110001")) == [(1, 2), (6, 6)]
    assert active_runs(_active("111")) == [(0, 2)]
    assert active_runs(_active("000")) == []


@pytest.mark.parametrize(
    ("gap", "expected"),
    [(0, [(1, 2), (5, 5), (9, 9)]), (2, [(1, 2), (5, 5), (9, 9)]), (3, [(1, 5), (9, 9)]),
     (4, [(1, 9)])],
)  # fmt: skip
def test_gaps_shorter_than_the_gap_are_merged(gap, expected):
    # gaps of 2 (frames 3, 4) and 3 (frames 6-8) inactive frames
    assert spans(_active("0110010001"), min_len=1, gap=gap, pad=0) == expected


def test_short_events_are_dropped_after_merging():
    a = _active("0100100000111")
    assert spans(a, min_len=2, gap=0, pad=0) == [(10, 12)]
    assert spans(a, min_len=2, gap=3, pad=0) == [(1, 4), (10, 12)]  # merged: 4 frames


def test_padding_is_clipped_at_the_ends_and_padded_events_that_touch_merge():
    a = _active("1000000001")
    assert spans(a, min_len=1, gap=0, pad=2) == [(0, 2), (7, 9)]
    assert spans(a, min_len=1, gap=0, pad=4) == [(0, 9)]  # 0-4 and 5-9 touch: one event


def test_event_fields_frames_times_peak_and_box():
    table = _table([0, 0, 0.1, 0.3, 0, 0, 0, 0.2, 0, 0], fps=10.0)
    (event,) = detect_events(table, fps=10.0, threshold=0.0, min_event=1, gap=5, pad=1)
    assert (event.start_frame, event.end_frame) == (2, 9)  # mask numbers of rows 1 and 8
    assert (event.start_time, event.end_time) == ("00:00:00.100", "00:00:00.900")
    assert event.duration == pytest.approx(0.8)
    assert event.peak_area == pytest.approx(0.3)
    # boxes x = row, y 2, w 3, h 4 on rows 2, 3, 7: the union
    assert (event.x, event.y, event.w, event.h) == (2, 2, 8, 4)


def test_lengths_given_as_times_use_the_rate():
    table = _table([0] * 5 + [0.1] * 10 + [0] * 15 + [0.1] * 3, fps=10.0)
    assert len(detect_events(table, fps=10.0, threshold=0, min_event="0.5s", gap=0, pad=0)) == 1
    assert len(detect_events(table, fps=10.0, threshold=0, min_event="0.3s", gap=0, pad=0)) == 2
    merged = detect_events(table, fps=10.0, threshold=0, min_event=1, gap="1.6s", pad=0)
    assert [(e.start_frame, e.end_frame) for e in merged] == [(6, 33)]
    padded = detect_events(table, fps=10.0, threshold=0, min_event=10, gap=0, pad="00:00:00.2")
    assert [(e.start_frame, e.end_frame) for e in padded] == [(4, 17)]


def test_threshold_is_on_the_share():
    table = _table([0.001, 0.01, 0.001, 0.02, 0.001])
    events = detect_events(table, fps=10.0, threshold=0.005, min_event=1, gap=0, pad=0)
    assert [(e.start_frame, e.end_frame) for e in events] == [(2, 2), (4, 4)]


def test_times_of_a_variable_rate_input_are_used_as_given():
    times = [0.0, 0.1, 0.5, 0.6, 2.0, 2.1]
    table = _table([0, 0.1, 0.1, 0.1, 0, 0], times=times)
    (event,) = detect_events(table, fps=10.0, threshold=0, min_event=1, gap=0, pad=0)
    assert (event.start_time, event.end_time) == ("00:00:00.100", "00:00:00.700")


def test_timecodes():
    assert timecode(0) == "00:00:00.000"
    assert timecode(59.9996) == "00:01:00.000"
    assert timecode(3 * 3600 + 25 * 60 + 7.25) == "03:25:07.250"


def test_recorder_block_by_block_equals_all_at_once():
    rng = np.random.default_rng(3)
    masks = np.zeros((90, 20, 30), dtype=bool)
    for t in range(90):
        if (t // 15) % 2:
            y, x = rng.integers(0, 15), rng.integers(0, 25)
            masks[t, y : y + 5, x : x + 5] = True
    numbers, times = np.arange(1, 91), np.arange(90) / 25
    options = {"threshold": 0.0, "min_event": 3, "gap": 2, "pad": 2}
    whole = EventRecorder(25.0, **options)
    whole.add(numbers, times, masks)
    blocks = EventRecorder(25.0, **options)
    for lo in range(0, 90, 7):
        blocks.add(numbers[lo : lo + 7], times[lo : lo + 7], masks[lo : lo + 7])
    (t1, e1), (t2, e2) = whole.finish(), blocks.finish()
    assert [e.row() for e in e1] == [e.row() for e in e2]
    assert [(e.start_frame, e.end_frame) for e in e1] == [(14, 32), (44, 62), (74, 90)]
    np.testing.assert_array_equal(t1.share, t2.share)


def test_frame_rows_count_blobs_and_share_of_the_region():
    masks = np.zeros((2, 10, 10), dtype=bool)
    masks[1, 1:3, 1:3] = True  # 4 pixels
    masks[1, 6:8, 6:9] = True  # 6 pixels
    rows = frame_rows(masks, [1, 2], [0.0, 0.04])
    assert rows.blobs.tolist() == [0, 2]
    assert rows.share.tolist() == [0.0, 0.1]
    assert rows.boxes[1].tolist() == [1, 1, 8, 7]
    region = np.zeros((10, 10), dtype=bool)
    region[:5, :5] = True  # 25 pixels, holding the first blob only
    inside = frame_rows(masks, [1, 2], [0.0, 0.04], region)
    assert inside.share[1] == pytest.approx(4 / 25)
    assert inside.blobs.tolist() == [0, 1]
    assert inside.boxes[1].tolist() == [1, 1, 2, 2]


# --- a rate or times that cannot be: InputError naming the parameter (issue 42) ----------

BAD_RATES = [0, -5, float("nan"), float("inf"), "fast"]


@pytest.mark.parametrize("fps", BAD_RATES)
def test_every_entry_point_refuses_a_rate_that_is_not_positive_and_finite(fps):
    from bpvideo.errors import InputError
    from bpvideo.events.detect import frames_of

    calls = [
        lambda: detect_events(_table([0, 0.2, 0]), fps=fps, threshold=0, min_event=1, gap=0,
                              pad=0),
        lambda: EventRecorder(fps, threshold=0, min_event=1, gap=0, pad=0),
        lambda: frames_of("2s", fps, "event_gap"),
    ]  # fmt: skip
    for call in calls:
        with pytest.raises(InputError, match=r"^fps=.* must be a finite number > 0") as error:
            call()
        assert error.value.option == ("fps", fps)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_times_that_are_not_finite_are_refused_naming_the_parameter(bad):
    from bpvideo.errors import InputError

    masks = np.zeros((3, 4, 4), bool)
    with pytest.raises(InputError, match=r"^times holds 3 value"):
        frame_rows(masks, [1, 2, 3], [bad] * 3)
    recorder = EventRecorder(10.0, threshold=0, min_event=1, gap=0, pad=0)
    with pytest.raises(InputError, match=r"^times holds 1 value"):
        recorder.add([1, 2, 3], [0.0, bad, 0.2], masks)
    with pytest.raises(InputError, match=r"^table.times holds 1 value"):
        detect_events(_table([0, 0.2, 0], times=[0.0, 0.1, bad]), fps=10, threshold=0,
                      min_event=1, gap=0, pad=0)  # fmt: skip
    with pytest.raises(InputError, match="finite time"):
        timecode(bad)


def test_times_of_another_count_than_the_masks_are_refused():
    from bpvideo.errors import InputError

    with pytest.raises(InputError, match=r"2 value.* for 3 frame"):
        frame_rows(np.zeros((3, 4, 4), bool), [1, 2, 3], [0.0, 0.1])
