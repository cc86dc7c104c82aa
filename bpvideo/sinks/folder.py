"""The output folder as a sink: the files of ``separate_file``'s result.

:class:`FolderSink` takes the finished blocks (:class:`~bpvideo.records.Block`) one after
another: the background and foreground videos go to ffmpeg encoders fed by their own
threads, masks into the staging folder (and ``--masks-to``), background frames to the
``background.png`` median (:class:`~bpvideo.still.Still`; in colour for a colour input
solved on grey, :mod:`bpvideo.sinks.colour`) and the ``--preview`` contact sheet.
"""

from __future__ import annotations

import os
import stat
import time
from typing import TYPE_CHECKING

import numpy as np

from bpvideo.errors import InputError, literal
from bpvideo.preview import contact_sheet, preview_frames
from bpvideo.records import Block, Stopwatch
from bpvideo.sinks.colour import Chroma
from bpvideo.sinks.outputs import OutputDir, atomic_write_bytes
from bpvideo.sinks.raw import RawMaskSink
from bpvideo.sinks.table import output_names
from bpvideo.sinks.writers import MaskWriter, VideoStream, encode_png
from bpvideo.still import Still

if TYPE_CHECKING:  # pragma: no cover
    from bpvideo.settings import SeparateSettings
    from bpvideo.sources.files import FrameSource

__all__ = ["FolderSink", "PreviewFrames"]


class PreviewFrames:
    """Frames kept for the ``--preview`` contact sheet while the video streams by.

    With a known frame count the sheet shows :func:`~bpvideo.preview.preview_frames` of
    the whole clip; otherwise (stdin) frames of the first window.
    """

    def __init__(self, frame_count: int | None) -> None:
        self.wanted = set(preview_frames(frame_count)) if frame_count else None
        self.kept: list[tuple[np.ndarray, ...]] = []

    def add(
        self,
        first: int,
        frames: np.ndarray,
        background: np.ndarray,
        foreground: np.ndarray,
        masks: np.ndarray,
        span: int | None = None,
    ) -> None:
        """Offer the frames ``first, first + 1, ...`` of the clip.

        ``span``: frames of the window these belong to, from ``first`` on (the sheet of a
        clip of unknown length shows frames of its first window).
        """
        if self.wanted is None:
            self.wanted = {first + i for i in preview_frames(span or len(masks))}
        picks = [i - first for i in sorted(self.wanted) if first <= i < first + len(masks)]
        for i in picks:
            self.kept.append(tuple(x[i].copy() for x in (frames, background, foreground, masks)))

    def sheet(self) -> np.ndarray:
        """The contact sheet of the frames kept."""
        frames, background, foreground, masks = (np.stack(x) for x in zip(*self.kept, strict=True))
        return contact_sheet(frames, background, foreground, masks, rows=len(masks))


def _raw_masks(outdir: OutputDir, target: str) -> RawMaskSink:
    """``--masks-to``: stdout or a stream (a pipe, a device) as it is, a file staged
    beside its place and renamed there with the rest (nothing half-written is left)."""
    try:
        stream = target == "-" or not stat.S_ISREG(os.stat(target).st_mode)
    except OSError:
        stream = False  # a new file
    if stream:
        return RawMaskSink(target)
    try:
        staged = outdir.stage_beside(target)
    except OSError as exc:
        raise InputError(
            f"{literal(target)}: cannot write the raw masks ({literal(exc.strerror)}): choose "
            "another {masks_to}",
            option=("masks_to", target),
        ) from None
    return RawMaskSink(str(staged))


class FolderSink:
    """The files of one result, written as the blocks come (see the module docstring).

    Parameters
    ----------
    outdir : OutputDir
        The output directory, entered (its staging folder exists).
    source : FrameSource
        The frames (rate, count, how masks are numbered).
    settings : SeparateSettings
        ``lossless``, ``crf``, ``preset``, ``no_video``, ``gray``, ``preview``, ``masks_to``.
    clock : Stopwatch
        Counts the seconds of writing.
    """

    def __init__(
        self,
        outdir: OutputDir,
        source: FrameSource,
        settings: SeparateSettings,
        clock: Stopwatch,
    ) -> None:
        names = output_names(settings)
        self.outdir = outdir
        self.source = source
        self.gray = settings.gray
        self.clock = clock
        encoder = {"lossless": settings.lossless, "crf": settings.crf, "preset": settings.preset,
                   "tuned": True}  # fmt: skip
        #: The two video encoders (none with ``no_video``): background, foreground.
        self.streams = [
            VideoStream(outdir.stage(names[role]), source.fps, **encoder)
            for role in ("background_video", "foreground_video")
            if role in names
        ]
        self.raw = _raw_masks(outdir, settings.masks_to) if settings.masks_to else None
        self.mask_files = MaskWriter(outdir.stage("masks"))
        self.still = Still()
        #: The colour of a grey still (None: the background is in colour, or the input grey)
        self.chroma = Chroma() if settings.gray and source.channels == 3 else None
        self.shown = PreviewFrames(source.frame_count) if settings.preview else None
        self.written = 0
        self.ahead = 0  #: background frames the video took ahead of their blocks (early)

    def open(self) -> None:
        """Start both encoders now (ffmpeg loads while the frames are read and solved)."""
        size = (self.source.height, self.source.width)
        for stream, shape in zip(self.streams, (size if self.gray else (*size, 3), (*size, 3)),
                                 strict=False):  # fmt: skip
            stream.open(shape)

    def early(self, background: np.ndarray) -> None:
        """Encode the background frames (k, H, W[, 3]) uint8 of the next frames ahead of
        their blocks (from the thread of :class:`~bpvideo.pipeline.finish.EarlyBackground`,
        while no block is written); :meth:`write` does not encode them again."""
        if self.streams:
            self.streams[0].write(background)
            self.ahead += len(background)

    def write(self, block: Block) -> None:
        """Write the frames of a block: videos, masks, raw masks, still, preview."""
        t = time.perf_counter()
        background, masks = block.background, block.masks
        foreground = block.foreground if self.streams or self.shown is not None else None
        taken = min(self.ahead, len(masks))  # encoded already (early)
        self.ahead -= taken
        for stream, frames in zip(self.streams, (background[taken:], foreground), strict=False):
            stream.write(frames)
        if self.shown is not None:
            span = len(block) if block.window is None else block.window.frames - block.offset
            self.shown.add(self.written, block.frames, background, foreground, masks, span)
        self.mask_files.write(masks, [self.source.mask_number(n) for n in block.numbers])
        if self.raw is not None:
            self.raw.write(masks)
        self.still.add(background)
        if self.chroma is not None:
            self.chroma.add(block.frames, masks)
        self.written += len(masks)
        self.clock.add("write", time.perf_counter() - t)

    def close(self) -> None:
        """Finish the videos, the raw masks, ``background.png`` and the preview."""
        t = time.perf_counter()
        for stream in self.streams:  # the encoders finish their files meanwhile
            stream.end()
        self.mask_files.close()
        if self.raw is not None:
            self.raw.close()
        stage = self.outdir.stage
        still = self.still.median()
        if self.chroma is not None:
            still = self.chroma.colour(still)
        atomic_write_bytes(stage("background.png"), encode_png(still))
        if self.shown is not None:
            atomic_write_bytes(stage("preview.png"), encode_png(self.shown.sheet()))
        for stream in self.streams:
            stream.close()
        self.clock.add("write", time.perf_counter() - t)

    def abort(self) -> None:
        """Stop the encoders and the mask writer (after a failure or an interruption)."""
        for stream in self.streams:
            stream.abort()
        self.mask_files.abort()
