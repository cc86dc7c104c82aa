"""The values that cross layers: a window's frames as a data matrix (:class:`Video`),
how a job is cut and solved (:class:`Plan`), finished frames (:class:`Block`), how a
window was solved (:class:`WindowReport`), a run's report (:class:`Report`), the seconds of
its stages (:class:`Stopwatch`) and the background still (:class:`Still`).

A low module: it imports nothing of bpvideo but the version, so that every layer (io,
pipeline, masks, sinks, the API) can hand these values to another without importing it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import cv2
import numpy as np

from bpvideo._version import __version__

__all__ = [
    "STAGES",
    "Block",
    "Plan",
    "Report",
    "Stopwatch",
    "Video",
    "WindowInfo",
    "WindowReport",
    "masked_frames",
]


@dataclass
class Video:
    """Frames of one clip as a data matrix.

    Attributes
    ----------
    data : (m, n) uint8 or float32 ndarray
        One column per frame: ``frame.reshape(-1)`` of the grey (or BGR) frame, 0..255.
    frames : (n, H, W, 3) uint8 ndarray
        The decoded BGR frames (after ``scale``), for writing the foreground video.
    frame_shape : tuple of int
        ``(H, W)`` for grey data, ``(H, W, 3)`` for colour data.
    fps : float
        Frame rate (of the selected frames, i.e. divided by ``step``).
    source : str
        Where the frames came from.
    frame_numbers : list of int
        Number of each selected frame in the source: the trailing number of the file name
        for image folders, the 0-based decode index for videos (see
        :attr:`FrameSource.numbering`).
    mask : (m, n) bool ndarray or None
        Observation mask (True = observed), or None when fully observed.
    partial : bool
        The frames end where a truncated video's decoding failed (``allow_partial``).
    frames_expected : int or None
        With ``partial``: the frames the selection would have had.
    planes : (n, *frame_shape) uint8 ndarray or None
        The frames of ``data`` one after another (its transpose), when kept.
    """

    data: np.ndarray
    frames: np.ndarray
    frame_shape: tuple[int, ...]
    fps: float
    source: str
    frame_numbers: list[int] = field(default_factory=list)
    mask: np.ndarray | None = None
    partial: bool = False
    frames_expected: int | None = None
    planes: np.ndarray | None = None

    @property
    def n_frames(self) -> int:
        """Number of frames (columns)."""
        return self.shape[1]

    @property
    def height(self) -> int:
        return self.frame_shape[0]

    @property
    def width(self) -> int:
        return self.frame_shape[1]

    @property
    def shape(self) -> tuple[int, int]:
        """``(m, n)``: the data matrix's shape."""
        return self.data.shape

    def rows(self, lo: int, hi: int, cols: np.ndarray, step: int = 1) -> np.ndarray:
        """``data[lo:hi:step][:, cols]``: some rows of some frames, uint8 (as ``data``)."""
        return self.data[lo:hi:step][:, cols]

    def pixels(self, lo: int, hi: int, cols: np.ndarray) -> np.ndarray:
        """BGR of the pixels ``lo:hi`` (row-major) of the frames ``cols``: (hi - lo, k, 3)."""
        flat = self.frames.reshape(len(self.frames), -1, 3)
        return np.ascontiguousarray(flat[cols, lo:hi].transpose(1, 0, 2))

    def frame_block(self, lo: int, hi: int) -> np.ndarray:
        """The BGR frames ``lo:hi``, (k, H, W, 3) uint8."""
        return self.frames[lo:hi]

    def plane_block(self, lo: int, hi: int) -> np.ndarray | None:
        """The frames ``lo:hi`` of ``data`` one after another (``planes``), or None."""
        return None if self.planes is None else self.planes[lo:hi]

    def as_frames(self, matrix: np.ndarray) -> np.ndarray:
        """Reshape an (m, n) matrix to ``(n, *frame_shape)`` frames (a view when possible)."""
        return matrix.T.reshape((matrix.shape[1], *self.frame_shape))


@dataclass
class Plan:
    """How a stream is cut and solved (the same for all its windows).

    Attributes
    ----------
    window : int or None
        Frames per window, None for the whole stream at once.
    overlap : int
        Frames shared by consecutive windows (0 without windows).
    whole_max : int
        With ``window="auto"``: a stream that ends within this many frames is solved whole.
    solve_scale : float
        The factor the solve runs at (``"auto"`` resolved).
    memory : int or None
        Bytes the process will hold at most: what it held when the run was planned, plus
        :func:`~bpvideo.pipeline.memory.planned_memory` (None when unknown).
    device : {"cpu", "cuda"}
        Where the solver runs (``"auto"`` resolved).
    spooled : bool
        Whether the full-resolution frames of a window wait on disk, not in memory
        (:func:`~bpvideo.pipeline.memory.spools`).
    """

    window: int | None
    overlap: int
    whole_max: int
    solve_scale: float
    memory: int | None = None
    device: str = "cpu"
    spooled: bool = False


