"""A stream of numbered frames (:class:`FrameSource`): what every source gives the pipeline.

Sources (files and folders, stdin: :mod:`bpvideo.sources.files`; frames in memory:
:mod:`bpvideo.sources.arrays`) are read only as the frames are consumed; the selection
(``start``, ``frames``, ``step``) and the resizing (``scale``) are the same for all.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from bpvideo.errors import InputError, WorkError, literal
from bpvideo.sources.accounting import FrameLoss, check_strict
from bpvideo.times import WallClock, parse_time

__all__ = [
    "FrameSource",
    "TruncatedVideoError",
    "frame_size",
    "resize_frame",
    "resolve_selection",
    "scaled_frames",
    "scaled_size",
    "select_frames",
    "selected_count",
]

logger = logging.getLogger("bpvideo")

#: Pixels a side that ``scale`` may not shrink a frame below (1x1 out of 48x36 is no scene).
SCALED_SIDE = 2


class TruncatedVideoError(WorkError):
    """A video whose decoding stopped before its end (truncated or damaged).

    Attributes
    ----------
    decoded : int
        Frames decoded before the failure (frame numbers ``0 .. decoded - 1``).
    expected : int or None
        Frames the container announces (None when it does not say).
    """

    def __init__(self, message: str, decoded: int, expected: int | None) -> None:
        super().__init__(message, option=("allow_partial", False))
        self.decoded = decoded
        self.expected = expected


def resize_frame(
    image: np.ndarray, scale: float, interpolation: int = cv2.INTER_AREA
) -> np.ndarray:
    """``image`` resized by ``scale`` (``INTER_AREA`` down, ``INTER_LINEAR`` up)."""
    if scale == 1.0:
        return image
    h, w = image.shape[:2]
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    if scale > 1.0 and interpolation == cv2.INTER_AREA:
        interpolation = cv2.INTER_LINEAR
    return cv2.resize(image, size, interpolation=interpolation)


@dataclass
class FrameSource:
    """A stream of selected, scaled uint8 BGR frames, read only as they are consumed.

    Attributes
    ----------
    name : str
        Where the frames come from (``"-"`` for stdin).
    width, height : int
        Frame size after scaling.
    fps : float
        Frame rate of the selected frames.
    frame_count : int or None
        Frames expected after the selection (None when unknown, e.g. stdin).
    native_size : (int, int)
        ``(width, height)`` before scaling.
    frames : iterator of (int, (H, W, 3) uint8 ndarray)
        Frame number and frame, in order.
    numbering : {"index", "name"}
        What the frame numbers are: 0-based decode indices (videos, pipes, arrays), or the
        numbers in the frame files' names (image folders).
    channels : {1, 3}
        Channels of the frames as given (1: grey arrays; the frames are BGR all the same).
    total_frames : int or None
        Frames in the source before the selection (None when unknown, e.g. stdin).
    partial : bool
        Set once the frames are consumed: the video was truncated or damaged and
        ``allow_partial`` kept the frames decoded before the damage.
    frames_expected : int or None
        With ``partial``: the frames the container announced.
    start : int
        Index of the first frame selected (``start`` as a frame, times converted).
    times : dict of int to float
        Seconds of each frame read so far, by frame number, from the source's first
        frame: a video's own timestamps (a variable frame rate is kept as it is), else the
        frame's position over the rate. Filled as the frames are read.
    skipped : list of (str, str)
        Files of a folder that are not among its frames, and why (see
        :mod:`bpvideo.sources.folders`); damaged frames skipped by ``allow_partial`` are added
        as they are met.
    lost : FrameLoss
        Frames dropped or repeated, and why (:mod:`bpvideo.sources.accounting`): complete once
        the frames are consumed.
    clock : WallClock or ArrivalClock
        The time of day of the seconds of :attr:`times` (:mod:`bpvideo.sources.clock`):
        unknown unless the job sets it.
    """

    name: str
    width: int
    height: int
    fps: float
    frame_count: int | None
    native_size: tuple[int, int]
    frames: Iterator[tuple[int, np.ndarray]]
    numbering: str = "index"
    channels: int = 3
    total_frames: int | None = None
    partial: bool = False
    frames_expected: int | None = None
    start: int = 0
    times: dict[int, float] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    lost: FrameLoss = field(default_factory=FrameLoss)
    clock: Any = field(default_factory=WallClock)
    _decoder: Any = None

    def mask_number(self, frame_number: int) -> int:
        """The number in the name of a frame's mask file (``bin%06d.png``).

        As changedetection.net names result files: the number of the frame's file for
        image folders (``in000470.jpg`` -> ``bin000470.png``), the 0-based index + 1 for
        videos and pipes (``--start 50`` gives ``bin000051.png`` first).
        """
        return frame_number if self.numbering == "name" else frame_number + 1

    def nothing_selected(self, start: int | str, step: int) -> InputError:
        """The error of a selection that holds no frame."""
        total = self.total_frames
        total = "" if total is None else f"the source has {total} frame(s), "
        at = "" if isinstance(start, int) else f" (frame {self.start})"
        return InputError(
            f"{literal(self.name)}: no frames selected ({total}{{start=}}{at}, {{step={step}}}): "
            "lower {start} or check the input",
            option=("start", start),
        )

    def close(self) -> None:
        """Stop reading (ends a decoding child process)."""
        for frames in (self.frames, self._decoder):
            close = getattr(frames, "close", None)
            if close is not None:
                close()


def scaled_size(w: int, h: int, scale: float, *, least: int = 1) -> tuple[int, int]:
    """``(w, h)`` scaled by ``scale`` and rounded, at least ``least`` pixels a side (the
    one rule of both scales: ``--scale`` of the input, 1; the solve scale, 2).

    Examples
    --------
    >>> scaled_size(320, 240, 0.25), scaled_size(5, 5, 0.1), scaled_size(5, 5, 0.1, least=2)
    ((80, 60), (1, 1), (2, 2))
    """
    return max(least, round(w * scale)), max(least, round(h * scale))


def resolve_selection(
    start: int | str,
    frames: int | None,
    end: int | str | None,
    duration: int | str | None,
    step: int,
    fps: float,
) -> tuple[int, int | None]:
    """The first frame and the number of frames selected, times converted at ``fps``.

    Parameters
    ----------
    start : int or str
        First frame, or a time (see :func:`~bpvideo.times.parse_time`).
    frames : int or None
        Frames to select (after ``step``), or None.
    end, duration : int, str or None
        Where to stop instead of ``frames``: before this frame or time, or after this
        many frames or this long from ``start``.
    step : int
        Every ``step``-th frame is selected.
    fps : float
        The input's own frame rate (before ``step``), which times are converted with.

    Returns
    -------
    (int, int or None)
        ``start`` as a frame index, and the frames to select (None: to the end).

    Raises
    ------
    InputError
        An ``end`` not after ``start``, or a ``duration`` shorter than one frame.

    Examples
    --------
    >>> resolve_selection("00:01:30", None, None, "10s", 2, 25.0)
    (2250, 125)
    >>> resolve_selection(100, None, 1500, None, 1, 30.0)
    (100, 1400)
    """
    first = parse_time(start, "start").to_frames(fps)
    if end is not None:
        last = parse_time(end, "end").to_frames(fps)
        if last <= first:
            raise InputError(
                f"{{end=}} is frame {last} at {fps:g} frames/s, not after {{start}} (frame "
                f"{first}): give a later {{end}}",
                option=("end", end),
            )
        frames = -(-(last - first) // step)
    elif duration is not None:
        length = parse_time(duration, "duration").to_frames(fps)
        if length < 1:
            raise InputError(
                f"{{duration=}} is less than one frame at {fps:g} frames/s: give a longer "
                "{duration}",
                option=("duration", duration),
            )
        frames = -(-length // step)
    return first, frames


def frame_size(w: int, h: int, scale: float, name: str) -> tuple[int, int]:
    """The size of ``name``'s frames after ``scale``, checked against the bounds.

    Any size of one pixel a side or more is taken (a 3x2 or 1x64 frame too): the bound
    on small frames is the solver's, ``rank`` below the number of pixels, checked with
    the other options. Only ``scale`` may not shrink a side below :data:`SCALED_SIDE`
    pixels (or below the input's own, when it has fewer).

    Raises
    ------
    InputError
        Frames of ``w`` x ``h``, or scaled by ``scale``, outside the bounds, or a
        ``scale`` that leaves a side of less than :data:`SCALED_SIDE` pixels.
    """
    from bpvideo.sources.headers import check_frame_size

    check_frame_size(w, h, name)
    sw, sh = scaled_size(w, h, scale)
    if sw < min(w, SCALED_SIDE) or sh < min(h, SCALED_SIDE):
        least = SCALED_SIDE / min(w, h)
        raise InputError(
            f"{literal(name)}: {{scale=}} makes frames of {sw}x{sh} pixels out of {w}x{h}: "
            f"raise {{scale}} to {least:.3g} or more",
            option=("scale", scale),
        )
    check_frame_size(sw, sh, name, f"frames scaled by {scale:g}")
    return sw, sh


def select_frames(
    frames: Iterator[tuple[int, np.ndarray]], start: int, count: int | None, step: int
) -> Iterator[tuple[int, np.ndarray]]:
    kept = 0
    for index, frame in frames:
        if count is not None and kept >= count:
            return
        if index < start or (index - start) % step:
            continue
        kept += 1
        yield index, frame


def selected_count(total: int | None, start: int, frames: int | None, step: int) -> int | None:
    """Frames that ``start``/``frames``/``step`` select from ``total`` (None if unknown)."""
    if total is None:
        return None
    count = max(0, -(-(total - start) // step))
    return count if frames is None else min(count, frames)


def scaled_frames(
    source: FrameSource,
    selected: Iterator[tuple[int, np.ndarray]],
    scale: float,
    allow: tuple[bool, bool],
    selection: tuple[int, int | None, int],
) -> Iterator[tuple[int, np.ndarray]]:
    """The frames of ``selected`` resized; a truncation ends them when ``allow_partial``;
    ``allow``: ``(allow_partial, strict)``. At their end the frames lost are logged, and
    with ``strict`` refused (:func:`~bpvideo.sources.accounting.check_strict`)."""
    allow_partial, strict = allow
    kept = 0
    try:
        for number, frame in selected:
            kept += 1
            yield number, resize_frame(frame, scale)
    except TruncatedVideoError as exc:
        if not allow_partial:
            raise
        source.partial = True
        source.frames_expected = selected_count(exc.expected, *selection)
        missing = (source.frames_expected or kept) - kept
        source.lost.add(f"{missing} after the damage (allow_partial)", dropped=missing)
        logger.warning(
            "%s: only %d frame(s) could be decoded (of %s announced); allow_partial keeps "
            "the %d selected frame(s) read and marks the result partial",
            source.name,
            exc.decoded,
            exc.expected if exc.expected is not None else "an unknown number",
            kept,
        )
    finally:
        close = getattr(selected, "close", None)
        if close is not None:
            close()
    # At the end only (not when closed early); a partial result was warned of above.
    check_strict(source.name, source.lost, strict, warn=not source.partial)
