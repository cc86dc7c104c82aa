"""Frames in: video files, image folders, pipes and arrays, read as a stream (the I/O layer).

Sources
-------
- Video files (mp4, avi, mkv, mov, ... anything ffmpeg decodes) are decoded by the ffmpeg
  binary that ships with ``imageio-ffmpeg``, in a separate process. OpenCV's own AVI
  demuxer was seen to corrupt the heap and kill the process on a raw-video AVI
  (``malloc_consolidate(): invalid chunk size``, OpenCV 4.14 and 5.0); a decoder crash in
  a child process is an error message instead. Their size, rate and frame count come
  from libavformat's fields (:func:`bpvideo.sources.ffmpeg.probe`), never from ffmpeg's log.
- Image folders: sorted frames (``in000001.jpg`` ...), the changedetection.net layout (a
  folder with ``input/``), or Wallflower's (``b00000.bmp`` beside other files: the largest
  group of files sharing a name prefix is taken). Each file's size is read from its
  header and checked before its pixels are decoded.
- stdin (``"-"``): raw frames, y4m or a container (:mod:`bpvideo.sources.pipes`).
- Arrays and iterables of frames (:func:`bpvideo.sources.arrays.open_frames`), for the library.

Every source is a :class:`FrameSource`: numbered uint8 BGR frames (colour is never lost),
decoded only as they are consumed. :func:`bpvideo.sources.video.video_from_frames` stacks some
of them into a data matrix with one column per frame.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import cv2
import numpy as np

from bpvideo.errors import InputError, literal
from bpvideo.limits import DEFAULT_FPS
from bpvideo.sources import ffmpeg as _ffmpeg
from bpvideo.sources.accounting import FrameLoss, clock_repeats, video_loss
from bpvideo.sources.folders import IMAGE_EXTENSIONS
from bpvideo.sources.headers import check_rate
from bpvideo.sources.pipes import open_pipe
from bpvideo.sources.probe import (
    DamagedFrame,
    VideoProbe,
    list_image_files,
    probe,
    read_frame,
    short_read_tolerance,
)
from bpvideo.sources.stream import (
    FrameSource,
    TruncatedVideoError,
    frame_size,
    resize_frame,
    resolve_selection,
    scaled_frames,
    select_frames,
    selected_count,
)

__all__ = [
    "IMAGE_EXTENSIONS",
    "FrameSource",
    "TruncatedVideoError",
    "VideoProbe",
    "check_input_name",
    "iter_frames",
    "list_image_files",
    "open_source",
    "probe",
    "resize_frame",
]

logger = logging.getLogger("bpvideo")

# OpenCV logs its own decoder complaints ("IHDR chunk shall be first") straight to fd 2;
# bpvideo reports an unreadable image itself, in one line that names the file.
if hasattr(cv2, "utils") and hasattr(cv2.utils, "logging"):
    cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_FATAL)


def iter_frames(
    path: str | os.PathLike,
    *,
    start: int = 0,
    frames: int | None = None,
    step: int = 1,
    info: VideoProbe | None = None,
    decoder: Iterator[bytes] | None = None,
    times: dict[int, float] | None = None,
    skipped: list[tuple[str, str]] | None = None,
    lost: FrameLoss | None = None,
) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(frame_number, bgr_uint8_frame)`` for the selected frames of a source.

    Parameters
    ----------
    path : str or path-like
        A video file or an image folder.
    start, frames, step
        Frame selection: frames ``start, start + step, ...``, at most ``frames`` of them.
    info : VideoProbe, optional
        A probe of ``path`` already made.
    decoder : iterator of bytes, optional
        An ffmpeg decoding ``path`` from its first frame, already started
        (:func:`bpvideo.sources.ffmpeg.decode`); closed with this iterator.
    times : dict, optional
        Filled with the seconds of each frame yielded, by frame number (see
        :attr:`FrameSource.times`).
    skipped : list, optional
        Given: damaged frame files of a folder are skipped and listed here as ``(name,
        why)`` (else :class:`DamagedFrame` is raised).
    lost : FrameLoss, optional
        Counts the frames dropped or repeated (:mod:`bpvideo.sources.accounting`): a video's
        once it is read to its end, a folder's damaged frames as they are skipped.

    Yields
    ------
    (int, (H, W, 3) uint8 ndarray)
        Frame number and frame.

    Raises
    ------
    InputError
        For frames that cannot be read, or of a different size than the first.
    TruncatedVideoError
        When decoding fails part-way, or the video ends more than
        :func:`short_read_tolerance` frames before the count its container announces;
        the message names the frame. The frames before it have been yielded.
    """
    p = Path(path)
    info = info or probe(p)
    lost = lost if lost is not None else FrameLoss()
    if info.kind == "folder":
        yield from _folder_frames(info, (start, frames, step), times, skipped, lost)
        return
    w, h = info.width, info.height
    gen = decoder if decoder is not None else _ffmpeg.decode(p, w, h, references=info.references)
    count, index = 0, -1
    try:
        while frames is None or count < frames:
            try:
                buf = next(gen, None)
            except RuntimeError as exc:
                raise _decode_failure(p, exc, index + 1, info.frame_count) from None
            if buf is None:  # the end of the stream
                if index < 0:
                    raise _undecodable(p, "no frame could be decoded")
                _check_length(p, info, index + 1)  # a truncation: counted by its reader
                _account(p, info, index + 1, gen, lost)
                break
            index += 1
            if index < start or (index - start) % step:
                continue
            count += 1
            if times is not None:
                t = gen.times.time(index) if hasattr(gen, "times") else None
                times[index] = index / info.fps if t is None else t
            yield index, np.frombuffer(buf, dtype=np.uint8).reshape(h, w, 3)
    finally:
        gen.close()