def masked_frames(frames: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """``frames`` where ``masks`` is set, 0 elsewhere: (k, H, W[, C]) uint8 frames and
    (k, H, W) bool masks (``np.where(masks[..., None], frames, 0)``, by OpenCV)."""
    out = np.zeros_like(frames)
    m = np.ascontiguousarray(masks).view(np.uint8)
    for j in range(len(frames)):
        cv2.copyTo(frames[j], m[j], out[j])
    return out


@dataclass
class WindowInfo:
    """What every block of one finished window shares.

    Attributes
    ----------
    index : int
        0-based position of the window in the stream.
    frames : int
        New frames of the window (those not shared with the previous one): its blocks
        hold them all, in order.
    report : WindowReport or None
        How the window was solved (None for a learned background).
    observed : float
        Frames observed: the sum over the new frames of their observed fraction.
    """

    index: int
    frames: int
    report: WindowReport | None
    observed: float


@dataclass
class Block:
    """Finished frames of one window, in order: frames, background and masks.

    The pipeline yields a stream of blocks (:func:`bpvideo.pipeline.iter_blocks`); every
    sink (files, arrays, a raw pipe) takes them one after another.

    Attributes
    ----------
    numbers : list of int
        Source frame numbers.
    frames : (k, H, W, 3) uint8 ndarray
        The input frames (BGR).
    background : (k, H, W) or (k, H, W, 3) uint8 ndarray
        The background (grey, or BGR with ``gray=False``).
    masks : (k, H, W) bool ndarray
        Foreground masks.
    window : WindowInfo
        The window the frames belong to.
    offset : int
        Position of the first frame among the window's new frames.
    """

    numbers: list[int]
    frames: np.ndarray
    background: np.ndarray
    masks: np.ndarray
    window: WindowInfo | None = None
    offset: int = 0

    def __len__(self) -> int:
        return len(self.numbers)

    @property
    def foreground(self) -> np.ndarray:
        """(k, H, W, 3) uint8: the input where the mask is set, black elsewhere."""
        return masked_frames(self.frames, self.masks)

    @property
    def last(self) -> bool:
        """Whether this is its window's last block."""
        return self.window is None or self.offset + len(self) == self.window.frames


#: Stages timed in ``summary.json`` (``seconds``), with ``total``.
STAGES = ("read", "solve", "masks", "write")


class Stopwatch:
    """Seconds spent per stage (:data:`STAGES`), from its creation on."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.seconds = dict.fromkeys(STAGES, 0.0)

    def add(self, stage: str, seconds: float) -> None:
        """Count ``seconds`` to ``stage``."""
        self.seconds[stage] += seconds

    def total(self) -> dict[str, float]:
        """Every stage and ``total`` (since creation), rounded to 0.1 ms."""
        out = dict(self.seconds, total=time.perf_counter() - self.started)
        return {k: round(v, 4) for k, v in out.items()}


@dataclass
class WindowReport:
    """How one window was solved (an entry of ``summary.json``'s ``windows.list``).

    Attributes
    ----------
    first_frame : int
        Position (0-based, among the frames written) of the window's first new frame.
    frames, new_frames : int
        Frames solved, and those written (not shared with the previous window).
    method : str
        The solver.
    iterations : int
    converged : bool
    residual : float
        Final relative residual.
    change : float or None
        Final relative change.
    threshold, noise : float or None
        Mask threshold on ``|A - L|`` (the global one; pixels may have higher ones) and
        the camera's noise level it came from.
    sparsity : float or None
        The alpha the solver ran with (``sparsity="auto"`` resolved).
    observed : float or None
        Fraction of the window's entries the solver observed (those the reference
        background explains), None without a reference.
    covered : float or None
        Share of the view where no still frame was trusted (covered most of the time, or
        never still): its reference is taken from all frames and the neighbours (None
        without a reference).
    dynamic : float or None
        Share of the view whose own spread about the background is above
        ``DYNAMIC_SPREAD`` times the global threshold (water, leaves, flicker).
    """

    first_frame: int
    frames: int
    new_frames: int
    method: str
    iterations: int
    converged: bool
    residual: float
    change: float | None
    threshold: float | None
    noise: float | None
    sparsity: float | None = None
    observed: float | None = None
    covered: float | None = None
    dynamic: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The entry of ``windows.list`` (without ``method``: the solver section has it)."""
        out = asdict(self)
        del out["method"]
        return out


@dataclass
class Report:
    """What a run did: the content of ``summary.json`` (:meth:`to_dict`).

    Attributes are the keys of ``summary.json``: ``input``, ``output`` (None when nothing
    was written), ``frame_numbers`` (number of each frame in the source: 0-based decode
    index, or the number in a frame file's name), ``mask_numbers`` (the number in the name
    of each frame's mask file), ``times`` (seconds of each frame from the source's first
    frame: a video's own timestamps, so a variable frame rate shows; null when unknown),
    ``width``, ``height``, ``channels``, ``fps``,
    ``observed_fraction``, ``settings``, ``solver``, ``masks``, ``windows``, ``outputs``,
    ``partial``, ``frames_expected``, ``skipped`` (files of a folder of frames that are
    not frames, and damaged frames skipped, each ``{"file", "why"}``), ``frames_lost``
    (frames of the input dropped or repeated by its reader: ``{"dropped", "repeated",
    "causes"}``, see :mod:`bpvideo.sources.accounting`), ``seconds``;
    ``learned`` (a learned background: where it was learned), ``evaluation`` (with ground
    truth) and ``events`` (the rows of ``events.csv``) when there are some; ``objects``
    (how many in ``objects.csv``) and ``counts`` (of the counting lines) from a result folder;
    ``start_time`` (ISO 8601: the time of day at second 0 of ``times``, null when unknown)
    and ``start_time_source`` (``option``, ``container`` or ``arrival``); ``incomplete`` (a
    run stopped by a signal: the frames kept, ``{"frames", "of", "last_frame", "resume"}``;
    never in a complete result).
    Also readable as a mapping: ``report["solver"]["iterations"]``.
    """

    input: str
    output: str | None
    frame_numbers: list[int]
    mask_numbers: list[int]
    times: list[float | None]
    width: int
    height: int
    channels: int
    fps: float
    observed_fraction: float
    settings: dict[str, Any]
    solver: dict[str, Any]
    masks: dict[str, Any]
    windows: dict[str, Any]
    outputs: dict[str, str] | None
    partial: bool
    frames_expected: int
    skipped: list[dict[str, str]] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    frames_lost: dict[str, Any] = field(
        default_factory=lambda: {"dropped": 0, "repeated": 0, "causes": []}
    )
    learned: dict[str, Any] | None = None
    evaluation: dict[str, Any] | None = None
    events: list[dict[str, Any]] | None = None
    objects: int | None = None
    counts: dict[str, Any] | None = None
    start_time: str | None = None
    start_time_source: str | None = None
    incomplete: dict[str, Any] | None = None
    bpvideo_version: str = __version__

    @property
    def frames(self) -> int:
        """Frames separated."""
        return len(self.frame_numbers)

    def to_dict(self) -> dict[str, Any]:
        """The ``summary.json`` layout (keys in their order; JSON-able values)."""
        out: dict[str, Any] = {
            "bpvideo_version": self.bpvideo_version,
            "input": self.input,
            "output": self.output,
            "frames": self.frames,
            "frame_numbers": self.frame_numbers,
            "mask_numbers": self.mask_numbers,
            "times": self.times,
            "width": self.width,
            "height": self.height,
            "channels": self.channels,
            "fps": self.fps,
            "observed_fraction": self.observed_fraction,
            "settings": self.settings,
            "solver": self.solver,
            "masks": self.masks,
            "windows": self.windows,
            "outputs": self.outputs,
        }
        if self.learned is not None:
            out["learned"] = self.learned
        out.update(partial=self.partial, frames_expected=self.frames_expected,
                   skipped=self.skipped)  # fmt: skip
        if self.evaluation is not None:
            out["evaluation"] = self.evaluation
        out["seconds"] = self.seconds
        if self.events is not None:  # keys are only ever added: new ones go last
            out["events"] = self.events
        out["frames_lost"] = self.frames_lost
        if self.objects is not None:
            out["objects"] = self.objects
        if self.counts is not None:
            out["counts"] = self.counts
        out.update(start_time=self.start_time, start_time_source=self.start_time_source)
        if self.incomplete is not None:  # keys are only ever added: new ones go last
            out["incomplete"] = self.incomplete
        return json.loads(json.dumps(out, default=_json_default))

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def keys(self) -> Iterable[str]:
        """The keys of :meth:`to_dict`."""
        return self.to_dict().keys()


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)
