"""Full-resolution frames on disk, the solve-scale matrix in memory (:class:`FrameSpool`).

A window of 1000 frames of 1920x1080 is 8 GB of uint8 frames: more than a job may hold. When
the solve runs downscaled, each frame is downscaled as it is read (its column of the
solve-scale matrix is kept) and written to a spool file; the full-resolution passes (the
background's detail, the thresholds, the masks and the outputs) read back the frames, or
rows of a few frames, a block at a time. The spool is written with ``os.pwrite`` and read
with ``os.pread`` (no memory map: the page cache holds the file, not the process), in
segment files of :data:`SEGMENT_FRAMES` frames removed as soon as no window needs them, and
its folder is removed at the end of the run.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator

import cv2
import numpy as np

from bpvideo.failures import temp_failure
from bpvideo.records import Video

__all__ = ["SEGMENT_FRAMES", "FrameSpool", "SpooledVideo"]

#: Frames per spool file (a file is removed once every frame in it is done).
SEGMENT_FRAMES = 32


class FrameSpool:
    """Frames of a stream written to disk as they are read, with their solve-scale column.

    Parameters
    ----------
    frame_shape : tuple of int
        ``(H, W)`` (grey data) or ``(H, W, 3)``: how a column of the data matrix is a frame.
    small_size : (int, int)
        ``(w, h)`` of the solve scale.
    """

    def __init__(self, frame_shape: tuple[int, ...], small_size: tuple[int, int]) -> None:
        self.frame_shape = tuple(frame_shape)
        self.gray = len(self.frame_shape) == 2
        h, w = self.frame_shape[:2]
        self.pixels = h * w
        # a record: the BGR frame, then (grey data) its grey plane
        self.record = self.pixels * 3 + (self.pixels if self.gray else 0)
        self.small_size = small_size
        try:
            self.folder = tempfile.mkdtemp(prefix="bpvideo-spool-")
        except OSError as exc:
            raise temp_failure(exc) from None
        self.count = 0
        self._fds: dict[int, int] = {}
        self._small: dict[int, np.ndarray] = {}
        self._released = 0

    def add(self, frame: np.ndarray) -> int:
        """Write a (H, W, 3) uint8 BGR frame; keep its solve-scale column; its index.

        Raises
        ------
        WorkError
            The temporary folder is full or unusable (it is named, with ``TMPDIR``).
        """
        try:
            return self._add(frame)
        except OSError as exc:
            raise temp_failure(exc) from None

    def _add(self, frame: np.ndarray) -> int:
        index = self.count
        segment, slot = divmod(index, SEGMENT_FRAMES)
        fd = self._fds.get(segment)
        if fd is None:
            path = os.path.join(self.folder, f"{segment:08d}.raw")
            fd = self._fds[segment] = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        frame = np.ascontiguousarray(frame, dtype=np.uint8)
        offset = slot * self.record
        _pwrite(fd, frame, offset)
        plane = frame
        if self.gray:
            plane = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
            _pwrite(fd, plane, offset + self.pixels * 3)
        # the solve-scale column: INTER_AREA in float32, as resize_columns of the matrix
        small = cv2.resize(plane.astype(np.float32), self.small_size, interpolation=cv2.INTER_AREA)
        self._small[index] = small.reshape(-1)
        self.count += 1
        return index

    def _read(
        self, index: int, start: int, length: int, out: np.ndarray | None = None
    ) -> np.ndarray:
        """``length`` bytes of record ``index`` from ``start``, into ``out`` (a contiguous
        uint8 array of that length) when given."""
        if index < self._released:
            raise RuntimeError(f"spooled frame {index} was released")
        segment, slot = divmod(index, SEGMENT_FRAMES)
        buf = np.empty(length, dtype=np.uint8) if out is None else out
        got = os.preadv(self._fds[segment], [buf], slot * self.record + start)
        if got != length:  # pragma: no cover - the spool was truncated under us
            raise OSError(f"spool {self.folder}: short read of frame {index}")
        return buf

    def frame(self, index: int) -> np.ndarray:
        """The BGR frame ``index``, (H, W, 3) uint8."""
        return self._read(index, 0, self.pixels * 3).reshape(*self.frame_shape[:2], 3)

    def plane(self, index: int) -> np.ndarray:
        """Frame ``index`` as a column of the data matrix is (grey, or BGR), ``frame_shape``."""
        if not self.gray:
            return self.frame(index)
        return self._read(index, self.pixels * 3, self.pixels).reshape(self.frame_shape)

    def row_range(self, index: int, lo: int, hi: int, out: np.ndarray | None = None) -> np.ndarray:
        """Entries ``lo:hi`` of frame ``index``'s column of the data matrix (into ``out``,
        contiguous uint8 of ``hi - lo``, when given)."""
        return self._read(index, (self.pixels * 3 if self.gray else 0) + lo, hi - lo, out)

    def pixel_range(
        self, index: int, lo: int, hi: int, out: np.ndarray | None = None
    ) -> np.ndarray:
        """BGR of the pixels ``lo:hi`` of frame ``index``, (hi - lo, 3) (into ``out``,
        contiguous uint8 of ``3 (hi - lo)``, when given)."""
        return self._read(index, lo * 3, (hi - lo) * 3, out).reshape(-1, 3)

    def small(self, indices: list[int]) -> np.ndarray:
        """The solve-scale matrix of frames ``indices`` (m' x n float32)."""
        out = np.empty((len(self._small[indices[0]]), len(indices)), dtype=np.float32)
        for j, i in enumerate(indices):
            out[:, j] = self._small[i]
        return out

    def release_before(self, index: int) -> None:
        """Let go of the frames before ``index`` (whole segment files are removed)."""
        for i in range(self._released, index):
            self._small.pop(i, None)
        self._released = max(self._released, index)
        for segment in [s for s in self._fds if (s + 1) * SEGMENT_FRAMES <= index]:
            os.close(self._fds.pop(segment))
            os.unlink(os.path.join(self.folder, f"{segment:08d}.raw"))

    def close(self) -> None:
        """Remove the spool."""
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
        self._small.clear()
        shutil.rmtree(self.folder, ignore_errors=True)


def _pwrite(fd: int, array: np.ndarray, offset: int) -> None:
    view = memoryview(np.ascontiguousarray(array)).cast("B")
    while view:
        done = os.pwrite(fd, view, offset)
        view, offset = view[done:], offset + done


class SpooledVideo(Video):
    """A window's frames in a :class:`FrameSpool`: the :class:`~bpvideo.sources.video.Video`
    accessors read them back; ``data`` is not held (None), ``small`` is the solve-scale
    matrix.

    Parameters
    ----------
    spool : FrameSpool
    indices : list of int
        The window's frames in the spool.
    numbers : list of int
        Their source frame numbers.
    fps : float
    source : str
    """

    def __init__(
        self, spool: FrameSpool, indices: list[int], numbers: list[int], fps: float, source: str
    ) -> None:
        super().__init__(
            data=None,  # type: ignore[arg-type]
            frames=None,  # type: ignore[arg-type]
            frame_shape=spool.frame_shape,
            fps=fps,
            source=source,
            frame_numbers=list(numbers),
        )
        self.spool = spool
        self.indices = list(indices)
        self.small = spool.small(self.indices)

    @property
    def shape(self) -> tuple[int, int]:
        m = self.spool.pixels * (1 if self.spool.gray else 3)
        return (m, len(self.indices))

    # Each frame's range is read into a row of a (frames, entries) array, which is then
    # transposed at once: writing a column of the (entries, frames) answer per frame
    # went over the whole answer once per frame (~1.8 s of a 720p window's thresholds).

    def rows(self, lo: int, hi: int, cols: np.ndarray, step: int = 1) -> np.ndarray:
        hi = min(hi, self.shape[0])
        by_frame = self._gather(cols, self.spool.row_range, lo, hi, 1)
        if step > 1:
            by_frame = np.ascontiguousarray(by_frame[:, ::step])
        return _transposed(by_frame)

    def pixels(self, lo: int, hi: int, cols: np.ndarray) -> np.ndarray:
        by_frame = self._gather(cols, self.spool.pixel_range, lo, hi, 3)
        return _transposed(by_frame.reshape(len(by_frame), hi - lo, 3))

    def _gather(
        self, cols: np.ndarray, read: Callable[..., np.ndarray], lo: int, hi: int, width: int
    ) -> np.ndarray:
        """``read(index, lo, hi)`` of the frames ``cols`` (``width`` bytes an entry), one
        row each: (len(cols), (hi - lo) width) uint8."""
        cols = np.asarray(cols).tolist()
        out = np.empty((len(cols), (hi - lo) * width), dtype=np.uint8)
        for j, c in enumerate(cols):
            read(self.indices[c], lo, hi, out=out[j])
        return out

    def frame_block(self, lo: int, hi: int) -> np.ndarray:
        return _stack(
            [self.spool.frame(i) for i in self.indices[lo:hi]], (*self.frame_shape[:2], 3)
        )

    def plane_block(self, lo: int, hi: int) -> np.ndarray:
        return _stack([self.spool.plane(i) for i in self.indices[lo:hi]], self.frame_shape)

    def iter_frames(self, lo: int = 0) -> Iterator[np.ndarray]:
        """The BGR frames from ``lo`` on, one at a time."""
        for i in self.indices[lo:]:
            yield self.spool.frame(i)


def _transposed(by_frame: np.ndarray) -> np.ndarray:
    """(entries, frames[, 3]) C-contiguous copy of a (frames, entries[, 3]) uint8 array."""
    if by_frame.size and max(by_frame.shape[:2]) < 2**31 and by_frame.shape[0] > 1:
        return cv2.transpose(by_frame)  # blocked: one pass over the memory
    return np.ascontiguousarray(by_frame.swapaxes(0, 1))


def _stack(arrays: list[np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
    out = np.empty((len(arrays), *shape), dtype=np.uint8)
    for j, a in enumerate(arrays):
        out[j] = a
    return out
