"""The rows of ``frames.csv`` as the masks come, the events found as they stream by
(:class:`~bpvideo.events.online.OnlineEvents`), the report's plot and thumbnails: in
memory bounded whatever the length of the video (:class:`EventStream`), for the sinks of
a run and for ``bpvideo events``.
"""

from __future__ import annotations

import bisect
import contextlib
import csv
import heapq
import io
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bpvideo.events import EVENT_COLUMNS, Event, FrameTable, frame_rows, timecode
from bpvideo.events.online import OnlineEvents
from bpvideo.failures import naming
from bpvideo.sinks.event_report import thumbnail, warm_font

if TYPE_CHECKING:  # pragma: no cover
    from bpvideo.settings import SeparateSettings
    from bpvideo.sources.files import FrameSource

__all__ = [
    "FRAME_COLUMNS",
    "EventStream",
    "Series",
    "Thumbnails",
    "batch_events_csv",
    "block_times",
    "event_options",
    "events_csv",
    "frame_times",
    "frames_csv",
]

#: Event pictures a run keeps at most (see :class:`Thumbnails`): up to about 100 kB each
#: (960 px wide, :data:`~bpvideo.sinks.event_report.PICTURE_WIDTHS`), 30 MB in all.
MAX_THUMBNAILS = 300
#: Points of the report's plot kept at most (see :class:`Series`).
MAX_POINTS = 2400
#: The columns of ``frames.csv``.
FRAME_COLUMNS = ("frame", "time", "seconds", "share", "blobs", "x", "y", "w", "h")


def frame_times(numbers: Any, fps: float) -> np.ndarray:
    """(k,) seconds of frames by mask number at the input's own rate: ``(number - 1) / fps``
    (mask numbers count from 1 for videos; folders: the number in the frame's name)."""
    return (np.asarray(numbers, dtype=np.float64) - 1.0) / fps


def block_times(
    source: FrameSource, frames: list[int], numbers: list[int], fps: float
) -> np.ndarray:
    """(k,) seconds of a block's frames: a video's own timestamps where the decoder gave
    them (a variable frame rate is kept), else the time of each mask number at the input's
    rate (:func:`~bpvideo.sinks.event_stream.frame_times`: folders count from their frames'
    numbers, as the ground truth of a sequence does)."""
    times = frame_times(numbers, fps)
    if source.numbering != "index":
        return times
    known = getattr(source, "times", {})
    return np.array([t if (v := known.get(f)) is None else v
                     for f, t in zip(frames, times.tolist(), strict=True)])  # fmt: skip


