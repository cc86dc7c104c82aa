"""Objects: the foreground blobs of the masks linked across frames into tracks (no I/O).

Each mask's blobs (8-connected components of its foreground, after the regions, of at
least :data:`MIN_BLOB_SHARE` of the frame) are the detections of a multi-object tracker,
supervision's ByteTrack (docs/events.md says why that one); :class:`ObjectTracker` feeds
it block by block and keeps only the tracks still open, so that a night of frames costs
no more than a minute of them. A track that lasts at least ``min_frames`` frames and
whose centre gets :data:`MIN_TRAVEL` of the frame's diagonal from where it started is an
*object*: its rows (frame, time, box) are handed out as they come (those of its first
frames once it is confirmed), its summary (:class:`TrackedObject`) once it has been lost
for longer than the tracker waits. Two bodies whose blobs join (cars touching in a queue,
or through a shadow) are one detection: ByteTrack keeps one track on it and loses the
other; that one lives on while its box, moved on as it was moving, lies in the joined
blob (:data:`MERGED`), and when a body comes out of the blob again ByteTrack's new track
is re-linked to it; a body that comes out of a blob it was in before it had a track of
its own (two cars that arrive joined) has that blob's frames (:data:`PARTED`) where the
blob went somewhere (:data:`PARTED_TRAVEL`: not leaves churning in place). Counting
lines (:class:`CountLine`) count the objects' crossings per direction, per hour.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from bpvideo.events.counting import CountLine, Counts, parse_line
from bpvideo.events.detect import Event
from bpvideo.events.table import timecode
from bpvideo.times import WallClock

__all__ = [
    "MIN_BLOB_SHARE",
    "MIN_OBJECT_SECONDS",
    "OBJECT_COLUMNS",
    "TRACK_COLUMNS",
    "CountLine",
    "Counts",
    "ObjectTracker",
    "TrackedObject",
    "blobs_of",
    "object_events",
    "parse_line",
]

#: The smallest blob that is a detection, as a share of the frame (60 pixels of 320x240;
#: chosen on the dev sequences, docs/events.md).
MIN_BLOB_SHARE = 0.0008
#: The side of the square that joins a body's parts before the blobs are found (0: none).
CLOSE = 0
#: The shortest object, in seconds (10 frames at 25 fps; docs/events.md).
MIN_OBJECT_SECONDS = 0.4
#: How far an object's centre must get from where it was first seen, as a share of the
#: frame's diagonal: a blob that flickers in place (noise, a ghost) is not something that
#: moved (docs/events.md).
MIN_TRAVEL = 0.05
#: Rows of ``tracks.csv`` a track holds until it is an object (the oldest are dropped
#: beyond: a blob that stays put for hours costs no more).
MAX_PENDING = 2000
#: Frames a lost track waits for its object to come back, at 25 fps (scaled to the rate;
#: chosen on the dev sequences, docs/events.md).
LOST_FRAMES = 8
#: A track not matched whose box (moved on as it was moving) has this share inside the box
#: of a blob another track holds lives on, hidden in the joined blob, for at most
#: :data:`LOST_FRAMES` (0: off; docs/events.md).
MERGED = 0.5
#: ... and the joined blob's box is at most this many times the track's.
MERGED_SIZE = 3.0
#: A track ByteTrack starts whose first box has this share inside the box another track
#: had on the frame before (at most :data:`PARTED_SIZE` times its own) is a body come out
#: of a joined blob: that track's frames, at most :data:`LOST_FRAMES`, count towards its
#: shortest object (0: off; docs/events.md).
PARTED = 0.5
#: ... and that box is at most this many times the new track's first box (docs/events.md).
PARTED_SIZE = 3.0
#: ... and that track's centre got at least this share of the frame's diagonal from where
#: it was first seen: a joined blob that went somewhere (two cars down a road), not one
#: that churns in place (leaves by a tree), whose pieces' frames are not a body's
#: (docs/events.md).
PARTED_TRAVEL = 0.08
#: The overlap at which ByteTrack matches a box to a track (1 - its matching threshold);
#: also where a track coming out of a joined blob is re-linked (docs/events.md).
MATCH_IOU = 0.3
#: The step between the confidences that number a frame's blobs for ByteTrack (the
#: smallest blob allows at most 1250 per frame: all confidences stay above 0.998).
SCORE_STEP = 1e-6
#: The columns of ``objects.csv``.
OBJECT_COLUMNS = ("object", "first_frame", "last_frame", "first_time", "last_time",
                  "duration", "x", "y", "w", "h", "area", "speed", "regions",
                  "first_time_of_day", "last_time_of_day")  # fmt: skip
#: The columns of ``tracks.csv``.
TRACK_COLUMNS = ("object", "frame", "time", "x", "y", "w", "h")


def blobs_of(mask: np.ndarray, min_area: int, close: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(boxes, areas)`` of the 8-connected blobs of an (H, W) bool mask with at least
    ``min_area`` pixels: (b, 4) float ``x0, y0, x1, y1`` (x1, y1 exclusive) and (b,) int.
    ``close``: the side of a square that closes gaps first (parts of one body joined)."""
    mask = np.ascontiguousarray(mask).view(np.uint8)
    if not cv2.countNonZero(mask):
        return np.zeros((0, 4)), np.zeros(0, dtype=np.int64)
    if close > 1:
        mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((close, close), np.uint8))
    _, _, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    stats = stats[1:][stats[1:, 4] >= min_area]
    boxes = stats[:, :4].astype(np.float64)
    boxes[:, 2:] += boxes[:, :2]
    return boxes, stats[:, 4].astype(np.int64)


