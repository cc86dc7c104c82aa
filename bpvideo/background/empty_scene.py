"""A given empty scene (``background_from=IMAGE`` or ``START:END``), as a data column.

By default bpvideo finds the empty scene itself, from each pixel's still frames
(:mod:`bpvideo.background.reference`). An operator who knows better gives it: a picture of
the empty scene, or the frames of the input where nothing is there. The scene becomes the
reference background of the first window (and stays it, window after window, except
where a lasting change is absorbed, see ``absorb``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from bpvideo.errors import InputError, literal
from bpvideo.settings import SeparateSettings, is_span, parse_span
from bpvideo.sources.arrays import open_frames
from bpvideo.sources.files import FrameSource, open_source
from bpvideo.sources.headers import image_size, read_image
from bpvideo.still import Still

__all__ = [
    "as_column",
    "given_scene",
    "image_scene",
    "reopen_array",
    "reopen_file",
    "span_scene",
]


def as_column(image: np.ndarray, gray: bool) -> np.ndarray:
    """An (H, W, 3) BGR image as a column of the data matrix: grey levels (H*W,) or B, G, R
    interleaved per pixel (3*H*W,), float32."""
    if gray:
        image = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    return np.asarray(image, dtype=np.float32).reshape(-1)


def image_scene(
    path: str | os.PathLike,
    *,
    width: int,
    height: int,
    native_size: tuple[int, int],
    gray: bool,
) -> np.ndarray:
    """The empty scene from a picture of it.

    Parameters
    ----------
    path : str or path-like
        An image file, of the frames' size before ``scale`` (``native_size``) or after it
        (``width`` x ``height``).
    width, height : int
        Frame size after ``scale``.
    native_size : (int, int)
        Frame size before ``scale``.
    gray : bool
        Grey-level data (else B, G, R stacked).

    Returns
    -------
    (m,) float32 ndarray

    Raises
    ------
    InputError
        Missing or unreadable image, or another size than the frames'.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(
            f"{literal(p)}: no such image: give a picture of the empty scene, START:END frames of "
            "the input, or {background_from='auto'}",
            option=("background_from", str(path)),
        )
    # The size from the header first: a picture of another size is never decoded (the
    # EXIF orientation may turn it, hence sorted).
    size = image_size(p)
    fits = size is not None and sorted(size) in (sorted(native_size), sorted((width, height)))
    image = read_image(p, cv2.IMREAD_COLOR) if fits else None
    if size is None or (fits and image is None):
        raise InputError(
            f"{p}: cannot be read as an image: give a PNG or JPEG of the empty scene",
            option=("background_from", str(path)),
        )
    if image is not None:
        size = (image.shape[1], image.shape[0])
    if image is not None and size == tuple(native_size) and size != (width, height):
        image = cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)
    elif image is None or size != (width, height):
        raise InputError(
            f"{p}: the empty scene is {size[0]}x{size[1]} but the frames are "
            f"{native_size[0]}x{native_size[1]}: give a picture of the camera's frame size",
            option=("background_from", str(path)),
        )
    return as_column(image, gray)


def span_scene(frames: Iterable[np.ndarray], *, gray: bool, what: str) -> np.ndarray:
    """The empty scene from frames where it is empty: their per-pixel median (of at most
    64 evenly spaced ones).

    Parameters
    ----------
    frames : iterable of (H, W, 3) uint8 ndarray
        BGR frames.
    gray : bool
        Grey-level data (else B, G, R stacked).
    what : str
        The frames, for the message when there are none.

    Returns
    -------
    (m,) float32 ndarray
    """
    still = Still()
    for frame in frames:
        still.add(frame[None])
    if not still.kept:
        raise InputError(
            f"{what}: no frames there: {{background_from}} START:END must select frames of "
            "the input",
            option=("background_from", what),
        )
    return as_column(still.median(), gray)


def given_scene(
    settings: SeparateSettings,
    source: FrameSource,
    reopen: Callable[[int, int | None], FrameSource] | None,
) -> np.ndarray | tuple[int, int | None] | None:
    """The given empty scene of ``background_from``: a data column, or the span of the
    first window to take it from (a stream ``reopen`` cannot read twice); None for
    ``auto``/``none``."""
    spec = settings.background_from
    if spec in ("auto", "none"):
        return None
    if not is_span(spec):
        return image_scene(spec, width=source.width, height=source.height,
                           native_size=source.native_size, gray=settings.gray)  # fmt: skip
    span = parse_span(spec, "background_from")
    if reopen is None:
        return span
    part = reopen(*span)
    try:
        return span_scene((f for _, f in part.frames), gray=settings.gray, what=spec)
    finally:
        part.close()


def _selection(settings: SeparateSettings, start: int, end: int | None) -> dict[str, Any]:
    """Frames ``start:end`` of the input (0-based, ``end`` excluded; ``step`` and ``scale``
    as for the frames separated), as ``--learn`` reads them."""
    count = None if end is None else max(0, -(-(end - start) // settings.step))
    return {"start": start, "step": settings.step, "scale": settings.scale, "count": count}


def reopen_array(frames: Any, settings: SeparateSettings):
    """Frames ``start:end`` of an array again (None for an iterable read once)."""
    if not isinstance(frames, np.ndarray):
        return None

    def reopen(start: int, end: int | None) -> FrameSource:
        sel = _selection(settings, start, end)
        return open_frames(frames, start=sel["start"], count=sel["count"], step=sel["step"],
                           scale=sel["scale"], fps=settings.fps)  # fmt: skip

    return reopen


def reopen_file(input: str, settings: SeparateSettings):
    """Frames ``start:end`` of a file again (None for stdin)."""
    if input == "-":
        return None

    def reopen(start: int, end: int | None) -> FrameSource:
        sel = _selection(settings, start, end)
        return open_source(input, start=sel["start"], frames=sel["count"], step=sel["step"],
                           scale=sel["scale"], fps=settings.fps,
                           allow_references=settings.allow_references)  # fmt: skip

    return reopen
