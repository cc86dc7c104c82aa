"""The reported region of ``--roi`` / ``--exclude``, with its mask images read.

The specs are parsed and polygons rasterised by :mod:`bpvideo.events.regions`; this
module reads the mask images (non-zero inside), of the input's size or of the masks'.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import cv2
import numpy as np

from bpvideo.errors import InputError, literal
from bpvideo.events.regions import region_of
from bpvideo.sources.headers import read_image

__all__ = ["apply_region", "region_mask"]


def _reader(shape: tuple[int, int], scale: float) -> Callable[[str, str], np.ndarray]:
    h, w = shape

    def read(path: str, name: str) -> np.ndarray:
        image = read_image(path, cv2.IMREAD_UNCHANGED)
        if image is None:
            raise InputError(
                f"{literal(path)}: {{{name}}} is neither a polygon 'x1,y1 x2,y2 x3,y3 ...' nor "
                "an image that can be read: check the path",
                option=(name, path),
            )
        if image.ndim == 3:
            image = image.max(axis=2)
        native = (round(h / scale), round(w / scale))
        if image.shape[:2] not in ((h, w), native):
            raise InputError(
                f"{literal(path)}: the {{{name}}} image is {image.shape[1]}x{image.shape[0]} but "
                f"the frames are {native[1]}x{native[0]}: give an image of the frame size",
                option=(name, path),
            )
        inside = (image != 0).astype(np.uint8)
        if inside.shape != (h, w):
            inside = cv2.resize(inside, (w, h), interpolation=cv2.INTER_NEAREST)
        return inside.astype(bool)

    return read


@functools.lru_cache(maxsize=8)
def _cached(
    rois: tuple[str, ...], excludes: tuple[str, ...], shape: tuple[int, int], scale: float
) -> np.ndarray | None:
    region = region_of(rois, excludes, shape, _reader(shape, scale), scale)
    if region is not None:
        region.setflags(write=False)
    return region


def region_mask(
    rois: Sequence[str], excludes: Sequence[str], shape: tuple[int, int], scale: float = 1.0
) -> np.ndarray | None:
    """(H, W) bool: where foreground is reported, None when everywhere.

    Parameters
    ----------
    rois, excludes : sequence of str
        Region specs (``--roi``, ``--exclude``): polygons or mask image paths.
    shape : (int, int)
        ``(H, W)`` of the masks.
    scale : float, default 1
        Masks' size over the input's (``--scale``).

    Raises
    ------
    InputError
        A spec that is neither a polygon nor an image, an image of another size.
    """
    return _cached(tuple(rois), tuple(excludes), tuple(shape), float(scale))  # type: ignore[arg-type]


def apply_region(masks: np.ndarray, rois: Sequence[str], excludes: Sequence[str],
                 scale: float = 1.0) -> np.ndarray:  # fmt: skip
    """``masks`` (k, H, W) bool, cleared outside the reported region (in place)."""
    region = region_mask(rois, excludes, masks.shape[1:3], scale)
    if region is not None:
        masks &= region
    return masks
