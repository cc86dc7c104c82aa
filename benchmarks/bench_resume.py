"""Stop and resume on a real sequence: masks of a stopped then resumed run against an
uninterrupted one, and the time a run takes with its checkpoint.

``cdnet_highway`` (700 frames of 320x240, a folder of frames, ``../shared/data``) with
``--window 200`` (4 windows, new frames 1-200, 201-380, 381-560, 561-700): an
uninterrupted run; a run stopped by SIGINT once it says frames 1-380 are saved, then
``--resume``; a run killed by SIGKILL once frames 1-200 are saved, then ``--resume``.
Every mask file, the videos, events.csv and frames.csv are compared byte for byte. With
``--baseline REPO`` the uninterrupted run is also timed with that checkout (a copy of the
code before checkpoints, say), runs interleaved, medians printed.

Usage::

    python benchmarks/bench_resume.py [--repeat 2] [--baseline /path/to/other/checkout]
"""

from __future__ import annotations

import argparse
import filecmp
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
INPUT = REPO.parent / "shared" / "data" / "cdnet_highway" / "input"
WINDOW = ["--window", "200"]


def _env(repo: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(repo), OPENBLAS_NUM_THREADS="1")


def _run(repo: Path, out: Path, *extra: str) -> float:
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "bpvideo", "separate", str(INPUT), "-o",
                           str(out), *WINDOW, *extra], env=_env(repo), capture_output=True,
                          text=True, cwd=tempfile.gettempdir())  # fmt: skip
    if done.returncode != 0:
        sys.exit(done.stderr)
    return time.perf_counter() - t


def _stop(out: Path, signum: int, saved: int) -> str:
    """A run signalled once it says frames 1-``saved`` are saved; its last line."""
    proc = subprocess.Popen([sys.executable, "-m", "bpvideo", "separate", str(INPUT), "-o",
                             str(out), *WINDOW, "-v"], env=_env(REPO), stderr=subprocess.PIPE,
                            text=True, cwd=tempfile.gettempdir())  # fmt: skip
    assert proc.stderr is not None
    for line in proc.stderr:
        if f"checkpoint: frames 1-{saved} saved" in line:
            proc.send_signal(signum)
            break
    rest = proc.stderr.read().strip().splitlines()
    proc.wait()
    return f"exit {proc.returncode}: {rest[-1] if rest else ''}"


def _same(a: Path, b: Path) -> str:
    names = sorted(os.listdir(a / "masks"))
    masks = names == sorted(os.listdir(b / "masks")) and all(
        filecmp.cmp(a / "masks" / n, b / "masks" / n, shallow=False) for n in names
    )
    files = [n for n in ("background.mp4", "foreground.mp4", "events.csv", "frames.csv")
             if filecmp.cmp(a / n, b / n, shallow=False)]  # fmt: skip
    return f"{len(names)} masks identical: {masks}; identical files: {', '.join(files)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--baseline", type=Path, default=None)
    args = parser.parse_args()
    if not INPUT.is_dir():
        sys.exit(f"{INPUT}: not there (../shared/data)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        seconds: dict[str, list[float]] = {"this checkout": []}
        if args.baseline is not None:
            seconds["baseline"] = []
        for i in range(args.repeat):
            seconds["this checkout"].append(_run(REPO, root / f"whole{i}"))
            if args.baseline is not None:
                seconds["baseline"].append(_run(args.baseline, root / f"base{i}"))
        for name, values in seconds.items():
            print(f"| {name} | {statistics.median(values):.1f} s | {values} |")
        print("SIGINT:", _stop(root / "int", signal.SIGINT, 380))
        _run(REPO, root / "int", "--resume")
        print("SIGINT + --resume:", _same(root / "int", root / "whole0"))
        print("SIGKILL:", _stop(root / "kill", signal.SIGKILL, 200))
        _run(REPO, root / "kill", "--resume")
        print("SIGKILL + --resume:", _same(root / "kill", root / "whole0"))


if __name__ == "__main__":
    main()
