"""What is reported as events, and where: the ``Events`` section of the option table.

Each field is one option of ``bpvideo separate`` (see :mod:`bpvideo.settings`); the
events themselves are found by :mod:`bpvideo.events` (defaults chosen in docs/events.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from bpvideo.limits import MAX_FRAMES
from bpvideo.settings.spec import option

__all__ = ["EVENT_MODES", "EventSettings"]

#: The values of ``--events``.
EVENT_MODES = ("activity", "objects")


@dataclass
class EventSettings:
    """Events, regions, the overlay and clips (the ``Events`` section of ``--help``)."""

    event_threshold: float = option(
        0.001,
        "float",
        "A frame is active when its foreground (after --roi/--exclude and --min-area) is more "
        "than this share of the frame or region (0 = any foreground; defaults of the event "
        "options: docs/events.md).",
        low=0,
        high=1,
        high_open=True,
        metavar="SHARE",
    )
    min_event: int | str = option(
        "0.5s",
        "time",
        "Shortest event (before padding): frames or a time, as --start takes them.",
        low=0,
        limit=MAX_FRAMES,
        metavar="N|TIME",
    )
    event_gap: int | str = option(
        "0s",
        "time",
        "Active stretches separated by less than this are one event: frames or a time (events "
        "that touch once padded are one event too).",
        low=0,
        limit=MAX_FRAMES,
        metavar="N|TIME",
    )
    event_pad: int | str = option(
        "0.2s",
        "time",
        "Frames or time added before and after each event (events.csv, clips).",
        low=0,
        limit=MAX_FRAMES,
        metavar="N|TIME",
    )
    events: str = option(
        "activity",
        "str",
        "What an event is: 'activity' (stretches of frames with foreground above "
        "--event-threshold) or 'objects' (each tracked object, from objects.csv; "
        "docs/events.md).",
        choices=EVENT_MODES,
        metavar="MODE",
    )
    count_line: tuple[str, ...] = option(
        (),
        "lines",
        "Count the objects crossing the line 'x1,y1 x2,y2' (pixels of the input), per "
        "direction, in summary.json's counts; repeatable.",
        metavar="LINE",
    )
    roi: tuple[str, ...] = option(
        (),
        "regions",
        "Report foreground only inside this region: a polygon 'x1,y1 x2,y2 x3,y3 ...' in "
        "pixels of the input, or a mask image (non-zero inside); repeatable (their union).",
        metavar="POLYGON|IMAGE",
    )
    exclude: tuple[str, ...] = option(
        (),
        "regions",
        "Never report foreground inside this region (a polygon or a mask image, as --roi); "
        "repeatable.",
        metavar="POLYGON|IMAGE",
    )
    overlay: bool = option(
        False,
        "bool",
        "Also write overlay.mp4: the input with the foreground tinted, each blob's box and the "
        "time.",
        arrays=False,
    )
    clips: bool = option(
        False,
        "bool",
        "Also write clips/event_0001.mp4 ...: one clip of the input per event (padded).",
        arrays=False,
    )
