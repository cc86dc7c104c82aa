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
- :mod:`bpvideo.api`, :mod:`bpvideo.live`, :mod:`bpvideo.batch`, :mod:`bpvideo._cli`: the
  library's face (files and arrays; live streams), batch runs, the command line.
- :mod:`bpvideo.pipeline`: the plan of a job, windows of frames solved and finished into
  blocks.
- :mod:`bpvideo.io`: frames in (files, folders, pipes, arrays), sinks out (the output
  folder, arrays) and the report.
- :mod:`bpvideo.masks`: binary foreground masks from a solution (rule, thresholds,
  shadows).
- :mod:`bpvideo.solvers`: the best-pair solver, baselines, backends (pure numpy, no I/O).
- :mod:`bpvideo.settings`: the option table, in sections; :mod:`bpvideo.records`: the
  values that cross layers; :mod:`bpvideo.limits`: bounds and shared defaults.
- :mod:`bpvideo.evaluate`: changedetection.net scoring.
- :mod:`bpvideo.events`: events, regions and the per-frame table of masks (no I/O).
"""

from bpvideo._version import __version__
from bpvideo.api import Separation, iter_separate, separate, separate_file
from bpvideo.errors import BpvideoError, ConvergenceWarning, InputError
from bpvideo.evaluate.scoring import evaluate
from bpvideo.io.rederive import events  # the function: bpvideo.events(masks, fps=...)
from bpvideo.live import LiveSeparator, separate_live
from bpvideo.model import BackgroundModel
from bpvideo.records import Report
from bpvideo.solvers.best_pair import best_pair

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
