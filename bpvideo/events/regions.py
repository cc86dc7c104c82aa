"""Regions of the picture where foreground is reported (``--roi``, ``--exclude``).

A region spec is a polygon ``"x1,y1 x2,y2 x3,y3 ..."`` in pixels of the input, or the
path of a mask image (non-zero inside). Specs are parsed here and polygons rasterised;
mask images are read by the caller (:mod:`bpvideo.sources.regions`), this module does no I/O.
The reported region is the union of the ``--roi`` regions (the whole picture when there
is none) minus the union of the ``--exclude`` regions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from bpvideo.errors import InputError

__all__ = [
    "Polygon",
    "image_specs_to",
    "parse_region",
    "rasterise_polygon",
    "region_of",
    "reported_region",
]

#: Corners a polygon may have (a bound on what a typed spec may cost).
MAX_CORNERS = 10_000
#: Largest distance of a corner from the picture's origin along x or y, in pixels of the
#: input: 30 times the widest frame bpvideo reads (``limits.MAX_SIDE``), far inside what
#: the rasteriser's fixed point (8 fractional bits in 32 bits) holds.
MAX_COORDINATE = 1_000_000
_NUMBER = r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_POINT = re.compile(rf"^({_NUMBER}),({_NUMBER})$")


@dataclass(frozen=True)
class Polygon:
    """A polygon in pixels of the input.

    Attributes
    ----------
    points : (n, 2) float ndarray
        Corners ``(x, y)``: x to the right, y down, pixel centres at integers.
    """

    points: np.ndarray


def _looks_like_polygon(text: str) -> bool:
    """Starts with a corner ``x,y`` (no image is named so), or holds only corner text."""
    return bool(re.match(r"\s*[-+]?[0-9.]+\s*,", text)) or (
        bool(re.fullmatch(r"[\s0-9.,+-]+", text)) and "," in text
    )


def parse_region(text: str, name: str = "roi") -> Polygon | str:
    """A polygon, or the path of a mask image (returned as given).

    Parameters
    ----------
    text : str
        ``"x1,y1 x2,y2 x3,y3 ..."`` (three corners or more, pixels of the input), or a path.
    name : str
        The option (``roi`` or ``exclude``), for messages.

    Returns
    -------
    Polygon or str

    Raises
    ------
    InputError
        A spec that reads as a polygon but is not one (fewer than three corners, a
        corner that is not ``x,y``).

    Examples
    --------
    >>> parse_region("0,0 10,0 10,5").points.tolist()
    [[0.0, 0.0], [10.0, 0.0], [10.0, 5.0]]
    >>> parse_region("zones/door.png")
    'zones/door.png'
    """
    if not isinstance(text, str) or not text.strip() or "\0" in text:
        raise _bad(name, text, "must be a polygon 'x1,y1 x2,y2 x3,y3 ...' or a mask image path")
    if not _looks_like_polygon(text):
        return text
    corners = text.replace(";", " ").split()
    points = []
    for corner in corners:
        match = _POINT.match(corner)
        if match is None:
            raise _bad(name, text, f"has a corner {corner!r} that is not x,y (e.g. '10,20')")
        points.append((float(match.group(1)), float(match.group(2))))
    if len(points) < 3:
        raise _bad(name, text, "needs three corners or more: 'x1,y1 x2,y2 x3,y3'")
    if len(points) > MAX_CORNERS:
        raise _bad(name, text, f"has more than {MAX_CORNERS} corners")
    far = [c for c, (x, y) in zip(corners, points, strict=True)
           if max(abs(x), abs(y)) > MAX_COORDINATE]  # fmt: skip
    if far:
        raise _bad(name, text, f"has a corner {far[0]!r} more than {MAX_COORDINATE} pixels "
                   "from the origin: give corners in pixels of the input")  # fmt: skip
    return Polygon(np.asarray(points, dtype=np.float64))


def _bad(name: str, value: object, rule: str) -> InputError:
    return InputError(f"{{{name}=}} {rule}", option=(name, value), rule=rule)


def rasterise_polygon(polygon: Polygon, shape: tuple[int, int], scale: float = 1.0) -> np.ndarray:
    """(H, W) bool: the pixels whose centres lie inside ``polygon`` or on its edges.

    Parameters
    ----------
    polygon : Polygon
        Corners in pixels of the input.
    shape : (int, int)
        ``(H, W)`` of the masks.
    scale : float, default 1
        Masks' size over the input's (``--scale``): corners are scaled by it.

    Examples
    --------
    >>> rasterise_polygon(parse_region("1,1 3,1 3,2 1,2"), (4, 5)).astype(int)
    array([[0, 0, 0, 0, 0],
           [0, 1, 1, 1, 0],
           [0, 1, 1, 1, 0],
           [0, 0, 0, 0, 0]])
    """
    out = np.zeros(shape, dtype=np.uint8)
    # 8 fractional bits: corners between pixel centres are kept to 1/256 of a pixel
    pts = np.rint(polygon.points * scale * 256).astype(np.int64)
    pts = np.clip(pts, -(2**30), 2**30).astype(np.int32)
    cv2.fillPoly(out, [pts.reshape(-1, 1, 2)], 1, lineType=cv2.LINE_8, shift=8)
    return out.astype(bool)


def reported_region(
    rois: Sequence[Polygon | np.ndarray],
    excludes: Sequence[Polygon | np.ndarray],
    shape: tuple[int, int],
    scale: float = 1.0,
    labels: tuple[Sequence[str], Sequence[str]] | None = None,
) -> np.ndarray | None:
    """(H, W) bool: where foreground is reported; None when everywhere (no region given).

    Parameters
    ----------
    rois, excludes : sequence of Polygon or (H, W) bool ndarray
        Regions to keep, regions to drop (polygons, or mask images already read and
        sized to ``shape``).
    shape : (int, int)
        ``(H, W)`` of the masks.
    scale : float, default 1
        Masks' size over the input's, for polygons.
    labels : (sequence of str, sequence of str), optional
        The specs as typed, for messages (default: the corners of polygons).

    Raises
    ------
    InputError
        A region that covers no pixel of the frame (a ``roi`` would report nothing, an
        ``exclude`` drop nothing), or ``exclude`` regions that cover all of the ``roi``
        regions (or the whole frame): nothing would be reported.

    Examples
    --------
    >>> keep = parse_region("0,0 3,0 3,3 0,3")
    >>> drop = parse_region("0,0 1,0 1,1 0,1")
    >>> reported_region([keep], [drop], (4, 4)).astype(int)
    array([[0, 0, 1, 1],
           [0, 0, 1, 1],
           [1, 1, 1, 1],
           [1, 1, 1, 1]])
    >>> reported_region([parse_region("50,50 60,50 60,60")], [], (4, 4))
    Traceback (most recent call last):
    ...
    bpvideo.errors.InputError: roi='50,50 60,50 60,60' covers no pixel of the 4x4 frames ...
    """
    if not rois and not excludes:
        return None
    names = labels or ([_label(r) for r in rois], [_label(r) for r in excludes])
    frame = f"{round(shape[1] / scale)}x{round(shape[0] / scale)}"

    def raster(region: Polygon | np.ndarray, name: str, label: str) -> np.ndarray:
        if isinstance(region, Polygon):
            pixels = rasterise_polygon(region, shape, scale)
        elif region.shape != tuple(shape):
            raise ValueError(f"a region mask of {region.shape} for masks of {shape}")
        else:
            pixels = region.astype(bool)
        if not pixels.any():
            raise _covers_nothing(name, label, frame, isinstance(region, Polygon))
        return pixels

    keep = np.zeros(shape, dtype=bool) if rois else np.ones(shape, dtype=bool)
    for region, label in zip(rois, names[0], strict=True):
        keep |= raster(region, "roi", label)
    for region, label in zip(excludes, names[1], strict=True):
        keep &= ~raster(region, "exclude", label)
    if not keep.any():
        covered = "all of {roi}" if rois else f"the whole {frame} frame"
        raise InputError(f"{{exclude}} covers {covered}: nothing would be reported: shrink "
                         "{exclude}" + (" or widen {roi}" if rois else ""),
                         option=("exclude", names[1][0]))  # fmt: skip
    return keep


def _label(region: Polygon | np.ndarray) -> str:
    """A region as a message names it: a polygon's corners, else ``"an image"``."""
    if isinstance(region, Polygon):
        return " ".join(f"{x:g},{y:g}" for x, y in region.points)
    return "an image"


