"""Solving one window: the solver ``method`` names, on the solve scale, with what the
previous window hands on.
"""

from __future__ import annotations

import logging
import threading
import warnings
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from bpvideo import cores
from bpvideo.background.reference import (
    Reference,
    auto_sparsity,
    observe_background,
)
from bpvideo.errors import ConvergenceWarning
from bpvideo.pipeline.scale import (
    Background,
    effective_solve_scale,
    median_detail,
    nearest_rows,
    reference_detail,
    resize_columns,
    solve_size,
    solved_video_size,
    upsample_factors,
)
from bpvideo.pipeline.spool import SpooledVideo
from bpvideo.pipeline.windows import (
    orthonormal,
    uses_reference,
    warm_start,
    with_carried,
)
from bpvideo.records import Video
from bpvideo.settings import SeparateSettings
from bpvideo.solvers import SolverResult
from bpvideo.solvers._common import Callback
from bpvideo.solvers.backends import Backend, resolve_device
from bpvideo.solvers.registry import on_backend

__all__ = [
    "Solved",
    "WarmUp",
    "solve",
    "solve_device",
    "solve_window",
    "uses_reference",
]

logger = logging.getLogger("bpvideo")


def solve(
    video: Video,
    settings: SeparateSettings,
    *,
    callback: Callback | None = None,
    L0: np.ndarray | None = None,
    S0: np.ndarray | None = None,
    sparsity: float | None = None,
) -> SolverResult:
    """Run the solver that ``settings.method`` names on ``video``.

    A :class:`~bpvideo.errors.ConvergenceWarning` is logged (not raised) and recorded in
    the result's ``converged`` flag. ``L0``/``S0`` give an explicit starting point (the
    warm start of a window); otherwise ``settings.init`` chooses it. ``sparsity`` is the
    alpha of ``sparsity="auto"`` (:func:`~bpvideo.background.reference.auto_sparsity`).
    """
    A = video.data if video.data.dtype.kind == "f" else video.data.astype(np.float32)
    solver, args, options = settings.solver_call()
    kwargs: dict[str, Any] = dict(options, mask=video.mask, callback=callback)
    if (L0 is not None or S0 is not None) and "init" in kwargs:  # baselines start their own way
        kwargs.update(L0=L0, S0=S0)
    if solve_device(settings) == "cuda":
        kwargs["backend"] = "cuda"
    if args and sparsity is not None:
        args = (args[0], sparsity)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        result = solver(A, *args, **kwargs)
    for w in caught:
        if issubclass(w.category, ConvergenceWarning):
            logger.warning("%s", w.message)
        else:  # pragma: no cover - re-emit anything else
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return result


@dataclass
class Solved:
    """One window solved.

    Attributes
    ----------
    result : SolverResult
        The solver's result (at the solve scale).
    L : Background
        Full-resolution background of the window's frames (factored when downscaled).
    S : ndarray or None
        Full-resolution sparse part (None when downscaled and not needed by the mask rule).
    detail : (m, 1) ndarray or None
        The detail image added to ``L`` (None at full resolution).
    observed : (m', n) bool ndarray or None
        The entries the solver observed (solve scale), with a reference background.
    rows : ndarray or None
        Row map from full-resolution pixels to ``observed``'s rows (None at full
        resolution, where they are the same).
    reference : Reference or None
        The reference handed on to the next window.
    sparsity : float or None
        The alpha the solver ran with.
    """

    result: SolverResult
    L: Background
    S: np.ndarray | None
    detail: np.ndarray | None = None
    observed: np.ndarray | None = None
    rows: np.ndarray | None = None
    reference: Reference | None = None
    sparsity: float | None = None


def solve_device(settings: SeparateSettings) -> str:
    """Where ``settings``' solves run, ``"cpu"`` or ``"cuda"`` (``device="auto"``: the GPU
    when CuPy sees one, for the methods that run there).

    Raises
    ------
    InputError
        ``device="cuda"`` without CuPy or a GPU: the message says what to install.
    """
    if not on_backend(settings.method):  # the baselines run numpy on the CPU
        return "cpu"
    return resolve_device(settings.device)


