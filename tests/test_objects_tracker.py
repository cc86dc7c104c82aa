"""The object tracker on masks with known answers (bpvideo/events/objects.py)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("supervision")

from bpvideo.events.objects import ObjectTracker

H, W = 120, 160


def _pair(before: int, joined: int, after: int) -> np.ndarray:
    """(n, H, W) bool: two 12x12 squares driving right side by side, 2 px a frame; for
    ``joined`` frames in the middle the gap between them closes (one blob), then opens."""
    n = before + joined + after
    masks = np.zeros((n, H, W), dtype=bool)
    for i in range(n):
        x = 10 + 2 * i
        gap = 0 if before <= i < before + joined else 6
        masks[i, 40:52, x : x + 12] = True
        masks[i, 52 + gap : 64 + gap, x : x + 12] = True
    return masks


def _objects(masks: np.ndarray) -> int:
    tracker = ObjectTracker(25.0, (H, W), 10)
    numbers = np.arange(1, len(masks) + 1)
    tracker.add(numbers, (numbers - 1) / 25.0, masks)
    tracker.finish()
    return tracker.objects


@pytest.mark.parametrize(("before", "joined", "after"), [(7, 8, 7), (5, 10, 5), (6, 8, 12)])
def test_two_bodies_that_touch_for_a_while_are_two_objects(before, joined, after):
    # (7, 8, 7), (5, 10, 5): neither square is seen 10 frames apart from the other, but
    # the one that disappears into the joined blob lives on in it (one object on the code
    # before: 1); (6, 8, 12): the one that comes out again is the same object, not a third.
    assert _objects(_pair(before, joined, after)) == 2


def test_one_body_is_one_object():
    masks = _pair(30, 0, 0)
    masks[:, 52:, :] = False  # the lower square away
    assert _objects(masks) == 1


def test_a_body_seen_fewer_than_ten_frames_is_not_an_object():
    masks = _pair(9, 0, 0)
    masks[:, 52:, :] = False
    assert _objects(masks) == 0


def _shadowed(n: int) -> np.ndarray:
    """(n, H, W) bool: a 16x16 car driving right, 3 px a frame, whose cast shadow (24 px
    below it) joins its blob from the fifth frame on: the box jumps from 16 to 40 px tall."""
    masks = np.zeros((n, H, W), dtype=bool)
    for i in range(n):
        x = 10 + 3 * i
        masks[i, 40:56, x : x + 16] = True
        masks[i, 56 : 56 + 24 * (i >= 4), x : x + 16] = True
    return masks


@pytest.mark.parametrize("n", [12, 20])
def test_a_body_whose_box_jumps_in_size_is_seen_on_every_frame(n):
    # ByteTrack matches the grown blob, but its Kalman-smoothed box lags behind it: read
    # back by overlap with that box (supervision's update_with_detections), the track
    # looked lost for 8 frames (12 frames: no object; 20: 12 rows of 20 on the code before).
    tracker = ObjectTracker(25.0, (H, W), 10)
    numbers = np.arange(1, n + 1)
    rows, _ = tracker.add(numbers, (numbers - 1) / 25.0, _shadowed(n))
    (obj,) = tracker.finish()
    assert tracker.objects == 1
    assert [r["frame"] for r in rows] == list(range(1, n + 1))
    assert (obj.first_frame, obj.last_frame) == (1, n)


def _bridged(joined: int, apart: int) -> np.ndarray:
    """(n, H, W) bool: two 12x12 squares driving right, 3 px a frame, one above the other
    4 px apart; for the first ``joined`` frames a strip (a cast shadow) bridges the gap:
    they arrive as one blob, then part."""
    masks = np.zeros((joined + apart, H, W), dtype=bool)
    for i in range(joined + apart):
        x = 10 + 3 * i
        masks[i, 40:52, x : x + 12] = True
        masks[i, 56:68, x : x + 12] = True
        masks[i, 52:56, x : x + 12] = i < joined
    return masks


@pytest.mark.parametrize(("joined", "apart"), [(8, 7), (6, 6), (4, 9)])
def test_two_bodies_that_arrive_joined_and_part_are_two_objects(joined, apart):
    # Neither body had a track of its own before the bridge went: the one ByteTrack starts
    # when they part is seen fewer than 10 frames alone, but it was in the joined blob
    # before (one object on the code before).
    assert _objects(_bridged(joined, apart)) == 2


def test_a_body_that_stays_joined_is_one_object():
    assert _objects(_bridged(15, 0)) == 1


def test_a_piece_that_parts_for_two_frames_is_not_an_object():
    # The frames in the joined blob count, the travel rule still holds: a piece seen
    # apart for 2 frames has not got far from where it parted.
    assert _objects(_bridged(8, 2)) == 1


def test_two_bodies_that_arrive_joined_in_a_long_blob_are_two_objects():
    # Two squares 10 px apart, bridged for 6 frames: the joined blob's box is 2.8 times
    # one square's (34 by 12 px). Cars in adjacent lanes joined by their shadows look so
    # (sbi_HighwayI); the bound was 2.5 times (one object on the code before).
    masks = np.zeros((14, H, W), dtype=bool)
    for i in range(14):
        x = 10 + 3 * i
        masks[i, 30:42, x : x + 12] = True
        masks[i, 52:64, x : x + 12] = True
        masks[i, 42:52, x : x + 12] = i < 6
    assert _objects(masks) == 2


def _shed(churn: int, apart: int) -> np.ndarray:
    """(n, H, W) bool: a 12x12 blob that stays in place, growing and shrinking by a pixel
    (leaves by a tree), with a 12x12 piece touching its right side for ``churn`` frames;
    then the piece drifts right, 2 px a frame, for ``apart`` frames and is gone."""
    masks = np.zeros((churn + apart, H, W), dtype=bool)
    for i in range(churn + apart):
        grow = i % 2
        masks[i, 50 - grow : 62 + grow, 60 - grow : 72] = True
        x = 72 + (4 + 2 * (i - churn + 1)) * (i >= churn)  # 6 px off, then 2 a frame
        masks[i, 50:62, x : x + 12] = True
    return masks


def test_a_piece_shed_by_a_blob_that_stays_in_place_is_not_an_object():
    # The piece is seen 9 frames apart and gets 18 px (9 % of the diagonal) from where it
    # parted: the frames it spent in the blob made it an object on the code before (1);
    # the blob it came out of went nowhere, so they do not count.
    assert _objects(_shed(12, 9)) == 0


def test_a_piece_shed_by_a_blob_in_place_and_seen_long_enough_is_an_object():
    # The same piece seen 12 frames apart is an object on its own frames.
    assert _objects(_shed(12, 12)) == 1
