"""bpvideo: separate the static background from the moving foreground of fixed-camera video.

The method is non-convex robust PCA in its best-pair form, solved by the accelerated
proximal gradient scheme of Dutta, Hanzely, Liang and Richtárik (2019).

>>> import bpvideo
>>> result = bpvideo.separate(frames)            # doctest: +SKIP
>>> result.masks.shape                           # doctest: +SKIP
(150, 120, 160)

Public names: :func:`separate` (arrays), :func:`iter_separate` (arrays, window by
window), :func:`separate_file` (files, what ``bpvideo separate`` does),
:class:`BackgroundModel` (learn once, apply to new frames), :func:`evaluate` (scores
against ground truth), :func:`best_pair` (the solver on a pixels x frames matrix).

Layers
------
- :mod:`bpvideo.io`: frames in (files, folders, pipes, arrays), outputs and the report.
- :mod:`bpvideo.solvers`: the best-pair solver, baselines, backends (pure numpy, no I/O).
- :mod:`bpvideo.pipeline`: windows of frames solved one after another.
- :mod:`bpvideo.masks`: binary foreground masks from a solution.
- :mod:`bpvideo.settings`: every option, its default and its bounds, in one place.
- :mod:`bpvideo.evaluate`: changedetection.net scoring.
"""

__version__ = "0.1.0"

from bpvideo.api import BackgroundModel, Separation, iter_separate, separate, separate_file
from bpvideo.errors import BpvideoError, ConvergenceWarning, InputError
from bpvideo.evaluate.scoring import evaluate
from bpvideo.io.summary import Report
from bpvideo.solvers.best_pair import best_pair

__all__ = [
    "BackgroundModel",
    "BpvideoError",
    "ConvergenceWarning",
    "InputError",
    "Report",
    "Separation",
    "__version__",
    "best_pair",
    "evaluate",
    "iter_separate",
    "separate",
    "separate_file",
]
