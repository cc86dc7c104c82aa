"""The solve scale: solving on downscaled frames, and the full-resolution background.

A solve at ``--solve-scale F < 1`` runs on frames downscaled by ``F`` (``INTER_AREA``);
its background ``L`` is brought back to full resolution through the solver's factors
(:func:`upsample_factors`), plus the fine detail of the per-pixel median frame that the
downscaled solve cannot see (:func:`median_detail`). The result is a :class:`Background`
kept as thin factors: its columns are formed a few frames at a time, as the outputs are
written, and the full-resolution ``L`` is never held whole.
"""

from __future__ import annotations

import cv2
import numpy as np

from bpvideo.records import Video
from bpvideo.robust import masked_median
from bpvideo.solvers import SolverResult
from bpvideo.sources.stream import scaled_size

__all__ = [
    "AUTO_SOLVE_MAX_PIXELS",
    "AUTO_SOLVE_PIXELS",
    "AUTO_SOLVE_SCALE",
    "Background",
    "effective_solve_scale",
    "median_detail",
    "nearest_rows",
    "reference_detail",
    "resize_columns",
    "solve_size",
    "solved_video_size",
    "upsample_factors",
]


#: ``--solve-scale auto``: frames of at least this many pixels (after ``--scale``) are
#: solved at :data:`AUTO_SOLVE_SCALE`, smaller ones at full resolution. Measured F-measure
#: (``bench_end_to_end.py --quality``, scale 1 / 0.5 / 0.25): the 320x240 sequences keep
#: their F at 1/4 (80x60: highway 0.8934 / 0.8914 / 0.8928, HighwayI 0.7313 / 0.7316 /
#: 0.7331, IBMtest2 0.9308 / 0.9335 / 0.9367), while CaVignal (200x136) drops already at
#: 1/2 (0.664 / 0.614 / 0.582).
AUTO_SOLVE_PIXELS = 320 * 240
#: ``--solve-scale auto`` for frames of at least :data:`AUTO_SOLVE_PIXELS` pixels.
AUTO_SOLVE_SCALE = 0.25
#: ``--solve-scale auto``: the most pixels a downscaled frame of the solve has (180x120,
#: cdnet_fall's 720x480 at 1/4). Larger frames are solved at a smaller scale, so that the
#: solve of a window costs the same at 720p and 1080p as at 720x480 and frames per window
#: need not fall as frames grow (at 1920x1080: 0.102, 196x110).
AUTO_SOLVE_MAX_PIXELS = 180 * 120
#: Frames sampled (evenly) for the per-pixel median whose fine detail is added back to an
#: upsampled background.
DETAIL_FRAMES = 64
#: Rows (pixels) of the sampled frames read at a time for the background's detail.
DETAIL_ROWS = 1 << 16
#: Channels per ``cv2.resize`` call (OpenCV 4 allows 512, OpenCV 5 only 128; fewer keep
#: the float32 copy of a block of uint8 frames small).
_RESIZE_CHANNELS = 32


def effective_solve_scale(solve_scale: float | str, width: int, height: int) -> float:
    """The factor the solve runs at, for frames of ``width`` x ``height`` (after --scale).

    Parameters
    ----------
    solve_scale : float or "auto"
        ``--solve-scale``. A number is used as is; ``"auto"`` gives
        :data:`AUTO_SOLVE_SCALE` for frames of at least :data:`AUTO_SOLVE_PIXELS` pixels
        (320x240), 1 for smaller frames, and less than :data:`AUTO_SOLVE_SCALE` where the
        downscaled frame would have more than :data:`AUTO_SOLVE_MAX_PIXELS` pixels.
    width, height : int
        Frame size.

    Returns
    -------
    float

    Examples
    --------
    >>> effective_solve_scale("auto", 320, 240), effective_solve_scale("auto", 200, 136)
    (0.25, 1.0)
    >>> effective_solve_scale(1.0, 320, 240)
    1.0
    >>> round(effective_solve_scale("auto", 1920, 1080), 3)
    0.102
    """
    if solve_scale != "auto":
        return float(solve_scale)
    pixels = width * height
    if pixels < AUTO_SOLVE_PIXELS:
        return 1.0
    return min(AUTO_SOLVE_SCALE, (AUTO_SOLVE_MAX_PIXELS / pixels) ** 0.5)


