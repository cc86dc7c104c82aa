"""A learned background: solve once on some frames, then separate new frames without solving.

:func:`learn` runs the pipeline (:func:`~bpvideo.pipeline.run.iter_windows`, same options
and solve scale as ``separate``) on the frames it is given and keeps the background
subspace of the last window at full resolution: an orthonormal basis ``Q`` (m x q: the
solver's r factors, upsampled when the solve was downscaled, and the detail images) and
the threshold its masks used. :func:`iter_learned_windows` then projects every new frame
onto that subspace robustly (:func:`robust_coefficients`: least squares over the pixels,
refitted without those whose residual is above the mask threshold) and makes its masks
with the same function, threshold and clean-up as ``separate``. Nothing is solved: the
cost per frame is a few passes over its pixels.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from bpvideo.errors import InputError
from bpvideo.io.sources import FrameSource
from bpvideo.io.summary import Stopwatch, WindowReport
from bpvideo.io.video import video_from_frames
from bpvideo.pipeline.run import Plan, Window, columns_to_frames, iter_windows
from bpvideo.pipeline.scale import Background
from bpvideo.settings import SeparateSettings
from bpvideo.solvers._common import Callback

__all__ = ["APPLY_FRAMES", "LearnedBackground", "iter_learned_windows", "learn"]

#: Frames projected together by :func:`iter_learned_windows`.
APPLY_FRAMES = 64
#: Refits of :func:`robust_coefficients` without the pixels above the threshold.
ROBUST_ITERATIONS = 3
#: Columns of the last window's background whose median is the background image.
IMAGE_FRAMES = 64


@dataclass
class LearnedBackground:
    """What :func:`learn` keeps.

    Attributes
    ----------
    basis : (m, q) float32 ndarray
        Orthonormal basis of the background subspace, at full resolution (after
        ``scale``); m = H*W (grey) or 3*H*W (``gray=False``).
    frame_shape : tuple of int
        ``(H, W)`` or ``(H, W, 3)``: how a column is a frame.
    native_size : (int, int)
        ``(width, height)`` of the frames before ``scale``.
    threshold : float or None
        Threshold on ``|A - L|`` of the masks (the median of the windows' thresholds).
    image : (H, W) or (H, W, 3) uint8 ndarray
        The background as one image: the per-pixel median of the last window's.
    reports : list of WindowReport
        How the windows were solved.
    plan : Plan
        How the frames were cut and solved.
    """

    basis: np.ndarray
    frame_shape: tuple[int, ...]
    native_size: tuple[int, int]
    threshold: float | None
    image: np.ndarray
    reports: list[WindowReport]
    plan: Plan


def learn(
    source: FrameSource,
    settings: SeparateSettings,
    *,
    callback: Callback | None = None,
    clock: Stopwatch | None = None,
) -> LearnedBackground:
    """Solve ``source`` and keep its background subspace (see the module docstring).

    Raises
    ------
    InputError
        As :func:`~bpvideo.pipeline.run.iter_windows` (too few frames for the rank...).
    """
    reports: list[WindowReport] = []
    last: Window | None = None
    for window in iter_windows(source, settings, callback=callback, clock=clock, outputs=False):
        assert window.report is not None
        reports.append(window.report)
        last = window
    assert last is not None  # iter_windows raises when no frame is selected
    thresholds = [r.threshold for r in reports if r.threshold is not None]
    threshold = float(np.median(thresholds)) if thresholds else None
    background = last.background
    cols = np.unique(np.linspace(0, len(last) - 1, min(len(last), IMAGE_FRAMES)).round())
    frames = columns_to_frames(background.take(cols.astype(int)), last.frame_shape)
    image = np.clip(np.rint(np.median(frames, axis=0)), 0, 255).astype(np.uint8)
    return LearnedBackground(
        basis=background.basis(settings.rank),
        frame_shape=last.frame_shape,
        native_size=source.native_size,
        threshold=threshold,
        image=image,
        reports=reports,
        plan=last.plan,
    )


def robust_coefficients(
    basis: np.ndarray, A: np.ndarray, threshold: float, iterations: int = ROBUST_ITERATIONS
) -> np.ndarray:
    """Coefficients of the columns of ``A`` in the subspace of ``basis``, robustly.

    Least squares over all pixels first (``C = Q^T A``), then, ``iterations`` times, again
    over the pixels whose residual ``|A - Q C|`` is at most ``threshold`` (the foreground,
    which the subspace does not explain, is left out).

    Parameters
    ----------
    basis : (m, q) ndarray
        Orthonormal columns ``Q``.
    A : (m, k) ndarray
        Frames, one per column.
    threshold : float
        Residual above which a pixel is left out (the mask threshold).
    iterations : int
        Refits.

    Returns
    -------
    (q, k) float32 ndarray
        ``C``: the background of column ``j`` is ``Q @ C[:, j]``.
    """
    Q = np.asarray(basis, dtype=np.float32)
    A = np.asarray(A, dtype=np.float32)
    full = (Q.T @ A).astype(np.float64)  # Q^T a over every pixel
    C = full.copy()
    eye = np.eye(Q.shape[1])
    previous: list[np.ndarray] = []
    for _ in range(iterations):
        residual = np.abs(A - Q @ C.astype(np.float32))
        outliers = [np.flatnonzero(column > threshold) for column in residual.T]
        if previous and all(np.array_equal(a, b) for a, b in zip(outliers, previous, strict=True)):
            break
        for j, rows in enumerate(outliers):
            if rows.size == 0 or rows.size > Q.shape[0] // 2:
                C[:, j] = full[:, j]  # nothing to leave out, or too much: plain fit
                continue
            Qo = Q[rows].astype(np.float64)
            gram = eye - Qo.T @ Qo  # Q^T Q over the inliers (Q orthonormal)
            rhs = full[:, j] - Qo.T @ A[rows, j]
            C[:, j] = np.linalg.lstsq(gram, rhs, rcond=None)[0]
        previous = outliers
    return C.astype(np.float32)


def iter_learned_windows(
    learned: LearnedBackground,
    source: FrameSource,
    settings: SeparateSettings,
    *,
    clock: Stopwatch | None = None,
) -> Iterator[Window]:
    """Separate ``source`` with a learned background: windows of :data:`APPLY_FRAMES`
    frames, each finished as :func:`~bpvideo.pipeline.run.iter_windows`'s are.

    Raises
    ------
    InputError
        Frames of another size than those the background was learned on, or no frame.
    """
    if (source.width, source.height) != (learned.frame_shape[1], learned.frame_shape[0]):
        raise InputError(
            f"{source.name}: frames are {source.width}x{source.height} but the background "
            f"was learned on {learned.frame_shape[1]}x{learned.frame_shape[0]}: learn it on "
            "frames of the same camera and size"
        )
    threshold = learned.threshold
    if threshold is None:  # the support rule is refused with a learned background
        raise InputError("a learned background needs the residual rule: use mask_rule='residual'")
    frames = iter(source.frames)
    index = 0
    while chunk := list(itertools.islice(frames, APPLY_FRAMES)):
        video = video_from_frames(chunk, gray=settings.gray, fps=source.fps, source=source.name)
        del chunk
        C = robust_coefficients(learned.basis, video.data, threshold)
        L = Background(left=learned.basis, right=np.ascontiguousarray(C.T))
        window = Window(video, 0, L, None, settings=settings, threshold=threshold,
                        plan=learned.plan, index=index, clock=clock)  # fmt: skip
        del video, C, L
        yield window
        window.release()
        del window
        index += 1
    if index == 0:
        raise source.nothing_selected(settings.start, settings.step)
