"""Frame accounting: every frame a reader drops or repeats is counted, with why.

A reader passes frames through as the input holds them; what it cannot is counted in a
:class:`FrameLoss` (``source.lost``), logged as a warning, written to ``summary.json``
(``frames_lost``) and, with ``strict``, turned into an error (:func:`check_strict`):

- a video's frames the decoder gave nothing for: its packets that hold a picture, less
  the frames decoded (a frame of another size mid-stream, a packet the decoder refused);
- a video that ffmpeg complained about (:class:`FfmpegLog`) and that gave fewer frames
  than its container announces: the difference (a damaged part the demuxer skipped);
- frames that repeat the time of the frame before (no time of their own);
- a folder's damaged frame files skipped, and the frames of a video cut short, with
  ``allow_partial``.

A clock that jumps (more than :data:`CLOCK_JUMP` seconds between two frames: a new
recording, a transport stream's discontinuity) loses nothing: the frames' times keep the
gap, and a log line says where it is. What ffmpeg's log says of an input it could not
open at all is read by :func:`failure`.
"""

from __future__ import annotations

import collections
import logging
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from bpvideo.errors import WorkError, literal

__all__ = [
    "CLOCK_JUMP",
    "FfmpegLog",
    "FrameLoss",
    "check_strict",
    "clock_repeats",
    "failure",
    "video_loss",
]

logger = logging.getLogger("bpvideo")

#: Seconds between two frames above which the clock jumped (ffmpeg's own threshold for a
#: timestamp discontinuity, which it used to remove from the times).
CLOCK_JUMP = 10.0

#: The level ffmpeg writes on a line with ``-loglevel level+...``.
_LEVEL = re.compile(r"\[(panic|fatal|error|warning)\] ")
#: The contexts that begin a line of ffmpeg's log (``[h264 @ 0x55d4...] ``).
_CONTEXT = re.compile(r"^(\[[^\]]*\] )+")


