"""Phase transition of best-pair RPCA, RPCA NCF and iEALM on the paper's synthetic data.

Reproduces, on a smaller grid, the phase-transition experiment of Dutta, Hanzely, Liang and
Richtárik (Section "Results on synthetic data", Figure "Phase transition diagram"): for each
``(rho_r, alpha)`` with ``rho_r = rank(L) / m``, draw ``A = L + S`` (``L = U V^T`` with
i.i.d. N(0, 1) factors, ``S`` on a ``T_alpha`` support with values uniform in
``[-500, 500]`` (``--magnitude``), see :func:`bpvideo.synthetic.make_rpca_problem`), run
each method and count a trial as a success when the recovered pair satisfies

    ||A - L^ - S^||_F / ||A||_F < eps              (the paper's criterion, "residual")

The paper does not give its eps; the default here is 1e-6. Because iEALM enforces
``L + S = A`` as a constraint, it meets the residual criterion whenever it converges, so the
table also reports the recovery criterion

    ||L^ - L||_F / ||L||_F < eps_recovery           ("recovery", default 1e-3)

which measures whether the planted low-rank part was found. Best-pair and NCF are given the
true rank and alpha (user-inferred hyperparameters, as in the paper); iEALM uses the paper's
lambda = 1/sqrt(m), mu = 1.25/||A||_2, rho = 1.5 and finds rank and sparsity itself.

The start is not the paper's by default: best pair and NCF start from bpvideo's robust
start (``--init robust``, see docs/method.md), where the paper starts from ``Y_0 = 0``
(``--init zeros``, or ``--init both`` for the two side by side). From ``Y_0 = 0`` best
pair stalls on most of the paper's instances at m = 100; the tables say which start
they used. A solve that diverges counts as a failure.

Usage::

    python benchmarks/phase_transition.py --size 100 --grid 6 --trials 3 --out pt.png

The success fractions go to stdout as tables (rows rho_r, columns alpha); progress goes to
stderr. The PNG (needs matplotlib: ``pip install 'bpvideo[plot]'``) shows one heatmap per
method and criterion, white = always success, black = always failure, as in the paper.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import warnings
from collections.abc import Callable

import numpy as np

from bpvideo.errors import ConvergenceWarning, Diverged
from bpvideo.solvers import SolverResult, best_pair, ialm, ncf
from bpvideo.synthetic import make_rpca_problem

METHODS: dict[str, str] = {"bestpair": "Best pair RPCA", "ncf": "RPCA NCF", "ialm": "iEALM"}
CRITERIA: tuple[str, ...] = ("residual", "recovery")


#: Starts of ``--init``: bpvideo's robust start, the paper's ``Y_0 = 0``.
INITS = ("robust", "zeros")


def run_method(
    name: str,
    A: np.ndarray,
    rank: int,
    sparsity: float,
    *,
    max_iter: int,
    tol: float,
    init: str = "robust",
) -> SolverResult | None:
    """Run one method with the paper's settings from start ``init`` (warnings at max_iter
    are silenced); None when the solve diverged."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        try:
            if name == "bestpair":
                return best_pair(A, rank, sparsity, max_iter=max_iter, tol=tol, sweeps=0,
                                 init=init)  # fmt: skip
            if name == "ncf":
                return ncf(A, rank, sparsity, max_iter=max_iter, tol=tol, sweeps=0, init=init)
        except Diverged:
            return None
        if name == "ialm":
            return ialm(A, max_iter=max_iter, tol=tol)
    raise ValueError(f"unknown method {name!r}: choose from {', '.join(METHODS)}")


def method_key(method: str, init: str) -> str:
    """``bestpair`` (robust start) or ``bestpair@zeros``; iEALM has no start to choose."""
    return method if init == "robust" or method == "ialm" else f"{method}@{init}"


