"""Windows: cutting a stream of frames into windows, and what one window hands on to the
next (its background subspace: carried columns and the warm start).

A long video is solved window by window: each window holds ``window`` frames, the last
``overlap`` of the previous window's (re-solved, not re-written) and new ones, plus
:data:`CARRY_FRAMES` columns of the previous window's background (solved with it, never
written), so that the background model goes on from window to window. How long a window
is, and whether the job fits in memory, is planned before any work
(:mod:`bpvideo.pipeline.plan`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np

from bpvideo.errors import InputError, literal
from bpvideo.records import Video
from bpvideo.settings import SeparateSettings
from bpvideo.solvers import check_problem, project_rank, project_sparse

__all__ = [
    "AUTO_WHOLE_MAX",
    "AUTO_WINDOW",
    "CARRY_FRAMES",
    "check_window",
    "chunk_windows",
    "min_window",
    "uses_reference",
    "warm_start",
    "with_carried",
]

#: ``--window auto``: clips of at most this many frames are solved whole. Long windows
#: give the reference background more frames to find each pixel's still ones in.
AUTO_WHOLE_MAX = 1000
#: ``--window auto``: frames per window of longer clips. Chosen from the input and the
#: options only, never from the memory free at the time: the same command gives the same
#: masks on any machine.
AUTO_WINDOW = 500
#: Background columns of a window handed on to the next (solved with it, not written).
#: Measured on cdnet_highway, window 200, overlap 20: at --scale 0.5, F = 0.803 with none,
#: 0.836 with 50, 0.852 with 100 (whole video: 0.836); at full size and defaults, 0.884
#: with 50, 0.894 with 100 (whole video: 0.906). Peak RSS streaming 1000 frames of
#: 320x240 with 100: 1.23 GB.
CARRY_FRAMES = 100


def min_window(rank: int, overlap: int = 0) -> int:
    """The fewest frames a window may hold: ``2 * rank + 2`` (a rank-r background needs more
    frames than its rank, and a sparse part a few more), and more than the overlap.

    Examples
    --------
    >>> min_window(2), min_window(2, overlap=20)
    (6, 22)
    """
    return max(2 * rank + 2, overlap + 2)


def uses_reference(settings: SeparateSettings) -> bool:
    """Whether the solve observes only the entries a reference background explains."""
    return settings.background_from != "none" and settings.mask_rule == "residual"


def orthonormal(M: np.ndarray) -> np.ndarray:
    """Orthonormal basis of the column space of ``M`` (m x k, k small), by a thin QR."""
    Q, R = np.linalg.qr(M.astype(np.float64, copy=False))
    keep = np.abs(np.diag(R)) > 1e-9 * max(float(np.abs(R).max()), 1e-30)
    return np.ascontiguousarray(Q[:, keep], dtype=M.dtype)


def with_carried(video: Video, carried: np.ndarray) -> Video:
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


def chunk_windows(
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


#: The selection of every frame (:meth:`SeparateSettings.selection` by default).
_ALL_FRAMES = {"start": 0, "frames": None, "end": None, "duration": None, "step": 1}


def check_window(video: Video, settings: SeparateSettings, name: str, whole: bool) -> None:
    """Refuse a window the solver cannot take (too few frames for the rank...).

    Raises
    ------
    InputError
        From :func:`~bpvideo.solvers.check_problem`, prefixed by ``name`` (and, for the
        last window of several, how to avoid it).
    """
    try:
        check_problem(
            video.shape,
            settings.rank,
            settings.solver_sparsity,
            settings.gamma,
            settings.a,
            settings.b,
            settings.max_iter,
            settings.tol,
        )
    except InputError as exc:
        if whole and video.shape[1] < 2 and settings.selection() != _ALL_FRAMES:
            raise InputError(  # the input may hold more: the selection is what to change
                f"{literal(name)}: {video.shape[1]} frame(s) selected; robust PCA needs at "
                "least 2: select more frames (lower {start} or {step}, raise {frames}, "
                "{end} or {duration})",
                option=("start", settings.start),
            ) from None
        if whole:
            raise exc.within(name) from None
        raise exc.within(
            f"{name}: last window",
            " (or lower {overlap} / use {window=0})",
            option=("window", settings.window),
        ) from None
