"""The structuring element every mask step opens, closes and grows with."""

from __future__ import annotations

import cv2
import numpy as np

__all__ = ["disk"]


def disk(radius: int) -> np.ndarray:
    """A disk of ``radius`` pixels: ``(2 radius + 1, 2 radius + 1)`` uint8 ellipse."""
    return cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1))
