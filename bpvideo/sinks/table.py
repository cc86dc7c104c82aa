"""The files of a result folder, declared once: name, role, the sink that writes it, when
it is written and what makes it complete.

A result folder is the same for a file, a batch job and each segment of a live stream
(:class:`~bpvideo.sinks.result.ResultFolder` assembles it). Everything that needs the list
of a result's files reads it from here: ``summary.json``'s ``outputs``
(:func:`output_names`), the names an earlier result may hold (:data:`OUTPUT_NAMES`: an
overwrite removes them, the guard checks them against the inputs), the docs' table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["OUTPUTS", "OUTPUT_NAMES", "SUMMARY", "Output", "output_names", "tracks_objects"]

SUMMARY = "summary.json"


@dataclass(frozen=True)
class Output:
    """One file (or folder) of a result.

    Attributes
    ----------
    role : str
        Its key in ``summary.json``'s ``outputs``.
    name : str
        Its name in OUTDIR (a pattern for the files of a folder: ``masks/bin%06d.png``).
    sink : str
        The sink that writes it.
    written : str
        When it is written: ``"blocks"`` (as the blocks come) or ``"close"`` (when the
        sink closes, after the last block).
    complete : str
        What makes it complete, in words.
    wanted : callable
        ``wanted(settings)``: whether a run with these settings writes it.
    """

    role: str
    name: str
    sink: str
    written: str
    complete: str
    wanted: Callable[[Any], bool] = lambda settings: True

    @property
    def entry(self) -> str:
        """The entry of OUTDIR it is (``masks`` for ``masks/bin%06d.png``)."""
        return self.name.partition("/")[0]


def _videos(ext: str) -> Callable[[Any], bool]:
    return lambda s: not s.no_video and (ext == "mkv") == bool(s.lossless)


_ENCODED = "the encoder ended cleanly"
#: Every output of a result folder, in the order of ``summary.json``'s ``outputs``.
OUTPUTS: tuple[Output, ...] = (
    Output("background_video", "background.mp4", "FolderSink", "blocks", _ENCODED, _videos("mp4")),
    Output("foreground_video", "foreground.mp4", "FolderSink", "blocks", _ENCODED, _videos("mp4")),
    Output("background_video", "background.mkv", "FolderSink", "blocks", _ENCODED, _videos("mkv")),
    Output("foreground_video", "foreground.mkv", "FolderSink", "blocks", _ENCODED, _videos("mkv")),
    Output("masks", "masks/bin%06d.png", "FolderSink", "blocks", "one file per frame"),
    Output("background_image", "background.png", "FolderSink", "close", "written whole"),
    Output("summary", SUMMARY, "ResultFolder", "close", "written last: the folder is complete"),
    Output(
        "preview", "preview.png", "FolderSink", "close", "written whole", lambda s: bool(s.preview)
    ),
    Output(
        "evaluation",
        "evaluation.csv",
        "ResultFolder",
        "close",
        "every frame scored",
        lambda s: s.groundtruth is not None,
    ),
    Output("events", "events.csv", "EventsSink", "close", "every event, once the last ended"),
    Output("frames", "frames.csv", "EventsSink", "blocks", "one row per frame"),
    Output(
        "objects",
        "objects.csv",
        "ObjectsSink",
        "blocks",
        "one row per object, as each ends",
        lambda s: tracks_objects(s),
    ),
    Output(
        "tracks",
        "tracks.csv",
        "ObjectsSink",
        "blocks",
        "one row per object per frame",
        lambda s: tracks_objects(s),
    ),
    Output("report", "report.html", "ReportSink", "close", "written whole"),
    Output("overlay", "overlay.mp4", "OverlaySink", "blocks", _ENCODED, lambda s: bool(s.overlay)),
    Output(
        "clips",
        "clips/event_%04d.mp4",
        "ClipsSink",
        "close",
        "one clip per event",
        lambda s: bool(s.clips),
    ),
)

#: The entries a result may hold in OUTDIR (``summary.json`` first): an overwrite removes
#: those a new result does not write, and a run refuses an OUTDIR holding any of them
#: unless it may overwrite.
OUTPUT_NAMES: tuple[str, ...] = tuple(dict.fromkeys([SUMMARY, *(o.entry for o in OUTPUTS)]))


def tracks_objects(settings: Any) -> bool:
    """Whether a run links its blobs into objects (``objects.csv``, ``tracks.csv``): when
    its events are objects (``--events objects``) or it counts crossings
    (``--count-line``). Tracking costs about a third more CPU on a 320x240 clip (the
    tracker's import and a few ms a frame), so a run that did not ask pays nothing."""
    return settings.events == "objects" or bool(settings.count_line)


def output_names(settings: Any) -> dict[str, str]:
    """``summary.json``'s ``outputs`` of a run with ``settings``: the files by role."""
    return {o.role: o.name for o in OUTPUTS if o.wanted(settings)}
