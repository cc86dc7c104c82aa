"""Where finished blocks go: one small interface (:class:`Sink`), one class per output.

A sink is opened, handed every :class:`~bpvideo.records.Block` of a run in order, then
closed (or aborted after a failure or an interruption: nothing half-written is left).
:func:`bpvideo.api.drain` is the one loop that feeds them. The sinks so far:

- :class:`~bpvideo.io.sinks.folder.FolderSink`: the output folder of ``separate_file``
  (videos, masks, raw masks, background still, preview);
- :class:`~bpvideo.io.sinks.arrays.ArraysSink`: the arrays of :func:`bpvideo.separate`;
- :class:`~bpvideo.io.summary.ReportBuilder`: what ``summary.json`` holds.

A new output (events, an overlay, a live segment) is a new sink, not an edit of another.
"""

from __future__ import annotations

from typing import Protocol

from bpvideo.records import Block

__all__ = ["Sink"]


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
