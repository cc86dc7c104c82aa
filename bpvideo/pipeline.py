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
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from bpvideo import __version__, _kernels
from bpvideo.baselines import godec, ialm, rpca_gd
from bpvideo.errors import BpvideoError, ConvergenceWarning, InputError
from bpvideo.evaluate import check_groundtruth, evaluate, input_is_video
from bpvideo.masks import foreground_masks
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
    OutputDir,
    RawMaskSink,
    VideoStream,
    atomic_write_bytes,
    encode_png,
    write_json,
    write_masks,
)

__all__ = [
    "default_output",
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
    A = video.data
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
#: Frames of the background kept for the background.png median (decimated beyond).
STILL_FRAMES = 512


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
    """The float32 matrix of one window, from its uint8 frames."""
    numbers = [number for number, _ in chunk]
    stack = np.stack([frame for _, frame in chunk])
    if settings.gray:
        planes = np.stack([cv2.cvtColor(f, cv2.COLOR_BGR2GRAY) for f in stack])
    else:
        planes = stack
    n = planes.shape[0]
    data = np.ascontiguousarray(planes.reshape(n, -1).T, dtype=np.float32)
    return Video(
        data=data,
        frames=stack,
        frame_shape=planes.shape[1:],
        fps=fps,
        source=name,
        frame_numbers=numbers,
    )


def resize_columns(
    data: np.ndarray, frame_shape: tuple[int, ...], size: tuple[int, int], interpolation: int
) -> np.ndarray:
    """Resize every column of ``data`` (one frame of ``frame_shape``) to ``size`` (w, h).

    Returns the m' x n float32 matrix of the resized frames, in the same layout.
    """
    n = data.shape[1]
    frames = data.T.reshape((n, *frame_shape))
    out = np.stack([cv2.resize(f, size, interpolation=interpolation) for f in frames])
    return np.ascontiguousarray(out.reshape(n, -1).T, dtype=np.float32)


def solved_video_size(frame_shape: tuple[int, ...]) -> tuple[int, int]:
    """``(w, h)`` of frames of ``frame_shape``, as ``cv2.resize`` takes it."""
    return frame_shape[1], frame_shape[0]


def _scaled_size(frame_shape: tuple[int, ...], scale: float) -> tuple[int, int]:
    h, w = frame_shape[:2]
    return max(2, round(w * scale)), max(2, round(h * scale))


def solve_window(
    video: Video,
    settings: SeparateSettings,
    carried: np.ndarray | None,
    *,
    callback: Callable[[Iterate], None] | None = None,
) -> tuple[SolverResult, np.ndarray, np.ndarray]:
    """Solve one window (with the previous window's background columns when ``carried``).

    With ``settings.solve_scale < 1`` the solver runs on frames downscaled by that factor
    (``cv2.INTER_AREA``); ``L`` is upsampled back (``INTER_LINEAR``) plus the fine detail
    of the per-pixel median frame (what the downscaling removed from it), and ``S``
    (nearest), so that masks and outputs are computed at full resolution.

    Returns
    -------
    result, L, S
        The solver's result and the full-resolution ``L`` and ``S`` of the window's frames.
    """
    scale = float(settings.solve_scale)
    full_shape = tuple(video.frame_shape)
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
    if carried is None:
        result = solve(solved_video, settings, callback=callback)
        L, S = result.L, result.S
    else:
        carry = carried.shape[1]
        solved = _with_carried(solved_video, carried)
        L0, S0 = warm_start(
            solved.data, _orthonormal(carried), settings.rank, settings.sparsity, solved.mask
        )
        result = solve(solved, settings, callback=callback, L0=L0, S0=S0)
        del L0, S0, solved
        L, S = result.L[:, carry:], result.S[:, carry:]
    if scale < 1.0:
        size = (full_shape[1], full_shape[0])
        small = solved_video.frame_shape
        L = resize_columns(L, small, size, cv2.INTER_LINEAR)
        S = resize_columns(S, small, size, cv2.INTER_NEAREST)
        # The fine detail that the downscaled solve cannot hold: that of the per-pixel
        # median frame (static background texture), added back to every column of L.
        med = np.median(video.data, axis=1, keepdims=True).astype(np.float32)
        blur = resize_columns(
            resize_columns(med, full_shape, solved_video_size(small), cv2.INTER_AREA),
            small,
            size,
            cv2.INTER_LINEAR,
        )
        L += med - blur
    return result, L, S


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
        summary = _run_windows(
            source, window, whole_max, outdir, out_path, settings, seconds, callback, t, t_start
        )
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
    if settings.method in ("bestpair", "ncf"):
        # load the compiled kernels now, not while solving: an interrupt that arrives
        # while numba reads its cache is printed as a traceback from a ctypes callback
        _kernels.warm_up()
    name = source.name
    ext = "mkv" if settings.lossless else "mp4"
    fps = source.fps
    masks_to = settings.masks_to
    numbers: list[int] = []
    reports: list[dict[str, Any]] = []
    still = _Still()
    fg_pixels = 0
    observed = 0.0
    carried: np.ndarray | None = None
    frame_shape: tuple[int, ...] = ()
    index = 0
    shown = _PreviewFrames(source.frame_count) if settings.preview else None
    with outdir:
        bg_stream = VideoStream(outdir.stage(f"background.{ext}"), fps, lossless=settings.lossless)
        fg_stream = VideoStream(outdir.stage(f"foreground.{ext}"), fps, lossless=settings.lossless)
        sink = RawMaskSink(masks_to) if masks_to else None
        try:
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
                result, L, S = solve_window(video, settings, carried, callback=callback)
                seconds["solve"] += time.perf_counter() - t

                t = time.perf_counter()
                fg = foreground_masks(
                    video.data,
                    L,
                    S,
                    video.frame_shape,
                    rule=settings.mask_rule,
                    threshold=settings.threshold,
                    threshold_k=settings.threshold_k,
                    observed=video.mask,
                    open_radius=settings.open_radius,
                    close_radius=settings.close_radius,
                    min_area=settings.min_area,
                )
                seconds["masks"] += time.perf_counter() - t

                t = time.perf_counter()
                new = slice(new_from, n)
                masks = fg.masks[new]
                background = _to_uint8(video.as_frames(L[:, new]))
                foreground = np.where(masks[..., None], video.frames[new], np.uint8(0))
                bg_stream.write(background)
                fg_stream.write(foreground)
                if shown is not None:
                    shown.add(len(numbers), video.frames[new], background, foreground, masks)
                write_masks(outdir.stage("masks"), masks, first=len(numbers) + 1)
                if sink is not None:
                    sink.write(masks)
                still.add(background)
                fg_pixels += int(masks.sum())
                numbers.extend(video.frame_numbers[new])
                if window is not None and CARRY_FRAMES > 0:
                    pick = np.unique(
                        np.linspace(0, n - 1, min(n, CARRY_FRAMES)).round().astype(int)
                    )
                    carried = np.ascontiguousarray(L[:, pick])
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
                        "threshold": fg.threshold,
                        "noise": fg.noise,
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
                del video, result, fg, masks, background, foreground, L, S
                t_read = time.perf_counter()
            if not numbers:
                raise InputError(_nothing_selected(source, settings))
            t = time.perf_counter()
            bg_stream.close()
            fg_stream.close()
            if sink is not None:
                sink.close()
            atomic_write_bytes(outdir.stage("background.png"), encode_png(still.median()))
            if shown is not None:
                atomic_write_bytes(outdir.stage("preview.png"), encode_png(shown.sheet()))
            seconds["write"] += time.perf_counter() - t
        except BaseException:
            bg_stream.abort()
            fg_stream.abort()
            raise
        summary = _summary(
            name, out_path, settings, numbers, frame_shape, fps, reports, window,
            fg_pixels, observed, ext,
        )  # fmt: skip
        # A truncated video read with --allow-partial: the frames it should have had.
        summary["partial"] = source.partial
        summary["frames_expected"] = source.frames_expected if source.partial else len(numbers)
        if shown is not None:
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
    ) -> None:
        """Offer the frames ``first, first + 1, ...`` of the clip."""
        if self.wanted is None:
            if self.kept:
                return
            picks = preview_frames(len(masks))
        else:
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
