"""Full-resolution solves on the GPU against the CPU: iterations/s and frames/s at 720p, 1080p.

For each size the same frames (synthetic: a textured static background, sensor noise and
moving blocks; or the first ``--frames`` frames of ``--clip``, a folder of frames resized
to the size) go through

- the solver alone (``best_pair`` on the grey pixels x frames matrix, ``tol=0`` so that
  every run does ``--iters`` iterations, 30 by default): iterations per second and
  ``solve fps``, the frames of the matrix over the seconds of the solve, data moved to the
  GPU and back included (the figure the issue asks >= 500 of at 1080p);
- the library end to end (``bpvideo.separate(frames, solve_scale=1, device=...)``, default
  options otherwise, masks and backgrounds formed in memory, nothing written: no ffmpeg
  needed): frames per second (``e2e fps``), with the iterations it ran.

on ``--device cuda`` and ``cpu`` in one run, and prints one table. The CPU at full
resolution is slow (seconds per iteration at 720p), so it runs ``--cpu-iters`` iterations
and ``--cpu-frames`` frames (0: skip the CPU end to end). Without CuPy or a GPU the script
says why and exits 0 (``--cpu-only`` measures the CPU column anyway, to try the script).

Usage::

    python benchmarks/bench_gpu.py                        # 720p and 1080p, 500 frames
    python benchmarks/bench_gpu.py --sizes 1920x1080 --frames 500 --json out.json
    python benchmarks/bench_gpu.py --sizes 320x240 --frames 60 --cpu-only   # no GPU
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import cv2
import numpy as np

import bpvideo
from bpvideo.errors import ConvergenceWarning, InputError
from bpvideo.solvers import best_pair
from bpvideo.solvers.backends import get_backend
from bpvideo.solvers.backends.cuda import cuda_problem

SIZES = {"720p": (1280, 720), "1080p": (1920, 1080)}


def synthetic_frames(width: int, height: int, n: int, seed: int = 0) -> np.ndarray:
    """(n, h, w) uint8 grey frames: a smooth textured background, noise, moving blocks."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    base = 110 + 50 * np.sin(xx / 23.0) * np.cos(yy / 17.0) + 20 * np.sin((xx + yy) / 7.0)
    frames = np.empty((n, height, width), np.uint8)
    size = max(height // 8, 4)
    for t in range(n):
        image = base + rng.normal(0, 2.0, (height, width)).astype(np.float32)
        for k, speed in enumerate((3, 5, 8)):
            x = (speed * t * width // 640 + 211 * k) % (width - size)
            y = (height // 4) * (k + 1) - size // 2
            image[y : y + size, x : x + size] = 30 + 90 * k
        frames[t] = np.clip(image, 0, 255)
    return frames


def clip_frames(folder: Path, width: int, height: int, n: int) -> np.ndarray:
    """The first ``n`` frames of a folder of images, grey, resized to ``width x height``."""
    files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in {".jpg", ".png", ".bmp"})
    if not files:
        sys.exit(f"bench_gpu: no images in {folder}: give --clip a folder of frames")
    out = np.empty((n, height, width), np.uint8)
    for i in range(n):
        image = cv2.imread(str(files[i % len(files)]), cv2.IMREAD_GRAYSCALE)
        out[i] = cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)
    return out


def solver_rate(frames: np.ndarray, device: str, iters: int) -> tuple[float, float]:
    """Iterations and frames per second of ``best_pair`` on the frames' matrix, ``iters``
    iterations (transfers included)."""
    A = frames.reshape(len(frames), -1).T.astype(np.float32)
    backend = get_backend("cuda" if device == "cuda" else "auto", A.size)
    backend.warm_up()  # load or compile the kernels first
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t = time.perf_counter()
        result = best_pair(A, 2, 0.1, max_iter=iters, tol=0.0, backend=backend)
        seconds = time.perf_counter() - t
    return result.iterations / seconds, len(frames) / seconds


def end_to_end(frames: np.ndarray, device: str, window: str) -> tuple[float, int]:
    """Frames/s of ``bpvideo.separate``, and the iterations it ran."""
    win: int | str = int(window) if window.isdigit() else window
    t = time.perf_counter()
    result = bpvideo.separate(frames, solve_scale=1, device=device, window=win)
    total = time.perf_counter() - t
    report = result.report
    assert report["solver"]["device"] == device, report["solver"]
    return len(frames) / total, report["solver"]["iterations"]


def parse_size(text: str) -> tuple[str, int, int]:
    if text in SIZES:
        return (text, *SIZES[text])
    w, _, h = text.partition("x")
    return (text, int(w), int(h))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="720p,1080p", help="720p, 1080p or WxH, comma-separated")
    ap.add_argument("--frames", type=int, default=500)
    ap.add_argument("--iters", type=int, default=30, help="solver iterations on the GPU")
    ap.add_argument("--cpu-iters", type=int, default=3)
    ap.add_argument("--cpu-frames", type=int, default=100, help="0: no CPU end to end")
    ap.add_argument("--window", default="0", help="--window of the end-to-end runs (0: whole)")
    ap.add_argument("--clip", type=Path, help="a folder of frames (default: synthetic)")
    ap.add_argument("--cpu-only", action="store_true", help="no GPU: measure the CPU anyway")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args()

    problem = cuda_problem()
    if problem is not None and not args.cpu_only:
        why = InputError("{device='cuda'} " + problem, option=("device", "cuda")).message
        print(f"bench_gpu: no GPU to measure: {why}", file=sys.stderr)
        return 0
    devices = ["cpu"] if problem is not None else ["cuda", "cpu"]
    if "cuda" in devices:
        from bpvideo.solvers.backends.cuda import device_name

        print(f"GPU: {device_name()}", file=sys.stderr)
    rows = []
    for label, width, height in map(parse_size, args.sizes.split(",")):
        print(f"{label}: making {args.frames} frames ...", file=sys.stderr)
        if args.clip:
            frames = clip_frames(args.clip, width, height, args.frames)
        else:
            frames = synthetic_frames(width, height, args.frames)
        for device in devices:
            gpu = device == "cuda"
            n = args.frames if gpu else min(args.cpu_frames, args.frames)
            row = {"size": label, "device": device, "frames": n}
            iters = args.iters if gpu else args.cpu_iters
            row["it/s"], row["solve fps"] = solver_rate(frames, device, iters)
            row["solve fps"] *= iters / args.iters  # at --iters iterations
            if n >= 2:
                row["e2e fps"], row["iterations"] = end_to_end(frames[:n], device, args.window)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    print(
        f"solver: {args.frames} frames, {args.iters} iterations (CPU: scaled from "
        f"{args.cpu_iters}); end to end: e2e frames, default options, --solve-scale 1"
    )
    print(
        f"{'size':>9} {'device':>6} {'it/s':>8} {'solve fps':>9} {'e2e frames':>10} "
        f"{'iters':>5} {'e2e fps':>8}"
    )
    for r in rows:
        print(
            f"{r['size']:>9} {r['device']:>6} {r['it/s']:8.2f} {r['solve fps']:9.1f} "
            f"{r['frames']:>10} {r.get('iterations', '-'):>5} "
            f"{r.get('e2e fps', float('nan')):8.1f}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
