"""Progress of a separation over frames, windows and stages (not solver iterations).

:func:`bpvideo.separate_file` and :func:`bpvideo.separate` take ``progress=``, a callable
that gets a :class:`Progress` each time something moves: a frame read, a solver iteration,
frames finished. The command line draws it as a bar on stderr when stderr is a terminal
(:mod:`bpvideo._cli.console`); a caller may log it, or show it in its own interface.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from bpvideo.records import Plan
    from bpvideo.sources.stream import FrameSource

__all__ = ["STAGES", "Progress", "ProgressCallback", "Tracker", "expected_windows", "track"]

#: The stages of a separation, in order: frames are read and solved window by window,
#: then their masks and outputs are formed and written; ``finish`` closes the videos
#: (and scores against ground truth).
STAGES = ("read", "solve", "write", "finish")


@dataclass(frozen=True)
class Progress:
    """Where a separation stands.

    Attributes
    ----------
    stage : {"read", "solve", "write", "finish"}
        What is being done (see :data:`STAGES`).
    frames : int
        Frames finished: their masks and outputs formed (and handed to the writers).
    total : int or None
        Frames expected (None when unknown: stdin, or a generator without a length).
    read : int
        Frames read so far.
    window : int
        The window being read, solved or written (1-based).
    windows : int or None
        Windows expected (None when unknown).
    iteration : int
        Solver iteration in the current window (0 outside the solve).
    """

    stage: str
    frames: int
    total: int | None
    read: int
    window: int
    windows: int | None
    iteration: int = 0


#: What ``progress=`` takes.
ProgressCallback = Callable[[Progress], None]


def expected_windows(
    total: int | None, window: int | None, overlap: int, whole_max: int
) -> int | None:
    """Windows a stream of ``total`` frames is cut into (see
    :func:`~bpvideo.pipeline.windows.chunk_windows`); None when ``total`` is unknown.

    Examples
    --------
    >>> expected_windows(1000, 200, 20, 400), expected_windows(300, 200, 20, 400)
    (6, 1)
    """
    if window is None:
        return 1
    if total is None:
        return None
    if total <= whole_max:
        return 1
    return 1 + -(-max(0, total - window) // (window - overlap))


class Tracker:
    """Counts frames and windows and tells ``report`` (a :data:`ProgressCallback`).

    Parameters
    ----------
    report : callable or None
        Gets each :class:`Progress`; None: the tracker does nothing.
    total : int or None
        Frames expected.
    windows : int or None
        Windows expected.
    """

    def __init__(
        self, report: ProgressCallback | None, total: int | None, windows: int | None = None
    ) -> None:
        self.report = report
        self.total = total
        self.windows = windows
        self.stage = "read"
        self.frames = 0
        self.read = 0
        self.window = 1
        self.iteration = 0
        self._next = False  # the current window is done: the next frame read starts another

    def _tell(self) -> None:
        if self.report is not None:
            windows = self.windows
            if windows is not None and self.window > windows:  # the estimate was short
                windows = self.window
            self.report(Progress(self.stage, self.frames, self.total, self.read, self.window,
                                 windows, self.iteration))  # fmt: skip

    def enter(self, stage: str) -> None:
        """A new stage begins (in the current window)."""
        self.stage = stage
        self.iteration = 0
        self._tell()

    def reading(self, frames: Iterator[Any]) -> Iterator[Any]:
        """``frames``, counted as they are read."""
        if self.report is None:
            yield from frames
            return
        for item in frames:
            self.read += 1
            self.stage = "read"
            if self._next:
                self.window += 1
                self._next = False
            self._tell()
            yield item

    def solver_callback(self, callback: Callable[[Any], None] | None) -> Callable[[Any], None]:
        """A solver callback that counts iterations, then calls ``callback``."""

        def iterate(it: Any) -> None:
            self.stage = "solve"
            self.iteration = it.iteration
            self._tell()
            if callback is not None:
                callback(it)

        return iterate if self.report is not None else (callback or (lambda it: None))

    def finished(self, frames: int) -> None:
        """``frames`` more frames are finished."""
        self.frames += frames
        self._tell()

    def start_window(self, number: int) -> None:
        """Window ``number`` (from 1) is being solved: its frames may have been read ahead,
        before the previous window was written, so reading alone cannot tell."""
        self.window = max(self.window, number)
        self._next = False

    def window_done(self) -> None:
        """The current window is written: the next frame read is the next window's."""
        self._next = True


def track(progress: ProgressCallback | None, source: FrameSource, plan: Plan | None) -> Tracker:
    """A :class:`Tracker` of ``source`` (its frames counted as they are read), expecting
    the windows of ``plan`` (None: unknown)."""
    windows = None
    if plan is not None:
        windows = expected_windows(source.frame_count, plan.window, plan.overlap, plan.whole_max)
    tracker = Tracker(progress, source.frame_count, windows)
    source.frames = tracker.reading(source.frames)
    return tracker
