"""Windows: the memory plan, cutting a stream of frames into windows, and what one window
hands on to the next (its background subspace: carried columns and the warm start).

A long video is solved window by window: each window holds ``window`` frames, the last
``overlap`` of the previous window's (re-solved, not re-written) and new ones, plus
:data:`CARRY_FRAMES` columns of the previous window's background (solved with it, never
written), so that the background model goes on from window to window. Memory is planned
before any work (:func:`plan_window`) so that a job that cannot fit is refused at once.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np

from bpvideo.errors import InputError
from bpvideo.io.video import Video
from bpvideo.pipeline.scale import effective_solve_scale
from bpvideo.settings import SeparateSettings
from bpvideo.solvers import check_problem, project_rank, project_sparse

__all__ = [
    "AUTO_WHOLE_MAX",
    "AUTO_WINDOW",
    "CARRY_FRAMES",
    "available_memory",
    "check_window",
    "chunk_windows",
    "estimate_memory",
    "frame_bytes",
    "plan_window",
    "planned_memory",
    "resident_memory",
    "settings_frame_bytes",
    "spools",
    "uses_reference",
    "warm_start",
    "with_carried",
]

#: float32 m x n matrices (at the solve scale) alive at the solver's peak (measured with
#: tracemalloc on a 76800 x 200 best-pair solve: 15.5, plus the data matrix; rounded up
#: for the masks and the reference background's motion score and observed entries).
LIVE_MATRICES = 18
#: Bytes per pixel of a frame held at full resolution: the BGR frame, its grey plane and
#: its column of the data matrix (uint8).
FRAME_PIXEL_BYTES = 5
#: Bytes per pixel of the frame size, however many frames a window holds: the encoders'
#: own frames (x264's look-ahead and references, in the ffmpeg children), the full-size
#: maps of the masks, and one block of finished frames (32: masks, foreground and
#: background on their way to the encoders). Measured (peak RSS of bpvideo and its ffmpeg
#: children less the 148 MiB of a tiny run, default options): 2048x1024 H.264 clips of
#: 4, 12 and 32 frames, 463, 764 and 1583 MiB (about 150 bytes a pixel, and 19 a pixel
#: and frame while the block fills, 10 of them beyond :func:`frame_bytes`); 4 frames of
#: 1024x512, 192 MiB (at most 400 a pixel with the process's own share).
SIZE_PIXEL_BYTES = 800
#: ``--window auto``: clips of at most this many frames are solved whole. Long windows
#: give the reference background more frames to find each pixel's still ones in.
AUTO_WHOLE_MAX = 1000
#: ``--window auto``: frames per window of longer clips. Chosen from the input and the
#: options only, never from the memory free at the time: the same command gives the same
#: masks on any machine.
AUTO_WINDOW = 500
#: Fraction of the available memory a job may plan to use.
MEMORY_FRACTION = 0.6
#: Background columns of a window handed on to the next (solved with it, not written).
#: Measured on cdnet_highway, window 200, overlap 20: at --scale 0.5, F = 0.803 with none,
#: 0.836 with 50, 0.852 with 100 (whole video: 0.836); at full size and defaults, 0.884
#: with 50, 0.894 with 100 (whole video: 0.906). Peak RSS streaming 1000 frames of
#: 320x240 with 100: 1.23 GB.
CARRY_FRAMES = 100


def uses_reference(settings: SeparateSettings) -> bool:
    """Whether the solve observes only the entries a reference background explains."""
    return settings.background_from != "none" and settings.mask_rule == "residual"


def spools(settings: SeparateSettings, solve_scale: float) -> bool:
    """Whether a window's full-resolution frames are spooled to disk
    (:class:`~bpvideo.pipeline.spool.FrameSpool`): when the solve runs downscaled with a
    reference background (the default on frames of 320x240 and more), without an
    observation mask; only the solve-scale matrix of a window is then held in memory."""
    observe = settings.observe is not None and settings.observe < 1.0
    return solve_scale < 1.0 and uses_reference(settings) and not settings.mask and not observe


def frame_bytes(
    width: int,
    height: int,
    *,
    color: bool,
    masked: bool = False,
    solve_scale: float = 1.0,
    spooled: bool = False,
) -> int:
    """Working memory per frame of a window: uint8 frames, float32 matrices, mask.

    Parameters
    ----------
    width, height : int
        Frame size after ``--scale``.
    color : bool
        Whether the matrix stacks the three channels (``--color``).
    masked : bool
        Whether an observation mask (one bool per matrix entry) is held.
    solve_scale : float
        The factor the solve runs at (its matrices have ``solve_scale**2`` of the pixels).
    spooled : bool
        Whether the full-resolution frames wait on disk (:func:`spools`): then only the
        solve-scale column of a frame is held.

    Returns
    -------
    int
        Bytes per frame: the uint8 frame held at full resolution
        (:data:`FRAME_PIXEL_BYTES` per pixel, plus the bool mask; none when spooled), and
        ``m' * 4 * (LIVE_MATRICES + 1)`` for the solver and the solve-scale column kept
        (m' = pixels x channels at the solve scale).
    """
    pixels = width * height
    m = pixels * (3 if color else 1)
    small = max(1, round(m * min(1.0, solve_scale) ** 2))
    full = 0 if spooled else pixels * FRAME_PIXEL_BYTES + (m if masked else 0)
    return full + small * 4 * (LIVE_MATRICES + 1)


def estimate_memory(
    width: int,
    height: int,
    frames: int,
    *,
    color: bool,
    masked: bool,
    solve_scale: float = 1.0,
) -> int:
    """Bytes a window of ``frames`` frames needs (see :func:`frame_bytes`)."""
    per_frame = frame_bytes(width, height, color=color, masked=masked, solve_scale=solve_scale)
    return per_frame * frames


#: Bytes a run holds besides its windows: the encoders' frame queues (2 x 16 MiB), pipes,
#: the frames kept for background.png and the preview, and the ffmpeg children themselves
#: (a decoder and two encoders, about 25 MiB each before any frame), and the modules a run
#: loads after its plan (about 110 MiB more with ``--color``: 258 MiB at peak for 64x48).
OVERHEAD_BYTES = 256 << 20


def settings_frame_bytes(settings: SeparateSettings, width: int, height: int) -> int:
    """:func:`frame_bytes` of frames of ``width`` x ``height`` under ``settings``."""
    masked = settings.mask is not None or settings.observe is not None
    scale = effective_solve_scale(settings.solve_scale, width, height)
    return frame_bytes(
        width,
        height,
        color=not settings.gray,
        masked=masked,
        solve_scale=scale,
        spooled=spools(settings, scale),
    )


def planned_memory(
    settings: SeparateSettings,
    width: int,
    height: int,
    frame_count: int | None,
    window: int | None,
    whole_max: int,
) -> int | None:
    """Bytes a run plans to hold at most: the frames of its largest window (with the
    carried columns, or a short clip read whole) at :func:`frame_bytes` each, plus
    :data:`SIZE_PIXEL_BYTES` per pixel and :data:`OVERHEAD_BYTES`; None when it cannot be
    known (a whole stream of unknown length)."""
    per_frame = settings_frame_bytes(settings, width, height)
    if window is None or (frame_count is not None and frame_count <= whole_max):
        frames = frame_count  # read and solved whole: no carried columns
    else:
        frames = max(window + min(window, CARRY_FRAMES), whole_max + 1)
        if frame_count is not None:
            frames = min(frames, frame_count + min(window, CARRY_FRAMES))
    if frames is None:
        return None
    return per_frame * frames + width * height * SIZE_PIXEL_BYTES + OVERHEAD_BYTES


def available_memory() -> int:
    """Memory available to a new job, in bytes (``psutil.virtual_memory().available``)."""
    value = _proc_number("/proc/meminfo", "MemAvailable:")
    if value is not None:
        return value * 1024
    import psutil

    return int(psutil.virtual_memory().available)


def resident_memory() -> int:
    """This process's resident memory, in bytes (``psutil.Process().memory_info().rss``)."""
    value = _proc_number("/proc/self/status", "VmRSS:")
    if value is not None:
        return value * 1024
    import psutil

    return int(psutil.Process().memory_info().rss)


def _proc_number(path: str, key: str) -> int | None:
    """The number after ``key`` in a Linux ``/proc`` file (kB), or None elsewhere: read
    directly, as psutil would, without its ~35 ms import on the way to the first frame."""
    try:
        with open(path, "rb") as f:
            for line in f:
                if line.startswith(key.encode()):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


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
        The input, for messages (braces doubled: see :func:`~bpvideo.errors.literal`).
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
    per_frame = settings_frame_bytes(settings, width, height)
    fixed = width * height * SIZE_PIXEL_BYTES + OVERHEAD_BYTES
    fits = max(0, (budget - fixed) // per_frame)
    carry = lambda w: min(w, CARRY_FRAMES)  # noqa: E731 - background columns per window
    minimum = max(2 * settings.rank + 2, settings.overlap + 2)
    size = f"{width}x{height}{' colour' if not settings.gray else ''}"
    if settings.window == 0:
        if frame_count is not None and frame_count > fits:
            need = per_frame * frame_count + fixed
            raise _too_big(
                settings,
                f"{name}: solving all {frame_count} frames of {size} at once needs about "
                f"{_gib(need)} but {_gib(budget)} may be used ({MEMORY_FRACTION:.0%} of "
                f"{_gib(avail)} available): use {{window={max(fits, 1)}}} "
                "or less (or {window='auto'}), or a smaller {scale}",
            )
        return None, 0
    if settings.window == "auto":
        # A clip shorter than the smallest window is solved whole: its own length counts.
        least = minimum if frame_count is None else min(minimum, frame_count)
        if fits < least:
            raise _too_big(
                settings,
                f"{name}: even {least} frames of {size} need about "
                f"{_gib(least * per_frame + fixed)} but {_gib(budget)} may be used: lower "
                "{scale}",
            )
        # From the input and the options only: whole up to AUTO_WHOLE_MAX frames (decided
        # by reading ahead: a container's frame count is an estimate, absent on stdin).
        longest = AUTO_WHOLE_MAX if frame_count is None else min(frame_count, AUTO_WHOLE_MAX)
        if longest > fits:
            raise _too_big(
                settings,
                f"{name}: a window of {longest} frames of {size} needs about "
                f"{_gib(longest * per_frame + fixed)} but {_gib(budget)} may be used ("
                f"{MEMORY_FRACTION:.0%} of {_gib(avail)} available): pass "
                f"{{window={max(min(fits, AUTO_WINDOW), 1)}}} or less, or a smaller {{scale}}",
            )
        return max(minimum, AUTO_WINDOW), AUTO_WHOLE_MAX
    window = int(settings.window)
    if window < minimum:
        raise _too_big(
            settings,
            f"{name}: {{window=}} must be at least {minimum} frames (2 x {{rank}} + 2 and "
            "{overlap} + 2): raise {window}",
        )
    if window + carry(window) > fits:
        raise _too_big(
            settings,
            f"{name}: a window of {window} frames of {size} needs about "
            f"{_gib((window + carry(window)) * per_frame + fixed)} but {_gib(budget)} may be used "
            f"({MEMORY_FRACTION:.0%} of {_gib(avail)} available): use "
            f"{{window={max(fits * 3 // 4, 1)}}} or less, or a smaller {{scale}}",
        )
    return window, 0


def _too_big(settings: SeparateSettings, message: str) -> InputError:
    """A window plan that cannot work; the message names ``window`` (and ``scale``)."""
    return InputError(message, option=("window", settings.window))


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
        if whole:
            raise exc.within(name) from None
        raise exc.within(
            f"{name}: last window",
            " (or lower {overlap} / use {window=0})",
            option=("window", settings.window),
        ) from None
