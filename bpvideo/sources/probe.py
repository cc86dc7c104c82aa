"""What a source is before it is read (:func:`probe`): a video's size, rate and frame
count from libavformat's fields, a folder's frame files by the one folder rule; and the
reading of one frame file of a folder."""

from __future__ import annotations

import logging
import math
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bpvideo.errors import InputError, literal
from bpvideo.limits import DEFAULT_FPS, MAX_NAME_NUMBER
from bpvideo.sources import ffmpeg as _ffmpeg
from bpvideo.sources.folders import IMAGE_EXTENSIONS, decode_frame, scan_folder
from bpvideo.sources.headers import image_size, video_container
from bpvideo.sources.stream import frame_size

__all__ = [
    "DamagedFrame",
    "VideoProbe",
    "list_image_files",
    "probe",
    "read_frame",
    "short_read_tolerance",
]

logger = logging.getLogger("bpvideo")

_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)$")


@dataclass
class VideoProbe:
    """What is known about a source before reading it.

    Attributes
    ----------
    kind : {"video", "folder"}
    width, height : int
        Frame size before scaling.
    fps : float
        Native frame rate.
    frame_count : int or None
        Frames expected (None when the container does not say).
    files : list of Path
        The frame files of an image folder (empty for videos).
    numbers : list of int
        Frame number of each file of a folder: the number at the end of its name, or its
        0-based position when the names do not number the frames one to one.
    numbering : {"index", "name"}
        Where the frame numbers come from (see :attr:`FrameSource.numbering`).
    """

    kind: str
    width: int
    height: int
    fps: float
    frame_count: int | None
    files: list[Path] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    numbering: str = "index"
    references: bool = False
    skipped: list[tuple[str, str]] = field(default_factory=list)


def short_read_tolerance(expected: int) -> int:
    """Frames a video may fall short of its announced count without being an error.

    Containers announce a duration, not a frame count: ``round(duration * fps)`` is often
    one frame more than the frames there are (AVI files of ../shared/data: 200 announced,
    199 decoded). Shortfalls above ``max(2, 1 %)`` are reported as truncation.
    """
    return max(2, math.ceil(0.01 * expected))


def _natural_key(path: Path) -> tuple[str, int, str]:
    match = _TRAILING_NUMBER.match(path.stem)
    if match:
        return (match.group(1), int(match.group(2)), path.suffix.lower())
    return (path.stem, -1, path.suffix.lower())


def list_image_files(folder: Path) -> list[Path]:
    """Frame files of an image folder, in frame order (the rule of
    :mod:`bpvideo.sources.folders`: ``input/`` when it holds images, hidden and other files
    skipped, the largest group of names of one pattern, in the order of their numbers).

    Parameters
    ----------
    folder : Path
        The folder.

    Returns
    -------
    list of Path
    """
    return scan_folder(folder).files


def _file_numbers(files: list[Path]) -> tuple[list[int], str]:
    """Frame numbers of a folder's files and their origin (``"name"`` or ``"index"``)."""
    numbers = [_natural_key(p)[1] for p in files]
    if (
        min(numbers, default=0) >= 0
        and max(numbers, default=0) <= MAX_NAME_NUMBER
        and len(set(numbers)) == len(numbers)
    ):
        return numbers, "name"
    return list(range(len(files))), "index"


def _video_info(path: Path, references: bool = False) -> VideoProbe:
    """The :class:`VideoProbe` of a video file (libavformat's fields, see
    :func:`bpvideo.sources.ffmpeg.probe`)."""
    try:
        found = _ffmpeg.probe(path, references)
    except _ffmpeg.ReferencesError as exc:
        kind = f" ({exc.demuxer})" if exc.demuxer else ""
        raise InputError(
            f"{literal(path)}: is a playlist or a list of other files{kind}, which would make "
            "ffmpeg read the files it names: give a video file, or pass {allow_references} "
            "if you trust the list",
            option=("allow_references", True),
        ) from None
    except OSError as exc:
        raise InputError(
            f"{path}: cannot be decoded as a video ({exc}): check the file, or re-encode it "
            "with ffmpeg -i IN -c:v libx264 OUT.mp4"
        ) from None
    fps = DEFAULT_FPS if found.fps is None else found.fps
    return VideoProbe("video", found.width, found.height, fps, found.frame_count,
                      references=references)  # fmt: skip


