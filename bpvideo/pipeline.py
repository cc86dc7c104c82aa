"""The order of operations of one ``separate`` job: read, solve, masks, write.

Everything that can be checked is checked before the expensive work starts: options,
the output directory, the input's frames, the rank against the frame count, the mask.
"""

from __future__ import annotations

import dataclasses
import glob
import itertools
import logging
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from threadpoolctl import threadpool_limits

from bpvideo import __version__, _kernels
from bpvideo.baselines import godec, ialm, rpca_gd
from bpvideo.errors import BpvideoError, ConvergenceWarning, InputError
from bpvideo.evaluate import check_groundtruth, evaluate, input_is_video
from bpvideo.masks import foreground_masks, mask_threshold
from bpvideo.preview import contact_sheet, preview_frames
from bpvideo.reader import (
    FrameSource,
    Video,
    load_observation_mask,
    open_source,
    random_observation,
)
from bpvideo.settings import SeparateSettings, parse_size
from bpvideo.solver import (
    Iterate,
    SolverResult,
    best_pair,
    check_problem,
    ncf,
    project_rank,
    project_sparse,
)
from bpvideo.writer import (
    SUMMARY,
    MaskWriter,
    OutputDir,
    RawMaskSink,
    VideoStream,
    atomic_write_bytes,
    encode_png,
    write_json,
)

__all__ = [
    "default_output",
    "effective_solve_scale",
    "estimate_memory",
    "expand_inputs",
    "format_output",
    "path_fields",
    "plan_outputs",
    "plan_window",
    "separate",
    "separate_many",
    "solve",
    "warm_start",
]

logger = logging.getLogger("bpvideo")


def default_output(input_path: str) -> str:
    """Output directory used when ``-o`` is not given: ``<stem>-bpvideo`` in the cwd."""
    stem = Path(input_path.rstrip("/\\")).name
    stem = Path(stem).stem if Path(stem).suffix else stem
    return f"{stem or 'video'}-bpvideo"


