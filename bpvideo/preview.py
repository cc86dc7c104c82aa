"""A contact sheet of a few frames: input, background, foreground, mask (``preview.png``).

Layout: one row per chosen frame, four columns (input, background ``L``, foreground = the
input where the mask is set, mask), under a header row naming the columns. Tiles are the
frames resized by :func:`tile_scale` (at most :data:`MAX_TILE_WIDTH` pixels wide, never
enlarged), separated and framed by :data:`PAD` pixels of grey. The frames are spread evenly
over the clip (:func:`preview_frames`). The sheet is BGR, whatever the input's colour.
"""

from __future__ import annotations

import cv2
import numpy as np

__all__ = [
    "COLUMNS",
    "HEADER",
    "MAX_TILE_WIDTH",
    "PAD",
    "contact_sheet",
    "preview_frames",
    "sheet_size",
    "tile_scale",
]

#: Column titles, left to right.
COLUMNS = ("input", "background", "foreground", "mask")
#: Frames shown (fewer when the clip is shorter).
ROWS = 4
#: Widest tile, in pixels.
MAX_TILE_WIDTH = 240
#: Gap between tiles and around the sheet, in pixels.
PAD = 4
#: Height of the header row holding the column titles, in pixels.
HEADER = 18
_GREY = 96


def preview_frames(n_frames: int, rows: int = ROWS) -> list[int]:
    """Indices of the frames shown: ``rows`` frames spread evenly, first and last excluded.

    Parameters
    ----------
    n_frames : int
        Frames in the clip (>= 1).
    rows : int
        Frames wanted.

    Returns
    -------
    list of int
        Sorted distinct 0-based indices, ``min(rows, n_frames)`` of them.
    """
    count = min(rows, n_frames)
    picks = [round((k + 1) * n_frames / (count + 1)) for k in range(count)]
    picks = sorted({min(max(p, 0), n_frames - 1) for p in picks})
    rest = (i for i in range(n_frames) if i not in picks)
    while len(picks) < count:
        picks.append(next(rest))
    return sorted(picks)


def tile_scale(width: int) -> float:
    """Resize factor of the tiles: ``min(1, MAX_TILE_WIDTH / width)``."""
    return min(1.0, MAX_TILE_WIDTH / width)


def _tile_size(height: int, width: int) -> tuple[int, int]:
    f = tile_scale(width)
    return max(1, round(height * f)), max(1, round(width * f))


def sheet_size(n_frames: int, height: int, width: int, rows: int = ROWS) -> tuple[int, int]:
    """``(height, width)`` of the contact sheet of a clip of ``n_frames`` frames of ``height`` x
    ``width`` pixels."""
    th, tw = _tile_size(height, width)
    count = min(rows, n_frames)
    return HEADER + count * th + (count + 1) * PAD, 4 * tw + 5 * PAD


def _bgr(image: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(image, cv2.COLOR_GRAY2BGR) if image.ndim == 2 else image


def contact_sheet(
    frames: np.ndarray,
    background: np.ndarray,
    foreground: np.ndarray,
    masks: np.ndarray,
    *,
    rows: int = ROWS,
) -> np.ndarray:
    """Build the contact sheet.

    Parameters
    ----------
    frames, background, foreground : (n, H, W) or (n, H, W, 3) uint8 ndarray
        Input frames, background and foreground videos (grey or BGR).
    masks : (n, H, W) bool ndarray
        Foreground masks.
    rows : int
        Frames shown (see :func:`preview_frames`).

    Returns
    -------
    (sheet_h, sheet_w, 3) uint8 ndarray
        BGR image of the size given by :func:`sheet_size`.
    """
    n, h, w = masks.shape
    th, tw = _tile_size(h, w)
    sheet_h, sheet_w = sheet_size(n, h, w, rows)
    sheet = np.full((sheet_h, sheet_w, 3), _GREY, np.uint8)
    for c, title in enumerate(COLUMNS):
        x = PAD + c * (tw + PAD)
        scale = min(0.45, 0.9 * tw / max(1, 12 * len(title)))
        cv2.putText(
            sheet, title, (x, HEADER - 5), cv2.FONT_HERSHEY_SIMPLEX, scale, (255, 255, 255), 1
        )
    for r, j in enumerate(preview_frames(n, rows)):
        mask = np.where(masks[j], np.uint8(255), np.uint8(0))
        tiles = (frames[j], background[j], foreground[j], mask)
        y = HEADER + PAD + r * (th + PAD)
        for c, tile in enumerate(tiles):
            x = PAD + c * (tw + PAD)
            small = cv2.resize(_bgr(tile), (tw, th), interpolation=cv2.INTER_AREA)
            sheet[y : y + th, x : x + tw] = small
    return sheet