def _covers_nothing(name: str, label: str, frame: str, polygon: bool) -> InputError:
    """A ``roi`` or ``exclude`` region that holds no pixel of the frame."""
    effect = "nothing would be reported" if name == "roi" else "it excludes nothing"
    width, height = frame.split("x")
    fix = (f"give corners inside the frame (x 0..{int(width) - 1}, y 0..{int(height) - 1})"
           if polygon else "give an image that is non-zero where the region is")  # fmt: skip
    return InputError(f"{{{name}=}} covers no pixel of the {frame} frames ({effect}): {fix}",
                      option=(name, label))  # fmt: skip


def region_of(
    rois: Sequence[str],
    excludes: Sequence[str],
    shape: tuple[int, int],
    read_image: Callable[[str, str], np.ndarray],
    scale: float = 1.0,
) -> np.ndarray | None:
    """:func:`reported_region` of specs as typed; ``read_image(path, name)`` gives a mask
    image's (H, W) bool pixels at ``shape`` (the caller's I/O)."""

    def parsed(specs: Sequence[str], name: str) -> list[Polygon | np.ndarray]:
        out: list[Polygon | np.ndarray] = []
        for spec in specs:
            region = parse_region(spec, name)
            out.append(read_image(region, name) if isinstance(region, str) else region)
        return out

    return reported_region(parsed(rois, "roi"), parsed(excludes, "exclude"), shape, scale,
                           (list(rois), list(excludes)))  # fmt: skip


def image_specs_to(specs: Sequence[str], name: str, where: Callable[[str], str]) -> tuple[str, ...]:
    """``specs`` with each mask image path replaced by ``where(path)`` (polygons kept): a
    config's paths made relative to its folder."""
    return tuple(where(s) if isinstance(parse_region(s, name), str) else s for s in specs)