def solve(
    video: Video,
    settings: SeparateSettings,
    *,
    callback: Callable[[Iterate], None] | None = None,
    L0: np.ndarray | None = None,
    S0: np.ndarray | None = None,
) -> SolverResult:
    """Run the solver that ``settings.method`` names on ``video``.

    A :class:`~bpvideo.errors.ConvergenceWarning` is logged (not raised) and recorded in
    the result's ``converged`` flag. ``L0``/``S0`` give an explicit starting point (the
    warm start of a window); otherwise ``settings.init`` chooses it.
    """
    A = video.data if video.data.dtype.kind == "f" else video.data.astype(np.float32)
    kwargs: dict[str, Any] = dict(settings.solver_kwargs(), mask=video.mask, callback=callback)
    if (L0 is not None or S0 is not None) and "init" in kwargs:  # baselines start their own way
        kwargs.update(L0=L0, S0=S0)
    solver = {"bestpair": best_pair, "ncf": ncf, "ialm": ialm, "godec": godec, "rpca_gd": rpca_gd}[
        settings.method
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        result = solver(A, *settings.solver_args(), **kwargs)
    for w in caught:
        if issubclass(w.category, ConvergenceWarning):
            logger.warning("%s", w.message)
        else:  # pragma: no cover - re-emit anything else
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return result


def _to_uint8(x: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)


def masked_frames(frames: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """``frames`` where ``masks`` is set, 0 elsewhere: (k, H, W[, C]) uint8 frames and
    (k, H, W) bool masks (``np.where(masks[..., None], frames, 0)``, by OpenCV)."""
    out = np.zeros_like(frames)
    m = np.ascontiguousarray(masks).view(np.uint8)
    for j in range(len(frames)):
        cv2.copyTo(frames[j], m[j], out[j])
    return out


def columns_to_frames(matrix: np.ndarray, frame_shape: tuple[int, ...]) -> np.ndarray:
    """uint8 frames ``(k, *frame_shape)`` of an m x k matrix: rounded, saturated, transposed.

    Equal to ``clip(rint(matrix), 0, 255)`` as uint8, transposed to one frame per row; done
    by OpenCV (rounding half to even, like ``np.rint``) on uint8, not on float32 copies.
    """
    k = matrix.shape[1]
    if matrix.ndim != 2 or max(matrix.shape) >= 2**31 or matrix.strides[1] != matrix.itemsize:
        return _to_uint8(matrix.T.reshape((k, *frame_shape)))  # pragma: no cover
    u8 = cv2.add(matrix, 0.0, dtype=cv2.CV_8U)
    return cv2.transpose(u8).reshape((k, *frame_shape))


# --- memory and windows ----------------------------------------------------------------

#: float32 m x n matrices alive at the solver's peak (measured with tracemalloc on a
#: 76800 x 200 best-pair solve: 15.5, plus the data matrix; rounded up for the masks).
LIVE_MATRICES = 18
#: ``--window auto``: clips of at most this many frames are solved whole.
AUTO_WHOLE_MAX = 400
#: ``--window auto``: frames per window for longer clips (less when memory is short).
AUTO_WINDOW = 200
#: Fraction of the available memory a job may plan to use.
MEMORY_FRACTION = 0.6
#: Background columns of a window handed on to the next (solved with it, not written).
#: Measured on cdnet_highway, window 200, overlap 20: at --scale 0.5, F = 0.803 with none,
#: 0.836 with 50, 0.852 with 100 (whole video: 0.836); at full size and defaults, 0.884
#: with 50, 0.894 with 100 (whole video: 0.906). Peak RSS streaming 1000 frames of
#: 320x240 with 100: 1.23 GB.
CARRY_FRAMES = 100
#: Frames of the background kept for the background.png median (decimated beyond: a
#: median over 512 frames of 320x240 took 0.16 s, over 64 of them 0.02 s).
STILL_FRAMES = 64


def frame_bytes(width: int, height: int, *, color: bool, masked: bool = False) -> int:
    """Working memory per frame of a window: float32 matrices, mask, uint8 frames.

    Parameters
    ----------
    width, height : int
        Frame size after ``--scale``.
    color : bool
        Whether the matrix stacks the three channels (``--color``).
    masked : bool
        Whether an observation mask (one bool per matrix entry) is held.

    Returns
    -------
    int
        Bytes per frame: ``m * 4 * LIVE_MATRICES`` (m = pixels x channels) plus the bool
        mask, plus the uint8 BGR frame and its foreground and background copies.
    """
    m = width * height * (3 if color else 1)
    return m * 4 * LIVE_MATRICES + (m if masked else 0) + 3 * width * height * 3


def estimate_memory(width: int, height: int, frames: int, *, color: bool, masked: bool) -> int:
    """Bytes a window of ``frames`` frames needs (see :func:`frame_bytes`)."""
    return frame_bytes(width, height, color=color, masked=masked) * frames


def available_memory() -> int:
    """Memory available to a new job, in bytes (``psutil.virtual_memory().available``)."""
    import psutil

    return int(psutil.virtual_memory().available)


def _gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB"


def plan_window(
    settings: SeparateSettings,
    width: int,
    height: int,
    frame_count: int | None,
    *,
    name: str,
    available: int | None = None,
) -> tuple[int | None, int]:
    """Choose the window size and check that it fits in memory, before any work.

    Parameters
    ----------
    settings : SeparateSettings
        ``window`` (int or "auto"), ``overlap``, ``gray``, ``rank``, mask options.
    width, height : int
        Frame size after scaling.
    frame_count : int or None
        Frames expected (None when unknown: stdin).
    name : str
        The input, for messages.
    available : int, optional
        Available memory in bytes (default: :func:`available_memory`).

    Returns
    -------
    window : int or None
        Frames per window, or None for the whole video at once.
    whole_max : int
        With ``--window auto``: a stream that ends within this many frames is solved whole
        (0 otherwise).

    Raises
    ------
    InputError
        When the job cannot fit; the message names ``--window`` and ``--scale``.
    """
    avail = available if available is not None else available_memory()
    budget = int(avail * MEMORY_FRACTION)
    masked = settings.mask is not None or settings.observe is not None
    per_frame = frame_bytes(width, height, color=not settings.gray, masked=masked)
    fits = max(0, budget // per_frame)
    carry = lambda w: min(w, CARRY_FRAMES)  # noqa: E731 - background columns per window
    minimum = max(2 * settings.rank + 2, settings.overlap + 2)
    size = f"{width}x{height}{' colour' if not settings.gray else ''}"
    if settings.window == 0:
        if frame_count is not None and frame_count > fits:
            need = estimate_memory(width, height, frame_count, color=not settings.gray,
                                   masked=masked)  # fmt: skip
            raise InputError(
                f"{name}: solving all {frame_count} frames of {size} at once needs about "
                f"{_gib(need)} but {_gib(avail)} is available: use --window {max(fits, 1)} "
                "or less (or --window auto), or a smaller --scale"
            )
        return None, 0
    if settings.window == "auto":
        if fits < minimum:
            raise InputError(
                f"{name}: even a window of {minimum} frames of {size} needs about "
                f"{_gib(minimum * per_frame)} but {_gib(avail)} is available: lower --scale"
            )
        window = max(minimum, min(AUTO_WINDOW, fits // 2 + fits // 4))
        # Whether the clip is short is decided by reading ahead, not by the container's
        # frame count (an estimate, absent on stdin).
        return window, min(AUTO_WHOLE_MAX, fits)
    window = int(settings.window)
    if window < minimum:
        raise InputError(
            f"{name}: window ({window}) must be at least {minimum} frames (2 x rank + 2 and "
            "overlap + 2): raise --window"
        )
    if window + carry(window) > fits:
        raise InputError(
            f"{name}: a window of {window} frames of {size} needs about "
            f"{_gib((window + carry(window)) * per_frame)} but {_gib(avail)} is available: use "
            f"--window {max(fits * 3 // 4, 1)} or less, or a smaller --scale"
        )
    return window, 0


def _window_video(
    chunk: list[tuple[int, np.ndarray]], settings: SeparateSettings, fps: float, name: str
) -> Video:
    """The data matrix of one window, from its uint8 frames.

    The matrix stays uint8 (the pixels are integers): :func:`solve` converts it to float32
    when the solver runs on it, which it does not at a solve scale below 1 (the solver
    gets a downscaled copy; masks read the uint8 pixels).
    """
    numbers = [number for number, _ in chunk]
    stack = np.stack([frame for _, frame in chunk])
    if settings.gray:
        planes = np.stack([cv2.cvtColor(f, cv2.COLOR_BGR2GRAY) for f in stack])
    else:
        planes = stack
    n = planes.shape[0]
    flat = planes.reshape(n, -1)
    if max(flat.shape) < 2**31:  # transpose the uint8 frames (OpenCV)
        data = cv2.transpose(flat)
    else:  # pragma: no cover
        data = np.ascontiguousarray(flat.T)
    return Video(
        data=data,
        frames=stack,
        frame_shape=planes.shape[1:],
        fps=fps,
        source=name,
        frame_numbers=numbers,
        planes=planes,
    )


#: ``--solve-scale auto``: frames of at least this many pixels (after ``--scale``) are
#: solved at :data:`AUTO_SOLVE_SCALE`, smaller ones at full resolution. Measured F-measure
#: (``bench_end_to_end.py --quality``, scale 1 / 0.5 / 0.25): the 320x240 sequences keep
#: their F at 1/4 (80x60: highway 0.8934 / 0.8914 / 0.8928, HighwayI 0.7313 / 0.7316 /
#: 0.7331, IBMtest2 0.9308 / 0.9335 / 0.9367), while CaVignal (200x136) drops already at
#: 1/2 (0.664 / 0.614 / 0.582).
AUTO_SOLVE_PIXELS = 320 * 240
#: ``--solve-scale auto`` for frames of at least :data:`AUTO_SOLVE_PIXELS` pixels.
AUTO_SOLVE_SCALE = 0.25
#: Frames sampled (evenly) for the per-pixel median whose fine detail is added back to an
#: upsampled background.
DETAIL_FRAMES = 64
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
        (320x240), 1 for smaller frames.
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
    """
    if solve_scale != "auto":
        return float(solve_scale)
    return AUTO_SOLVE_SCALE if width * height >= AUTO_SOLVE_PIXELS else 1.0


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


def _scaled_size(frame_shape: tuple[int, ...], scale: float) -> tuple[int, int]:
    h, w = frame_shape[:2]
    return max(2, round(w * scale)), max(2, round(h * scale))


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


class Background:
    """The full-resolution background ``L`` (m x k) of a window: dense, or ``left @ right.T``.

    A solve on downscaled frames gives ``L`` as a product of thin factors
    (:func:`upsample_factors`); its columns are then formed a few frames at a time, as the
    outputs are written, and ``L`` is never held whole.

    Parameters
    ----------
    dense : (m, k) ndarray, optional
        ``L`` itself.
    left, right : (m, q) and (k, q) ndarray, optional
        ``L = left @ right.T`` (when ``dense`` is None).
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

    def entries(self, index: np.ndarray) -> np.ndarray:
        """Entries of ``L`` at flat (C-order) indices (see :func:`~bpvideo.masks.noise_level`)."""
        if self.dense is not None:
            return self.dense.reshape(-1)[index]
        rows, cols = np.divmod(index, self.shape[1])
        return np.einsum("ij,ij->i", self.left[rows], self.right[cols])


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


def upsample_background(
    result: SolverResult,
    columns: slice,
    small_shape: tuple[int, ...],
    frame_shape: tuple[int, ...],
    detail: np.ndarray,
    previous_detail: np.ndarray | None = None,
    ramp_from: int = 0,
) -> np.ndarray:
    """:func:`upsample_factors` as a dense (m, k) float32 matrix."""
    bg = upsample_factors(
        result, columns, small_shape, frame_shape, detail, previous_detail, ramp_from
    )
    return bg.columns(0, bg.shape[1])


def solve_window(
    video: Video,
    settings: SeparateSettings,
    carried: np.ndarray | None,
    *,
    callback: Callable[[Iterate], None] | None = None,
    scale: float | None = None,
    previous_detail: np.ndarray | None = None,
    new_from: int = 0,
) -> tuple[SolverResult, Background, np.ndarray | None, np.ndarray | None]:
    """Solve one window (with the previous window's background columns when ``carried``).

    With a solve scale < 1 the solver runs on frames downscaled by that factor
    (``cv2.INTER_AREA``); ``L`` is upsampled back (:func:`upsample_factors`: the
    solver's factors ``INTER_LINEAR``, plus the fine detail of the per-pixel median frame,
    :func:`median_detail`, moving from ``previous_detail`` across the window), and ``S``
    (nearest, only for ``--mask-rule support``), so that masks and outputs are computed at
    full resolution.

    Parameters
    ----------
    scale : float, optional
        Solve scale (default: :func:`effective_solve_scale` of ``settings.solve_scale``).
    previous_detail : (m, 1) ndarray, optional
        The detail added at the end of the previous window.
    new_from : int
        First frame of the window not shared with the previous window.

    Returns
    -------
    result, L, S, detail
        The solver's result, the full-resolution ``L`` (a :class:`Background`: dense at
        full resolution, factored when downscaled) and ``S`` of the window's frames (``S``
        None when downscaled and not needed by the mask rule), and the detail image added
        to ``L`` (None at full resolution).
    """
    full_shape = tuple(video.frame_shape)
    if scale is None:
        scale = effective_solve_scale(settings.solve_scale, video.width, video.height)
    if scale < 1.0:
        size = _scaled_size(full_shape, scale)
        small_shape = (size[1], size[0], *full_shape[2:])
        mask = None
        if video.mask is not None:
            mask = resize_columns(
                video.mask.astype(np.float32), full_shape, size, cv2.INTER_NEAREST
            ).astype(bool)
        solved_video = Video(
            data=resize_columns(video.data, full_shape, size, cv2.INTER_AREA),
            frames=video.frames,
            frame_shape=small_shape,
            fps=video.fps,
            source=video.source,
            mask=mask,
        )
        if carried is not None:
            carried = resize_columns(carried, full_shape, size, cv2.INTER_AREA)
    else:
        solved_video = video
    carry = 0
    if carried is None:
        result = solve(solved_video, settings, callback=callback)
    else:
        carry = carried.shape[1]
        solved = _with_carried(solved_video, carried)
        L0, S0 = warm_start(
            solved.data, _orthonormal(carried), settings.rank, settings.sparsity, solved.mask
        )
        result = solve(solved, settings, callback=callback, L0=L0, S0=S0)
        del L0, S0, solved
    own = slice(carry, result.L.shape[1])
    if scale >= 1.0:
        return result, Background(result.L[:, own]), result.S[:, own], None
    detail = median_detail(video.data, full_shape, size)
    L = upsample_factors(
        result, own, small_shape, full_shape, detail, previous_detail, ramp_from=new_from
    )
    S = None
    if settings.mask_rule == "support":
        S = result.S[:, own][nearest_rows(small_shape, solved_video_size(full_shape))]
    return result, L, S, detail


def _orthonormal(M: np.ndarray) -> np.ndarray:
    """Orthonormal basis of the column space of ``M`` (m x k, k small), by a thin QR."""
    Q, R = np.linalg.qr(M.astype(np.float64, copy=False))
    keep = np.abs(np.diag(R)) > 1e-9 * max(float(np.abs(R).max()), 1e-30)
    return np.ascontiguousarray(Q[:, keep], dtype=M.dtype)


def _with_carried(video: Video, carried: np.ndarray) -> Video:
    """``video`` with the previous window's background columns put in front of its frames.

    The carried columns are the background model handed on: they hold the low-rank fit of
    the new window to the background seen so far (they are solved, not written).
    """
    k = carried.shape[1]
    mask = None
    if video.mask is not None:
        mask = np.hstack([np.ones((carried.shape[0], k), dtype=bool), video.mask])
    return Video(
        data=np.hstack([carried, video.data]),
        frames=video.frames,
        frame_shape=video.frame_shape,
        fps=video.fps,
        source=video.source,
        mask=mask,
    )


def warm_start(
    A: np.ndarray, basis: np.ndarray, rank: int, sparsity: float, mask: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Starting point of a window from the previous window's background subspace.

    The robust start with the per-pixel median replaced by the projection of the new
    frames on the previous background subspace ``U``: ``B = U U^T A``,
    ``S0 = T_alpha(A - B)``, ``L0 = H_r(A - S0)``.

    Parameters
    ----------
    A : (m, n) ndarray
        The window's data.
    basis : (m, k) ndarray
        Orthonormal basis of the previous window's ``L``.
    rank, sparsity
        As for the solver.
    mask : (m, n) bool ndarray, optional
        Observation mask (unobserved entries are filled from ``B``).

    Returns
    -------
    L0, S0 : (m, n) ndarray
    """
    filled = A if mask is None else np.where(mask, A, 0).astype(A.dtype)
    B = basis @ (basis.T @ filled)
    if mask is not None:
        filled = np.where(mask, A, B).astype(A.dtype)
    S0 = project_sparse(filled - B, sparsity)
    if mask is not None:
        S0[~mask] = 0
    del B
    L0 = project_rank(filled - S0, rank)
    return L0, S0


def _windows(
    frames: Iterator[tuple[int, np.ndarray]],
    window: int | None,
    overlap: int,
    whole_max: int,
    min_frames: int = 2,
) -> Iterator[tuple[list[tuple[int, np.ndarray]], int]]:
    """Yield ``(chunk, new_from)``: the frames of each window and where its new ones start.

    Each window holds ``window`` frames: the last ``overlap`` frames of the previous
    window, then new ones. ``window`` None: one chunk of every frame. With ``whole_max``
    > 0 (``--window auto``), a stream that ends within ``whole_max`` frames is one chunk
    too. A last window with fewer than ``min_frames`` frames takes more of the previous
    window's frames (re-solved, not re-written).
    """
    if window is None:
        yield list(frames), 0
        return
    if whole_max > 0:
        head: list[tuple[int, np.ndarray]] = []
        for item in frames:
            head.append(item)
            if len(head) > whole_max:
                break
        else:
            yield head, 0
            return
        frames = itertools.chain(head, frames)
        del head
    keep = max(overlap, min_frames)
    tail: list[tuple[int, np.ndarray]] = []
    chunk: list[tuple[int, np.ndarray]] = []
    first = True
    for item in frames:
        chunk.append(item)
        used = tail[len(tail) - overlap :] if overlap and not first else []
        if len(used) + len(chunk) == window:
            yield used + chunk, len(used)
            tail = (tail + chunk)[-keep:]
            chunk = []
            first = False
    if chunk:
        if first:
            yield chunk, 0
        else:
            extra = max(overlap, min_frames - len(chunk))
            used = tail[len(tail) - extra :] if extra else []
            yield used + chunk, len(used)


def _solve_entries(
    source: FrameSource, settings: SeparateSettings, window: int | None, solve_scale: float
) -> int:
    """Entries of the matrix the solver will get for a window (estimated before reading)."""
    w, h = (source.width, source.height)
    if solve_scale < 1.0:
        w, h = _scaled_size((h, w), solve_scale)
    frames = window or source.frame_count or AUTO_WHOLE_MAX
    if window is not None:
        frames += CARRY_FRAMES
    return w * h * (1 if settings.gray else 3) * frames


class _WarmUp(threading.Thread):
    """:func:`bpvideo._kernels.warm_up` in a daemon thread; :meth:`join` re-raises."""

    def __init__(self) -> None:
        super().__init__(name="bpvideo-warm-up", daemon=True)
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            _kernels.warm_up()
        except Exception as exc:  # pragma: no cover - handed to the main thread
            self.error = exc

    def join(self, timeout: float | None = None) -> None:
        super().join(timeout)
        if self.error is not None:  # pragma: no cover
            raise self.error


class _Still:
    """Background frames kept for the ``background.png`` median (uniformly decimated)."""

    def __init__(self, limit: int = STILL_FRAMES) -> None:
        self.limit = limit
        self.stride = 1
        self.count = 0
        self.kept: list[np.ndarray] = []

    def add(self, frames: np.ndarray) -> None:
        for frame in frames:
            if self.count % self.stride == 0:
                self.kept.append(frame.copy())
                if len(self.kept) > self.limit:
                    self.kept = self.kept[::2]
                    self.stride *= 2
            self.count += 1

    def median(self) -> np.ndarray:
        return _to_uint8(np.median(np.stack(self.kept), axis=0))


#: Frames whose outputs are formed at a time (background columns, residual, masks,
#: foreground): a window's full-resolution background and masks are never held whole,
#: and the encoders get frames while the next ones are formed.
OUTPUT_FRAMES = 32


class _Outputs:
    """The outputs of :func:`separate`, formed and written a few frames at a time.

    Both videos go to ffmpeg encoders fed by their own threads
    (:class:`~bpvideo.writer.VideoStream`), masks into the staging folder (and
    ``--masks-to``), background frames to the ``background.png`` median and the preview.
    """

    def __init__(
        self,
        outdir: OutputDir,
        settings: SeparateSettings,
        fps: float,
        ext: str,
        frame_count: int | None,
    ) -> None:
        self.outdir = outdir
        self.settings = settings
        lossless = settings.lossless
        self.bg_stream = VideoStream(outdir.stage(f"background.{ext}"), fps, lossless=lossless)
        self.fg_stream = VideoStream(outdir.stage(f"foreground.{ext}"), fps, lossless=lossless)
        self.sink = RawMaskSink(settings.masks_to) if settings.masks_to else None
        self.mask_files = MaskWriter(outdir.stage("masks"))
        self.still = _Still()
        self.shown = _PreviewFrames(frame_count) if settings.preview else None
        self.written = 0
        self.fg_pixels = 0

    def open(self, size: tuple[int, int]) -> None:
        """Start both encoders for frames of ``size`` (H, W)."""
        self.bg_stream.open(size if self.settings.gray else (*size, 3))
        self.fg_stream.open((*size, 3))

    def window(
        self,
        video: Video,
        L: Background,
        S: np.ndarray | None,
        new_from: int,
        seconds: dict[str, float],
    ) -> tuple[float | None, float | None]:
        """Write the frames ``new_from:`` of a solved window; return (threshold, noise).

        The automatic threshold is set from the whole window's residual first
        (:func:`~bpvideo.masks.mask_threshold`), then masks are made and written
        :data:`OUTPUT_FRAMES` at a time.
        """
        st = self.settings
        t = time.perf_counter()
        threshold: float | None = None
        noise: float | None = None
        if st.mask_rule == "residual":
            level = L.dense if L.dense is not None else L.entries
            threshold, noise = mask_threshold(
                video.data, level, video.mask, threshold=st.threshold, threshold_k=st.threshold_k
            )
        seconds["masks"] += time.perf_counter() - t
        n = video.n_frames
        shape = video.frame_shape
        # frame by frame (contiguous) when the frames are kept and nothing else is needed
        by_frames = video.planes is not None and video.mask is None and S is None
        for lo in range(new_from, n, OUTPUT_FRAMES):
            hi = min(n, lo + OUTPUT_FRAMES)
            t = time.perf_counter()
            if by_frames:
                A, Lc = video.planes[lo:hi], L.frames(lo, hi, shape)
            else:
                A, Lc = video.data[:, lo:hi], L.columns(lo, hi)
            masks = foreground_masks(
                A,
                Lc,
                None if S is None else S[:, lo:hi],
                shape,
                rule=st.mask_rule,
                threshold=st.threshold if threshold is None else threshold,
                observed=None if video.mask is None else video.mask[:, lo:hi],
                open_radius=st.open_radius,
                close_radius=st.close_radius,
                min_area=st.min_area,
            ).masks
            t2 = time.perf_counter()
            seconds["masks"] += t2 - t
            if by_frames:
                flat = Lc.reshape(len(Lc), -1)  # rounded and saturated, as columns_to_frames
                background = cv2.add(flat, 0.0, dtype=cv2.CV_8U).reshape(Lc.shape)
            else:
                background = columns_to_frames(Lc, shape)
            del A, Lc
            foreground = masked_frames(video.frames[lo:hi], masks)
            self.bg_stream.write(background)
            self.fg_stream.write(foreground)
            if self.shown is not None:
                self.shown.add(
                    self.written, video.frames[lo:hi], background, foreground, masks, n - lo
                )
            self.mask_files.write(masks)
            if self.sink is not None:
                self.sink.write(masks)
            self.still.add(background)
            self.fg_pixels += int(np.count_nonzero(masks))
            self.written += hi - lo
            seconds["write"] += time.perf_counter() - t2
        return threshold, noise

    def close(self) -> None:
        """Finish the videos, the raw masks, ``background.png`` and the preview."""
        self.bg_stream.close()
        self.fg_stream.close()
        self.mask_files.close()
        if self.sink is not None:
            self.sink.close()
        stage = self.outdir.stage
        atomic_write_bytes(stage("background.png"), encode_png(self.still.median()))
        if self.shown is not None:
            atomic_write_bytes(stage("preview.png"), encode_png(self.shown.sheet()))

    def abort(self) -> None:
        """Stop the encoders and the mask writer (after a failure or an interruption)."""
        self.bg_stream.abort()
        self.fg_stream.abort()
        self.mask_files.abort()


def _check_window(video: Video, settings: SeparateSettings, name: str, whole: bool) -> None:
    try:
        check_problem(
            video.data.shape,
            settings.rank,
            settings.sparsity,
            settings.gamma,
            settings.a,
            settings.b,
            settings.max_iter,
            settings.tol,
        )
    except InputError as exc:
        if whole:
            raise InputError(f"{name}: {exc.message}") from None
        raise InputError(
            f"{name}: last window: {exc.message} (or lower --overlap / use --window 0)"
        ) from None


def separate(
    input_path: str,
    output: str | None,
    settings: SeparateSettings,
    *,
    callback: Callable[[Iterate], None] | None = None,
    stdin: Any = None,
) -> dict[str, Any]:
    """Separate one clip and write the output layout; return the summary.

    Frames are read as a stream and held as uint8 until their window is solved. With a
    window size (``settings.window``), the video is solved window by window, each started
    from the previous window's background subspace (:func:`warm_start`) and sharing
    ``settings.overlap`` frames with it; every window's new frames are written as soon as
    it is solved (videos by ffmpeg processes kept open, masks into the staging folder),
    ``summary.json`` last. ``--window 0`` (and ``auto`` on short clips) solves the whole
    video at once.

    Parameters
    ----------
    input_path : str
        Video file, image folder, or ``"-"`` for stdin.
    output : str or None
        Output directory (default: :func:`default_output`).
    settings : SeparateSettings
        Options; validated here.
    callback : callable, optional
        Called with each solver :class:`~bpvideo.solver.Iterate`.
    stdin : binary file, optional
        Stream read for ``"-"`` instead of ``sys.stdin.buffer``.

    Returns
    -------
    dict
        The content of ``summary.json``.

    Raises
    ------
    InputError
        Bad options or input, or a job that cannot fit in memory, before any output is
        written (a bad last window is found when it is reached).
    WorkError
        Failed work; nothing partial is left in the output directory.
    """
    t_start = time.perf_counter()
    settings.validate()
    if input_path == "-" and output is None:
        output = "stdin-bpvideo"
    out_path = output or default_output(input_path)
    outdir = OutputDir(out_path, overwrite=settings.overwrite)
    outdir.check()
    seconds: dict[str, float] = {"read": 0.0, "solve": 0.0, "masks": 0.0, "write": 0.0}

    t = time.perf_counter()
    source = open_source(
        input_path,
        start=settings.start,
        frames=settings.frames,
        step=settings.step,
        scale=settings.scale,
        fps=settings.fps,
        size=parse_size(settings.size) if settings.size else None,
        pix_fmt=settings.pix_fmt,
        stdin=stdin,
        allow_partial=settings.allow_partial,
    )
    try:
        if settings.groundtruth is not None:  # checked before the work, used after it
            check_groundtruth(settings.groundtruth, source.width, source.height)
        window, whole_max = plan_window(
            settings, source.width, source.height, source.frame_count, name=source.name
        )
        # One BLAS thread throughout: the products outside the solver are thin (r + 2
        # columns), and idle OpenBLAS threads spin for a while after each call, taking a
        # core from the ffmpeg encoders (measured: 1.1 s of CPU on a 300-frame clip).
        with threadpool_limits(limits=1, user_api="blas"):
            summary = _run_windows(
                source, window, whole_max, outdir, out_path, settings, seconds, callback, t,
                t_start,
            )  # fmt: skip
    finally:
        source.close()
    logger.info("wrote %s (%.2fs in all)", out_path, seconds["total"])
    return summary


def _run_windows(
    source: FrameSource,
    window: int | None,
    whole_max: int,
    outdir: OutputDir,
    out_path: str,
    settings: SeparateSettings,
    seconds: dict[str, float],
    callback: Callable[[Iterate], None] | None,
    t_read: float,
    t_start: float,
) -> dict[str, Any]:
    # Load the compiled kernels while the frames are read (ffmpeg decodes in its own
    # process), not while solving; in a thread, which signals never interrupt (an
    # interrupt that arrives while numba reads its cache is printed as a traceback from a
    # ctypes callback when it lands there).
    solve_scale = effective_solve_scale(settings.solve_scale, source.width, source.height)
    warm = None
    if settings.method in ("bestpair", "ncf") and _kernels.numba_for(
        _solve_entries(source, settings, window, solve_scale)
    ):
        warm = _WarmUp()
    name = source.name
    ext = "mkv" if settings.lossless else "mp4"
    fps = source.fps
    numbers: list[int] = []
    reports: list[dict[str, Any]] = []
    observed = 0.0
    carried: np.ndarray | tuple[Background, np.ndarray] | None = None
    detail: np.ndarray | None = None
    frame_shape: tuple[int, ...] = ()
    index = 0
    with outdir:
        outputs = _Outputs(outdir, settings, fps, ext, source.frame_count)
        try:
            # ffmpeg loads while the frames are read and solved
            outputs.open((source.height, source.width))
            chunks = _windows(
                source.frames, window, settings.overlap, whole_max, 2 * settings.rank + 2
            )
            while True:
                try:
                    chunk, new_from = next(chunks)
                except StopIteration:
                    break
                seconds["read"] += time.perf_counter() - t_read
                if not chunk:
                    raise InputError(_nothing_selected(source, settings))
                if window is None:
                    # The frame count was an estimate (or unknown): check the real one.
                    plan_window(settings, source.width, source.height, len(chunk), name=name)
                video = _window_video(chunk, settings, fps, name)
                del chunk
                _check_window(video, settings, name, carried is None)
                if settings.mask is not None:
                    video.mask = load_observation_mask(
                        settings.mask,
                        video,
                        native_size=source.native_size,
                        start=settings.start + settings.step * (len(numbers) - new_from),
                        step=settings.step,
                        scale=settings.scale,
                    )
                elif settings.observe is not None and settings.observe < 1.0:
                    video.mask = random_observation(
                        video.data.shape, settings.observe, settings.seed + index
                    )
                frame_shape = video.frame_shape
                n = video.n_frames
                if index == 0:
                    logger.info(
                        "read %d frames of %dx%d from %s (%.2fs)%s",
                        n,
                        video.width,
                        video.height,
                        name,
                        seconds["read"],
                        ""
                        if window is None or n != window  # read-ahead found the whole clip
                        else f"; solving in windows of {window} frames, overlap {settings.overlap}",
                    )

                t = time.perf_counter()
                if warm is not None:
                    warm.join()
                    warm = None
                if isinstance(carried, tuple):
                    carried = carried[0].take(carried[1])
                result, L, S, detail = solve_window(
                    video,
                    settings,
                    carried,
                    callback=callback,
                    scale=solve_scale,
                    previous_detail=detail,
                    new_from=new_from,
                )
                seconds["solve"] += time.perf_counter() - t

                new = slice(new_from, n)
                threshold, noise = outputs.window(video, L, S, new_from, seconds)
                t = time.perf_counter()
                numbers.extend(video.frame_numbers[new])
                if window is not None and CARRY_FRAMES > 0:
                    pick = np.unique(
                        np.linspace(0, n - 1, min(n, CARRY_FRAMES)).round().astype(int)
                    )
                    # kept as (background, columns) when factored: formed only if
                    # another window comes
                    carried = L.take(pick) if L.dense is not None else (L, pick)
                observed += (
                    n - new_from
                    if video.mask is None
                    else float(video.mask[:, new].mean()) * (n - new_from)
                )
                seconds["write"] += time.perf_counter() - t
                reports.append(
                    {
                        "first_frame": len(numbers) - (n - new_from),
                        "frames": n,
                        "new_frames": n - new_from,
                        "method": result.method,
                        "iterations": result.iterations,
                        "converged": result.converged,
                        "residual": result.residual,
                        "change": result.changes[-1] if result.changes else None,
                        "threshold": threshold,
                        "noise": noise,
                    }
                )
                if len(reports) > 1 or (window is not None and n == window):
                    logger.info(
                        "window %d: frames %d-%d, %d iterations, converged=%s, residual "
                        "%.3g (%.2fs so far)",
                        index + 1,
                        reports[-1]["first_frame"] + 1,
                        len(numbers),
                        result.iterations,
                        result.converged,
                        result.residual,
                        time.perf_counter() - t_read,
                    )
                else:
                    logger.info(
                        "%s: %d iterations, converged=%s, residual %.3g (%.2fs)",
                        result.method,
                        result.iterations,
                        result.converged,
                        result.residual,
                        seconds["solve"],
                    )
                index += 1
                del video, result, L, S
                t_read = time.perf_counter()
            if not numbers:
                raise InputError(_nothing_selected(source, settings))
            t = time.perf_counter()
            outputs.close()
            seconds["write"] += time.perf_counter() - t
        except BaseException:
            outputs.abort()
            raise
        summary = _summary(
            name, out_path, settings, numbers, frame_shape, fps, reports, window,
            outputs.fg_pixels, observed, ext,
        )  # fmt: skip
        # A truncated video read with --allow-partial: the frames it should have had.
        summary["solver"]["solve_scale"] = solve_scale  # settings may say "auto"
        summary["partial"] = source.partial
        summary["frames_expected"] = source.frames_expected if source.partial else len(numbers)
        if settings.preview:
            summary["outputs"]["preview"] = "preview.png"
        if settings.groundtruth is not None:
            summary["evaluation"] = _evaluate_staged(outdir, source, numbers, settings)
            summary["outputs"]["evaluation"] = "evaluation.csv"
        seconds["total"] = time.perf_counter() - t_start
        summary["seconds"] = {k: round(v, 4) for k, v in seconds.items()}
        write_json(outdir.stage(SUMMARY), summary)
        outdir.commit()
    return summary


def _nothing_selected(source: FrameSource, settings: SeparateSettings) -> str:
    total = (
        "" if source.total_frames is None else f"the source has {source.total_frames} frame(s), "
    )
    return (
        f"{source.name}: no frames selected ({total}--start {settings.start}, --step "
        f"{settings.step}): lower --start or check the input"
    )


class _PreviewFrames:
    """Frames kept for the ``--preview`` contact sheet while the video streams by.

    With a known frame count the sheet shows :func:`~bpvideo.preview.preview_frames` of
    the whole clip; otherwise (stdin) frames of the first window.
    """

    def __init__(self, frame_count: int | None) -> None:
        self.wanted = set(preview_frames(frame_count)) if frame_count else None
        self.kept: list[tuple[np.ndarray, ...]] = []

    def add(
        self,
        first: int,
        frames: np.ndarray,
        background: np.ndarray,
        foreground: np.ndarray,
        masks: np.ndarray,
        span: int | None = None,
    ) -> None:
        """Offer the frames ``first, first + 1, ...`` of the clip.

        ``span``: frames of the window these belong to, from ``first`` on (the sheet of a
        clip of unknown length shows frames of its first window).
        """
        if self.wanted is None:
            self.wanted = {first + i for i in preview_frames(span or len(masks))}
        picks = [i - first for i in sorted(self.wanted) if first <= i < first + len(masks)]
        for i in picks:
            self.kept.append((frames[i], background[i], foreground[i], masks[i]))

    def sheet(self) -> np.ndarray:
        """The contact sheet of the frames kept."""
        frames, background, foreground, masks = (np.stack(x) for x in zip(*self.kept, strict=True))
        return contact_sheet(frames, background, foreground, masks, rows=len(masks))


def _evaluate_staged(
    outdir: OutputDir, source: FrameSource, numbers: list[int], settings: SeparateSettings
) -> dict[str, Any]:
    """Score the staged masks against ``settings.groundtruth``; stage evaluation.csv."""
    t = time.perf_counter()
    result = evaluate(
        outdir.stage("masks"),
        settings.groundtruth,
        frame_numbers=numbers,
        video=input_is_video("-" if source.name == "stdin" else source.name),
    )
    result.to_csv(outdir.stage("evaluation.csv"))
    s = result.summary
    logger.info(
        "evaluation: F-measure %.4f, recall %.4f, precision %.4f over %d frames (%.2fs)",
        s["f_measure"],
        s["recall"],
        s["precision"],
        s["frames_scored"],
        time.perf_counter() - t,
    )
    info = dict(result.info, masks=str(outdir.path / "masks"))  # not the staging folder
    return {"summary": s, "info": info}


def _summary(
    name: str,
    out_path: str,
    settings: SeparateSettings,
    numbers: list[int],
    frame_shape: tuple[int, ...],
    fps: float,
    reports: list[dict[str, Any]],
    window: int | None,
    fg_pixels: int,
    observed: float,
    ext: str,
) -> dict[str, Any]:
    n = len(numbers)
    height, width = frame_shape[:2]
    last = dict(reports[-1])
    for r in reports:
        r.pop("method", None)
    thresholds = [r["threshold"] for r in reports if r["threshold"] is not None]
    noises = [r["noise"] for r in reports if r["noise"] is not None]
    return {
        "bpvideo_version": __version__,
        "input": str(name),
        "output": str(out_path),
        "frames": n,
        "frame_numbers": numbers,
        "width": width,
        "height": height,
        "channels": 1 if len(frame_shape) == 2 else frame_shape[2],
        "fps": fps,
        "observed_fraction": observed / n,
        "settings": settings.to_dict(),
        "solver": {
            "method": last.pop("method"),
            "iterations": int(sum(r["iterations"] for r in reports)),
            "converged": all(r["converged"] for r in reports),
            "residual": last["residual"],
            "change": last["change"],
        },
        "masks": {
            "rule": settings.mask_rule,
            # One window: its threshold; several: the median of the windows' thresholds.
            "threshold": float(np.median(thresholds)) if thresholds else None,
            "noise": float(np.median(noises)) if noises else None,
            "foreground_fraction": fg_pixels / (n * width * height),
        },
        "windows": {
            "window": window,
            "overlap": settings.overlap if window is not None else 0,
            "count": len(reports),
            "list": reports,
        },
        "outputs": {
            "background_video": f"background.{ext}",
            "foreground_video": f"foreground.{ext}",
            "masks": "masks/bin%06d.png",
            "background_image": "background.png",
            "summary": SUMMARY,
        },
    }


# --- many inputs -----------------------------------------------------------------------

_GLOB_CHARS = set("*?[")


def expand_inputs(patterns: Sequence[str]) -> list[str]:
    """Expand shell-style globs among the inputs, keeping the order given.

    Parameters
    ----------
    patterns : sequence of str
        Paths, globs (``cams/*.mp4``, ``**`` recursive) or ``"-"`` (stdin). A path without
        glob characters is kept as is, even when missing (its job reports the error).
        Matches of one glob are sorted; a path listed twice is kept once.

    Returns
    -------
    list of str

    Raises
    ------
    InputError
        If a glob matches nothing (the message names it), or stdin is listed with other
        inputs or twice.
    """
    out: list[str] = []
    seen: set[str] = set()
    for pattern in patterns:
        if pattern != "-" and _GLOB_CHARS & set(pattern) and not Path(pattern).exists():
            matches = sorted(glob.glob(pattern, recursive=True))
            if not matches:
                raise InputError(
                    f"{pattern}: the glob matches no file or folder: check the pattern (quote "
                    "it so that bpvideo, not the shell, expands it)"
                )
        else:
            matches = [pattern]
        for match in matches:
            if match not in seen:
                seen.add(match)
                out.append(match)
    if "-" in out and len(out) > 1:
        raise InputError("stdin ('-') cannot be combined with other inputs: run it alone")
    return out


def _input_name(input_path: str) -> Path:
    if input_path == "-":
        return Path("stdin")
    p = Path(input_path.rstrip("/\\"))
    if p.name == "input" and p.parent.name:  # changedetection.net: seq/input -> seq
        p = p.parent
    return p


def path_fields(input_path: str | os.PathLike) -> dict[str, str]:
    """The template fields of an input: ``stem``, ``name`` and ``parent``.

    ``stem`` is the file name without extension (or a folder's name), ``name`` the file or
    folder name, ``parent`` the name of the folder holding it. A changedetection.net
    ``SEQ/input`` folder counts as ``SEQ``; stdin (``"-"``) is ``stdin`` with no parent.
    Used by ``separate``'s output templates and by the batch configs.
    """
    input_path = str(input_path)
    p = _input_name(input_path)
    stem = p.stem if p.suffix and not Path(input_path).is_dir() else p.name
    parent = p.resolve().parent.name if input_path != "-" else ""
    return {"stem": stem, "name": p.name, "parent": parent}


def format_output(template: str | None, input_path: str, index: int) -> str:
    """The output directory of one input from an output template.

    Parameters
    ----------
    template : str or None
        ``-o`` value. May hold ``{stem}`` (file name without extension, or folder name),
        ``{name}`` (file or folder name), ``{parent}`` (name of the folder holding the
        input) and ``{index}`` (1-based position among the inputs). None gives
        :func:`default_output`. A template without placeholders is returned as is.
    input_path : str
        The input (``"-"`` for stdin: stem ``stdin``).
    index : int
        1-based position of the input.

    Returns
    -------
    str

    Raises
    ------
    InputError
        On an unknown placeholder or a malformed template.

    Examples
    --------
    >>> format_output("out/{parent}-{stem}", "cams/north/cam1.mp4", 1)
    'out/north-cam1'
    >>> format_output("out/{index:03d}", "a.mp4", 7)
    'out/007'
    """
    if template is None:
        return (
            default_output(str(_input_name(input_path))) if input_path != "-" else "stdin-bpvideo"
        )
    fields = {**path_fields(input_path), "index": index}
    try:
        return template.format(**fields)
    except KeyError as exc:
        raise InputError(
            f"output template {template!r}: unknown placeholder {{{exc.args[0]}}}: use "
            "{stem}, {name}, {parent} or {index}"
        ) from None
    except (ValueError, IndexError) as exc:
        raise InputError(f"output template {template!r}: {exc}: e.g. -o out/{{stem}}") from None


def plan_outputs(inputs: Sequence[str], template: str | None) -> list[str]:
    """Output directory of each input; refuse templates that send two inputs to one place.

    Raises
    ------
    InputError
        When two inputs would get the same output directory (names the fix).
    """
    outputs = [format_output(template, path, i) for i, path in enumerate(inputs, start=1)]
    seen: dict[str, str] = {}
    for path, out in zip(inputs, outputs, strict=True):
        key = str(Path(out).resolve())
        if key in seen:
            raise InputError(
                f"{path} and {seen[key]} would both write to {out}: give -o a template such "
                "as OUT/{stem}, OUT/{parent}-{stem} or OUT/{index}"
            )
        seen[key] = path
    return outputs


def separate_many(
    inputs: Sequence[str],
    template: str | None,
    settings: SeparateSettings,
    *,
    callback: Callable[[Iterate], None] | None = None,
) -> Iterator[tuple[str, str, dict[str, Any] | None, BpvideoError | None]]:
    """Run :func:`separate` on each input; one failure does not stop the others.

    Parameters
    ----------
    inputs : sequence of str
        Inputs, already expanded (:func:`expand_inputs`).
    template : str or None
        Output template (:func:`format_output`).
    settings : SeparateSettings
        Options shared by every job (each job gets its own copy).
    callback : callable, optional
        Solver callback.

    Yields
    ------
    (input, output, summary or None, error or None)
        One tuple per input, in order, as each job ends.
    """
    outputs = plan_outputs(inputs, template)
    for path, out in zip(inputs, outputs, strict=True):
        job = dataclasses.replace(settings)
        try:
            yield path, out, separate(path, out, job, callback=callback), None
        except BpvideoError as exc:
            yield path, out, None, exc
