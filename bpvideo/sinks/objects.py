"""The object outputs of a run: ``objects.csv`` and ``tracks.csv`` (:class:`ObjectsSink`).

The objects are found by :class:`bpvideo.events.objects.ObjectTracker` (blobs of the masks
linked by ByteTrack); both files are written row by row as the blocks come (a track's rows
once it is an object, an object's row once it has ended: in the order objects end), so
that memory holds only the tracks still open. ``summary.json`` gets the number of objects
and the counts of the counting lines (:meth:`ObjectsSink.summary`); with ``--events
objects`` the events are the objects (:meth:`ObjectsSink.events`).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np

from bpvideo.events.counting import check_line_meets
from bpvideo.events.objects import (
    MIN_OBJECT_SECONDS,
    OBJECT_COLUMNS,
    TRACK_COLUMNS,
    CountLine,
    ObjectTracker,
    TrackedObject,
    object_events,
    parse_line,
)
from bpvideo.sinks.event_stream import block_times
from bpvideo.sources.regions import region_mask

if TYPE_CHECKING:  # pragma: no cover
    from bpvideo.events import Event
    from bpvideo.records import Block
    from bpvideo.settings import SeparateSettings
    from bpvideo.sinks.outputs import OutputDir
    from bpvideo.sources.files import FrameSource
    from bpvideo.times import WallClock

__all__ = ["ObjectsSink", "count_lines", "objects_of_masks", "track_masks"]


def count_lines(
    specs: tuple[str, ...] | list[str], scale: float = 1.0, shape: tuple[int, int] | None = None
) -> list[CountLine]:
    """The counting lines of ``--count-line`` specs, in pixels of the masks (``scale``:
    the masks' size over the input's; ``shape``: the masks' (H, W), which each line must
    meet); named as typed."""
    lines = []
    for spec in specs:
        x1, y1, x2, y2 = parse_line(spec)
        if shape is not None:
            check_line_meets(spec, (x1 * scale, y1 * scale, x2 * scale, y2 * scale), shape, scale)
        lines.append(CountLine(" ".join(str(spec).split()), (x1 * scale, y1 * scale),
                               (x2 * scale, y2 * scale)))  # fmt: skip
    return lines


class _Kept:
    """Rows kept in memory (the objects of :func:`bpvideo.separate`)."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def write(self, rows: list[dict[str, Any]]) -> None:
        self.rows += rows

    def close(self) -> None:
        """Nothing to close."""


class _Rows:
    """A CSV file written row by row."""

    def __init__(self, path: Path, columns: tuple[str, ...]) -> None:
        self.handle = open(path, "w", newline="")
        self.writer = csv.DictWriter(self.handle, fieldnames=list(columns), lineterminator="\n")
        self.writer.writeheader()

    def write(self, rows: list[dict[str, Any]]) -> None:
        self.writer.writerows(rows)

    def close(self) -> None:
        self.handle.close()