def resize_columns(
    data: np.ndarray, frame_shape: tuple[int, ...], size: tuple[int, int], interpolation: int
) -> np.ndarray:
    """Resize every column of ``data`` (one frame of ``frame_shape``) to ``size`` (w, h).

    The m x n matrix is read as one H x W image with n (x channels) channels, so that all
    frames are resized together without transposing them (blocks of 128 channels, the
    limit of ``cv2.resize``); each channel is resized on its own, as frame by frame.

    ``data`` may be float32 or uint8. Returns the m' x n float32 matrix of the resized
    frames, in the same layout.
    """
    h, w = frame_shape[:2]
    n = data.shape[1]
    channels = data.size // (h * w)
    src = np.ascontiguousarray(data).reshape(h, w, channels)
    out = np.empty((size[1], size[0], channels), dtype=np.float32)
    for lo in range(0, channels, _RESIZE_CHANNELS):
        hi = min(channels, lo + _RESIZE_CHANNELS)
        block = src if hi - lo == channels else src[:, :, lo:hi]
        # one block at a time in float32 (uint8 data is never converted whole)
        block = np.ascontiguousarray(block, dtype=np.float32)
        res = cv2.resize(block, size, interpolation=interpolation)
        out[:, :, lo:hi] = res.reshape(size[1], size[0], hi - lo)
    return out.reshape(-1, n)


def nearest_rows(small_shape: tuple[int, ...], size: tuple[int, int]) -> np.ndarray:
    """Row index map of a nearest-neighbour upsampling of frames of ``small_shape``.

    ``M[nearest_rows(small_shape, size)]`` equals
    ``resize_columns(M, small_shape, size, cv2.INTER_NEAREST)`` for any m' x n matrix
    ``M`` of frames of ``small_shape``: a row gather instead of one resize per frame.
    """
    index = np.arange(int(np.prod(small_shape)), dtype=np.float64).reshape(-1, 1)
    return resize_columns(index, small_shape, size, cv2.INTER_NEAREST).astype(np.intp).ravel()


def solved_video_size(frame_shape: tuple[int, ...]) -> tuple[int, int]:
    """``(w, h)`` of frames of ``frame_shape``, as ``cv2.resize`` takes it."""
    return frame_shape[1], frame_shape[0]


def solve_size(frame_shape: tuple[int, ...], scale: float) -> tuple[int, int]:
    """``(w, h)`` of frames of ``frame_shape`` downscaled by ``scale`` for the solve (at
    least 2 x 2: :func:`~bpvideo.sources.stream.scaled_size` with ``least=2``)."""
    h, w = frame_shape[:2]
    return scaled_size(w, h, scale, least=2)


def median_detail(
    data: np.ndarray, frame_shape: tuple[int, ...], small_size: tuple[int, int]
) -> np.ndarray:
    """Fine detail of the per-pixel median frame that a solve at ``small_size`` loses.

    ``med - up(down(med))`` (``INTER_AREA`` down, ``INTER_LINEAR`` up), where ``med`` is
    the per-pixel median of at most :data:`DETAIL_FRAMES` evenly spaced columns of
    ``data`` (static background texture).

    Returns
    -------
    (m, 1) float32 ndarray
    """
    n = data.shape[1]
    cols = np.unique(np.linspace(0, n - 1, min(n, DETAIL_FRAMES)).round().astype(np.intp))
    sample = data if len(cols) == n else data[:, cols]
    med = np.median(sample, axis=1, keepdims=True).astype(np.float32)
    small_shape = (small_size[1], small_size[0], *frame_shape[2:])
    full_size = solved_video_size(frame_shape)
    blur = resize_columns(
        resize_columns(med, frame_shape, small_size, cv2.INTER_AREA),
        small_shape,
        full_size,
        cv2.INTER_LINEAR,
    )
    med -= blur
    return med


