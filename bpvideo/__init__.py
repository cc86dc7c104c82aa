"""bpvideo: separate the static background from the moving foreground of fixed-camera video.

The method is non-convex robust PCA in its best-pair form, solved by the accelerated
proximal gradient scheme of Dutta, Hanzely, Liang and Richtárik (2019).

Layers
------
- :mod:`bpvideo.io`: frames in (files, folders, pipes) and the observation mask.
- :mod:`bpvideo.solver`: the best-pair solver and its projections (pure numpy).
- :mod:`bpvideo.masks`: binary foreground masks from a solution.
- :mod:`bpvideo.writer`: videos, masks and summaries out, atomically.
- :mod:`bpvideo.settings`: every option, its default and its bounds, in one place.
- :mod:`bpvideo.pipeline`: the order of operations for one job.
- :mod:`bpvideo.cli`: the command line (parsing only).
"""

from bpvideo.errors import BpvideoError, ConvergenceWarning, InputError
from bpvideo.solver import SolverResult, best_pair, project_rank, project_sparse

__version__ = "0.1.0"

__all__ = [
    "BpvideoError",
    "ConvergenceWarning",
    "InputError",
    "SolverResult",
    "__version__",
    "best_pair",
    "project_rank",
    "project_sparse",
]