class ObjectsSink:
    """``objects.csv`` and ``tracks.csv``; the objects' events, count and line counts.

    Parameters
    ----------
    outdir : OutputDir or None
        The output directory (entered); None keeps the rows in memory instead
        (:attr:`kept`: ``objects`` and ``tracks``).
    rows : (writer, writer), optional
        Where the rows of objects.csv and tracks.csv go instead (each has ``write(rows)``
        and ``close()``): the lines of ``--events-to``.
    source : FrameSource
        The frames (size, rate, mask numbers).
    settings : SeparateSettings
        ``events``, ``count_line``, the regions, ``step``.
    """

    def __init__(
        self,
        outdir: OutputDir | None,
        source: FrameSource,
        settings: SeparateSettings,
        rows: tuple[Any, Any] | None = None,
    ) -> None:
        self.outdir = outdir
        self.source = source
        self.settings = settings
        self.fps = source.fps * settings.step
        shape = (source.height, source.width)
        region = region_mask(settings.roi, settings.exclude, shape, settings.scale)
        rois = [region_mask([r], [], shape, settings.scale) for r in settings.roi]
        self.tracker = ObjectTracker(
            self.fps,
            shape,
            max(1, round(MIN_OBJECT_SECONDS * self.fps)),
            count_lines(settings.count_line, settings.scale, shape),
            [r for r in rois if r is not None],
            None if region is None else int(region.sum()),
        )
        self.ended: list[TrackedObject] = []  # kept for --events objects only
        self.keep = settings.events == "objects"
        self.seconds = 0.0  # the input's time so far
        self.rows = rows
        self.objects: Any = None
        self.tracks: Any = None
        #: More writers of the same rows (:meth:`tee`).
        self.also: list[tuple[Any, Any]] = []

    def open(self) -> None:
        """Start both files (or lists, or the writers given)."""
        if self.rows is not None:
            self.objects, self.tracks = self.rows
            return
        if self.outdir is None:
            self.objects, self.tracks = _Kept(), _Kept()
            return
        self.objects = _Rows(self.outdir.stage("objects.csv"), OBJECT_COLUMNS)
        self.tracks = _Rows(self.outdir.stage("tracks.csv"), TRACK_COLUMNS)

    def tee(self, objects: Any, tracks: Any) -> None:
        """Also hand the rows of ``objects.csv`` and ``tracks.csv`` to ``objects`` and
        ``tracks`` (each has ``write(rows)``; closed by their owner): another output of the
        same objects (``--events-to``'s lines) without tracking them twice."""
        self.also.append((objects, tracks))

    def kept(self) -> dict[str, list[dict[str, Any]]]:
        """The rows of ``objects.csv`` and ``tracks.csv`` kept in memory (no OUTDIR)."""
        assert isinstance(self.objects, _Kept) and isinstance(self.tracks, _Kept)
        return {"objects": self.objects.rows, "tracks": self.tracks.rows}

    def write(self, block: Block) -> None:
        """Track the block's blobs; write the rows they make."""
        assert self.objects is not None and self.tracks is not None
        numbers = [self.source.mask_number(n) for n in block.numbers]
        times = block_times(self.source, block.numbers, numbers, self.fps)
        rows, ended = self.tracker.add(numbers, times, block.masks)
        for tracks in (self.tracks, *(t for _, t in self.also)):
            tracks.write(rows)
        self._ended(ended)
        if len(times):
            self.seconds = float(times[-1]) + 1.0 / self.fps

    def _ended(self, ended: list[TrackedObject]) -> None:
        assert self.objects is not None
        rows = [o.row(self.source.clock) for o in ended]
        for objects in (self.objects, *(o for o, _ in self.also)):
            objects.write(rows)
        if self.keep:
            self.ended += ended

    def close(self) -> None:
        """Write the objects still open; close both files."""
        assert self.objects is not None and self.tracks is not None
        self._ended(self.tracker.finish())
        self.objects.close()
        self.tracks.close()

    def abort(self) -> None:
        """Close both files (left to the staging folder's fate)."""
        for rows in (self.objects, self.tracks):
            if rows is not None:
                rows.close()

    def events(self) -> list[Event]:
        """One event per object (``--events objects``), after :meth:`close`."""
        return [e.timed(self.source.clock) for e in object_events(self.ended)]

    def summary(self) -> dict[str, Any]:
        """summary.json's ``objects`` and (with counting lines) ``counts``."""
        out: dict[str, Any] = {"objects": self.tracker.objects}
        if self.tracker.counts.lines:
            out["counts"] = self.tracker.counts.summary(self.seconds)
        return out


def objects_of_masks(
    folder: Path,
    settings: SeparateSettings,
    shape: tuple[int, int],
    fps: float,
    clock: WallClock,
    times: dict[int, float],
) -> ObjectsSink:
    """An opened :class:`ObjectsSink` for masks read back from a result folder (``bpvideo
    events OUTDIR``): it writes ``objects.csv`` and ``tracks.csv`` into ``folder``.

    The masks are handed over as they were made, the run's mask numbers standing for the
    frames: the objects are the run's, row for row, when the settings are.

    Parameters
    ----------
    folder : Path
        Where both files go (a staging folder).
    settings : SeparateSettings
        ``events``, ``count_line``, the regions, ``scale`` and ``step``.
    shape : (int, int)
        The masks' (H, W).
    fps : float
        The input's own rate (summary.json's ``fps``).
    clock : WallClock
        The time of day of the input's seconds.
    times : dict of int to float
        Seconds of each mask number (``frames.csv``).
    """
    source = _ReadBack(fps, shape[0], shape[1], clock, times)
    sink = ObjectsSink(_Staged(folder), source, settings)  # type: ignore[arg-type]
    sink.open()
    return sink


@dataclass
class _ReadBack:
    """What :class:`ObjectsSink` asks of its source, for masks read back: the run's mask
    numbers stand for the frames (``numbering="index"``), each with its seconds."""

    fps: float
    height: int
    width: int
    clock: WallClock
    times: dict[int, float]
    numbering: str = "index"

    def mask_number(self, number: int) -> int:
        return number


@dataclass
class _Staged:
    """What :class:`ObjectsSink` asks of an output directory: where a file is staged."""

    folder: Path

    def stage(self, name: str) -> Path:
        return self.folder / name


def track_masks(sink: ObjectsSink, numbers: list[int], masks: np.ndarray) -> None:
    """Hand (k, H, W) bool masks of mask numbers ``numbers`` to a sink of
    :func:`objects_of_masks`."""
    sink.write(SimpleNamespace(numbers=numbers, masks=masks))  # type: ignore[arg-type]
