"""The memory model of a job: bytes per frame of a window, what a run holds besides, and
the memory of this process and of the machine (read from ``/proc`` on Linux)."""

from __future__ import annotations

from bpvideo.pipeline.scale import effective_solve_scale
from bpvideo.pipeline.windows import CARRY_FRAMES, uses_reference
from bpvideo.settings import SeparateSettings

__all__ = [
    "CODER_PIXEL_BYTES",
    "FRAME_PIXEL_BYTES",
    "LIVE_MATRICES",
    "OVERHEAD_BYTES",
    "SIZE_PIXEL_BYTES",
    "available_memory",
    "coders",
    "estimate_memory",
    "frame_bytes",
    "planned_memory",
    "resident_memory",
    "settings_frame_bytes",
    "size_bytes",
    "spools",
]

#: float32 m x n matrices (at the solve scale) alive at the solver's peak (measured with
#: tracemalloc on a 76800 x 200 best-pair solve: 15.5, plus the data matrix; rounded up
#: for the masks and the reference background's motion score and observed entries).
LIVE_MATRICES = 18
#: Bytes per pixel of a frame held at full resolution: the BGR frame, its grey plane and
#: its column of the data matrix (uint8).
FRAME_PIXEL_BYTES = 5
#: Bytes per pixel of the frame size that bpvideo's own process holds, however many frames
#: a window holds: the full-size maps of the masks (thresholds, appearance samples on their
#: grid) and one block of finished frames on its way to the encoders.
SIZE_PIXEL_BYTES = 100
#: Bytes per pixel of the frame size that each ffmpeg child holds (the decoder, and x264's
#: look-ahead and reference frames in each encoder).
CODER_PIXEL_BYTES = 80
# Both measured with ``benchmarks/bench_memory_plan.py`` (the summed RSS of bpvideo and its
# ffmpeg children, sampled every 0.2 s; default outputs, 100 frames): 1080p 1116 MiB of
# which the children 535, 4K 2780 MiB of which the children 1764; a line through the two
# gives 73 bytes a pixel for bpvideo and 69 for each of its three children, rounded up.


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


#: Bytes a run holds besides its windows: numba and its compiled kernels (about 130 MiB
#: resident once loaded: always from 640x480, and on smaller frames once a block has
#: many pixels to match), the encoders' frame queues (2 x 16 MiB), pipes, the frames kept
#: for background.png and the preview, and the ffmpeg children themselves (a decoder and
#: two encoders, about 25 MiB each before any frame), and the modules a run loads after
#: its plan (about 110 MiB more with ``--color``: 258 MiB at peak for 64x48). The smallest
#: round number that keeps every peak that ``benchmarks/bench_memory_plan.py`` measured,
#: 320x240 to 4K, 100 and 300 frames, at least 5 % under the plan (docs/performance.md).
OVERHEAD_BYTES = 448 << 20


def coders(settings: SeparateSettings) -> int:
    """ffmpeg children a run of ``settings`` holds at once, at most: the decoder, the two
    videos (none with ``no_video``), ``overlay.mp4`` and the clip being cut."""
    videos = 0 if settings.no_video else 2
    return 1 + videos + bool(settings.overlay) + bool(settings.clips)


def size_bytes(settings: SeparateSettings, width: int, height: int) -> int:
    """Bytes a run of ``settings`` on frames of ``width`` x ``height`` holds however many
    frames its windows hold: :data:`SIZE_PIXEL_BYTES` per pixel, :data:`CODER_PIXEL_BYTES`
    per pixel for each of its :func:`coders`, and :data:`OVERHEAD_BYTES`."""
    per_pixel = SIZE_PIXEL_BYTES + CODER_PIXEL_BYTES * coders(settings)
    return width * height * per_pixel + OVERHEAD_BYTES


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
    :func:`size_bytes`; None when it cannot be known (a whole stream of unknown length)."""
    per_frame = settings_frame_bytes(settings, width, height)
    if window is None or (frame_count is not None and frame_count <= whole_max):
        frames = frame_count  # read and solved whole: no carried columns
    else:
        frames = max(window + min(window, CARRY_FRAMES), whole_max + 1)
        if frame_count is not None:
            frames = min(frames, frame_count + min(window, CARRY_FRAMES))
    if frames is None:
        return None
    return per_frame * frames + size_bytes(settings, width, height)


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