@dataclass
class TrackedObject:
    """One object (a row of ``objects.csv``); ``first``/``last`` are rows of the frame table."""

    object: int = 0
    first: int = 0
    last: int = 0
    first_frame: int = 0
    last_frame: int = 0
    first_seconds: float = 0.0
    last_end: float = 0.0
    box: tuple[int, int, int, int] = (0, 0, 0, 0)  # x, y, w, h at its largest
    union: list[float] = field(default_factory=list)  # x0, y0, x1, y1 of all its boxes
    area: int = 0
    share: float = 0.0  # its largest area over the frame or region
    path: float = 0.0  # pixels its centre moved
    regions: set[int] = field(default_factory=set)
    seen: int = 0

    def row(self, clock: WallClock | None = None) -> dict[str, Any]:
        """The row of ``objects.csv``; its times of day on ``clock`` (the input's seconds'
        clock: None, or one that does not know, leaves them empty: ``""``)."""
        clock = clock or WallClock()
        duration = max(0.0, self.last_end - self.first_seconds)
        x, y, w, h = self.box
        return {"object": self.object, "first_frame": self.first_frame,
                "last_frame": self.last_frame, "first_time": timecode(self.first_seconds),
                "last_time": timecode(self.last_end), "duration": round(duration, 3),
                "x": x, "y": y, "w": w, "h": h, "area": self.area,
                "speed": round(self.path / duration, 2) if duration > 0 else 0.0,
                "regions": " ".join(str(r) for r in sorted(self.regions)),
                "first_time_of_day": clock.at(self.first_seconds) or "",
                "last_time_of_day": clock.at(self.last_end) or ""}  # fmt: skip


@dataclass(frozen=True)
class _At:
    """A frame: its row of the frame table, mask number, start and end (seconds)."""

    row: int
    number: int
    time: float
    end: float


def _iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """(b,) intersection over union of ``box`` with each of ``boxes`` (``x0, y0, x1, y1``)."""
    w = np.clip(np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]), 0, None)
    h = np.clip(np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]), 0, None)
    inter = w * h
    area = lambda b: (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])  # noqa: E731
    return inter / np.maximum(area(box) + area(boxes) - inter, 1e-9)


def _inside(box: np.ndarray, boxes: np.ndarray, share: float, larger: float) -> np.ndarray:
    """(b,) bool: whether at least ``share`` of ``box``'s area lies in each of ``boxes``,
    that box being at most ``larger`` times ``box``'s area (``x0, y0, x1, y1``)."""
    area = max(1e-9, float((box[2] - box[0]) * (box[3] - box[1])))
    w = np.clip(np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]), 0, None)
    h = np.clip(np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]), 0, None)
    size = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    return (w * h / area >= share) & (size <= larger * area)