def _folder_frames(
    info: VideoProbe,
    selection: tuple[int, int | None, int],
    times: dict[int, float] | None,
    skipped: list[tuple[str, str]] | None,
    lost: FrameLoss,
) -> Iterator[tuple[int, np.ndarray]]:
    """:func:`iter_frames` of a folder: its selected frame files, read one by one."""
    start, frames, step = selection
    numbers = dict(zip(info.files, info.numbers, strict=True))
    selected = info.files[start::step]
    if frames is not None:
        selected = selected[:frames]
    for k, file in enumerate(selected):
        try:
            frame = read_frame(file, info.width, info.height)
        except DamagedFrame as exc:
            if skipped is None:
                raise
            logger.warning("%s: %s: skipped", file, exc.why)
            skipped.append((file.name, exc.why))
            lost.add(f"{file.name}: {exc.why}, skipped (allow_partial)", dropped=1)
            continue
        if times is not None:
            times[numbers[file]] = (start + k * step) / info.fps
        yield numbers[file], frame


def _account(
    path: Path, info: VideoProbe, decoded: int, gen: Iterator[bytes], lost: FrameLoss
) -> None:
    """Count the frames of a video read to its end that were lost or repeated
    (:func:`~bpvideo.sources.accounting.video_loss`); log a jump of its clock."""
    seconds = list(getattr(getattr(gen, "times", None), "seconds", []))
    repeated, jumped = clock_repeats(str(path), seconds)
    lost.add(f"{repeated} with the time of the frame before", repeated=repeated)
    damage = gen.damage() if hasattr(gen, "damage") else []
    announced = info.frame_count  # a duration x rate: less the time the clock jumped
    if announced is not None and jumped:
        announced = max(announced - round(jumped * info.fps), 0)
    if damage or announced is None or decoded < announced:  # else the count is whole
        pictures = _ffmpeg.packets_of(path, info.references)
        dropped, why = video_loss(decoded, announced, pictures, damage)
        lost.add(f"{dropped}: {why}", dropped=dropped)
        if damage and not dropped:
            logger.warning("%s: ffmpeg reported damage it concealed (%s): no frame was lost",
                           path, damage[0])  # fmt: skip


def _check_length(path: Path, info: VideoProbe, decoded: int) -> None:
    """Refuse a video whose data end well before the frame count its container announces."""
    expected = _short(path, info, decoded)
    if expected is not None:
        raise TruncatedVideoError(
            f"{literal(path)}: only {decoded} of the {expected} frames its header announces could "
            f"be decoded (truncated or damaged after frame {decoded}): repair or re-encode it, "
            "or pass {allow_partial=True} to keep the frames read",
            decoded,
            expected,
        )


