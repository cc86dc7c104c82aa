"""Objects of masks (no I/O): squares crossing a clip give one object each, with their
boxes, frames and crossings of a counting line per direction."""

from __future__ import annotations

import numpy as np
import pytest

from bpvideo.errors import InputError
from bpvideo.events.objects import CountLine, ObjectTracker, object_events, parse_line

H, W, SIDE = 120, 160, 12
#: Squares: (first frame, frames, x, y at the start, dx, dy per frame). Two move down
#: across y = 60 (one after the other in the same column), one moves up in another.
SQUARES = ((0, 30, 20, 10, 0, 3), (40, 30, 20, 10, 0, 3), (10, 25, 110, 100, 0, -3))
LINE = CountLine("0,60 160,60", (0.0, 60.0), (160.0, 60.0))


def squares_masks() -> np.ndarray:
    """(T, H, W) bool: the squares of :data:`SQUARES`."""
    frames = max(s[0] + s[1] for s in SQUARES) + 5
    masks = np.zeros((frames, H, W), dtype=bool)
    for first, n, x, y, dx, dy in SQUARES:
        for k in range(n):
            x0, y0 = x + dx * k, y + dy * k
            masks[first + k, y0 : y0 + SIDE, x0 : x0 + SIDE] = True
    return masks


def track(masks: np.ndarray, block: int = 7, **kw):
    tracker = ObjectTracker(25.0, (H, W), 10, [LINE], **kw)
    rows, ended = [], []
    for i in range(0, len(masks), block):
        part = masks[i : i + block]
        numbers = np.arange(i + 1, i + 1 + len(part))
        new_rows, new_ended = tracker.add(numbers, (numbers - 1) / 25.0, part)
        rows += new_rows
        ended += new_ended
    ended += tracker.finish()
    return tracker, rows, ended


def test_each_square_is_one_object_with_its_frames_and_box():
    tracker, rows, ended = track(squares_masks())
    assert tracker.objects == len(SQUARES) == len(ended)
    got = sorted((o.first_frame, o.last_frame, o.box[2:], o.area) for o in ended)
    want = sorted((f + 1, f + n, (SIDE, SIDE), SIDE * SIDE) for f, n, *_ in SQUARES)
    assert got == want
    by_first = {o.first_frame: o for o in ended}
    for first, n, x, y, dx, dy in SQUARES:
        o = by_first[first + 1]
        x1, y1 = x + dx * (n - 1), y + dy * (n - 1)
        assert o.union == [min(x, x1), min(y, y1), max(x, x1) + SIDE, max(y, y1) + SIDE]
        assert o.row()["speed"] == pytest.approx(3 * 25.0 * (n - 1) / n, rel=1e-3)
    # tracks.csv: one row per object per frame, each box the square's
    assert len(rows) == sum(n for _, n, *_ in SQUARES)
    assert {(r["w"], r["h"]) for r in rows} == {(SIDE, SIDE)}


def test_crossings_are_counted_per_direction():
    tracker, _, _ = track(squares_masks())
    # a line drawn left to right: moving down is left_to_right
    assert tracker.counts.total == {LINE.name: {"left_to_right": 2, "right_to_left": 1}}
    assert tracker.counts.summary(10.0) == {LINE.name: {"left_to_right": 2, "right_to_left": 1}}
    hours = tracker.counts.summary(7200.0)[LINE.name]["per_hour"]
    assert hours == [{"hour": 0, "left_to_right": 2, "right_to_left": 1}]


def test_blocks_of_any_size_give_the_same_objects():
    masks = squares_masks()
    one = [o.row() for o in track(masks, block=len(masks))[2]]
    assert sorted(one, key=str) == sorted((o.row() for o in track(masks, block=1)[2]), key=str)


def test_short_tracks_and_specks_are_no_objects():
    masks = np.zeros((20, H, W), dtype=bool)
    masks[0:5, 50:62, 50:62] = True  # 5 frames: shorter than 10
    masks[:, 5:8, 5:8] = True  # 9 pixels: below the smallest blob
    tracker, rows, ended = track(masks)
    assert tracker.objects == 0 and rows == [] and ended == []


def test_regions_entered_and_events_of_objects():
    left = np.zeros((H, W), dtype=bool)
    left[:, :80] = True
    _, _, ended = track(squares_masks(), regions=[left, ~left])
    assert sorted(o.row()["regions"] for o in ended) == ["1", "1", "2"]
    events = object_events(ended)
    assert [e.start_frame for e in events] == sorted(f + 1 for f, *_ in SQUARES)
    assert [e.event for e in events] == [1, 2, 3]


def test_a_step_beside_the_segment_does_not_cross_it():
    short = CountLine("l", (0.0, 60.0), (50.0, 60.0))
    assert short.crossing((20.0, 50.0), (20.0, 70.0)) == "left_to_right"
    assert short.crossing((20.0, 70.0), (20.0, 50.0)) == "right_to_left"
    assert short.crossing((100.0, 50.0), (100.0, 70.0)) is None
    assert short.crossing((20.0, 60.0), (20.0, 70.0)) is None  # starting on it: counted before


@pytest.mark.parametrize("text", ["0,0", "0,0 0,0", "a,b c,d", "1,2 3,4 5,6", "1,2,3 4,5"])
def test_bad_lines_are_refused(text: str):
    with pytest.raises(InputError, match="counting line"):
        parse_line(text)


def test_a_blob_that_stays_put_is_no_object():
    masks = np.zeros((60, H, W), dtype=bool)
    masks[:, 50:62, 50:62] = True  # 60 frames, never moves
    masks[::2, 50:62, 62] = True  # flickers by a column
    tracker, rows, ended = track(masks)
    assert tracker.objects == 0 and rows == [] and ended == []
