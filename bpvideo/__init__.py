"""bpvideo: separate the static background from the moving foreground of fixed-camera video.

The method is non-convex robust PCA in its best-pair form, solved by the accelerated
proximal gradient scheme of Dutta, Hanzely, Liang and Richtárik (2019).

>>> import bpvideo
>>> result = bpvideo.separate(frames)            # doctest: +SKIP
>>> result.masks.shape                           # doctest: +SKIP
(150, 120, 160)

Public names: :func:`separate` (arrays), :func:`iter_separate` (arrays, window by
window), :func:`separate_file` (files, what ``bpvideo separate`` does),
:class:`BackgroundModel` (learn once, apply to new frames), :class:`LiveSeparator` (a
model that keeps learning), :func:`separate_live` (network streams, devices, stdin read
live), :func:`evaluate` (scores against ground truth), :func:`events` (stretches of frames
with foreground, from masks), :func:`best_pair` (the solver on a pixels x frames matrix).

Layers (each imports only those below it; docs/layout.md)
------
- :mod:`bpvideo.job`, :mod:`bpvideo.api`, :mod:`bpvideo.model`, :mod:`bpvideo.batch`,
  :mod:`bpvideo._cli`: the library's face (a job of any source: files, folders, pipes,
  live streams; arrays; learned models), batch runs, the command line.
- :mod:`bpvideo.pipeline`: the plan of a job, windows of frames (or a live stream's
  batches) solved and finished into blocks.
- :mod:`bpvideo.background`: the background model (reference, light, the live update
  policy) and its tuned constants.
- :mod:`bpvideo.sources`: frames in (files, folders, pipes, URLs, devices, arrays);
  :mod:`bpvideo.sinks`: outputs (the result folder, its files declared once, segments,
  arrays, raw masks), the report, the write guard.
- :mod:`bpvideo.masks`: binary foreground masks from a solution (rule, thresholds,
  shadows).
- :mod:`bpvideo.solvers`: the best-pair solver, baselines, backends (pure numpy, no I/O).
- :mod:`bpvideo.settings`: the option table, in sections; :mod:`bpvideo.records`: the
  values that cross layers; :mod:`bpvideo.limits`: bounds and shared defaults.
- :mod:`bpvideo.evaluate`: changedetection.net scoring.
- :mod:`bpvideo.events`: events, regions and the per-frame table of masks (no I/O).
"""

from __future__ import annotations

import sys
import types
from importlib import import_module
from typing import TYPE_CHECKING, Any

from bpvideo._version import __version__

if TYPE_CHECKING:  # pragma: no cover
    from bpvideo.api import Separation, iter_separate, separate
    from bpvideo.errors import BpvideoError, ConvergenceWarning, InputError
    from bpvideo.evaluate.scoring import evaluate
    from bpvideo.job import separate_file, separate_live
    from bpvideo.model import BackgroundModel, LiveSeparator
    from bpvideo.records import Report
    from bpvideo.sinks.rederive import events
    from bpvideo.solvers.best_pair import best_pair

#: The module of each public name, imported when the name is first used: ``import
#: bpvideo`` (and the command line, which starts ffmpeg before numpy and OpenCV load:
#: :mod:`bpvideo.__main__`) loads nothing else.
_HOMES = {
    "BackgroundModel": "bpvideo.model",
    "BpvideoError": "bpvideo.errors",
    "ConvergenceWarning": "bpvideo.errors",
    "InputError": "bpvideo.errors",
    "LiveSeparator": "bpvideo.model",
    "Report": "bpvideo.records",
    "Separation": "bpvideo.api",
    "best_pair": "bpvideo.solvers.best_pair",
    "evaluate": "bpvideo.evaluate.scoring",
    "events": "bpvideo.sinks.rederive",
    "iter_separate": "bpvideo.api",
    "separate": "bpvideo.api",
    "separate_file": "bpvideo.job",
    "separate_live": "bpvideo.job",
}


def __getattr__(name: str) -> Any:
    """A public name, from its module (:data:`_HOMES`)."""
    if name not in _HOMES:
        raise AttributeError(f"module 'bpvideo' has no attribute {name!r}")
    value = getattr(import_module(_HOMES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Package(types.ModuleType):
    """``bpvideo.evaluate`` and ``bpvideo.events`` are functions, not the subpackages of
    those names, which the import system sets as attributes of their parent when it first
    loads them: set so, they are left out (the subpackages stay in ``sys.modules``)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("evaluate", "events") and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "BackgroundModel",
    "BpvideoError",
    "ConvergenceWarning",
    "InputError",
    "LiveSeparator",
    "Report",
    "Separation",
    "__version__",
    "best_pair",
    "evaluate",
    "events",
    "iter_separate",
    "separate",
    "separate_file",
    "separate_live",
]
