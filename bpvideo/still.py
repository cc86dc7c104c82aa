"""The background still: the per-pixel median of decimated background frames
(``background.png``), kept in memory or, for large frames, in an unnamed temporary file.

A low module like :mod:`bpvideo.records`: it imports nothing of bpvideo, so that sinks
and the background package both use it.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import numpy as np

__all__ = ["STILL_FRAMES", "STILL_MEMORY", "Still"]


#: Frames of the background kept for the background.png median (decimated beyond: a
#: median over 512 frames of 320x240 took 0.16 s, over 64 of them 0.02 s).
STILL_FRAMES = 64
#: Bytes of kept frames a :class:`Still` holds in memory (up to 720p grey); frames whose
#: :data:`STILL_FRAMES` would take more wait in an unnamed temporary file instead (64
#: frames of 4K are 530 MB: the largest part of a 4K run's peak, issue 39).
STILL_MEMORY = 64 << 20
#: Bytes of kept rows whose median is taken at a time (np.median copies what it sorts).
MEDIAN_BYTES = 16 << 20


class Still:
    """Background frames kept for a median still (uniformly decimated to ``limit``), in
    memory or, beyond ``memory`` bytes, in an unnamed temporary file (written with
    ``os.pwrite``, read back a few rows at a time with ``os.pread``: the page cache holds
    them, not the process)."""

    def __init__(self, limit: int = STILL_FRAMES, memory: int = STILL_MEMORY) -> None:
        self.limit, self.memory = limit, memory
        self.stride, self.count = 1, 0
        self.kept: list[np.ndarray] | list[int] = []  # frames, or their slots in the file
        self.shape: tuple[int, ...] | None = None
        self._file: Any = None
        self._slots = 0
        self._free: list[int] = []

    def add(self, frames: np.ndarray) -> None:
        """Offer the next frames (k, H, W[, 3]) uint8."""
        for frame in frames:
            if self.count % self.stride == 0:
                self._keep(frame)
                if len(self.kept) > self.limit:
                    if self._file is not None:  # the dropped frames' slots are reused
                        self._free.extend(self.kept[1::2])  # type: ignore[arg-type]
                    self.kept = self.kept[::2]
                    self.stride *= 2
            self.count += 1

    def _keep(self, frame: np.ndarray) -> None:
        if self.shape is None:
            self.shape = frame.shape
            if frame.nbytes * (self.limit + 1) > self.memory:
                self._file = tempfile.TemporaryFile(prefix="bpvideo-still-")
        if self._file is None:
            self.kept.append(frame.copy())  # type: ignore[arg-type]
            return
        slot = self._free.pop() if self._free else self._slots
        self._slots = max(self._slots, slot + 1)
        data = np.ascontiguousarray(frame, dtype=np.uint8)
        os.pwrite(self._file.fileno(), memoryview(data).cast("B"), slot * data.nbytes)
        self.kept.append(slot)  # type: ignore[arg-type]

    def _rows(self, kept: np.ndarray | int, lo: int, hi: int) -> np.ndarray:
        """Rows ``lo:hi`` of a kept frame."""
        if isinstance(kept, np.ndarray):
            return kept[lo:hi]
        assert self.shape is not None
        row = int(np.prod(self.shape[1:]))
        size, at = (hi - lo) * row, (kept * self.shape[0] + lo) * row
        data = os.pread(self._file.fileno(), size, at)  # written whole: never short
        return np.frombuffer(data, dtype=np.uint8).reshape(hi - lo, *self.shape[1:])

    def median(self) -> np.ndarray:
        """(H, W[, 3]) uint8: the per-pixel median of the frames kept (a few rows at a
        time: the same values as of the whole stack)."""
        assert self.shape is not None
        out = np.empty(self.shape, dtype=np.uint8)
        row = int(np.prod(self.shape[1:])) * len(self.kept)
        step = max(1, MEDIAN_BYTES // max(1, row))
        for lo in range(0, self.shape[0], step):
            hi = min(self.shape[0], lo + step)
            median = np.median(np.stack([self._rows(k, lo, hi) for k in self.kept]), axis=0)
            out[lo:hi] = np.clip(np.rint(median), 0, 255).astype(np.uint8)
        return out