def solve_window(
    video: Video,
    settings: SeparateSettings,
    carried: np.ndarray | None,
    *,
    callback: Callback | None = None,
    scale: float | None = None,
    previous_detail: np.ndarray | None = None,
    new_from: int = 0,
    reference: Reference | None = None,
) -> Solved:
    """Solve one window.

    With a solve scale < 1 the solver runs on frames downscaled by that factor
    (``cv2.INTER_AREA``); ``L`` is upsampled back (:func:`upsample_factors`: the
    solver's factors ``INTER_LINEAR``, plus the fine detail of the background,
    moving from ``previous_detail`` across the window), and ``S`` (nearest, only for
    ``--mask-rule support``), so that masks and outputs are computed at full resolution.

    With a reference background (:func:`uses_reference`) the solver observes only the
    entries it explains (:func:`~bpvideo.background.reference.observe_background`, handed
    ``reference``, the previous window's); otherwise every entry, and the previous
    window's background columns (``carried``) are solved with the window's frames.

    Parameters
    ----------
    scale : float, optional
        Solve scale (default: :func:`effective_solve_scale` of ``settings.solve_scale``).
    previous_detail : (m, 1) ndarray, optional
        The detail added at the end of the previous window.
    new_from : int
        First frame of the window not shared with the previous window.
    reference : Reference, optional
        The previous window's reference (or a given empty scene).

    Returns
    -------
    Solved
    """
    full_shape = tuple(video.frame_shape)
    if scale is None:
        scale = effective_solve_scale(settings.solve_scale, video.width, video.height)
    solved_video, size, small_shape = _at_solve_scale(video, full_shape, scale)
    if uses_reference(settings):
        return _solve_observed(
            video, solved_video, settings, small_shape, size, scale, callback,
            previous_detail, new_from, reference,
        )  # fmt: skip
    if carried is not None and scale < 1.0:
        carried = resize_columns(carried, full_shape, size, cv2.INTER_AREA)
    carry = 0
    if carried is None:
        result = solve(solved_video, settings, callback=callback)
    else:
        carry = carried.shape[1]
        solved = with_carried(solved_video, carried)
        L0, S0 = warm_start(
            solved.data,
            orthonormal(carried),
            settings.rank,
            settings.solver_sparsity,
            solved.mask,
        )
        result = solve(solved, settings, callback=callback, L0=L0, S0=S0)
        del L0, S0, solved
    own = slice(carry, None)
    if scale >= 1.0:
        return Solved(result, _full_background(result, own, settings), result.S[:, own])
    detail = median_detail(video.data, full_shape, size)
    L = upsample_factors(
        result, own, small_shape, full_shape, detail, previous_detail, ramp_from=new_from
    )
    S = None
    if settings.mask_rule == "support":
        S = result.S[:, own][nearest_rows(small_shape, solved_video_size(full_shape))]
    return Solved(result, L, S, detail)


def _full_background(result: SolverResult, own: slice, settings: SeparateSettings) -> Background:
    """The background of a full-resolution solve: ``L``'s columns ``own`` and its factors;
    from the factors alone after a GPU solve (``L`` then stays on the GPU)."""
    U, V = result.factors if result.factors is not None else (None, None)
    if U is not None and solve_device(settings) == "cuda":
        return Background(None, U, V[own])
    return Background(result.L[:, own], U, None if V is None else V[own])


def _at_solve_scale(
    video: Video, full_shape: tuple[int, ...], scale: float
) -> tuple[Video, tuple[int, int], tuple[int, ...]]:
    """The window's frames at the solve scale, their size (w, h) and frame shape."""
    if scale >= 1.0:
        return video, solved_video_size(full_shape), full_shape
    size = solve_size(full_shape, scale)
    small_shape = (size[1], size[0], *full_shape[2:])
    if isinstance(video, SpooledVideo):  # downscaled as it was read
        small = Video(data=video.small, frames=None, frame_shape=small_shape, fps=video.fps,
                      source=video.source)  # fmt: skip
        return small, size, small_shape
    mask = None
    if video.mask is not None:
        mask = resize_columns(
            video.mask.astype(np.float32), full_shape, size, cv2.INTER_NEAREST
        ).astype(bool)
    small = Video(
        data=resize_columns(video.data, full_shape, size, cv2.INTER_AREA),
        frames=video.frames,
        frame_shape=small_shape,
        fps=video.fps,
        source=video.source,
        mask=mask,
    )
    return small, size, small_shape


