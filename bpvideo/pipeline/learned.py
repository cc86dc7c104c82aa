"""A learned background: solve once on some frames, then separate new frames without solving.

:func:`learn` runs the pipeline (:func:`~bpvideo.pipeline.run.iter_solutions`, same options
and solve scale as ``separate``) on the frames it is given and keeps the background
subspace of the last window at full resolution: an orthonormal basis ``Q`` (m x q: the
solver's r factors, upsampled when the solve was downscaled, and the detail images) and
the threshold its masks used. :func:`iter_learned_blocks` then projects every new frame
onto that subspace robustly (:func:`robust_coefficients`: least squares over the pixels,
refitted without those whose residual is above the mask threshold) and makes its masks
with the same function, threshold and clean-up as ``separate``. Nothing is solved: the
cost per frame is a few passes over its pixels.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from bpvideo.errors import InputError
from bpvideo.masks import MaskModel
from bpvideo.masks.appearances import Appearances
from bpvideo.pipeline.finish import Solution, columns_to_frames, finish, window_info
from bpvideo.pipeline.plan import Job
from bpvideo.pipeline.run import iter_solutions
from bpvideo.pipeline.scale import Background
from bpvideo.records import Block, Plan, Stopwatch, WindowReport
from bpvideo.settings import SeparateSettings
from bpvideo.solvers._common import Callback
from bpvideo.sources.files import FrameSource
from bpvideo.sources.regions import region_mask
from bpvideo.sources.video import video_from_frames

__all__ = ["APPLY_FRAMES", "LearnedBackground", "iter_learned_blocks", "learn"]

#: Frames projected together by :func:`iter_learned_blocks` (one window of blocks).
APPLY_FRAMES = 64
#: The refits of :func:`robust_coefficients`: each leaves out the pixels whose residual is
#: above this many times the mask threshold (loose first, so that a poor first fit does
#: not lock out the pixels that would correct it). Measured against a batch solve of the
#: same frames (fit on the first frames, applied to the rest): pixel agreement 97.7 % on
#: highway (F-measure 0.89 between the two mask sets), 97.4 % on sample.mp4 (0.80).
ROBUST_SCHEDULE = (4.0, 2.0, 1.0, 1.0)
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
        Global threshold on ``|A - L|`` of the masks (the median of the windows').
    model : MaskModel or None
        The thresholds of the last window's masks (per pixel, shadows), used for every
        new frame (None for the support rule).
    mean : (q,) float64 ndarray
        Mean coefficients of the learned frames' backgrounds in ``basis``: where the fit of
        a new frame starts, and what it falls back to in directions its pixels leave
        undetermined.
    precision : (q, q) float64 ndarray
        ``noise**2`` times the inverse covariance of those coefficients (a weak prior).
    image : (H, W) or (H, W, 3) uint8 ndarray
        The background as one image: the per-pixel median of the last window's.
    reports : list of WindowReport
        How the windows were solved.
    plan : Plan
        How the frames were cut and solved.
    appearances : Appearances or None
        The background appearances of the last window learned on, when they were drawn
        (``learn(samples=True)``): what a live stream's sample bank starts from
        (:mod:`bpvideo.masks.bank`); :attr:`model` never holds them.
    """

    basis: np.ndarray
    frame_shape: tuple[int, ...]
    native_size: tuple[int, int]
    threshold: float | None
    model: MaskModel | None
    mean: np.ndarray
    precision: np.ndarray
    image: np.ndarray
    reports: list[WindowReport]
    plan: Plan
    appearances: Appearances | None = None


def learn(
    source: FrameSource,
    settings: SeparateSettings,
    *,
    callback: Callback | None = None,
    clock: Stopwatch | None = None,
    blocks: list[Block] | None = None,
    samples: bool = False,
) -> LearnedBackground:
    """Solve ``source`` and keep its background subspace (see the module docstring).

    ``blocks``, when given, gets the finished blocks of the frames solved (their masks are
    those of ``separate``): a live stream's first frames are masked by the solve itself.
    ``samples``: keep the last window's background appearances
    (:attr:`LearnedBackground.appearances`).

    Raises
    ------
    InputError
        As :func:`~bpvideo.pipeline.run.iter_solutions` (too few frames for the rank...).
    """
    reports: list[WindowReport] = []
    last: Solution | None = None
    if blocks is None and not samples:  # no masks made here: no appearances needed
        settings = replace(settings, appearances=0)
    job = Job.of(source, settings, callback=callback, clock=clock)
    for solution in iter_solutions(job):
        assert solution.info.report is not None
        reports.append(solution.info.report)
        if blocks is not None:
            blocks.extend(finish(solution, settings.masks, clock))
        last = solution
    assert last is not None  # iter_solutions raises when no frame is selected
    thresholds = [r.threshold for r in reports if r.threshold is not None]
    threshold = float(np.median(thresholds)) if thresholds else None
    noises = [r.noise for r in reports if r.noise is not None]
    background = last.background
    basis = background.basis(settings.rank)
    k = last.info.frames
    cols = np.unique(np.linspace(0, k - 1, min(k, IMAGE_FRAMES)).round())
    columns = background.take(cols.astype(int))
    frames = columns_to_frames(columns, last.video.frame_shape)
    image = np.clip(np.rint(np.median(frames, axis=0)), 0, 255).astype(np.uint8)
    coefficients = (basis.T @ columns).astype(np.float64)  # q x (sampled frames)
    mean, precision = _prior(coefficients, float(np.median(noises)) if noises else 1.0)
    return LearnedBackground(
        basis=basis,
        frame_shape=last.video.frame_shape,
        native_size=source.native_size,
        threshold=threshold,
        model=_for_new_frames(last.model),
        mean=mean,
        precision=precision,
        image=image,
        reports=reports,
        plan=job.plan,
        appearances=last.model.appearances if samples and last.model is not None else None,
    )


