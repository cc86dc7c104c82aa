"""Long-video benchmark: flat memory and steady frames/s of windowed solving.

A 320x240 grey clip is generated on the fly (the static street of
:func:`bpvideo.synthetic.make_scene` with three objects crossing it over and over, new
sensor noise in every frame) and streamed as raw frames into ``bpvideo separate -``
(a child process, ``--window auto``). Nothing of the clip is ever held whole, by the
generator or by bpvideo. For each length (1,000, 3,000 and 10,000 frames by default) it
prints the wall time, frames/s, and the peak resident memory of the bpvideo process and
of its whole process tree (bpvideo and its ffmpeg encoders), polled every 50 ms.

Usage::

    python benchmarks/bench_long.py                      # 1k, 3k, 10k frames
    python benchmarks/bench_long.py --frames 1000 3000 --max-iter 10

Done when: peak <= 2 GB at 10k frames and frames/s at 10k within 20 % of the 1k rate.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil

from bpvideo.synthetic import make_scene

W, H = 320, 240


def frame_stream(count: int, seed: int = 0):
    """Yield ``count`` grey uint8 frames of a looping street scene (cheap to make)."""
    scene = make_scene(W, H, 1, seed=seed, noise=0.0, drift=0.0)
    import cv2

    bg = cv2.cvtColor(scene.background, cv2.COLOR_BGR2GRAY).astype(np.int16)
    rng = np.random.default_rng(seed)
    noise = rng.normal(0, 2.0, (64, H, W)).astype(np.int16)
    objects = [  # (row, height, width, speed px/frame, grey)
        (150, 26, 60, 3.0, 235),
        (195, 30, 90, -2.0, 30),
        (95, 40, 14, 0.7, 20),
    ]
    for t in range(count):
        img = bg + noise[(t * 7) % 64]
        for row, h, w, speed, grey in objects:
            span = W + w
            x = int((t * speed) % span) - w
            x0, x1 = max(0, x), min(W, x + w)
            if x1 > x0:
                img[row : row + h, x0:x1] = grey
        yield np.clip(img, 0, 255).astype(np.uint8)


def run(count: int, extra: list[str], out: Path) -> dict:
    cmd = [
        sys.executable, "-m", "bpvideo", "separate", "-", "--size", f"{W}x{H}",
        "--pix-fmt", "gray", "--fps", "25", "-o", str(out), "-q", *extra,
    ]  # fmt: skip
    env = dict(os.environ)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    ps = psutil.Process(proc.pid)
    peak = {"self": 0, "tree": 0}
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            try:
                own = ps.memory_info().rss
                tree = own + sum(c.memory_info().rss for c in ps.children(recursive=True))
            except psutil.Error:
                break
            peak["self"] = max(peak["self"], own)
            peak["tree"] = max(peak["tree"], tree)
            time.sleep(0.05)

    watcher = threading.Thread(target=poll, daemon=True)
    t0 = time.perf_counter()
    watcher.start()
    for frame in frame_stream(count):
        proc.stdin.write(frame.tobytes())
    proc.stdin.close()
    stdout = proc.stdout.read()
    code = proc.wait()
    seconds = time.perf_counter() - t0
    done.set()
    watcher.join()
    if code != 0:
        raise SystemExit(f"bpvideo failed with exit code {code} on {count} frames")
    return {
        "frames": count,
        "seconds": seconds,
        "fps": count / seconds,
        "peak_self_mb": peak["self"] / 2**20,
        "peak_tree_mb": peak["tree"] / 2**20,
        "output": stdout.decode().strip(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, nargs="+", default=[1000, 3000, 10000])
    parser.add_argument("--max-iter", type=int, default=10, help="bpvideo --max-iter")
    parser.add_argument("--window", default="auto", help="bpvideo --window")
    args = parser.parse_args()
    extra = ["--max-iter", str(args.max_iter), "--window", args.window]
    print(f"bpvideo separate - --size {W}x{H} --pix-fmt gray {' '.join(extra)}", flush=True)
    print(f"{'frames':>7} {'seconds':>8} {'frames/s':>9} {'peak MB':>8} {'tree MB':>8}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for count in args.frames:
            row = run(count, extra, Path(tmp) / f"out{count}")
            rows.append(row)
            print(
                f"{row['frames']:7d} {row['seconds']:8.1f} {row['fps']:9.2f} "
                f"{row['peak_self_mb']:8.0f} {row['peak_tree_mb']:8.0f}",
                flush=True,
            )
    base = rows[0]["fps"]
    for row in rows[1:]:
        print(f"frames/s at {row['frames']} / at {rows[0]['frames']}: {row['fps'] / base:.3f}")
    print(f"largest peak (tree): {max(r['peak_tree_mb'] for r in rows):.0f} MB")


if __name__ == "__main__":
    main()