def _csv(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> bytes:
    handle = io.StringIO(newline="")
    writer = csv.DictWriter(handle, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return handle.getvalue().encode()


def events_csv(events: list[Event]) -> bytes:
    """The text of ``events.csv``."""
    return _csv([e.row() for e in events], EVENT_COLUMNS)


def frames_csv(table: FrameTable) -> bytes:
    """The text of ``frames.csv``."""
    return _csv(table.rows(), FRAME_COLUMNS)


def batch_events_csv(entries: list[dict[str, Any]]) -> bytes:
    """The batch's ``events.csv``: the events of every job (report entries with
    ``"events"``), with columns ``job``, ``input``, ``output`` first."""
    rows = [{"job": e["job"], "input": e["input"], "output": e["output"], **event}
            for e in entries for event in e.get("events") or ()]  # fmt: skip
    return _csv(rows, ("job", "input", "output", *EVENT_COLUMNS))


def event_options(settings: SeparateSettings) -> dict[str, Any]:
    """The keyword options of :class:`~bpvideo.events.EventRecorder` from the settings."""
    return {"threshold": settings.event_threshold, "min_event": settings.min_event,
            "gap": settings.event_gap, "pad": settings.event_pad}  # fmt: skip


class Thumbnails:
    """One picture per run of active frames (its frame of largest foreground), kept as
    JPEG thumbnails; :meth:`of` picks each event's.

    At most ``limit`` are kept (those of the largest foreground): a long night of many
    short runs costs at most ``limit`` x about 10 kB. The pictures are drawn and encoded
    by a thread of their own, which loads OpenCV's font (~30 ms of CPU, once in every
    thread that writes text) as the thumbnails start, while the frames are read: not on
    the thread that writes the blocks, in the masks phase where both cores are busy.
    """

    def __init__(self, threshold: float, limit: int = MAX_THUMBNAILS) -> None:
        self.threshold = threshold
        self.limit = limit
        self.kept: list[tuple[float, int, Future]] = []  # a heap: share, row, JPEG to come
        self._best: tuple[int, float, np.ndarray, np.ndarray, str] | None = None
        self.row = 0
        self._drawer: ThreadPoolExecutor | None = ThreadPoolExecutor(
            1, thread_name_prefix="bpvideo-thumbnails"
        )
        self._drawer.submit(warm_font)  # starts the thread now (the pool waits for work)

    def offer(self, rows: FrameTable, frames: np.ndarray, masks: np.ndarray) -> None:
        """The next frames (k, H, W[, 3]) uint8, their masks and table rows."""
        for i, share in enumerate(rows.share):
            if share > self.threshold:
                if self._best is None or share > self._best[1]:
                    label = timecode(rows.times[i])
                    self._best = (self.row, float(share), frames[i].copy(), masks[i].copy(), label)
            else:
                self.end_run()
            self.row += 1

    def end_run(self) -> None:
        """Encode the picture of the run that just ended."""
        if self._best is not None:
            row, share, frame, mask, label = self._best
            self._best = None
            if len(self.kept) >= self.limit:
                if share <= self.kept[0][0]:
                    return
                heapq.heappop(self.kept)
            heapq.heappush(self.kept, (share, row, self._draw(frame, mask, label)))

    def _draw(self, frame: np.ndarray, mask: np.ndarray, label: str) -> Future:
        """The JPEG of a picture, drawn by the thumbnails' thread (here once it is closed)."""
        if self._drawer is None:
            done: Future = Future()
            done.set_result(thumbnail(frame, mask, label))
            return done
        return self._drawer.submit(thumbnail, frame, mask, label)

    def of(self, events: list[Event]) -> dict[int, bytes]:
        """Event number -> JPEG of its frame of largest foreground (the thumbnails' thread
        ends here)."""
        self.end_run()
        self.close()
        out: dict[int, bytes] = {}
        by_row = sorted(self.kept, key=lambda k: k[1])
        rows = [k[1] for k in by_row]
        for e in events:
            inside = by_row[bisect.bisect_left(rows, e.first) : bisect.bisect_right(rows, e.last)]
            if inside:
                out[e.event] = max(inside)[2].result()
        return out

    def close(self) -> None:
        """Wait for the pictures being drawn and end the thumbnails' thread."""
        if self._drawer is not None:
            self._drawer.shutdown(wait=True)
            self._drawer = None


class Series:
    """The foreground share over time for the report's plot: at most ``limit`` points,
    each the largest share of a bucket of frames (buckets double as the video goes on)."""

    def __init__(self, limit: int = MAX_POINTS) -> None:
        self.limit = limit + limit % 2  # even: the buckets merged are always full
        self.bucket = 1
        self.times: list[float] = []
        self.shares: list[float] = []
        self.filled = 0  # frames in the last bucket

    def add(self, times: np.ndarray, shares: np.ndarray) -> None:
        """The next frames' times and shares."""
        for t, s in zip(times.tolist(), shares.tolist(), strict=True):
            if self.times and self.filled < self.bucket:
                self.shares[-1] = max(self.shares[-1], s)
                self.filled += 1
                continue
            if len(self.times) >= self.limit:  # pairs of full buckets become one
                self.times = self.times[::2]
                self.shares = [max(self.shares[i : i + 2]) for i in range(0, len(self.shares), 2)]
                self.bucket *= 2
            self.times.append(t)
            self.shares.append(s)
            self.filled = 1

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(times, shares)``."""
        return np.array(self.times, dtype=np.float64), np.array(self.shares, dtype=np.float64)


class EventStream:
    """``frames.csv`` written row by row, the events, the plot and the thumbnails of masks
    handed over block by block.

    Parameters
    ----------
    frames_path : Path
        Where ``frames.csv`` goes (in a staging folder, or a temporary name).
    fps : float
        The input's own rate (times of frames; lengths given as times).
    region : (H, W) bool ndarray or None
        The reported region.
    settings : SeparateSettings
        The event options.
    """

    def __init__(self, frames_path: Path, fps: float, region: np.ndarray | None,
                 settings: SeparateSettings) -> None:  # fmt: skip
        self.fps = float(fps)
        self.region = region
        self.online = OnlineEvents(self.fps, **event_options(settings))
        self.series = Series()
        self.thumbs = Thumbnails(settings.event_threshold)
        self.frames = 0
        self.events: list[Event] = []
        self.path = Path(frames_path)
        self._handle = open(self.path, "w", newline="")
        self._csv = csv.DictWriter(self._handle, fieldnames=list(FRAME_COLUMNS),
                                   lineterminator="\n")  # fmt: skip
        self._csv.writeheader()

    def add(
        self, numbers: Any, masks: np.ndarray, frames: np.ndarray, times: Any = None
    ) -> FrameTable:
        """Count the next masks (k, H, W) bool of frames (k, H, W[, 3]) uint8 with mask
        numbers ``numbers`` (times: ``frame_times`` of them unless given); their rows."""
        numbers = np.asarray(numbers)
        times = frame_times(numbers, self.fps) if times is None else np.asarray(times, float)
        rows = frame_rows(masks, numbers, times, self.region)
        with naming(self.path):
            self._csv.writerows(rows.rows())
        self.online.add(rows)
        self.series.add(rows.times, rows.share)
        self.thumbs.offer(rows, frames, masks)
        self.frames += len(rows)
        return rows

    def finish(self) -> list[Event]:
        """Close ``frames.csv``; the events."""
        with naming(self.path):
            self._handle.close()
        self.events = self.online.finish()
        return self.events

    def abort(self) -> None:
        """Close ``frames.csv`` (left to the staging folder's fate): a failure to flush it
        (the disk that failed the run) is not a second error. End the thumbnails' thread."""
        with contextlib.suppress(OSError):
            self._handle.close()
        self.thumbs.close()
