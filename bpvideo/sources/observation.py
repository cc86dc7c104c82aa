"""The observation mask Omega: which pixels of which frames are observed (True).

From a file (``--mask``: one image for every frame, or a video/folder with one mask per
frame, non-zero = observed) or drawn at random (``--observe P``: the paper's partial
observation).
"""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np

from bpvideo.errors import InputError, literal
from bpvideo.records import Video
from bpvideo.sources.files import IMAGE_EXTENSIONS, iter_frames, resize_frame
from bpvideo.sources.headers import read_image

__all__ = ["load_observation_mask", "random_observation"]


def load_observation_mask(
    path: str | os.PathLike,
    video: Video,
    *,
    native_size: tuple[int, int],
    start: int = 0,
    step: int = 1,
    scale: float = 1.0,
) -> np.ndarray:
    """Load an observation mask for ``video``: True where a pixel is observed.

    Parameters
    ----------
    path : str or path-like
        One image (applied to every frame) or a video/folder with one mask per frame
        (the same ``start``/``step`` selection as the frames is applied). Non-zero pixels
        are observed.
    video : Video
        The frames the mask belongs to.
    native_size : (width, height)
        Frame size of the source before scaling: the mask must have this size.
    start, step, scale
        The selection and scaling used to read ``video``.

    Returns
    -------
    (m, n) bool ndarray
        Same shape as ``video.data``.

    Raises
    ------
    InputError
        If the mask cannot be read, has the wrong size or too few frames, or observes
        nothing.
    """
    p = Path(path)
    if not p.exists():
        raise InputError(
            f"{literal(p)}: mask not found: check the {{mask}} path", option=("mask", str(p))
        )
    w0, h0 = native_size

    def prepare(image: np.ndarray, where: str) -> np.ndarray:
        if image.shape[:2] != (h0, w0):
            raise InputError(
                f"{where}: mask is {image.shape[1]}x{image.shape[0]} but frames are {w0}x{h0}: "
                "give a mask of the frame size"
            )
        if image.ndim == 3:
            image = image.max(axis=2)
        observed = resize_frame((image != 0).astype(np.uint8), scale, cv2.INTER_NEAREST) != 0
        if len(video.frame_shape) == 3:
            observed = np.repeat(observed[:, :, None], video.frame_shape[2], axis=2)
        return observed.reshape(-1)

    n = video.n_frames
    if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS:
        image = read_image(p, cv2.IMREAD_UNCHANGED)
        if image is None:
            raise InputError(f"{p}: mask cannot be read as an image: give a PNG or BMP mask")
        column = prepare(image, str(p))
        mask = np.repeat(column[:, None], n, axis=1)
    else:
        mask = np.empty(video.data.shape, dtype=bool)
        got = 0
        for got, (_, frame) in enumerate(iter_frames(p, start=start, frames=n, step=step), start=1):
            mask[:, got - 1] = prepare(frame, f"{p} frame {got}")
        if got < n:
            raise InputError(
                f"{literal(p)}: mask has {got} frame(s) after {{start}}/{{step}} but the video has "
                f"{n}: give one mask per frame, or a single mask image",
                option=("mask", str(p)),
            )
    if not mask.any():
        raise InputError(f"{p}: mask observes no pixel (all zero): non-zero marks observed pixels")
    return mask


def random_observation(shape: tuple[int, int], fraction: float, seed: int = 0) -> np.ndarray:
    """A uniform random observation mask keeping ``fraction`` of the entries.

    Parameters
    ----------
    shape : (m, n)
        Matrix shape.
    fraction : float
        Probability that an entry is observed, in (0, 1].
    seed : int
        Random seed (repeatable masks).

    Returns
    -------
    (m, n) bool ndarray
    """
    rng = np.random.default_rng(seed)
    mask = rng.random(shape, dtype=np.float32) < fraction
    if not mask.any():
        mask.flat[rng.integers(mask.size)] = True
    return mask