def _for_new_frames(model: MaskModel | None) -> MaskModel | None:
    """The model of the last window learned on, for frames that come after it: one image
    and each pixel's spread. Its appearances are not kept: they are the learning
    frames', and for a live stream those are the last seconds, so near every new frame
    that a lingering object would explain itself (measured: live cdnet_office 0.935 ->
    0.819, cdnet_fall 0.505 -> 0.404 with them; docs/performance.md). A live stream
    keeps a bank of them instead, refreshed by its masks (:mod:`bpvideo.masks.bank`)."""
    if model is None or model.appearances is None:
        return model
    return replace(model, appearances=None)


def _prior(coefficients: np.ndarray, noise: float) -> tuple[np.ndarray, np.ndarray]:
    """Mean and ``noise**2 * covariance**-1`` of background coefficients (q x k)."""
    mean = coefficients.mean(axis=1)
    q = len(mean)
    spread = coefficients - mean[:, None]
    cov = spread @ spread.T / max(coefficients.shape[1] - 1, 1)
    ridge = max(float(np.trace(cov)) / q, noise**2) or 1.0  # a still, noiseless scene: 0
    cov += np.eye(q) * ridge * 1e-3  # never singular
    return mean, noise**2 * np.linalg.inv(cov)


def robust_coefficients(learned: LearnedBackground, A: np.ndarray) -> np.ndarray:
    """Coefficients of the columns of ``A`` in the learned subspace, robustly.

    Least squares over every pixel first (``C = Q^T A``), then refits over the pixels whose
    residual ``|A - Q C|`` is at most a multiple of the mask threshold, the multiple going
    down to 1 (:data:`ROBUST_SCHEDULE`): the foreground, which the subspace does not
    explain, is left out. The learned coefficients' spread is a weak prior, so that
    directions the remaining pixels do not determine stay near the learned mean.

    Parameters
    ----------
    learned : LearnedBackground
        ``basis`` Q (m x q, orthonormal), ``threshold``, ``mean``, ``precision``.
    A : (m, k) ndarray
        Frames, one per column.

    Returns
    -------
    (q, k) float32 ndarray
        ``C``: the background of column ``j`` is ``Q @ C[:, j]``.
    """
    Q = np.asarray(learned.basis, dtype=np.float32)
    A = np.asarray(A, dtype=np.float32)
    m, q = Q.shape
    threshold = _row_limits(learned, m)
    full = (Q.T @ A).astype(np.float64)  # Q^T a over every pixel
    # Q^T diag(o) Q of every frame at once: its q*q entries are the products of columns
    # of Q summed over the pixels left out, one matrix product over all frames
    pairs = (Q[:, :, None] * Q[:, None, :]).reshape(m, q * q)
    system = np.eye(q) + learned.precision
    prior = (learned.precision @ learned.mean)[:, None]
    C = full
    for factor in ROBUST_SCHEDULE:
        left_out = (np.abs(A - Q @ C.astype(np.float32)) > factor * threshold).astype(np.float32)
        gram = system - (left_out.T @ pairs).reshape(-1, q, q).astype(np.float64)
        rhs = full - (Q.T @ (left_out * A)).astype(np.float64) + prior
        C = np.linalg.solve(gram, rhs.T[:, :, None])[:, :, 0].T
    return C.astype(np.float32)


def _row_limits(learned: LearnedBackground, m: int) -> float | np.ndarray:
    """The mask thresholds of the rows of a data matrix: a number, or (m, 1) per pixel."""
    model = learned.model
    if model is None or model.local is None:
        return float(learned.threshold or 0.0)
    per_pixel = model.local.reshape(-1, 1)
    return np.repeat(per_pixel, m // len(per_pixel), axis=0)


def iter_learned_blocks(
    learned: LearnedBackground,
    source: FrameSource,
    settings: SeparateSettings,
    *,
    clock: Stopwatch | None = None,
) -> Iterator[Block]:
    """Separate ``source`` with a learned background: windows of :data:`APPLY_FRAMES`
    frames, each finished into blocks as :func:`~bpvideo.pipeline.run.iter_blocks`'s are.

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
    if learned.model is None:  # the support rule is refused with a learned background
        raise InputError("a learned background needs the residual rule: use mask_rule='residual'")
    clock = clock or Stopwatch()
    options = settings.masks
    region = region_mask(settings.roi, settings.exclude, (source.height, source.width),
                         settings.scale)  # fmt: skip
    frames = iter(source.frames)
    index = 0
    t = time.perf_counter()
    while chunk := list(itertools.islice(frames, APPLY_FRAMES)):
        video = video_from_frames(chunk, gray=settings.gray, fps=source.fps, source=source.name)
        del chunk
        t2 = time.perf_counter()
        clock.add("read", t2 - t)
        C = robust_coefficients(learned, video.data)
        clock.add("solve", time.perf_counter() - t2)
        L = Background(left=learned.basis, right=np.ascontiguousarray(C.T))
        solution = Solution(video, 0, L, None, learned.model, window_info(video, 0, index))
        del video, C, L
        yield from finish(solution, options, clock, region)
        del solution
        index += 1
        t = time.perf_counter()
    if index == 0:
        raise source.nothing_selected(settings.start, settings.step)