#: Background columns of a window's last frames solved again with the next window's
#: frames (observed everywhere), so that windows meet without a jump.
JOIN_FRAMES = 20


def _solve_observed(
    video: Video,
    small: Video,
    settings: SeparateSettings,
    small_shape: tuple[int, ...],
    size: tuple[int, int],
    scale: float,
    callback: Callback | None,
    previous_detail: np.ndarray | None,
    new_from: int,
    reference: Reference | None,
) -> Solved:
    """:func:`solve_window` with a reference background: the solver observes only the
    entries the reference explains."""
    absorb = round(settings.absorb * video.fps) if settings.absorb > 0 else None
    data = small.data if small.data.dtype == np.float32 else small.data.astype(np.float32)
    # the guided reference goes with the appearances: --appearances 0 is the one-image model
    observed, handed_on = observe_background(
        data, small_shape[:2], previous=reference, absorb_frames=absorb, new_from=new_from,
        mask=small.mask, guided=settings.appearances > 0,
    )  # fmt: skip
    alpha = auto_sparsity(observed) if settings.sparsity == "auto" else float(settings.sparsity)
    # The reference itself is solved as one more frame, observed everywhere: a pixel that
    # no frame of the window shows agreeing with it (a person there all along, a fine
    # texture the illumination fit misses) gets the reference, not nothing.
    n = data.shape[1]
    known = [handed_on.image[:, None]]
    if reference is not None and reference.columns is not None:
        known.append(reference.columns)
    extra = sum(k.shape[1] for k in known)
    masked = Video(
        data=np.hstack([data, *known]).astype(np.float32, copy=False),
        frames=small.frames,
        frame_shape=small.frame_shape,
        fps=small.fps,
        source=small.source,
        mask=np.hstack([observed, _known_rows(small.mask, len(observed), extra)]),
    )
    full_shape = tuple(video.frame_shape)
    rows = detail = None
    with cores.beside("bpvideo-detail") as start:
        if scale < 1.0:
            rows = nearest_rows(small_shape, solved_video_size(full_shape))
            fallback = resize_columns(
                handed_on.image[:, None], small_shape, solved_video_size(full_shape),
                cv2.INTER_LINEAR,
            )  # fmt: skip
            if previous_detail is not None:
                fallback += previous_detail
            # the detail needs the observed entries and the reference, not the solve:
            # formed beside it (its median of the full-size frames releases the lock)
            detail = start(reference_detail, video, full_shape, size, observed, rows,
                           fallback)  # fmt: skip
        result = solve(masked, settings, callback=callback, sparsity=alpha)
        del masked
        if detail is not None:
            detail = detail.result()
    join = slice(max(0, n - JOIN_FRAMES), n)
    joined = _full_background(result, join, settings)  # from the factors after a GPU solve
    handed_on.columns = np.ascontiguousarray(joined.columns(0, join.stop - join.start))
    if scale >= 1.0:
        L = _full_background(result, slice(0, n), settings)
        return Solved(result, L, None, None, observed, None, handed_on, alpha)
    L = upsample_factors(
        result, slice(0, n), small_shape, full_shape, detail, previous_detail, ramp_from=new_from
    )
    return Solved(result, L, None, detail, observed, rows, handed_on, alpha)


def _known_rows(mask: np.ndarray | None, m: int, extra: int) -> np.ndarray:
    """The observation of the reference columns: everywhere but the entries the
    observation mask leaves out of every frame (a reference there is no data: solved as
    0, it made the background black)."""
    known = np.ones((m, extra), dtype=bool)
    if mask is not None:
        known[~mask.any(axis=1)] = False
    return known


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
