"""The plan of a job, decided once before any work (:func:`plan_run`): the window size,
overlap, solve scale, device, memory and spooling; and the job itself (:class:`Job`), the
one value the run loop is handed.

Memory is planned before any work (:func:`plan_window`) so that a job that cannot fit is
refused at once, with the options that would make it fit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bpvideo import cores
from bpvideo.errors import InputError, literal
from bpvideo.pipeline.memory import (
    available_memory,
    planned_memory,
    resident_memory,
    settings_frame_bytes,
    size_bytes,
    spools,
)
from bpvideo.pipeline.scale import effective_solve_scale
from bpvideo.pipeline.solve import solve_device
from bpvideo.pipeline.windows import AUTO_WHOLE_MAX, AUTO_WINDOW, CARRY_FRAMES, min_window
from bpvideo.progress import Tracker
from bpvideo.records import Plan, Stopwatch
from bpvideo.settings import SeparateSettings
from bpvideo.solvers._common import Callback
from bpvideo.sources.files import FrameSource

__all__ = ["MEMORY_FRACTION", "Job", "plan_run", "plan_window"]

logger = logging.getLogger("bpvideo")

#: Fraction of the available memory a job may plan to use.
MEMORY_FRACTION = 0.6


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
        Available memory in bytes (default: :func:`~bpvideo.pipeline.memory.available_memory`).

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
    room = _Room(settings, width, height, available)
    if settings.window == 0:
        _check_whole(room, frame_count, name)
        return None, 0
    if settings.window == "auto":
        return _plan_auto(room, frame_count, name)
    return _check_fixed(room, int(settings.window), name), 0


@dataclass
class _Room:
    """What a window of frames of one size may use, and how much one frame costs."""

    settings: SeparateSettings
    width: int
    height: int
    available: int | None = None
    avail: int = field(init=False)
    budget: int = field(init=False)
    per_frame: int = field(init=False)
    fixed: int = field(init=False)

    def __post_init__(self) -> None:
        self.avail = self.available if self.available is not None else available_memory()
        self.budget = int(self.avail * MEMORY_FRACTION)
        self.per_frame = settings_frame_bytes(self.settings, self.width, self.height)
        self.fixed = size_bytes(self.settings, self.width, self.height)

    @property
    def fits(self) -> int:
        """Frames that fit in the budget."""
        return max(0, (self.budget - self.fixed) // self.per_frame)

    @property
    def size(self) -> str:
        return f"{self.width}x{self.height}{' colour' if not self.settings.gray else ''}"

    def need(self, frames: int) -> str:
        """Memory ``frames`` frames need, and what may be used."""
        return (f"{_gib(frames * self.per_frame + self.fixed)} but {_gib(self.budget)} may be "
                f"used ({MEMORY_FRACTION:.0%} of {_gib(self.avail)} available)")  # fmt: skip

    def too_big(self, message: str) -> InputError:
        """A window plan that cannot work; the message names ``window`` (and ``scale``)."""
        return InputError(message, option=("window", self.settings.window))


def _check_whole(room: _Room, frame_count: int | None, name: str) -> None:
    """``window=0``: every frame at once must fit."""
    if frame_count is not None and frame_count > room.fits:
        raise room.too_big(
            f"{literal(name)}: solving all {frame_count} frames of {room.size} at once needs about "
            f"{room.need(frame_count)}: use {{window={max(room.fits, 1)}}} or less (or "
            "{window='auto'}), or a smaller {scale}"
        )


def _plan_auto(room: _Room, frame_count: int | None, name: str) -> tuple[int, int]:
    """``window="auto"``: whole up to :data:`AUTO_WHOLE_MAX` frames, else
    :data:`AUTO_WINDOW`; decided from the input and the options only (by reading ahead: a
    container's frame count is an estimate, absent on stdin), never from the memory free."""
    minimum = min_window(room.settings.rank, room.settings.overlap)
    # A clip shorter than the smallest window is solved whole: its own length counts.
    least = minimum if frame_count is None else min(minimum, frame_count)
    if room.fits < least:
        raise room.too_big(
            f"{literal(name)}: even {least} frames of {room.size} need about "
            f"{_gib(least * room.per_frame + room.fixed)} but {_gib(room.budget)} may be "
            "used: lower {scale}"
        )
    longest = AUTO_WHOLE_MAX if frame_count is None else min(frame_count, AUTO_WHOLE_MAX)
    if longest > room.fits:
        raise room.too_big(
            f"{literal(name)}: a window of {longest} frames of {room.size} needs about "
            f"{room.need(longest)}: pass {{window={max(min(room.fits, AUTO_WINDOW), 1)}}} "
            "or less, or a smaller {scale}"
        )
    return max(minimum, AUTO_WINDOW), AUTO_WHOLE_MAX


def _check_fixed(room: _Room, window: int, name: str) -> int:
    """A window size given as a number: long enough, and fits with its carried columns."""
    minimum = min_window(room.settings.rank, room.settings.overlap)
    if window < minimum:
        raise room.too_big(
            f"{literal(name)}: {{window=}} must be at least {minimum} frames (2 x {{rank}} + 2 and "
            "{overlap} + 2): raise {window}"
        )
    held = window + min(window, CARRY_FRAMES)
    if held > room.fits:
        raise room.too_big(
            f"{literal(name)}: a window of {window} frames of {room.size} needs about "
            f"{room.need(held)}: use {{window={max(room.fits * 3 // 4, 1)}}} or less, or a "
            "smaller {scale}"
        )
    return window


def _gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB"


def plan_run(source: FrameSource, settings: SeparateSettings) -> Plan:
    """The :class:`~bpvideo.records.Plan` of a stream, checked against the memory before
    any work.

    Raises
    ------
    InputError
        The job cannot fit (names ``window`` and ``scale``), or ``device="cuda"`` cannot
        run here.
    """
    device = solve_device(settings)
    cores.use(settings.threads)  # the run's threads (--threads), read by the layers below
    window, whole_max = plan_window(
        settings, source.width, source.height, source.frame_count, name=source.name
    )
    scale = effective_solve_scale(settings.solve_scale, source.width, source.height)
    if device == "cuda":
        from bpvideo.solvers.backends.cuda import device_name

        logger.info("solving on the GPU: %s (CuPy)", device_name())
    memory = planned_memory(settings, source.width, source.height, source.frame_count, window,
                            whole_max)  # fmt: skip
    if memory is not None:
        memory += resident_memory()
    overlap = settings.overlap if window is not None else 0
    return Plan(window, overlap, whole_max, scale, memory=memory, device=device,
                spooled=spools(settings, scale))  # fmt: skip


@dataclass
class Job:
    """One separation, as the run loop takes it: the frames, the options, the plan, and
    who is told of its progress.

    Attributes
    ----------
    source : FrameSource
        The frames (a file, a folder, stdin or arrays).
    settings : SeparateSettings
        Options, validated.
    plan : Plan
        :func:`plan_run` of the source.
    clock : Stopwatch
        Collects the seconds of the stages (``read``, ``solve``, ``masks``, ``write``).
    callback : callable or None
        Called with each solver :class:`~bpvideo.solvers.Iterate`.
    progress : Tracker or None
        Told when a window's solve begins (see :mod:`bpvideo.progress`).
    empty_scene : (m,) ndarray or (int, int or None) or None
        A given empty scene (``background_from``): a data column of the frames' size, or
        the span of the first window's frames to take it from (a stream that cannot be
        read twice).
    carry : object or None
        What the last solved window hands on to the next (set by the run loop; read at a
        window's end by :func:`~bpvideo.pipeline.run.carried_state` for a checkpoint).
    resume : (int, dict) or None
        Windows finished before a stop and the state they handed on
        (:func:`~bpvideo.pipeline.run.carried_state`): the run loop reads their frames
        again without solving them and goes on from there (``--resume``).
    early : callable or None
        Takes the uint8 background frames (k, H, W[, 3]) of each solved window's first
        new frames, in order, before their blocks (from a thread, while the window's model
        is formed: :class:`~bpvideo.pipeline.finish.EarlyBackground`); those blocks carry
        the same background again. Set by the job when the result has a background video.
    """

    source: FrameSource
    settings: SeparateSettings
    plan: Plan
    clock: Stopwatch = field(default_factory=Stopwatch)
    callback: Callback | None = None
    progress: Tracker | None = None
    empty_scene: np.ndarray | tuple[int, int | None] | None = None
    carry: Any = None
    resume: tuple[int, dict[str, Any]] | None = None
    early: Callable[[np.ndarray], None] | None = None

    @classmethod
    def of(
        cls,
        source: FrameSource,
        settings: SeparateSettings,
        *,
        plan: Plan | None = None,
        clock: Stopwatch | None = None,
        callback: Callback | None = None,
        progress: Tracker | None = None,
        empty_scene: np.ndarray | tuple[int, int | None] | None = None,
    ) -> Job:
        """The job of ``source`` under ``settings``, planned now unless ``plan`` is given."""
        plan = plan or plan_run(source, settings)
        return cls(source, settings, plan, clock or Stopwatch(), callback, progress, empty_scene)

    @property
    def frame_shape(self) -> tuple[int, ...]:
        """How a column of the data matrix is a frame: ``(H, W)`` or ``(H, W, 3)``."""
        h, w = self.source.height, self.source.width
        return (h, w) if self.settings.gray else (h, w, 3)
