"""Tests of the background (bpvideo.background)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np


def same_bits(a: Any, b: Any) -> bool:
    """Whether two answers (arrays, numbers, tuples or dataclasses of them) hold the same
    bytes."""
    if dataclasses.is_dataclass(a):
        return type(a) is type(b) and same_bits(dataclasses.astuple(a), dataclasses.astuple(b))
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(same_bits(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    return a == b or (a != a and b != b)  # (NaN)
