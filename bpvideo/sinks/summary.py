"""The report of a ``separate`` run: what ``summary.json`` holds, built in one place.

:class:`ReportBuilder` is a sink (:class:`~bpvideo.sinks.Sink`): it counts the finished
blocks as they come and builds one :class:`~bpvideo.records.Report` at the end;
:meth:`~bpvideo.records.Report.to_dict` is the layout of ``summary.json`` (a contract:
keys are only ever added).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import numpy as np

from bpvideo.records import Block, Plan, Report, WindowReport
from bpvideo.times import WallClock

if TYPE_CHECKING:  # pragma: no cover
    from bpvideo.settings import SeparateSettings
    from bpvideo.sources.files import FrameSource

__all__ = ["COVERED_WARN", "DYNAMIC_WARN", "FOREGROUND_WARN", "ReportBuilder", "self_check"]

log = logging.getLogger("bpvideo")

#: Shares above which the self-check warns (docs/quality.md, "The self-check"): of the
#: view with no trusted still frame, of the view moving by itself (with one background
#: image), of the frames' pixels found foreground (a crowd: on the dev set and synthetic
#: classes, the crowds measured 0.30-0.40, every other scene 0.16 at most).
COVERED_WARN = 0.25
DYNAMIC_WARN = 0.3
FOREGROUND_WARN = 0.25


def self_check(reports: list[WindowReport], foreground: float, appearances: int) -> dict[str, Any]:
    """What the model could not explain, and a warning for each way the scene lies
    outside what the defaults handle, naming the option that helps.

    Parameters
    ----------
    reports : list of WindowReport
        The windows.
    foreground : float
        Share of the masks' pixels that are foreground.
    appearances : int
        The run's ``appearances`` (0: one background image per frame).

    Returns
    -------
    dict
        ``covered`` and ``dynamic`` (the worst window's shares, None when not measured),
        ``foreground`` and ``warnings`` (lines).
    """
    covered = max((r.covered for r in reports if r.covered is not None), default=None)
    dynamic = max((r.dynamic for r in reports if r.dynamic is not None), default=None)
    warnings = []
    if covered is not None and covered > COVERED_WARN:
        warnings.append(
            f"{covered:.0%} of the view was never seen still (covered most of the time, or "
            "moving): its background there is a guess; give the empty scene with "
            "--background-from IMAGE or --background-from START:END"
        )
    if dynamic is not None and dynamic > DYNAMIC_WARN and not appearances:
        warnings.append(
            f"{dynamic:.0%} of the view moves by itself (water, leaves): keep its several "
            "appearances with --appearances 24"
        )
    if foreground > FOREGROUND_WARN:
        warnings.append(
            f"foreground covers {foreground:.0%} of the frames (a crowd): where people stand "
            "still for long the background there is a guess and they may be missed; give "
            "the empty scene with --background-from IMAGE or START:END"
        )
    return {"covered": covered, "dynamic": dynamic, "foreground": foreground,
            "warnings": warnings}  # fmt: skip


def _finite(value: float) -> float:
    """``value`` for comparing residuals: NaN (a diverged solve) counts as the worst."""
    return float("inf") if value != value else value


def _lost(source: FrameSource) -> dict[str, Any]:
    """``frames_lost`` of a source (none for a source that does not count them)."""
    lost = getattr(source, "lost", None)
    return lost.to_dict() if lost is not None else {"dropped": 0, "repeated": 0, "causes": []}


class ReportBuilder:
    """Counts the finished blocks of a run and builds its :class:`~bpvideo.records.Report`.

    Parameters
    ----------
    source : FrameSource
        The frames (name, rate, numbering, partial decoding).
    settings : SeparateSettings
        The run's options.
    plan : Plan
        How the run was cut and solved.
    """

    def __init__(self, source: FrameSource, settings: SeparateSettings, plan: Plan) -> None:
        self.source = source
        self.settings = settings
        self.plan = plan
        self.frame_numbers: list[int] = []
        self.mask_numbers: list[int] = []
        self.times: list[float | None] = []
        self.reports: list[WindowReport] = []
        self.frame_shape: tuple[int, ...] = ()
        self.foreground_pixels = 0
        self.observed = 0.0

    def open(self) -> None:
        """Nothing to prepare."""

    def write(self, block: Block) -> None:
        """Count a block; a window's last block counts its window."""
        self.frame_numbers.extend(block.numbers)
        self.mask_numbers.extend(self.source.mask_number(n) for n in block.numbers)
        self.times.extend(getattr(self.source, "times", {}).get(n) for n in block.numbers)
        self.frame_shape = block.background.shape[1:]
        self.foreground_pixels += int(np.count_nonzero(block.masks))
        if block.last and block.window is not None:
            self.observed += block.window.observed
            if block.window.report is not None:
                self.reports.append(block.window.report)

    def close(self) -> None:
        """Nothing to finish."""

    def abort(self) -> None:
        """Nothing to undo."""

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
        foreground = self.foreground_pixels / (n * width * height)
        check = self_check(self.reports, foreground, self.settings.appearances)
        for line in check["warnings"]:
            log.warning("%s: %s", self.source.name, line)
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
                "foreground_fraction": foreground,
                "self_check": check,
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
            frames_lost=_lost(self.source),
            learned=learned,
            evaluation=evaluation,
            **getattr(self.source, "clock", WallClock()).to_dict(),
        )