def _decode_failure(
    path: Path, exc: RuntimeError, decoded: int, expected: int | None
) -> InputError:
    """The error of ffmpeg failing after ``decoded`` frames: undecodable, or truncated."""
    detail = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]
    detail = detail.replace(_ffmpeg.file_url(path), "the file")
    if decoded == 0:
        return _undecodable(path, detail)
    return TruncatedVideoError(
        f"{literal(path)}: decoding failed at frame {decoded} after {decoded} frame(s) were "
        f"decoded ({literal(detail)}): the file is damaged; re-encode it, use {{frames}} to "
        "stop before the damage, or pass {allow_partial=True} to keep the frames read",
        decoded,
        expected,
    )


def _short(path: Path, info: VideoProbe, decoded: int) -> int | None:
    """The frame count a video that gave ``decoded`` frames falls short of, or None when
    its data reach the length its container announces.

    The container announces a duration (its frame count is often duration x rate): a
    variable frame rate, or audio that outlasts the video, announces more frames than
    the video holds. Only data that end before the announced length are a truncation.
    Matroska's Duration is the end of its last frame, from time 0: a recording whose
    clock started long before it (ffmpeg ``-copyts`` of a stream) counts that start in
    its length, so the frames of data that start later than they last are counted from
    their start.
    """
    expected = info.frame_count
    if expected is None or expected - decoded <= short_read_tolerance(expected):
        return None
    bounds = _ffmpeg.data_bounds_of(path, info.references)
    if bounds is not None:
        start, span = bounds
        if span < start < expected / info.fps:
            expected = max(round(expected - start * info.fps), 1)
        if span >= (expected - short_read_tolerance(expected)) / info.fps:
            logger.info(
                "%s: %d frames, not the %d its container announces (its frame rate varies, "
                "other streams last longer, or its clock starts late): every frame was read",
                path, decoded, info.frame_count,
            )  # fmt: skip
            return None
    return expected


def _timed(
    frames: Iterator[tuple[int, np.ndarray]], times: dict[int, float], rate: float
) -> Iterator[tuple[int, np.ndarray]]:
    """``frames`` (numbered by position), their times (``number / rate``) put in ``times``."""
    for number, frame in frames:
        times[number] = number / rate
        yield number, frame


def check_input_name(path: str | os.PathLike) -> None:
    """Refuse an empty INPUT (``Path("")`` is the current folder, which was not asked for)."""
    if not str(path).strip():
        raise InputError("INPUT is an empty name: give a video file, a folder of frames or -")


def _undecodable(path: Path, detail: str) -> InputError:
    return InputError(
        f"{literal(path)}: cannot be decoded as a video ({literal(detail)}): check the file, or "
        "re-encode it with ffmpeg -i IN -c:v libx264 OUT.mp4"
    )


def open_source(
    path: str | os.PathLike,
    *,
    start: int | str = 0,
    frames: int | None = None,
    end: int | str | None = None,
    duration: int | str | None = None,
    step: int = 1,
    scale: float = 1.0,
    fps: float | None = None,
    size: tuple[int, int] | None = None,
    pix_fmt: str = "gray",
    stdin: BinaryIO | None = None,
    allow_partial: bool = False,
    allow_references: bool = False,
    strict: bool = False,
) -> FrameSource:
    """Open a video file, image folder or stdin (``"-"``) as a :class:`FrameSource`.

    Nothing but the header is read: frames are decoded as the iterator is consumed, so
    only the frames a caller keeps are in memory (as uint8).

    Parameters
    ----------
    path : str or path-like
        Video file, image folder, or ``"-"`` for stdin (raw frames when ``size`` is given,
        else y4m or any container ffmpeg can read from a pipe, see
        :func:`~bpvideo.sources.pipes.open_pipe`).
    start, frames, step : int
        Frame selection: frames ``start, start + step, ...``, at most ``frames`` of them.
        ``start`` may be a time (``"90s"``, ``"00:01:30"``).
    end, duration : int or str, optional
        Where to stop instead of ``frames`` (see
        :func:`~bpvideo.sources.stream.resolve_selection`). Times are converted with the
        input's frame rate; inputs without one (folders, raw stdin) use ``fps``, else 25.
    scale : float
        Resize factor.
    fps : float, optional
        Frame rate override (raw stdin has none: 25 by default).
    size : (width, height), optional
        Size of raw frames on stdin.
    pix_fmt : {"gray", "bgr24"}
        Pixel format of raw frames on stdin.
    stdin : binary file, optional
        Stream to read instead of ``sys.stdin.buffer`` (tests).
    allow_partial : bool, default False
        On a truncated or damaged video, end the stream at the damage (and set
        ``source.partial``) instead of raising :class:`TruncatedVideoError`.
    allow_references : bool, default False
        Read a playlist or list of other files (HLS, ffconcat...: refused otherwise).
    strict : bool, default False
        Raise :class:`~bpvideo.errors.WorkError` at the end of the frames when any was
        dropped or repeated (``source.lost``, :mod:`bpvideo.sources.accounting`).

    Returns
    -------
    FrameSource

    Raises
    ------
    InputError
        Missing or undecodable input (before any frame is consumed).
    """
    selection = (start, frames, end, duration, step)
    if str(path) == "-":
        stream = stdin if stdin is not None else sys.stdin.buffer
        raw = (size, pix_fmt, fps, scale)
        source, selected, (start, frames) = _open_stdin(stream, selection, raw)
    else:
        allow = (allow_partial, allow_references)
        source, selected, (start, frames) = _open_path(path, selection, scale, fps, allow)
    w, h = source.width, source.height
    source.start = start
    source.width, source.height = frame_size(w, h, scale, source.name)
    resize = 1.0 if str(path) == "-" else scale  # stdin's frames are scaled as read
    source.frames = scaled_frames(source, selected, resize, (allow_partial, strict),
                                  (start, frames, step))  # fmt: skip
    return source


