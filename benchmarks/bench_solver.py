"""Per-iteration cost of the best-pair solver, in copies of the data matrix.

For each frame size, rank and method, a synthetic street clip (``bpvideo.synthetic.
make_scene``, grey levels, one column per frame) is solved by ``best_pair`` (or ``ncf``) at
sparsity 0.1 and the CLI's tolerance (1e-3). Each configuration runs in a fresh child
process, which reports:

- ``copy ms``: median of 7 timings of ``A.copy()`` of the same matrix in that process;
- ``iter ms``: median time of one solver iteration (from the callback's timestamps);
- ``copies/iter``: their ratio, the figure the issue asks for (machine independent to first
  order: it counts passes over memory);
- ``init ms``: time of the starting point (robust start: median, T_alpha, H_r);
- ``iters``: iterations to convergence (``max_iter`` 100);
- ``peak RSS``: the child's peak resident memory (``ru_maxrss``) and its multiple of the
  bytes of the float32 data matrix (the child holds nothing else but Python, numpy and the
  compiled kernels: ``base MiB``, its resident memory before loading the data);
- ``--sweeps``: ``best_pair``'s subspace sweeps per iteration (the CLI's default, 1);
- ``--backends``: the solver's kernels, each in turn (numpy: the default; numba).

Usage::

    python benchmarks/bench_solver.py                       # 320x240 and 640x480, rank 2, 5
    python benchmarks/bench_solver.py --sizes 320x240 --ranks 2 --methods bestpair

Prints one table on stdout; progress on stderr.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import psutil

ROOT = Path(__file__).resolve().parents[1]


def make_matrix(width: int, height: int, frames: int, path: Path) -> None:
    """Write the grey data matrix (m x n float32) of a synthetic clip to ``path``."""
    import cv2

    from bpvideo.synthetic import make_scene

    scene = make_scene(width, height, frames, seed=0)
    grey = np.stack([cv2.cvtColor(f, cv2.COLOR_BGR2GRAY) for f in scene.frames])
    A = np.ascontiguousarray(grey.reshape(frames, -1).T, dtype=np.float32)
    np.save(path, A)


def child(
    path: str, rank: int, method: str, sparsity: float, tol: float, sweeps: int, backend: str
) -> dict:
    """Solve once in this process and return the measurements."""
    from bpvideo.errors import ConvergenceWarning
    from bpvideo.solvers import best_pair, ncf
    from bpvideo.solvers.backends import get_backend

    # load the kernels before measuring the baseline memory
    get_backend(backend).warm_up()
    # Python, numpy and the compiled kernels: what the process holds before the data
    base = psutil.Process().memory_info().rss

    A = np.load(path)
    copies = []
    for _ in range(7):
        t = time.perf_counter()
        B = A.copy()
        copies.append(time.perf_counter() - t)
        del B
    stamps: list[float] = []
    solver = best_pair if method == "bestpair" else ncf
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = solver(
            A,
            rank,
            sparsity,
            tol=tol,
            max_iter=100,
            sweeps=sweeps,
            callback=lambda it: stamps.append(time.perf_counter()),
            backend=backend,
        )
    total = time.perf_counter() - t0
    iters = np.diff(stamps)
    copy = float(np.median(copies))
    per_iter = float(np.median(iters)) if iters.size else float("nan")
    first = stamps[0] - t0 if stamps else float("nan")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux
    return {
        "shape": list(A.shape),
        "copy_s": copy,
        "iter_s": per_iter,
        "iter_samples": int(iters.size),
        "copies_per_iter": per_iter / copy,
        "first_iter_s": first,
        "init_s": first - per_iter,
        "iterations": result.iterations,
        "converged": result.converged,
        "total_s": total,
        "peak_rss": peak,
        "base_rss": base,
        "data_bytes": A.nbytes,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="320x240,640x480", help="WxH,WxH,...")
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--ranks", default="2,5")
    parser.add_argument("--methods", default="bestpair,ncf")
    parser.add_argument("--sparsity", type=float, default=0.1)
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--json", action="store_true", help="also print the raw rows as JSON")
    parser.add_argument(
        "--sweeps", type=int, default=1, help="best_pair's sweeps (CLI default 1; 0 = exact H_r)"
    )
    parser.add_argument(
        "--backends", default="numpy,numba", help="the solver's kernels (numpy: the default)"
    )
    parser.add_argument("--child", nargs=7, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        path, rank, method, sparsity, tol, sweeps, backend = args.child
        row = child(path, int(rank), method, float(sparsity), float(tol), int(sweeps), backend)
        print(json.dumps(row))
        return 0

    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes.split(","):
            w, h = (int(v) for v in size.lower().split("x"))
            path = Path(tmp) / f"A_{w}x{h}.npy"
            print(f"making {w}x{h}x{args.frames} ...", file=sys.stderr)
            make_matrix(w, h, args.frames, path)
            for method, rank, backend in itertools.product(
                args.methods.split(","),
                (int(r) for r in args.ranks.split(",")),
                args.backends.split(","),
            ):
                print(f"  {method} rank {rank} {backend} ...", file=sys.stderr)
                cmd = [sys.executable, __file__, "--child", str(path), str(rank), method]
                cmd += [str(args.sparsity), str(args.tol), str(args.sweeps), backend]
                out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
                row = json.loads(out.stdout.strip().splitlines()[-1])
                row.update(size=f"{w}x{h}", method=method, rank=rank, backend=backend)
                rows.append(row)
    header = (
        f"{'size':>8} {'frames':>6} {'method':>8} {'rank':>4} {'kernels':>7} {'copy ms':>8} "
        f"{'iter ms':>8} "
        f"{'copies/iter':>11} {'init ms':>8} {'iters':>5} {'solve s':>8} {'peak MiB':>8} "
        f"{'x data':>6} {'base MiB':>8}"
    )
    print(header)
    for r in rows:
        print(
            f"{r['size']:>8} {r['shape'][1]:>6} {r['method']:>8} {r['rank']:>4} {r['backend']:>7} "
            f"{1e3 * r['copy_s']:8.2f} {1e3 * r['iter_s']:8.1f} {r['copies_per_iter']:11.1f} "
            f"{1e3 * r['init_s']:8.0f} {r['iterations']:>5} {r['total_s']:8.2f} "
            f"{r['peak_rss'] / 2**20:8.0f} {r['peak_rss'] / r['data_bytes']:6.2f} "
            f"{r['base_rss'] / 2**20:8.0f}"
        )
    if args.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
