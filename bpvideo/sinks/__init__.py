"""Where finished blocks go: one small interface (:class:`Sink`), one class per output.

A sink is opened, handed every :class:`~bpvideo.records.Block` of a run in order, then
closed (or aborted after a failure or an interruption: nothing half-written is left).
:func:`bpvideo.api.drain` is the one loop that feeds them. The sinks so far:

- :class:`~bpvideo.sinks.result.ResultFolder`: one result folder, for a file, a batch job
  or a live segment, the files of :mod:`~bpvideo.sinks.table`: videos, masks and still
  (:class:`~bpvideo.sinks.folder.FolderSink`), events, frame table, overlay, clips and
  report (:mod:`~bpvideo.sinks.events`), ``summary.json``
  (:class:`~bpvideo.sinks.summary.ReportBuilder`);
- :class:`~bpvideo.sinks.segments.SegmentSink`: result folders rolled over every span of a
  stream; :class:`~bpvideo.sinks.segments.MaskStreamSink`, raw masks as made;
  :class:`~bpvideo.sinks.event_lines.LiveEventSink`, events as JSON lines;
- :class:`~bpvideo.sinks.arrays.ArraysSink`: the arrays of :func:`bpvideo.separate`.

A new output is a new sink (and a row of :mod:`~bpvideo.sinks.table` when it is a file of
the result folder), not an edit of another. :func:`drain` is the one loop that feeds them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Protocol

from bpvideo.records import Block

__all__ = ["Sink", "drain"]

logger = logging.getLogger("bpvideo")


class Sink(Protocol):
    """What takes the finished blocks of a run."""

    def open(self) -> None:
        """Get ready before the first block (start encoders, create files)."""

    def write(self, block: Block) -> None:
        """Take the next block of frames, background and masks."""

    def close(self) -> None:
        """Finish after the last block (flush, finish files)."""

    def abort(self) -> None:
        """Stop after a failure or an interruption; leave nothing half-written."""


def drain(blocks: Iterable[Block], sinks: list[Sink], tracker: Any = None) -> None:
    """Hand every block to every sink, in order: open them all, write each block to each,
    close them all; abort them all on any failure or interruption (then re-raise). Sinks
    are opened before the first block is asked for: encoders start while the first window
    is read and solved.

    ``tracker`` (optional, a :class:`bpvideo.progress.Tracker`) is told of the frames
    finished and the windows done.
    """
    try:
        for sink in sinks:
            sink.open()
        for block in blocks:
            if tracker is not None and block.offset == 0:
                tracker.enter("write")
            for sink in sinks:
                sink.write(block)
            if tracker is not None:
                tracker.finished(len(block))
                if block.last:
                    tracker.window_done()
            del block  # not held while the next block is formed
        if tracker is not None:
            tracker.enter("finish")
        for sink in sinks:
            sink.close()
    except BaseException:
        for sink in sinks:
            try:
                sink.abort()
            except Exception as exc:  # the run's own error is the one to tell, not this
                logger.debug("aborting %s failed too: %s", type(sink).__name__, exc)
        raise