def _open_stdin(
    stream: BinaryIO,
    selection: tuple[int | str, int | None, int | str | None, int | str | None, int],
    raw_options: tuple[tuple[int, int] | None, str, float | None, float],
) -> tuple[FrameSource, Iterator[tuple[int, np.ndarray]], tuple[int, int | None]]:
    """:func:`open_source` of stdin: the source, its selected frames (timed at the
    stream's rate, scaled as read), ``(start, frames)``; ``raw_options``: ``size``,
    ``pix_fmt``, ``fps``, ``scale``."""
    start, frames, end, duration, step = selection
    size, pix_fmt, fps, scale = raw_options
    raw, w, h, rate = open_pipe(stream, size=size, pix_fmt=pix_fmt, fps=fps, step=step,
                                scale=scale)  # fmt: skip
    native = fps if fps is not None else (rate if size is not None else rate * step)
    first, count = resolve_selection(start, frames, end, duration, step, native)
    source = FrameSource("stdin", w, h, float(rate), None, (w, h), iter(()))
    selected = _timed(select_frames(raw, first, count, step), source.times, native)
    return source, selected, (first, count)


def _open_path(
    path: str | os.PathLike,
    selection: tuple[int | str, int | None, int | str | None, int | str | None, int],
    scale: float,
    fps: float | None,
    allow: tuple[bool, bool],
) -> tuple[FrameSource, Iterator[tuple[int, np.ndarray]], tuple[int, int | None]]:
    """:func:`open_source` of a file or folder: the source, its selected frames (decoding
    started for a video), ``(start, frames)``; ``allow``: partial, references."""
    start, frames, end, duration, step = selection
    allow_partial, allow_references = allow
    check_input_name(path)
    info = probe(path, allow_references)
    w, h = info.width, info.height
    frame_size(w, h, scale, str(path))  # before ffmpeg decodes frames of that size
    native = info.fps if info.kind == "video" or fps is None else fps
    first, count = resolve_selection(start, frames, end, duration, step, native)
    rate = fps if fps is not None else (check_rate(info.fps, str(path), fps) or DEFAULT_FPS) / step
    expected = selected_count(info.frame_count, first, count, step)
    source = FrameSource(str(path), w, h, float(rate), expected, (w, h), iter(()),
                         numbering=info.numbering, total_frames=info.frame_count)  # fmt: skip
    decoder = None
    if info.kind == "video":
        decoder = _ffmpeg.decode(path, w, h, references=allow_references)
    source.skipped = list(info.skipped)
    selected = iter_frames(path, start=first, frames=count, step=step, info=info,
                           decoder=decoder, times=source.times,
                           skipped=source.skipped if allow_partial else None,
                           lost=source.lost)  # fmt: skip
    if decoder is not None:  # closed by close() even when no frame is read
        source._decoder = decoder
    return source, selected, (first, count)