def phase_transition(
    size: int,
    ranks: list[int],
    alphas: list[float],
    methods: list[str],
    *,
    trials: int,
    magnitude: float,
    eps: float,
    eps_recovery: float,
    max_iter: int,
    tol: float,
    seed: int,
    progress: Callable[[str], None] | None = None,
    inits: tuple[str, ...] = ("robust",),
) -> dict[tuple[str, str], np.ndarray]:
    """Success fractions, keyed by ``(method_key(method, init), criterion)``, each
    ``len(ranks) x len(alphas)``."""
    runs = list(
        dict.fromkeys((m, i) for m in methods for i in inits if m != "ialm" or i == inits[0])
    )
    success = {
        (method_key(m, i), crit): np.zeros((len(ranks), len(alphas)))
        for m, i in runs
        for crit in CRITERIA
    }
    for i, rank in enumerate(ranks):
        t0 = time.perf_counter()
        for j, alpha in enumerate(alphas):
            for t in range(trials):
                problem = make_rpca_problem(
                    size,
                    size,
                    rank=rank,
                    sparsity=alpha,
                    magnitude=magnitude,
                    seed=seed * 1_000_003 + (i * 1000 + j) * 100 + t,
                )
                norm_A = np.linalg.norm(problem.A)
                norm_L = np.linalg.norm(problem.L)
                for method, init in runs:
                    res = run_method(method, problem.A, rank, alpha, max_iter=max_iter, tol=tol,
                                     init=init)  # fmt: skip
                    if res is None:  # diverged: a failure
                        continue
                    residual = np.linalg.norm(problem.A - res.L - res.S) / norm_A
                    recovery = np.linalg.norm(res.L - problem.L) / norm_L
                    key = method_key(method, init)
                    success[key, "residual"][i, j] += residual < eps
                    success[key, "recovery"][i, j] += recovery < eps_recovery
        if progress is not None:
            progress(
                f"rank {rank:3d} (rho_r {rank / size:.3f}): {len(alphas)} alphas x {trials} "
                f"trials in {time.perf_counter() - t0:.1f}s"
            )
    return {key: value / trials for key, value in success.items()}


def format_table(fractions: np.ndarray, ranks: list[int], alphas: list[float], size: int) -> str:
    """A plain-text table: rows rho_r (top = largest), columns alpha."""
    header = "rho_r \\ alpha " + " ".join(f"{a:6.3f}" for a in alphas)
    lines = [header]
    for i in reversed(range(len(ranks))):
        row = " ".join(f"{fractions[i, j]:6.2f}" for j in range(len(alphas)))
        lines.append(f"{ranks[i] / size:13.3f} {row}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Phase transition (rho_r = r/m vs alpha) of best-pair RPCA, NCF and iEALM.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--size", type=int, default=100, help="m = n of the square instance")
    parser.add_argument("--trials", type=int, default=3, help="trials per grid point")
    parser.add_argument("--grid", type=int, default=6, help="grid points per axis")
    parser.add_argument("--rho-max", type=float, default=0.5, help="largest rho_r = r/m")
    parser.add_argument("--alpha-max", type=float, default=0.5, help="largest alpha")
    parser.add_argument(
        "--magnitude", type=float, default=500.0, help="outliers uniform in [-mag, mag]"
    )
    parser.add_argument("--eps", type=float, default=1e-6, help="residual success threshold")
    parser.add_argument(
        "--eps-recovery", type=float, default=1e-3, help="||L^-L||/||L|| success threshold"
    )
    parser.add_argument("--max-iter", type=int, default=500, help="iteration limit per solve")
    parser.add_argument("--tol", type=float, default=1e-9, help="solver stopping tolerance")
    parser.add_argument(
        "--methods",
        default=",".join(METHODS),
        help=f"comma-separated subset of {','.join(METHODS)}",
    )
    parser.add_argument(
        "--init",
        choices=(*INITS, "both"),
        default="robust",
        help="start of best pair and NCF: bpvideo's robust start, the paper's Y_0 = 0 "
        "(zeros), or both side by side",
    )
    parser.add_argument("--out", default="phase_transition.png", help="PNG heatmap path")
    parser.add_argument("--no-plot", action="store_true", help="print the tables only")
    parser.add_argument("--seed", type=int, default=0, help="base random seed")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="BLAS threads (1 is fastest for these small matrices, and under load)",
    )
    args = parser.parse_args(argv)
    args.methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in args.methods if m not in METHODS]
    if unknown:
        parser.error(f"unknown method(s) {', '.join(unknown)}: choose from {', '.join(METHODS)}")
    if args.size < 4 or args.grid < 1 or args.trials < 1 or args.threads < 1:
        parser.error("--size must be >= 4 and --grid, --trials, --threads >= 1")
    if not (0 < args.rho_max < 1 and 0 < args.alpha_max < 1):
        parser.error("--rho-max and --alpha-max must be in (0, 1)")
    return args