@dataclass
class _Track:
    """A track of the tracker, until it is an object or lost."""

    obj: TrackedObject
    rows: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=MAX_PENDING))
    crossings: list[tuple[str, str, float]] = field(default_factory=list)  # until confirmed
    centre: tuple[float, float] | None = None
    box: np.ndarray | None = None  # its last box (x0, y0, x1, y1)
    step: np.ndarray = field(default_factory=lambda: np.zeros(4))  # its box's last move
    seen_row: int = -1  # the row it was last matched on
    present: int = 0  # frames it was seen on or hidden in a joined blob
    origin: tuple[float, float] = (0.0, 0.0)
    travel: float = 0.0  # the farthest its centre got from its origin
    confirmed: bool = False
    #: (row, box) of its last frames (:meth:`ObjectTracker._parted` looks one back).
    history: deque[tuple[int, np.ndarray]] = field(default_factory=lambda: deque(maxlen=3))

    def moved(self, row: int) -> np.ndarray:
        """Its last box moved on to ``row`` as it was moving (x0, y0, x1, y1)."""
        assert self.box is not None
        return self.box + self.step * (row - self.seen_row)


class ObjectTracker:
    """Objects of masks handed over block by block (:meth:`add`, then :meth:`finish`).

    Parameters
    ----------
    fps : float
        The input's own rate (a lost track waits :data:`LOST_FRAMES` at 25 fps).
    shape : (int, int)
        ``(H, W)`` of the masks.
    min_frames : int
        Frames a track must last to be an object.
    lines : sequence of CountLine
        Counting lines.
    regions : sequence of (H, W) bool ndarray
        The ``--roi`` regions, numbered from 1 in ``objects.csv``'s ``regions``.
    area : int, optional
        Pixels of the reported region (the frame without): an object's share.
    min_share, match_iou, close : optional
        :data:`MIN_BLOB_SHARE`, :data:`MATCH_IOU`, :data:`CLOSE` unless given (a
        benchmark's candidates).
    """

    def __init__(self, fps: float, shape: tuple[int, int], min_frames: int,
                 lines: tuple[CountLine, ...] | list[CountLine] = (),
                 regions: tuple[np.ndarray, ...] | list[np.ndarray] = (),
                 area: int | None = None, min_share: float | None = None,
                 match_iou: float | None = None, close: int | None = None) -> None:  # fmt: skip
        import supervision as sv  # imported when used: it takes about a second

        self.fps = float(fps)
        self.min_frames = max(1, int(min_frames))
        self.lost = max(1, round(LOST_FRAMES * self.fps / 25.0))
        share = MIN_BLOB_SHARE if min_share is None else min_share
        self.min_area = max(1, round(share * shape[0] * shape[1]))
        self.match_iou = MATCH_IOU if match_iou is None else match_iou
        self.close = CLOSE if close is None else close
        self.travel = MIN_TRAVEL * math.hypot(*shape)
        self.parted_travel = PARTED_TRAVEL * math.hypot(*shape)
        self.area = max(1, int(area or shape[0] * shape[1]))
        self.regions = list(regions)
        self.counts = Counts(list(lines))
        self.tracker = sv.ByteTrack(
            track_activation_threshold=0.5,
            lost_track_buffer=self.lost,  # frame_rate 30: waits exactly this many frames
            minimum_matching_threshold=1 - self.match_iou,
            frame_rate=30,
        )
        self.open: dict[int, _Track] = {}
        self.objects = 0  #: objects confirmed so far
        self.row = 0
        self.end = 0.0  # the end of the last frame, in seconds
        #: The frame before: its detections that no track took (where new tracks start).
        none = (None, np.zeros((0, 4)), np.zeros(0, np.int64))
        self._previous: tuple[_At | None, np.ndarray, np.ndarray] = none

    def add(self, numbers: Any, times: Any, masks: np.ndarray
            ) -> tuple[list[dict[str, Any]], list[TrackedObject]]:  # fmt: skip
        """The next masks (k, H, W) bool, their mask numbers and times (seconds): the rows of
        ``tracks.csv`` they make and the objects that ended."""
        rows: list[dict[str, Any]] = []
        ended: list[TrackedObject] = []
        for number, time, mask in zip(numbers, times, masks, strict=True):
            rows += self._frame(int(number), float(time), mask)
            ended += self._lost()
            self.row += 1
        return rows, ended

    def finish(self) -> list[TrackedObject]:
        """The objects still open, ended with the input."""
        ended = [t.obj for t in self.open.values() if t.confirmed]
        self.open.clear()
        return sorted(ended, key=lambda o: o.object)

    def _frame(self, number: int, time: float, mask: np.ndarray) -> list[dict[str, Any]]:
        boxes, areas = blobs_of(mask, self.min_area, self.close)
        keys_of, index = self._associate(boxes)
        at = _At(self.row, number, time, time + 1.0 / self.fps)
        self.end = at.end
        rows: list[dict[str, Any]] = []
        matched = set(index.tolist())
        keys = set(keys_of.tolist())
        for key, i in zip(keys_of.tolist(), index.tolist(), strict=True):
            box = boxes[i]
            track = self.open.get(key)
            if track is None:  # a body out of a joined blob, or a new one
                track = self._relink(at, box, keys)
                if track is None:
                    track = self._new_track(box)
                    track.present += self._parted(track, box, keys)
                self.open[key] = track
            rows += self._observe(track, at, box, int(areas[i]))
        unmatched = [i for i in range(len(boxes)) if i not in matched]
        self._previous = (at, boxes[unmatched], areas[unmatched])
        if MERGED > 0 and len(index):
            rows += self._hidden(at, boxes[index], keys)
        return rows

    def _associate(self, boxes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """ByteTrack's step on a frame's blobs (b, 4): ``(keys, index)``, the ids of the
        tracks it matched this frame and the blob each took (both (m,) int).

        Each blob's confidence carries its index (``1 - i * SCORE_STEP``: all above
        ByteTrack's thresholds) and a matched track takes its blob's confidence, so the
        blob a track took is read back exactly. supervision's ``update_with_detections``
        guesses it instead, by an overlap above 0.5 between each detection and the track's
        Kalman-smoothed box, and drops the track from the frame where none is: a blob whose
        box jumps in size (a car's cast shadow joining it, then not) was matched, yet its
        track looked lost on that frame and fell short of the shortest object."""
        n = len(boxes)
        scores = 1.0 - SCORE_STEP * np.arange(n)
        tensors = np.column_stack([boxes, scores, np.zeros(n)]) if n else np.zeros((0, 6))
        tracks = self.tracker.update_with_tensors(tensors)
        keys = np.array([t.external_track_id for t in tracks], dtype=np.int64)
        index = np.rint((1.0 - np.array([float(t.score) for t in tracks])) / SCORE_STEP)
        order = np.argsort(index, kind="stable")  # by blob, as the blobs were found
        return keys[order], index[order].astype(np.int64)

    def _parted(self, new: _Track, box: np.ndarray, keys: set[int]) -> int:
        """Frames (at most the wait) that a new track's body spent in a joined blob it
        came out of: those of the track whose box, on the frame before the new one's
        first, held the new one's first box (:data:`PARTED`), where that track holds
        the rest of the blob on this frame or is no object yet (an object that lost its
        blob is this body, counted once) and its centre got :data:`PARTED_TRAVEL` from
        where it started; 0 when none did."""
        if PARTED <= 0:
            return 0
        first = new.box if new.box is not None else box
        row = new.seen_row if new.box is not None else self.row
        best = 0
        for key, track in self.open.items():
            if key not in keys and track.confirmed:
                continue  # an object that lost its blob: this is its body, not another
            if track.travel < self.parted_travel:
                continue  # a blob churning in place: its pieces are not bodies it carried
            held = next((b for r, b in track.history if r == row - 1), None)
            if held is None:
                continue
            if _inside(first, np.asarray(held)[None], PARTED, PARTED_SIZE)[0]:
                best = max(best, min(track.present, self.lost))
        return best

    def _new_track(self, box: np.ndarray) -> _Track:
        """A track ByteTrack reports for the first time: it was started on a detection of
        the frame before (reported from its second frame on: the first frame of the input
        excepted), which is taken back as its first row."""
        track = _Track(TrackedObject(first=self.row))
        at, boxes, areas = self._previous
        if at is not None and len(boxes):
            overlap = _iou(box, boxes)
            best = int(np.argmax(overlap))
            if overlap[best] >= self.match_iou:
                self._observe(track, at, boxes[best], int(areas[best]))
                keep = np.arange(len(boxes)) != best
                self._previous = (at, boxes[keep], areas[keep])
        return track

    def _observe(self, track: _Track, at: _At, box: np.ndarray, area: int) -> list[dict[str, Any]]:
        obj = track.obj
        x0, y0, x1, y1 = (round(float(v)) for v in box)
        centre = ((x0 + x1) / 2.0, (y0 + y1) / 2.0)
        if track.centre is None:
            obj.first, obj.first_frame, obj.first_seconds = at.row, at.number, at.time
            track.origin = centre
        else:
            track.travel = max(track.travel, math.dist(track.origin, centre))
            obj.path += math.dist(track.centre, centre)
            for line in self.counts.lines:
                way = line.crossing(track.centre, centre)
                if way is not None:
                    track.crossings.append((line.name, way, at.time))
        track.centre = centre
        new = np.array([x0, y0, x1, y1], dtype=float)
        if track.box is not None and at.row > track.seen_row:
            track.step = (new - track.box) / (at.row - track.seen_row)
        track.box, track.seen_row = new, at.row
        track.history.append((at.row, new))
        track.present += 1
        obj.last, obj.last_frame, obj.last_end = at.row, at.number, at.end
        obj.seen += 1
        if area > obj.area:
            obj.area, obj.box, obj.share = area, (x0, y0, x1 - x0, y1 - y0), area / self.area
        u = obj.union
        obj.union = [x0, y0, x1, y1] if not u else [min(u[0], x0), min(u[1], y0),
                                                     max(u[2], x1), max(u[3], y1)]  # fmt: skip
        cx, cy = int(centre[0]), int(centre[1])  # inside the frame: the box is
        obj.regions.update(i + 1 for i, r in enumerate(self.regions) if r[cy, cx])
        track.rows.append({"frame": at.number, "time": timecode(at.time), "x": x0, "y": y0,
                           "w": x1 - x0, "h": y1 - y0})  # fmt: skip
        return self._flush(track) if self._confirm(track) else []

    def _flush(self, track: _Track) -> list[dict[str, Any]]:
        """An object's rows of ``tracks.csv`` and crossings held until now."""
        obj = track.obj
        for name, way, when in track.crossings:
            self.counts.add(name, way, when)
        track.crossings.clear()
        rows = [{"object": obj.object, **r} for r in track.rows]
        track.rows.clear()
        return rows

    def _relink(self, at: _At, box: np.ndarray, keys: set[int]) -> _Track | None:
        """The open track, not matched on this frame, that a track ByteTrack starts is the
        same body coming out of a joined blob: where that track's box, moved on as it was
        moving, overlaps ``box`` by :data:`MATCH_IOU` (None when none does, or off)."""
        if MERGED <= 0:
            return None
        best, found = self.match_iou, None
        for key, track in list(self.open.items()):
            if key in keys or track.box is None or track.seen_row >= at.row:
                continue
            overlap = float(_iou(track.moved(at.row), box[None])[0])
            if overlap >= best:
                best, found = overlap, key
        return None if found is None else self.open.pop(found)

    def _hidden(self, at: _At, held: np.ndarray, keys: set[int]) -> list[dict[str, Any]]:
        """Tracks not matched on this frame whose box, moved on as it was moving, lies
        in a blob another track holds (two bodies joined into one blob) live on: the rows
        of ``tracks.csv`` of those that become objects so."""
        rows: list[dict[str, Any]] = []
        for key, track in self.open.items():
            if key in keys or track.box is None or at.row - track.seen_row > self.lost:
                continue
            if _inside(track.moved(at.row), held, MERGED, MERGED_SIZE).any():
                track.obj.last, track.obj.last_frame, track.obj.last_end = at.row, at.number, at.end
                track.present += 1
                rows += self._flush(track) if self._confirm(track) else []
        return rows

    def _confirm(self, track: _Track) -> bool:
        """Whether the track is an object (made one when it has lasted long enough and
        got far enough)."""
        obj = track.obj
        if not track.confirmed and track.present >= self.min_frames and track.travel >= self.travel:
            track.confirmed = True
            self.objects += 1
            obj.object = self.objects
        return track.confirmed

    def _lost(self) -> list[TrackedObject]:
        """Close the tracks not seen for longer than the tracker waits."""
        gone = [k for k, t in self.open.items() if self.row - t.obj.last > self.lost]
        ended = [self.open.pop(k).obj for k in gone]
        return [o for o in ended if o.object]


def object_events(objects: list[TrackedObject]) -> list[Event]:
    """One event per object (``--events objects``): its first to its last frame, its
    largest share, the box of all its boxes; numbered by start."""
    events = []
    ordered = sorted(objects, key=lambda o: (o.first, o.object))
    for i, o in enumerate(ordered, 1):
        x0, y0, x1, y1 = (int(v) for v in o.union)
        events.append(Event(i, o.first_frame, o.last_frame, timecode(o.first_seconds),
                            timecode(o.last_end), round(o.last_end - o.first_seconds, 3),
                            round(o.share, 6), x0, y0, x1 - x0, y1 - y0, o.first_seconds,
                            o.last_end, o.first, o.last))  # fmt: skip
    return events
