"""The event outputs of a run, one sink each: ``events.csv`` and ``frames.csv``
(:class:`EventsSink`), ``overlay.mp4`` (:class:`OverlaySink`), ``clips/`` (:class:`ClipsSink`)
and ``report.html`` (:class:`ReportSink`).

Each has ``open()``, ``write(block)``, ``close()`` and ``abort()``; a block is a
:class:`~bpvideo.records.Block` (numbers, frames, background, masks), and every
file goes to the output's staging folder (committed with the rest, or not at all).
The events are found by :mod:`bpvideo.events`.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bpvideo.events import Event, EventRecorder, FrameTable, timecode
from bpvideo.sinks.clips import cut_clip, keyframe_at
from bpvideo.sinks.event_report import draw_foreground
from bpvideo.sinks.event_stream import EventStream, block_times, event_options, events_csv
from bpvideo.sinks.objects import ObjectsSink
from bpvideo.sinks.outputs import OutputDir, atomic_write_bytes
from bpvideo.sinks.report import Links, read_objects, report_html, wall_clock
from bpvideo.sinks.table import tracks_objects
from bpvideo.sinks.writers import VideoStream
from bpvideo.sources.regions import region_mask

if TYPE_CHECKING:  # pragma: no cover
    from bpvideo.records import Block
    from bpvideo.settings import SeparateSettings
    from bpvideo.sources.files import FrameSource

__all__ = [
    "ClipsSink",
    "EventsSink",
    "OverlaySink",
    "ReportSink",
    "TableSink",
    "busy_scene",
    "event_sinks",
    "report_facts",
]

logger = logging.getLogger("bpvideo")

#: The hidden file in the staging folder that records a source which cannot be read twice
#: for its clips (removed before the folder is committed).
RECORDING = ".input.mp4"


class EventsSink:
    """``events.csv`` and ``frames.csv`` (:class:`~bpvideo.sinks.event_stream.EventStream`:
    memory bounded); :attr:`events` once closed.

    Parameters
    ----------
    outdir : OutputDir
        The output directory (entered).
    source : FrameSource
        The frames (size, rate, mask numbers).
    settings : SeparateSettings
        The event options, regions and ``step``.
    objects : ObjectsSink, optional
        The objects (closed before this sink): the events with ``--events objects``.
    """

    def __init__(self, outdir: OutputDir, source: FrameSource, settings: SeparateSettings,
                 objects: ObjectsSink | None = None) -> None:  # fmt: skip
        self.outdir = outdir
        self.source = source
        self.objects = objects
        self.mode = settings.events
        self.fps = source.fps * settings.step  # the input's own rate: times of mask numbers
        region = region_mask(settings.roi, settings.exclude, (source.height, source.width),
                             settings.scale)  # fmt: skip
        self.stream = EventStream(outdir.stage("frames.csv"), self.fps, region, settings)
        self.events: list[Event] = []
        self.last_rows = FrameTable.empty()

    def open(self) -> None:
        """Nothing to start."""

    def write(self, block: Block) -> None:
        """Count a block's masks."""
        numbers = [self.source.mask_number(n) for n in block.numbers]
        times = block_times(self.source, block.numbers, numbers, self.fps)
        self.last_rows = self.stream.add(numbers, block.masks, block.frames, times)

    def close(self) -> None:
        """Find the last events; stage ``events.csv`` (``frames.csv`` is written)."""
        self.events = [e.timed(self.source.clock) for e in self.stream.finish()]
        if self.mode == "objects" and self.objects is not None:
            self.events = self.objects.events()
        else:
            busy_scene(self.events, self.stream.frames)
        atomic_write_bytes(self.outdir.stage("events.csv"), events_csv(self.events))

    def abort(self) -> None:
        """Close ``frames.csv``."""
        self.stream.abort()

    def rows(self) -> list[dict[str, Any]]:
        """summary.json's ``"events"``."""
        return [e.row() for e in self.events]


class OverlaySink:
    """``overlay.mp4``: each input frame with its foreground tinted, blobs boxed, the time."""

    def __init__(self, outdir: OutputDir, events: EventsSink, settings: SeparateSettings) -> None:
        self.events = events
        self.stream = VideoStream(outdir.stage("overlay.mp4"), events.source.fps,
                                  crf=settings.crf, preset=settings.preset)  # fmt: skip

    def open(self) -> None:
        """Start the encoder."""
        self.stream.open((self.events.source.height, self.events.source.width, 3))

    def write(self, block: Block) -> None:
        """Queue the block's frames, drawn (after :meth:`EventsSink.write` of the block)."""
        times = self.events.last_rows.times
        drawn = zip(block.frames, block.masks, times, strict=True)
        self.stream.write([draw_foreground(f, m, timecode(t)) for f, m, t in drawn])

    def close(self) -> None:
        """Finish the video."""
        self.stream.end()
        self.stream.close()

    def abort(self) -> None:
        """Stop the encoder."""
        self.stream.abort()


