"""Robust-PCA solvers: plain functions of a pixels x frames matrix (no I/O).

Every solver takes the data matrix ``A`` (m x n, one column per frame) first and returns
a :class:`SolverResult`; :data:`REGISTRY` maps the names of ``--method`` to them and
names the options each takes (:mod:`bpvideo.solvers.registry`):

- ``bestpair``: :func:`best_pair`, Algorithm 1 of Dutta, Hanzely, Liang and Richtárik
  (accelerated proximal gradient on the best pair), the default;
- ``ncf``: :func:`ncf`, its special case ``gamma=1, a=b=0`` (alternating projections);
- ``ialm``, ``godec``, ``rpca_gd``: the paper's comparison methods
  (:mod:`bpvideo.solvers.baselines`).

The per-iteration kernels of :func:`best_pair` run on a backend
(:mod:`bpvideo.solvers.backends`: numpy, numba), chosen once per solve.
"""

from __future__ import annotations

from bpvideo.solvers._common import Iterate, SolverResult, check_problem
from bpvideo.solvers.baselines import godec, ialm
from bpvideo.solvers.best_pair import best_pair, initial_point, ncf
from bpvideo.solvers.projections import RankProjector, project_rank, project_sparse, sparse_counts
from bpvideo.solvers.registry import REGISTRY, SOLVERS, get_solver, solver_call
from bpvideo.solvers.rpca_gd import rpca_gd

__all__ = [
    "REGISTRY",
    "SOLVERS",
    "Iterate",
    "RankProjector",
    "SolverResult",
    "best_pair",
    "check_problem",
    "get_solver",
    "godec",
    "ialm",
    "initial_point",
    "ncf",
    "project_rank",
    "project_sparse",
    "rpca_gd",
    "solver_call",
    "sparse_counts",
]