def reference_detail(
    video: Video,
    frame_shape: tuple[int, ...],
    small_size: tuple[int, int],
    observed: np.ndarray,
    rows: np.ndarray,
    fallback: np.ndarray,
) -> np.ndarray:
    """Fine detail of the background that a solve at ``small_size`` loses, from the entries
    the solver observed.

    As :func:`median_detail`, with the per-pixel median taken over the frames where the
    pixel agreed with the reference background (``observed`` at the solve scale, read
    through the nearest-neighbour row map ``rows``), so that a person who lingers leaves
    no outline in the background. A pixel that agreed in none of the sampled frames (a
    person there all along) takes ``fallback``: the best guess of the background there.
    The frames are read :data:`DETAIL_ROWS` rows at a time (``video.rows``: from memory or
    from a spool).

    Returns
    -------
    (m, 1) float32 ndarray
    """
    m, n = video.shape
    cols = np.unique(np.linspace(0, n - 1, min(n, DETAIL_FRAMES)).round().astype(np.intp))
    med = np.empty((m, 1), dtype=np.float32)
    for lo in range(0, m, DETAIL_ROWS):
        hi = min(m, lo + DETAIL_ROWS)
        agree = observed[rows[lo:hi]][:, cols]
        med[lo:hi, 0] = masked_median(video.rows(lo, hi, cols), agree)
    unknown = np.isnan(med)
    med[unknown] = np.asarray(fallback, dtype=np.float32).reshape(-1, 1)[unknown]
    small_shape = (small_size[1], small_size[0], *frame_shape[2:])
    blur = resize_columns(
        resize_columns(med, frame_shape, small_size, cv2.INTER_AREA),
        small_shape,
        solved_video_size(frame_shape),
        cv2.INTER_LINEAR,
    )
    med -= blur
    return med