class ClipsSink:
    """``clips/event_0001.mp4`` ...: the input's frames of each event (padding included),
    cut from a video file by ffmpeg (:func:`~bpvideo.sinks.clips.cut_clip`: a stream copy
    where the event starts on a keyframe), encoded from the frames of a folder. A source
    that cannot be read twice (a live stream, stdin) is recorded as its frames pass, into
    a hidden file of the staging folder that the clips are cut from and that is removed
    before the folder is committed."""

    def __init__(self, outdir: OutputDir, events: EventsSink, settings: SeparateSettings) -> None:
        source = events.source
        self.folder = outdir.stage("clips")
        self.events = events
        self.settings = settings
        #: Clips made by stream copy and by encoding: {"copy": n, "encode": m}.
        self.made: dict[str, int] = {}
        rereadable = source.frame_count is not None and os.path.exists(source.name)
        #: The input as it passed (None: it is read again from its file or folder).
        self.recording = None if rereadable else outdir.stage(RECORDING)
        self.stream = None
        if self.recording is not None:
            self.stream = VideoStream(self.recording, source.fps, crf=settings.crf,
                                      preset=settings.preset)  # fmt: skip
        self.origin: int | None = None  # the mask number of the recording's first frame

    def open(self) -> None:
        """Make the folder (an empty one says: no event); start the recording."""
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.stream is not None:
            self.stream.open((self.events.source.height, self.events.source.width, 3))

    def write(self, block: Block) -> None:
        """Record the frames of a source that cannot be read twice (the clips are cut
        once the events are known)."""
        if self.stream is None or not len(block):
            return
        if self.origin is None:  # after EventsSink.write of the block: its numbers
            self.origin = int(self.events.last_rows.numbers[0])
        self.stream.write(block.frames)

    def close(self) -> None:
        """Cut one clip per event (after :meth:`EventsSink.close`)."""
        sink = self.events
        try:
            if self.stream is not None:
                self.stream.end()
                self.stream.close()
                self._cut_recorded()
            elif sink.source.numbering == "name":
                for e in sink.events:
                    self._encode_frames(e)
            else:
                self._cut_file()
        finally:
            if self.recording is not None:
                self.recording.unlink(missing_ok=True)
        if self.made:
            logger.info(
                "clips: %s", ", ".join(f"{n} by {how}" for how, n in sorted(self.made.items()))
            )

    def _clip(self, e: Event) -> tuple[Path, int]:
        """The file of event ``e``'s clip and its frame count (a recording: its frames,
        whatever their arrival times; a file: its time at the input's rate)."""
        native = self.events.fps
        count = max(1, round((e.end_seconds - e.start_seconds) * native))
        if self.recording is not None:
            count = e.end_frame - e.start_frame + 1
        return self.folder / f"event_{e.event:04d}.mp4", count

    def _cut(self, path: str, e: Event, first: int, origin: float | None) -> None:
        out, count = self._clip(e)
        how = cut_clip(path, out, first, count, self.events.fps, origin=origin,
                       crf=self.settings.crf, preset=self.settings.preset)  # fmt: skip
        self.made[how] = self.made.get(how, 0) + 1

    def _cut_file(self) -> None:
        sink = self.events
        origin = keyframe_at(sink.source.name, 0.0) if sink.events else None
        for e in sink.events:
            self._cut(sink.source.name, e, round(e.start_seconds * sink.fps), origin)

    def _cut_recorded(self) -> None:
        assert self.recording is not None
        sink = self.events
        origin = keyframe_at(str(self.recording), 0.0) if sink.events else None
        start = self.origin or 1
        for e in sink.events:  # by frame: a live stream's times are its arrival times
            self._cut(str(self.recording), e, max(0, e.start_frame - start), origin)

    def _encode_frames(self, e: Event) -> None:
        from bpvideo.sources.files import open_source

        sink = self.events
        out, count = self._clip(e)
        start = sink.source.start + e.first * self.settings.step
        source = open_source(sink.source.name, start=start, frames=count, fps=sink.fps)
        stream = VideoStream(out, sink.fps, crf=self.settings.crf, preset=self.settings.preset)
        try:
            stream.write(frame for _, frame in source.frames)
            stream.end()
            stream.close()
        except BaseException:
            stream.abort()
            raise
        finally:
            source.close()
        self.made["encode"] = self.made.get("encode", 0) + 1

    def abort(self) -> None:
        """Stop the recording."""
        if self.stream is not None:
            self.stream.abort()


