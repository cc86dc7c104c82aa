"""Solving one window: the solver ``method`` names, on the solve scale, with what the
previous window hands on.
"""

from __future__ import annotations

import logging
import threading
import warnings
from typing import Any

import cv2
import numpy as np

from bpvideo.errors import ConvergenceWarning
from bpvideo.io.sources import FrameSource
from bpvideo.io.video import Video
from bpvideo.pipeline.scale import (
    Background,
    effective_solve_scale,
    median_detail,
    nearest_rows,
    resize_columns,
    scaled_size,
    solved_video_size,
    upsample_factors,
)
from bpvideo.pipeline.windows import (
    AUTO_WHOLE_MAX,
    CARRY_FRAMES,
    orthonormal,
    warm_start,
    with_carried,
)
from bpvideo.settings import SeparateSettings
from bpvideo.solvers import SolverResult, get_solver
from bpvideo.solvers._common import Callback
from bpvideo.solvers.backends import Backend

__all__ = ["WarmUp", "solve", "solve_entries", "solve_window"]

logger = logging.getLogger("bpvideo")


def solve(
    video: Video,
    settings: SeparateSettings,
    *,
    callback: Callback | None = None,
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
    solver = get_solver(settings.method)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        result = solver(A, *settings.solver_args(), **kwargs)
    for w in caught:
        if issubclass(w.category, ConvergenceWarning):
            logger.warning("%s", w.message)
        else:  # pragma: no cover - re-emit anything else
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return result


def solve_window(
    video: Video,
    settings: SeparateSettings,
    carried: np.ndarray | None,
    *,
    callback: Callback | None = None,
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
        size = scaled_size(full_shape, scale)
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
        solved = with_carried(solved_video, carried)
        L0, S0 = warm_start(
            solved.data, orthonormal(carried), settings.rank, settings.sparsity, solved.mask
        )
        result = solve(solved, settings, callback=callback, L0=L0, S0=S0)
        del L0, S0, solved
    own = slice(carry, result.L.shape[1])
    if scale >= 1.0:
        U, V = result.factors if result.factors is not None else (None, None)
        L = Background(result.L[:, own], U, None if V is None else V[own])
        return result, L, result.S[:, own], None
    detail = median_detail(video.data, full_shape, size)
    L = upsample_factors(
        result, own, small_shape, full_shape, detail, previous_detail, ramp_from=new_from
    )
    S = None
    if settings.mask_rule == "support":
        S = result.S[:, own][nearest_rows(small_shape, solved_video_size(full_shape))]
    return result, L, S, detail


def solve_entries(
    source: FrameSource, settings: SeparateSettings, window: int | None, solve_scale: float
) -> int:
    """Entries of the matrix the solver will get for a window (estimated before reading)."""
    w, h = (source.width, source.height)
    if solve_scale < 1.0:
        w, h = scaled_size((h, w), solve_scale)
    frames = window or source.frame_count or AUTO_WHOLE_MAX
    if window is not None:
        frames += CARRY_FRAMES
    return w * h * (1 if settings.gray else 3) * frames


class WarmUp(threading.Thread):
    """The backend's :meth:`~bpvideo.solvers.backends.Backend.warm_up` in a daemon thread;
    :meth:`join` re-raises its error.

    Loads the compiled kernels while the frames are read (ffmpeg decodes in its own
    process), not while solving; in a thread, which signals never interrupt (an interrupt
    that arrives while numba reads its cache is printed as a traceback from a ctypes
    callback when it lands there).
    """

    def __init__(self, backend: Backend) -> None:
        super().__init__(name="bpvideo-warm-up", daemon=True)
        self.backend = backend
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self.backend.warm_up()
        except Exception as exc:  # pragma: no cover - handed to the main thread
            self.error = exc

    def join(self, timeout: float | None = None) -> None:
        super().join(timeout)
        if self.error is not None:  # pragma: no cover
            raise self.error