def read_frame(file: Path, width: int, height: int) -> np.ndarray:
    """One frame file of a folder, decoded once its header says it has the folder's size."""
    size = image_size(file)
    if size is None:
        raise DamagedFrame(file, "cannot be read as an image")
    if sorted(size) != sorted((width, height)):  # (the EXIF orientation may turn it)
        raise _other_size(file, *size, width, height)
    image, why = decode_frame(file)
    if image is None:
        raise DamagedFrame(file, why or "cannot be read as an image")
    if image.shape[:2] != (height, width):
        raise _other_size(file, image.shape[1], image.shape[0], width, height)
    return image


class DamagedFrame(InputError):
    """A frame file of a folder that cannot be decoded, or is cut short."""

    def __init__(self, file: Path, why: str) -> None:
        super().__init__(
            f"{literal(file)}: {literal(why)}: remove or replace it, or pass "
            "{allow_partial=True} to skip damaged frames",
            option=("allow_partial", True),
        )
        self.file, self.why = file, why


def _other_size(file: Path, w: int, h: int, width: int, height: int) -> InputError:
    return InputError(
        f"{file}: frame is {w}x{h} but the first frame is {width}x{height}: all frames of a "
        "folder must have one size"
    )


def probe(path: str | os.PathLike, references: bool = False) -> VideoProbe:
    """Find the kind, size, frame rate and length of a source without decoding it all.

    Parameters
    ----------
    path : str or path-like
        A video file or an image folder.
    references : bool, default False
        Allow a playlist or list of files (see :data:`bpvideo.sources.ffmpeg.REFERENCING`).

    Returns
    -------
    VideoProbe

    Raises
    ------
    InputError
        If the path is missing, empty, or not a video or image folder.
    """
    p = Path(path)
    try:
        p.stat()
    except FileNotFoundError:
        raise InputError(f"{p}: no such file or folder: check the path") from None
    except (OSError, ValueError) as exc:  # a name too long, a loop of links, a NUL...
        why = getattr(exc, "strerror", None) or str(exc)
        raise InputError(f"{p}: cannot be opened ({why}): check the path") from None
    if p.is_dir():
        scan = scan_folder(p)
        files = scan.files
        if not files:
            raise InputError(
                f"{p}: folder holds no image frames ({', '.join(sorted(IMAGE_EXTENSIONS))}): "
                "give a video file or a folder of frames"
            )
        size = image_size(files[0])
        if size is None:
            raise InputError(f"{files[0]}: cannot be read as an image: remove or replace it")
        try:
            first = read_frame(files[0], *frame_size(*size, 1.0, str(files[0])))
        except DamagedFrame as exc:  # the first frame sets the size: no skipping it
            why = f"{literal(exc.file)}: {literal(exc.why)}: remove or replace it"
            raise InputError(why) from None
        h, w = first.shape[:2]
        numbers, numbering = _file_numbers(files)
        if scan.skipped:
            logger.info("%s: %d frames named %s; skipped %s", scan.folder, len(files),
                        scan.pattern, scan.summary())  # fmt: skip
        return VideoProbe("folder", w, h, DEFAULT_FPS, len(files), files, numbers,
                          numbering, skipped=list(scan.skipped))  # fmt: skip
    _check_file(p)
    return _video_info(p, references)


def _check_file(p: Path) -> None:
    """Refuse what is not a video file before ffmpeg is asked: a pipe or a device (read
    once, by the probe), an empty file, a single image (by its content, not its name: a
    video named ``.jpg`` is a video).

    Raises
    ------
    InputError
        Naming what the path is and what to give instead.
    """
    mode = p.stat().st_mode
    if not stat.S_ISREG(mode):
        what = (
            "a pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
        )
        raise InputError(
            f"{literal(p)}: is {what}, not a file, and a video is read from a path twice (its "
            "probe, then its frames): give - to read stdin (bpvideo separate - < clip.mp4), "
            "or save the stream to a file first"
        )
    if p.stat().st_size == 0:
        raise InputError(f"{literal(p)}: file is empty: give a video file with frames in it")
    if not video_container(p) and image_size(p) is not None:
        raise InputError(
            f"{literal(p)}: is a single image, but separation needs many frames: give a video "
            "or a folder of frames"
        )
