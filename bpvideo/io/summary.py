"""The report of a ``separate`` run: what ``summary.json`` holds, built in one place.

:class:`ReportBuilder` takes the finished windows as they come (:meth:`ReportBuilder.add`)
and builds one :class:`Report` at the end; :meth:`Report.to_dict` is the layout of
``summary.json`` (a contract: keys are only ever added). :class:`Stopwatch` keeps the
seconds of the stages.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from bpvideo import __version__

if TYPE_CHECKING:  # pragma: no cover
    from bpvideo.io.sources import FrameSource
    from bpvideo.pipeline.run import Plan, Window
    from bpvideo.settings import SeparateSettings

__all__ = ["STAGES", "Report", "ReportBuilder", "Stopwatch", "WindowReport"]

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
    not frames, and damaged frames skipped, each ``{"file", "why"}``), ``seconds``;
    ``learned`` (a learned background: where it was learned) and ``evaluation`` (with
    ground truth) when there are some.
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
    learned: dict[str, Any] | None = None
    evaluation: dict[str, Any] | None = None
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


def _finite(value: float) -> float:
    """``value`` for comparing residuals: NaN (a diverged solve) counts as the worst."""
    return float("inf") if value != value else value


class ReportBuilder:
    """Collects the finished windows of a run and builds its :class:`Report`.

    Parameters
    ----------
    source : FrameSource
        The frames (name, rate, numbering, partial decoding).
    settings : SeparateSettings
        The run's options.
    """

    def __init__(self, source: FrameSource, settings: SeparateSettings) -> None:
        self.source = source
        self.settings = settings
        self.frame_numbers: list[int] = []
        self.mask_numbers: list[int] = []
        self.times: list[float | None] = []
        self.reports: list[WindowReport] = []
        self.plan: Plan | None = None
        self.frame_shape: tuple[int, ...] = ()
        self.foreground_pixels = 0
        self.observed = 0.0

    def add(self, window: Window) -> None:
        """Count a finished window (after its masks were formed)."""
        self.frame_numbers.extend(window.numbers)
        self.mask_numbers.extend(self.source.mask_number(n) for n in window.numbers)
        self.times.extend(getattr(self.source, "times", {}).get(n) for n in window.numbers)
        self.frame_shape = window.frame_shape
        self.plan = self.plan or window.plan
        self.foreground_pixels += window.foreground_pixels
        self.observed += window.observed
        if window.report is not None:
            self.reports.append(window.report)

    def solved_by(self, reports: list[WindowReport], plan: Plan) -> None:
        """The windows that solved the background, when it was learned elsewhere."""
        self.reports, self.plan = list(reports), plan

    def build(
        self,
        *,
        output: str | None = None,
        outputs: dict[str, str] | None = None,
        seconds: dict[str, float] | None = None,
        learned: dict[str, Any] | None = None,
        evaluation: dict[str, Any] | None = None,
    ) -> Report:
        """The :class:`Report` of the windows added."""
        n = len(self.frame_numbers)
        height, width = self.frame_shape[:2]
        thresholds = [r.threshold for r in self.reports if r.threshold is not None]
        noises = [r.noise for r in self.reports if r.noise is not None]
        last = self.reports[-1]
        # Several windows: the worst window's residual and change, not the last one's.
        worst = max(range(len(self.reports)), key=lambda i: _finite(self.reports[i].residual))
        changes = [r.change for r in self.reports if r.change is not None]
        plan = self.plan
        assert plan is not None
        return Report(
            input=self.source.name,
            output=output,
            frame_numbers=list(self.frame_numbers),
            mask_numbers=list(self.mask_numbers),
            times=list(self.times),
            width=width,
            height=height,
            channels=1 if len(self.frame_shape) == 2 else self.frame_shape[2],
            fps=self.source.fps,
            observed_fraction=self.observed / n,
            settings=self.settings.to_dict(),
            solver={
                "method": last.method,
                "iterations": int(sum(r.iterations for r in self.reports)),
                "converged": all(r.converged for r in self.reports),
                "residual": self.reports[worst].residual,
                "change": max(changes, key=_finite) if changes else None,
                "solve_scale": plan.solve_scale,
                "device": plan.device,
                "worst_window": worst + 1,
            },
            masks={
                "rule": self.settings.mask_rule,
                # One window: its threshold; several: the median of the windows' thresholds.
                "threshold": float(np.median(thresholds)) if thresholds else None,
                "noise": float(np.median(noises)) if noises else None,
                "foreground_fraction": self.foreground_pixels / (n * width * height),
            },
            windows={
                "window": plan.window,
                "overlap": plan.overlap,
                "whole_max": plan.whole_max,
                "spooled": plan.spooled,
                "count": len(self.reports),
                "list": [r.to_dict() for r in self.reports],
            },
            outputs=outputs,
            partial=self.source.partial,
            frames_expected=self.source.frames_expected if self.source.partial else n,
            skipped=[
                {"file": name, "why": why} for name, why in getattr(self.source, "skipped", [])
            ],
            seconds=seconds or {},
            learned=learned,
            evaluation=evaluation,
        )