class Background:
    """The full-resolution background ``L`` (m x k) of a window: dense, or ``left @ right.T``.

    A solve on downscaled frames gives ``L`` as a product of thin factors
    (:func:`upsample_factors`); its columns are then formed a few frames at a time, as the
    outputs are written, and ``L`` is never held whole.

    Parameters
    ----------
    dense : (m, k) ndarray, optional
        ``L`` itself (used for its columns when given).
    left, right : (m, q) and (k, q) ndarray, optional
        ``L = left @ right.T``: its factors (a full-resolution solve may give both: the
        dense ``L`` for the outputs, its factors for :meth:`basis` and :meth:`compact`).
    """

    def __init__(
        self,
        dense: np.ndarray | None = None,
        left: np.ndarray | None = None,
        right: np.ndarray | None = None,
    ) -> None:
        if dense is None and (left is None or right is None):
            raise ValueError("a Background needs dense, or left and right")
        self.dense = dense
        self.left = left
        self.right = right

    @property
    def shape(self) -> tuple[int, int]:
        """``(m, k)``."""
        if self.dense is not None:
            return self.dense.shape
        return (self.left.shape[0], self.right.shape[0])

    def columns(self, lo: int, hi: int) -> np.ndarray:
        """Columns ``lo:hi`` of ``L``, m x (hi - lo) float32 (a view when dense)."""
        if self.dense is not None:
            return self.dense[:, lo:hi]
        return self.left @ self.right[lo:hi].T

    def take(self, cols: np.ndarray) -> np.ndarray:
        """Columns ``cols`` of ``L``, a C-contiguous m x len(cols) array."""
        if self.dense is not None:
            return np.ascontiguousarray(self.dense[:, cols])
        return self.left @ self.right[cols].T

    def frames(self, lo: int, hi: int, frame_shape: tuple[int, ...]) -> np.ndarray:
        """Columns ``lo:hi`` of ``L`` as float32 frames, (hi - lo, *frame_shape)."""
        if self.dense is not None:
            return np.ascontiguousarray(self.dense[:, lo:hi].T).reshape(-1, *frame_shape)
        return (self.right[lo:hi] @ self.left.T).reshape(-1, *frame_shape)

    def block(self, lo: int, hi: int, cols: np.ndarray) -> np.ndarray:
        """Rows ``lo:hi`` of the columns ``cols`` of ``L``: (hi - lo, len(cols)) float32."""
        if self.dense is not None:
            return np.ascontiguousarray(self.dense[lo:hi][:, cols], dtype=np.float32)
        return (self.left[lo:hi] @ self.right[cols].T).astype(np.float32, copy=False)

    def rows(self, index: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Rows ``index`` of the columns ``cols`` of ``L``: (len(index), len(cols)) float32."""
        if self.dense is not None:
            return np.asarray(self.dense[index][:, cols], dtype=np.float32)
        return (self.left[index] @ self.right[cols].T).astype(np.float32, copy=False)

    def entries(self, index: np.ndarray) -> np.ndarray:
        """Entries of ``L`` at flat (C-order) indices (see :func:`~bpvideo.masks.noise_level`)."""
        if self.dense is not None:
            return self.dense.reshape(-1)[index]
        rows, cols = np.divmod(index, self.shape[1])
        return np.einsum("ij,ij->i", self.left[rows], self.right[cols])

    def select(self, lo: int, hi: int) -> Background:
        """The background of columns ``lo:hi`` (views, no copy)."""
        return Background(
            None if self.dense is None else self.dense[:, lo:hi],
            self.left,
            None if self.right is None else self.right[lo:hi],
        )

    def compact(self) -> Background:
        """Only the factors when there are some (a dense ``L`` is let go), else self."""
        if self.dense is None or self.left is None or self.right is None:
            return self
        return Background(left=self.left, right=self.right)

    def basis(self, rank: int | None = None) -> np.ndarray:
        """An orthonormal basis (m x q, float32) of the space the columns of ``L`` span.

        From the factors (their ``left``: q = its columns), or from a thin SVD of the dense
        ``L`` keeping ``rank`` columns (all that are not negligible when None). An ``L`` of
        zeros (all-black frames) spans nothing: its basis is the flat image, the way a
        blank scene changes (light), so that q >= 1 for the models fitted on it.
        """
        if self.left is not None:
            Q, R = np.linalg.qr(self.left.astype(np.float64))
            keep = np.abs(np.diag(R)) > 1e-9 * max(float(np.abs(R).max()), 1e-30)
        else:
            Q, s, _ = np.linalg.svd(self.dense.astype(np.float64), full_matrices=False)
            keep = s > 1e-9 * max(float(s[0]) if s.size else 0.0, 1e-30)
            if rank is not None:
                keep[rank:] = False
        if not keep.any():
            return np.full((Q.shape[0], 1), 1 / np.sqrt(Q.shape[0]), dtype=np.float32)
        return np.ascontiguousarray(Q[:, keep], dtype=np.float32)


def upsample_factors(
    result: SolverResult,
    columns: slice,
    small_shape: tuple[int, ...],
    frame_shape: tuple[int, ...],
    detail: np.ndarray,
    previous_detail: np.ndarray | None = None,
    ramp_from: int = 0,
) -> Background:
    """Full-resolution background of a solve on downscaled frames, as thin factors.

    ``L = up(L_small) + detail``, ``up`` = ``INTER_LINEAR``. When the solver kept ``L``
    in factored form (``result.factors = (U, V)``, ``L = U V^T``) only the r columns of
    ``U`` are resized (resizing is linear): ``L = [up(U), detail] [V, 1]^T``; otherwise
    the columns of ``L_small`` are resized and ``L = [up(L_small), detail] [I, 1]^T``.

    With ``previous_detail`` (the detail added to the previous window's last frame), the
    detail moves linearly from it to ``detail`` across the columns written, so that the
    background does not jump where windows meet: column ``j`` of ``k`` gets
    ``(1 - t) previous_detail + t detail``, ``t = (j - ramp_from + 1) / (k - ramp_from)``
    clipped to [0, 1] (the columns before ``ramp_from``, re-solved but not written, keep
    ``previous_detail``).

    Parameters
    ----------
    result : SolverResult
        The solve on downscaled frames.
    columns : slice
        The columns of ``result.L`` wanted (a window's own frames, after carried ones).
    small_shape, frame_shape : tuple of int
        Frame shapes of the solve and of the output.
    detail, previous_detail : (m, 1) ndarray
        See :func:`median_detail`.
    ramp_from : int
        First column written (after the overlap with the previous window).

    Returns
    -------
    Background
    """
    size = solved_video_size(frame_shape)
    k = len(range(*columns.indices(result.L.shape[1])))
    if previous_detail is None:
        extra_u, extra_v = [detail], [np.ones((k, 1), dtype=np.float32)]
    else:
        j = np.arange(k, dtype=np.float32) - ramp_from + 1
        t = np.clip(j / max(k - ramp_from, 1), 0, 1).reshape(-1, 1)
        extra_u, extra_v = [previous_detail, detail], [1 - t, t]
    factors = result.factors
    if factors is not None and factors[0].shape[0] == result.L.shape[0]:
        U, V = factors
        U = np.asarray(U, dtype=np.float32)
        V = np.asarray(V[columns], dtype=np.float32)
    else:
        U = result.L[:, columns]
        V = np.eye(k, dtype=np.float32)
    U_up = resize_columns(U, small_shape, size, cv2.INTER_LINEAR)
    left = np.hstack([U_up, *extra_u]).astype(np.float32, copy=False)
    right = np.hstack([V, *extra_v]).astype(np.float32, copy=False)
    return Background(left=np.ascontiguousarray(left), right=np.ascontiguousarray(right))