def plot(
    fractions: dict[tuple[str, str], np.ndarray],
    methods: list[str],
    ranks: list[int],
    alphas: list[float],
    args: argparse.Namespace,
    plt,
) -> None:
    """One heatmap per (criterion, method): white = success, black = failure."""
    size = args.size
    rhos = [r / size for r in ranks]
    da = alphas[1] - alphas[0] if len(alphas) > 1 else alphas[0]
    dr = rhos[1] - rhos[0] if len(rhos) > 1 else rhos[0]
    extent = (alphas[0] - da / 2, alphas[-1] + da / 2, rhos[0] - dr / 2, rhos[-1] + dr / 2)
    fig, axes = plt.subplots(
        len(CRITERIA),
        len(methods),
        figsize=(3.2 * len(methods) + 0.8, 3.0 * len(CRITERIA) + 0.4),
        squeeze=False,
        constrained_layout=True,
    )
    thresholds = {
        "residual": f"||A-L^-S^||/||A|| < {args.eps:g}",
        "recovery": f"||L^-L||/||L|| < {args.eps_recovery:g}",
    }
    image = None
    for row, crit in enumerate(CRITERIA):
        for col, method in enumerate(methods):
            ax = axes[row, col]
            image = ax.imshow(
                fractions[method, crit],
                origin="lower",
                extent=extent,
                aspect="auto",
                cmap="gray",
                vmin=0.0,
                vmax=1.0,
                interpolation="nearest",
            )
            ax.set_title(f"{_title(method)}\n{thresholds[crit]}", fontsize=9)
            ax.set_xlabel("alpha")
            if col == 0:
                ax.set_ylabel("rho_r = r / m")
    fig.suptitle(
        f"Phase transition, m = n = {size}, outliers in +-{args.magnitude:g}, "
        f"{args.trials} trial(s) per point"
    )
    fig.colorbar(image, ax=axes, shrink=0.8, label="success fraction")
    fig.savefig(args.out, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    plt = None
    if not args.no_plot:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print(
                "phase_transition.py: the PNG needs matplotlib, which is not installed: "
                "pip install 'bpvideo[plot]' (or matplotlib), or pass --no-plot",
                file=sys.stderr,
            )
            return 2

    size, grid = args.size, args.grid
    rhos = np.linspace(args.rho_max / grid, args.rho_max, grid)
    # Ranks must stay below m (the non-convex solvers reject rank >= min(m, n)).
    ranks = sorted({int(min(max(1, round(rho * size)), size - 1)) for rho in rhos})
    alphas = [float(a) for a in np.linspace(args.alpha_max / grid, args.alpha_max, grid)]

    def progress(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # a declared dependency, but the benchmark runs without it
        limits = contextlib.nullcontext()
    else:
        limits = threadpool_limits(limits=args.threads, user_api="blas")

    t0 = time.perf_counter()
    with limits:
        fractions = phase_transition(
            size,
            ranks,
            alphas,
            args.methods,
            trials=args.trials,
            magnitude=args.magnitude,
            eps=args.eps,
            eps_recovery=args.eps_recovery,
            max_iter=args.max_iter,
            tol=args.tol,
            seed=args.seed,
            progress=progress,
            inits=INITS if args.init == "both" else (args.init,),
        )
    elapsed = time.perf_counter() - t0
    keys = list(dict.fromkeys(method for method, _ in fractions))

    print(
        f"# phase transition: m = n = {size}, outliers in +-{args.magnitude:g}, "
        f"{args.trials} trial(s), max_iter {args.max_iter}, tol {args.tol:g}, seed {args.seed}, "
        f"{elapsed:.1f}s; start of best pair and NCF: {args.init} (the paper's: zeros)"
    )
    for crit in CRITERIA:
        for method in keys:
            what = (
                f"||A-L^-S^||_F/||A||_F < {args.eps:g}"
                if crit == "residual"
                else f"||L^-L||_F/||L||_F < {args.eps_recovery:g}"
            )
            print(f"\n## {_title(method)}: success fraction, {crit} ({what})")
            print(format_table(fractions[method, crit], ranks, alphas, size))

    if plt is not None:
        plot(fractions, keys, ranks, alphas, args, plt)
        progress(f"wrote {args.out}")
    return 0


def _title(key: str) -> str:
    """``Best pair RPCA (start Y_0 = 0)`` for ``bestpair@zeros``."""
    method, _, init = key.partition("@")
    start = {"zeros": "start Y_0 = 0, the paper's", "": ""}.get(init, f"start {init}")
    if not init and method != "ialm":
        start = "robust start"
    return f"{METHODS[method]} ({start})" if start else METHODS[method]


if __name__ == "__main__":
    sys.exit(main())
