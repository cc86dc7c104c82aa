"""How the background is solved: the ``Solver`` section of the option table.

Each field is one option of ``bpvideo separate`` (see :mod:`bpvideo.settings`).
"""

from __future__ import annotations

from dataclasses import dataclass

from bpvideo.limits import MAX_SECONDS, MAX_THREADS, MAX_WINDOW
from bpvideo.settings.spec import option
from bpvideo.solvers.backends import DEVICES
from bpvideo.solvers.best_pair import INITS
from bpvideo.solvers.registry import REGISTRY, parameter_default

__all__ = ["INIT_METHODS", "METHODS", "PAPER_SPARSITY", "SolverSettings"]

METHODS = tuple(REGISTRY)
#: Methods that take ``init`` (a starting point); the baselines start their own way.
INIT_METHODS = tuple(name for name, entry in REGISTRY.items() if "init" in entry.keywords)
#: The paper's alpha: what ``sparsity="auto"`` means for a solve without a reference
#: background (``background_from="none"``, the support rule).
PAPER_SPARSITY = 0.1


@dataclass
class SolverSettings:
    """How the background is solved (the ``Solver`` section of ``--help``)."""

    method: str = option(
        "bestpair",
        "str",
        "Solver: best-pair APG; NCF (alternating projections); or the paper's comparison "
        "methods iEALM (convex PCP, inexact ALM; ignores --rank/--sparsity), GoDec (q = 2), "
        "RPCA GD.",
        choices=METHODS,
    )
    rank: int = option(2, "int", "Rank r of the background.", low=1, limit=1000)
    sparsity: float | str = option(
        "auto",
        "threshold",
        "Sparsity alpha of the foreground: fraction of non-zeros per row/column of S; auto = "
        "from the data (the foreground the reference background finds, see "
        "docs/method.md), a number keeps the paper's T_alpha exactly.",
        low=0,
        high=1,
        low_open=True,
        high_open=True,
        metavar="ALPHA|auto",
    )
    max_iter: int = option(
        parameter_default("max_iter"), "int", "Iteration limit.", low=1, limit=1_000_000
    )
    tol: float = option(
        parameter_default("tol"),
        "float",
        "Tolerance on relative change and residual.",
        low=0,
        high=1,
    )
    solve_scale: float | str = option(
        "auto",
        "scale",
        "Solve on frames downscaled by this factor (INTER_AREA); the background is upsampled "
        "back and masks and outputs are computed at full resolution. auto = 0.25 for frames of "
        "320x240 pixels or more (at most 180x120 solved pixels: 0.15 at 720p, 0.10 at 1080p), "
        "else 1 (full resolution).",
        low=0,
        high=1,
        low_open=True,
        metavar="F|auto",
    )
    window: int | str = option(
        "auto",
        "window",
        "Frames solved together: N per window (background carried between windows), 0 = the "
        "whole video at once, auto = whole video for short clips, else windows that fit in "
        "memory.",
        low=0,
        limit=MAX_WINDOW,
        metavar="N|auto",
    )
    overlap: int = option(
        20,
        "int",
        "Frames shared by consecutive windows (re-solved, not re-written).",
        low=0,
        limit=MAX_WINDOW,
    )
    gamma: float = option(
        parameter_default("gamma"),
        "float",
        "Step size gamma of the APG.",
        low=0,
        high=2,
        low_open=True,
    )
    a: float = option(
        parameter_default("a"),
        "float",
        "Inertia a_k of the APG.",
        low=0,
        high=1,
        high_open=True,
        flag="--inertia-a",
    )
    b: float = option(
        parameter_default("b"),
        "float",
        "Inertia b_k of the APG.",
        low=0,
        high=1,
        high_open=True,
        flag="--inertia-b",
    )
    init: str = option(
        parameter_default("init"),
        "str",
        "Starting point: robust (S0 = T(A - median), L0 = H_r(A - S0)), zeros (the paper), "
        "or the per-pixel median.",
        choices=INITS,
    )
    sweeps: int = option(
        parameter_default("sweeps"),
        "int",
        "Subspace sweeps per iteration of H_r after the first 3 (bestpair, ncf); 0 = exact "
        "H_r (sweeps to convergence). 1 is an approximation, see docs/performance.md.",
        low=0,
        limit=100,
    )
    mask: str | None = option(
        None,
        "path",
        "Observation mask: one image for every frame, or a video/folder with one per frame "
        "(non-zero = observed).",
        optional=True,
        metavar="PATH",
    )
    observe: float | None = option(
        None,
        "float",
        "Observe a random fraction P of the pixels (the paper's |Omega|).",
        low=0,
        high=1,
        low_open=True,
        optional=True,
        metavar="P",
    )
    seed: int = option(0, "int", "Random seed for --observe.", low=0, limit=2**32 - 1)
    learn: str | None = option(
        None,
        "span",
        "Learn the background on frames START:END of the input (0-based, END excluded; or of "
        "--learn-from), then apply it to every frame without solving again (decode speed).",
        optional=True,
        metavar="START:END",
        arrays=False,
    )
    learn_from: str | None = option(
        None,
        "path",
        "Learn the background on this other clip of the same camera (all its frames, or "
        "--learn START:END of them), then apply it to INPUT.",
        optional=True,
        metavar="FILE",
        arrays=False,
    )
    background_from: str = option(
        "auto",
        "reference",
        "The empty scene the solver compares frames with: auto = each pixel's stillest frames "
        "(people who linger are not taken for background), IMAGE = a picture of the empty "
        "scene, START:END = frames of the input where the scene is empty, none = plain robust "
        "PCA (every entry observed).",
        metavar="auto|IMAGE|START:END|none",
    )
    absorb: float = option(
        60.0,
        "float",
        "Seconds after which a lasting change (a parked car, a moved chair) becomes "
        "background, across windows; 0 = never.",
        low=0,
        high=MAX_SECONDS,
        metavar="SECONDS",
    )
    device: str = option(
        "auto",
        "str",
        "Where the solver runs: cuda = an NVIDIA GPU (bestpair and ncf; needs CuPy: pip "
        'install "bpvideo[cuda]"), cpu, or auto = cuda when CuPy sees a GPU, else cpu.',
        choices=DEVICES,
    )
    threads: int | str = option(
        "auto",
        "window",
        "Threads the solver's kernels and the masks use (blocks of masks are formed side by "
        "side, the match of the appearance samples splits its pixels); auto = the cores this "
        "process may use (its CPU affinity, capped by the cgroup quota /sys/fs/cgroup/cpu.max; "
        "a batch divides them between its workers). The masks do not depend on it.",
        low=1,
        limit=MAX_THREADS,
        metavar="N|auto",
    )
