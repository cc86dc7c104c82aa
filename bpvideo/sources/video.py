"""The frames of a window as a data matrix (:class:`Video`), and whole clips read at once.

The pipeline holds each window's frames as uint8 (frames, grey planes and the pixels x
frames matrix); the solvers get a float32 copy when they run on it. :func:`read_video`
reads a whole clip into one :class:`Video` (tests, benchmarks, small clips).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import cv2
import numpy as np

from bpvideo.limits import DEFAULT_FPS
from bpvideo.records import Video
from bpvideo.sources.files import open_source

__all__ = ["read_video", "video_from_frames"]


def video_from_frames(
    chunk: Sequence[tuple[int, np.ndarray]],
    *,
    gray: bool = True,
    fps: float = DEFAULT_FPS,
    source: str = "",
    dtype: type = np.uint8,
) -> Video:
    """The :class:`Video` of some numbered frames.

    Parameters
    ----------
    chunk : sequence of (int, (H, W, 3) uint8 ndarray)
        Frame numbers and BGR frames, in order.
    gray : bool, default True
        Grey-level matrix (m = H*W) or colour (m = 3*H*W, B, G, R interleaved per pixel).
    fps : float
        Frame rate.
    source : str
        Where the frames came from.
    dtype : numpy dtype, default uint8
        Type of the data matrix (the pixels are integers: uint8 loses nothing).

    Returns
    -------
    Video
        With ``planes`` (the grey or BGR frames one after another) kept.
    """
    stack = np.stack([frame for _, frame in chunk])
    if gray:
        planes = np.stack([cv2.cvtColor(f, cv2.COLOR_BGR2GRAY) for f in stack])
    else:
        planes = stack
    flat = planes.reshape(planes.shape[0], -1)
    if max(flat.shape) < 2**31:  # transpose the uint8 frames (OpenCV)
        data = cv2.transpose(flat)
    else:  # pragma: no cover
        data = np.ascontiguousarray(flat.T)
    return Video(
        data=data if data.dtype == dtype else data.astype(dtype),
        frames=stack,
        frame_shape=planes.shape[1:],
        fps=fps,
        source=source,
        frame_numbers=[number for number, _ in chunk],
        planes=planes,
    )


def read_video(
    path: str | os.PathLike,
    *,
    start: int = 0,
    frames: int | None = None,
    step: int = 1,
    scale: float = 1.0,
    gray: bool = True,
    fps: float | None = None,
    dtype: type = np.float32,
    allow_partial: bool = False,
) -> Video:
    """Read a video file or image folder into a :class:`Video` matrix.

    Parameters
    ----------
    path : str or path-like
        Video file or image folder.
    start : int, default 0
        First frame (0-based).
    frames : int, optional
        Read at most this many frames.
    step : int, default 1
        Keep every ``step``-th frame.
    scale : float, default 1.0
        Resize factor applied to every frame.
    gray : bool, default True
        Grey-level matrix (m = H*W) or colour (m = 3*H*W, B, G, R interleaved per pixel).
    fps : float, optional
        Override the frame rate.
    dtype : numpy dtype, default float32
        Type of the data matrix.
    allow_partial : bool, default False
        Keep the frames decoded before a video turned out truncated or damaged (a warning
        is logged and the result has ``partial=True``) instead of raising.

    Returns
    -------
    Video

    Raises
    ------
    InputError
        If the source is missing, unreadable, or yields no frames.
    WorkError
        If decoding fails part-way.
    """
    source = open_source(path, start=start, frames=frames, step=step, scale=scale, fps=fps,
                         allow_partial=allow_partial)  # fmt: skip
    try:
        chunk = list(source.frames)
    finally:
        source.close()
    if not chunk:
        raise source.nothing_selected(start, step)
    video = video_from_frames(chunk, gray=gray, fps=source.fps, source=str(path), dtype=dtype)
    video.planes = None
    video.partial, video.frames_expected = source.partial, source.frames_expected
    return video