class ReportSink:
    """``report.html`` (after :meth:`EventsSink.close` and ``background.png``)."""

    def __init__(self, outdir: OutputDir, events: EventsSink, settings: SeparateSettings) -> None:
        self.outdir = outdir
        self.events = events
        self.settings = settings

    def open(self) -> None:
        """Nothing to start."""

    def write(self, block: Block) -> None:
        """Nothing: :class:`EventsSink` keeps the thumbnails."""

    def close(self) -> None:
        """Stage ``report.html`` (after the other sinks: it links to their files)."""
        sink = self.events
        folder = self.outdir.stage("report.html").parent
        still = folder / "background.png"
        tracked = sink.objects.summary() if sink.objects is not None else {}
        page = report_html(
            title=sink.source.name,
            series=sink.stream.series.arrays(),
            events=sink.events,
            thumbs=sink.stream.thumbs.of(sink.events),
            background_png=still.read_bytes() if still.is_file() else None,
            settings=self.settings.to_dict(),
            facts=report_facts(
                sink.source.name,
                sink.stream.frames,
                sink.source.width,
                sink.source.height,
                sink.source.fps,
            ),
            objects=read_objects(folder / "objects.csv") if sink.objects is not None else None,
            object_count=tracked.get("objects"),
            counts=tracked.get("counts"),
            links=Links.of(folder, sink.events),
            start=wall_clock(sink.source.clock.to_dict()["start_time"]),
        )
        atomic_write_bytes(self.outdir.stage("report.html"), page.encode())

    def abort(self) -> None:
        """Nothing to stop."""


class TableSink:
    """The frame table, events and objects of :func:`bpvideo.separate` (arrays: the table
    is kept whole, as the masks are).

    Parameters
    ----------
    source : FrameSource
        The frames (rate, mask numbers).
    settings : SeparateSettings
        The event options, regions and ``step``; ``events`` and ``count_line`` (objects
        tracked when :func:`~bpvideo.sinks.table.tracks_objects`).
    """

    def __init__(self, source: FrameSource, settings: SeparateSettings) -> None:
        self.source = source
        fps = source.fps * settings.step
        region = region_mask(settings.roi, settings.exclude, (source.height, source.width),
                             settings.scale)  # fmt: skip
        self.recorder = EventRecorder(fps, region, **event_options(settings))
        self.table = FrameTable.empty()
        self.events: list[Event] = []
        #: The objects (rows kept in memory), when tracked.
        self.objects = ObjectsSink(None, source, settings) if tracks_objects(settings) else None
        self.mode = settings.events

    def open(self) -> None:
        """Start the objects' rows."""
        if self.objects is not None:
            self.objects.open()

    def write(self, block: Block) -> None:
        """Count a block's masks; track its blobs."""
        numbers = [self.source.mask_number(n) for n in block.numbers]
        times = block_times(self.source, block.numbers, numbers, self.recorder.fps)
        self.recorder.add(numbers, times, block.masks)
        if self.objects is not None:
            self.objects.write(block)

    def close(self) -> None:
        """Find the events (the objects' with ``events="objects"``)."""
        self.table, self.events = self.recorder.finish()
        if self.objects is not None:
            self.objects.close()
            if self.mode == "objects":
                self.events = self.objects.events()

    def found(self) -> dict[str, Any]:
        """What :class:`~bpvideo.sinks.arrays.Separation` gets besides the arrays:
        ``events``, ``frames`` and, when tracked, ``objects``, ``tracks`` (the rows of
        ``objects.csv`` and ``tracks.csv``) and ``counts``."""
        found: dict[str, Any] = {"events": self.events, "frames": self.table}
        if self.objects is not None:
            found.update(self.objects.kept(), counts=self.objects.summary().get("counts"))
        return found

    def abort(self) -> None:
        """Nothing to stop."""


#: The share of the frames one event may span before the log calls the scene busy, and
#: the seconds it must last (a clip of a few seconds is one event by nature).
BUSY_SHARE, BUSY_SECONDS = 0.8, 10.0


def busy_scene(events: list[Event], frames: int) -> None:
    """Log one line when an activity event spans most of the input (a road, a shop: the
    events say little there)."""
    longest = max(events, key=lambda e: e.last - e.first, default=None)
    if longest is None or longest.duration < BUSY_SECONDS:
        return
    if longest.last - longest.first + 1 > BUSY_SHARE * frames:
        logger.warning(
            "busy scene: one event spans %d %% of the frames; for what moved, try --events "
            "objects (objects.csv), a region (--roi/--exclude) or a higher --event-threshold",
            round(100 * (longest.last - longest.first + 1) / frames),
        )


def report_facts(name: str, frames: int, width: int, height: int, fps: float) -> dict[str, Any]:
    """The table above the report's plot."""
    return {"input": name, "frames": frames, "size": f"{width}x{height}", "fps": round(fps, 3)}


def event_sinks(outdir: OutputDir, source: FrameSource, settings: SeparateSettings) -> list[Any]:
    """The event sinks of a run, in the order they are closed: objects (when tracked:
    :func:`~bpvideo.sinks.table.tracks_objects`), then events."""
    objects = ObjectsSink(outdir, source, settings) if tracks_objects(settings) else None
    events = EventsSink(outdir, source, settings, objects)
    sinks: list[Any] = [events] if objects is None else [objects, events]
    if settings.overlay:
        sinks.append(OverlaySink(outdir, events, settings))
    if settings.clips:
        sinks.append(ClipsSink(outdir, events, settings))
    sinks.append(ReportSink(outdir, events, settings))
    return sinks
