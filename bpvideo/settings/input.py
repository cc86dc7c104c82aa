"""Which frames are read, and how: the ``Input`` section of the option table.

Each field is one option of ``bpvideo separate`` (see :mod:`bpvideo.settings`).
"""

from __future__ import annotations

from dataclasses import dataclass

from bpvideo.limits import FPS_RANGE, MAX_FRAMES
from bpvideo.settings.spec import option

__all__ = ["PIX_FMTS", "InputSettings"]

PIX_FMTS = ("gray", "bgr24")


@dataclass
class InputSettings:
    """Which frames are read, and how (the ``Input`` section of ``--help``)."""

    start: int | str = option(
        0,
        "time",
        "First frame to read: a frame number (0-based), seconds (90s) or HH:MM:SS[.ms].",
        low=0,
        limit=MAX_FRAMES,
        metavar="N|TIME",
    )
    frames: int | None = option(
        None,
        "int",
        "Number of frames to read (default: all).",
        low=1,
        limit=MAX_FRAMES,
        optional=True,
        metavar="N",
    )
    end: int | str | None = option(
        None,
        "time",
        "Stop before this frame or time (excluded): a frame number (0-based), seconds or "
        "HH:MM:SS[.ms]; instead of --frames.",
        low=0,
        low_open=True,
        limit=MAX_FRAMES,
        optional=True,
        metavar="N|TIME",
    )
    duration: int | str | None = option(
        None,
        "time",
        "Read this much of the input from --start: frames, seconds (10s) or HH:MM:SS[.ms]; "
        "instead of --frames.",
        low=0,
        low_open=True,
        limit=MAX_FRAMES,
        optional=True,
        metavar="N|TIME",
    )
    start_time: str | None = option(
        None,
        "time_of_day",
        "Time of day of the input's first frame, ISO 8601 (2026-11-27T08:30:00+01:00): "
        "events.csv and objects.csv then have times of day (default: the container's "
        "creation_time when it has one; a live stream's arrival clock).",
        optional=True,
        metavar="ISO8601",
        arrays=False,
    )
    step: int = option(
        1,
        "int",
        "Read every K-th frame (temporal subsampling).",
        low=1,
        limit=MAX_FRAMES,
        metavar="K",
    )
    scale: float = option(
        1.0, "float", "Resize frames by this factor before solving.", low=0, high=4, low_open=True
    )
    gray: bool = option(
        True,
        "bool",
        "Solve on grey levels (--gray) or on all colour channels (--color).",
        secondary="--color",
    )
    fps: float | None = option(
        None,
        "float",
        "Frame rate of the outputs (default: the input's, 25 for image folders).",
        low=FPS_RANGE[0],
        high=FPS_RANGE[1],
        optional=True,
    )
    size: str | None = option(
        None,
        "str",
        "Frame size WxH of raw frames on stdin (INPUT '-'); without it stdin is read as y4m "
        "or any container ffmpeg can stream.",
        optional=True,
        metavar="WxH",
        arrays=False,
    )
    pix_fmt: str = option(
        "gray",
        "str",
        "Pixel format of raw frames on stdin (with --size).",
        choices=PIX_FMTS,
        arrays=False,
    )
    allow_partial: bool = option(
        False,
        "bool",
        "Keep the frames read from a truncated or damaged video instead of failing "
        '(summary.json then says "partial": true).',
        arrays=False,
    )
    strict: bool = option(
        False,
        "bool",
        "Fail (exit 1) when a frame of the input is dropped or repeated (by the decoder, "
        "damage, a frame of another size, a skipped damaged file), instead of warning; "
        "summary.json's frames_lost counts them either way.",
        arrays=False,
    )
    allow_references: bool = option(
        False,
        "bool",
        "Read an input that names other files (an HLS playlist, an ffconcat list...): "
        "ffmpeg then reads the local files it names.",
        arrays=False,
    )