@dataclass
class FrameLoss:
    """Frames a reader dropped or repeated, and why (``summary.json``'s ``frames_lost``).

    Attributes
    ----------
    dropped : int
        Frames of the input that are not among the frames read.
    repeated : int
        Frames read that repeat the time of the frame before.
    causes : list of str
        One line per cause, with its count.
    """

    dropped: int = 0
    repeated: int = 0
    causes: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Frames dropped or repeated."""
        return self.dropped + self.repeated

    def add(self, cause: str, dropped: int = 0, repeated: int = 0) -> None:
        """Count ``dropped`` and ``repeated`` frames of one ``cause`` (nothing when 0)."""
        if dropped > 0 or repeated > 0:
            self.dropped += max(dropped, 0)
            self.repeated += max(repeated, 0)
            self.causes.append(cause)

    def to_dict(self) -> dict[str, Any]:
        """``{"dropped": N, "repeated": M, "causes": [...]}``."""
        return {"dropped": self.dropped, "repeated": self.repeated, "causes": list(self.causes)}


def clock_repeats(name: str, seconds: list[float]) -> tuple[int, float]:
    """Frames of ``seconds`` (each frame's time, in decoding order) that repeat the time
    of the frame before, and the seconds the clock jumped over (:data:`CLOCK_JUMP`; each
    jump is logged, not counted)."""
    repeated, jumped = 0, 0.0
    for i in range(1, len(seconds)):
        gap = seconds[i] - seconds[i - 1]
        if abs(gap) > CLOCK_JUMP:
            logger.warning(
                "%s: the clock jumps by %+.1f s between frames %d and %d (a new recording, or "
                "a stream's discontinuity): nothing is lost, the frames' times keep the gap",
                name, gap, i - 1, i,
            )  # fmt: skip
            jumped += gap
        elif gap <= 0:
            repeated += 1
    return repeated, jumped


def video_loss(
    decoded: int, announced: int | None, pictures: int | None, damage: list[str]
) -> tuple[int, str]:
    """Frames of a video read to its end that are lost, and why ("" when none).

    Parameters
    ----------
    decoded : int
        Frames decoded.
    announced : int or None
        Frames the container announces.
    pictures : int or None
        Packets of the video stream that hold a picture (None: not counted).
    damage : list of str
        ffmpeg's complaints about the input (:meth:`FfmpegLog.damage`).
    """
    by_decoder = max((pictures or 0) - decoded, 0)
    by_damage = max(announced - decoded, 0) if damage and announced is not None else 0
    if by_damage > by_decoder:
        return by_damage, (
            f"{decoded} of the {announced} frames its container announces were decoded, and "
            f"ffmpeg reported damage ({damage[0]})"
        )
    if by_decoder:
        return by_decoder, (
            f"the decoder gave {decoded} frames for {pictures} pictures (a frame of another "
            "size, or one it could not decode)"
        )
    return 0, ""


def check_strict(name: str, lost: FrameLoss, strict: bool, warn: bool = True) -> None:
    """Log the frames ``lost`` (unless not ``warn``: a warning said so already); with
    ``strict``, refuse them.

    Raises
    ------
    WorkError
        ``strict`` and a frame was dropped or repeated.
    """
    if not lost.total:
        return
    counts = f"{lost.dropped} frame(s) dropped, {lost.repeated} repeated"
    why = "; ".join(lost.causes)
    if strict:
        raise WorkError(
            f"{literal(name)}: {counts} ({literal(why)}): repair or re-encode the input, or "
            "drop {strict} to keep the frames read",
            option=("strict", True),
        )
    if warn:
        logger.warning("%s: %s (%s): summary.json's frames_lost counts them", name, counts, why)


class FfmpegLog(threading.Thread):
    """Keeps the last lines ffmpeg prints (for error messages), and its complaints about
    the input (:meth:`damage`).

    ffmpeg runs with ``-loglevel level+warning``: each line carries its level
    (``[error]``), which is taken off the text of messages.
    """

    def __init__(self, stream: Any) -> None:
        super().__init__(name="bpvideo-ffmpeg-log", daemon=True)
        self._stream = stream
        self.lines: collections.deque[str] = collections.deque(maxlen=100)
        self.complaints: list[str] = []
        self.start()

    def run(self) -> None:
        try:
            for raw in self._stream:
                self._add(raw.decode("utf-8", "replace").rstrip("\r\n"))
        except (OSError, ValueError):
            pass  # the pipe was closed

    def _add(self, line: str) -> None:
        level = _LEVEL.search(line)
        if level is None or level.group(1) != "warning":
            self.lines.append(_LEVEL.sub("", line))
        # An error of any part; a warning of the demuxer (its contexts are named in#N).
        complaint = level is not None and (level.group(1) != "warning" or line.startswith("[in#"))
        if complaint and len(self.complaints) < 20:
            self.complaints.append(_CONTEXT.sub("", _LEVEL.sub("", line)))

    def text(self) -> str:
        """What ffmpeg printed last (errors; warnings left out)."""
        return "\n".join(self.lines)

    def damage(self) -> list[str]:
        """ffmpeg's complaints about the input (its first 20): errors, and warnings of
        the demuxer (``[in#0/mpegts @ ...] Packet corrupt``)."""
        return list(self.complaints)


#: What ffmpeg says of an input with no video stream: ``-map 0:V:0`` matches nothing, or
#: the output gets no stream (its last line, "Error opening output files: Invalid
#: argument", says neither).
NO_VIDEO = ("matches no streams", "does not contain any stream")


def failure(lines: list[str], default: str) -> str:
    """Why ffmpeg failed, in one line, from the lines of its log: ``it has no video
    stream`` when that is why, else its last line (``default`` when it said nothing)."""
    lines = [line.strip() for line in lines if line.strip()]
    if any(sign in line for line in lines for sign in NO_VIDEO):
        return "it has no video stream"
    return lines[-1] if lines else default
