"""The done-when checks of the CUDA backend, on a machine with an NVIDIA GPU, in one command.

1. the ``gpu``-marked tests pass (``pytest -m gpu``);
2. on the paper's synthetic instance (float32) the GPU's ``L`` differs from the CPU's by a
   relative Frobenius norm < 1e-4;
3. on a real clip (a folder of frames, default ``../shared/data/cdnet_highway``) the
   masks of ``bpvideo.separate(device="cuda")`` equal the CPU's up to a few pixels
   (``--pixels`` per frame at most);
4. a full-resolution 1920x1080 solve runs at >= 500 frames/s (``bench_gpu.py``'s ``solve
   fps``, 500 synthetic frames).

Nothing needs ffmpeg or the network: frames come from image folders or are made here, and
nothing is written but the optional ``--json`` report. Prints the machine, one line per
check with its figure, and exits 1 when a check fails (2 without a GPU).

Usage::

    pip install -e ".[test,fast,cuda]"     # or the cupy wheel of the machine's CUDA
    python benchmarks/check_gpu.py --json gpu-check.json
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
from bench_gpu import clip_frames, end_to_end, solver_rate, synthetic_frames

import bpvideo
from bpvideo.errors import InputError
from bpvideo.solvers import best_pair
from bpvideo.solvers.backends.cuda import cuda_problem, device_name
from bpvideo.synthetic import make_rpca_problem

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CLIP = ROOT.parent / "shared" / "data" / "cdnet_highway" / "input"


def check_tests() -> tuple[bool, str]:
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider",
           "tests/solvers/test_cuda.py"]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    last = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    return done.returncode == 0 and "skipped" not in last, last


def check_agreement() -> tuple[bool, str]:
    p = make_rpca_problem(2000, 400, rank=5, sparsity=0.05, seed=0)
    A = p.A.astype(np.float32)
    kw = {"tol": 1e-6, "max_iter": 500}
    cpu = best_pair(A, 5, 0.05, backend="numpy", **kw)
    gpu = best_pair(A, 5, 0.05, backend="cuda", **kw)
    rel = float(np.linalg.norm(gpu.L - cpu.L) / np.linalg.norm(cpu.L))
    text = f"relative difference of L {rel:.2e} ({gpu.iterations} vs {cpu.iterations} iterations)"
    return rel < 1e-4, text


def check_masks(folder: Path, frames: int, pixels: int) -> tuple[bool, str]:
    images = sorted(p for p in folder.glob("*") if p.suffix.lower() in {".jpg", ".png", ".bmp"})
    if not images:
        return False, f"no frames in {folder}: give --clip a folder of frames"
    h, w = cv2.imread(str(images[0]), cv2.IMREAD_GRAYSCALE).shape
    data = clip_frames(folder, w, h, min(frames, len(images)))
    gpu = bpvideo.separate(data, device="cuda").masks
    cpu = bpvideo.separate(data, device="cpu").masks
    per_frame = np.count_nonzero(gpu != cpu, axis=(1, 2))
    text = (
        f"masks differ in {int(per_frame.sum())} pixels of {gpu.size} (at most "
        f"{int(per_frame.max())} in a frame; {w}x{h}, {len(data)} frames)"
    )
    return int(per_frame.max()) <= pixels, text


def check_speed(frames: int) -> tuple[bool, str]:
    data = synthetic_frames(1920, 1080, frames)
    rate, fps = solver_rate(data, "cuda", 30)
    e2e, iterations = end_to_end(data, "cuda", "0")
    text = (
        f"1920x1080 x {frames}, 30 iterations: solve {fps:.0f} frames/s ({rate:.1f} it/s); "
        f"end to end {e2e:.0f} frames/s ({iterations} iterations)"
    )
    return fps >= 500, text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clip", type=Path, default=DEFAULT_CLIP, help="a folder of frames")
    ap.add_argument("--clip-frames", type=int, default=300)
    ap.add_argument("--pixels", type=int, default=10, help="mask pixels that may differ per frame")
    ap.add_argument("--frames", type=int, default=500, help="frames of the 1080p solve")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    problem = cuda_problem()
    if problem is not None:
        print(
            "check_gpu: "
            + InputError("{device='cuda'} " + problem, option=("device", "cuda")).message,
            file=sys.stderr,
        )
        return 2
    import cupy

    machine = (f"{device_name()}, CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}, "
               f"CuPy {cupy.__version__}, {platform.node()}")  # fmt: skip
    print(f"machine: {machine}")
    checks = {
        "gpu tests": check_tests,
        "L agrees (paper instance)": check_agreement,
        "masks agree (real clip)": lambda: check_masks(args.clip, args.clip_frames, args.pixels),
        ">= 500 frames/s at 1080p": lambda: check_speed(args.frames),
    }
    results = {}
    for name, check in checks.items():
        ok, text = check()
        results[name] = {"pass": ok, "figure": text}
        print(f"{'PASS' if ok else 'FAIL'}  {name}: {text}", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"machine": machine, "checks": results}, indent=1))
    return 0 if all(r["pass"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
