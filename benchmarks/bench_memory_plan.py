"""The memory a run plans against the memory it takes, bpvideo and its ffmpeg children.

A job is refused when its plan (``pipeline/memory.py``: :func:`planned_memory`, printed
on the ``read`` line with ``-v``) is over 60 % of the memory available, so a plan far above
what a run takes refuses jobs a machine could do. For each size, the first ``--frames``
frames of ``../shared/data/videos/highway.avi`` are scaled by ffmpeg (bicubic, H.264 CRF
16) and ``bpvideo separate`` runs on them at the defaults (``--extra-args`` for more) in a
child process; the summed resident memory of that process and its children (the ffmpeg
decoder and encoders) is read from ``/proc`` every 0.2 s. Prints a Markdown table: the
plan, the peak of the tree, of bpvideo alone and of its children, and plan / peak (above
1: the plan errs on the safe side).

Usage::

    python benchmarks/bench_memory_plan.py --sizes 1920x1080,3840x2160 --frames 100
    python benchmarks/bench_memory_plan.py --sizes 1920x1080 --extra-args "--overlay"

Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLIP = REPO.parent / "shared" / "data" / "videos" / "highway.avi"


def _children(root: int) -> list[int]:
    """``root`` and every process below it."""
    below: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        below.setdefault(parent, []).append(int(name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo += below.get(pid, [])
    return tree


def _rss(pid: int) -> int:
    """Resident bytes of ``pid`` (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def measure(argv: list[str]) -> tuple[int, int, int, str]:
    """Run ``argv``; peaks (bytes) of the tree's summed RSS, of the process alone and of
    its children summed, and its stderr."""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=err, env=dict(os.environ, PYTHONPATH=str(REPO))
        )
        tree = main = kids = 0
        while proc.poll() is None:
            pids = _children(proc.pid)
            own = _rss(proc.pid)
            rest = sum(_rss(p) for p in pids[1:])
            tree, main, kids = max(tree, own + rest), max(main, own), max(kids, rest)
            time.sleep(0.2)
        err.seek(0)
        text = err.read().decode(errors="replace")
    if proc.returncode:
        sys.exit(f"bpvideo failed ({proc.returncode}): {text.strip()[-500:]}")
    return tree, main, kids, text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1920x1080,3840x2160")
    parser.add_argument("--frames", type=int, default=100)
    parser.add_argument("--extra-args", default="", help="options added to bpvideo separate")
    args = parser.parse_args()
    from imageio_ffmpeg import get_ffmpeg_exe

    print("| size | frames | plan MiB | peak MiB (tree) | bpvideo | children | plan / peak |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes.split(","):
            w, h = size.split("x")
            clip = Path(tmp) / f"clip_{size}.mp4"
            subprocess.run(
                [get_ffmpeg_exe(), "-loglevel", "error", "-y", "-i", str(CLIP), "-frames:v",
                 str(args.frames), "-vf", f"scale={w}:{h}:flags=bicubic", "-c:v", "libx264",
                 "-crf", "16", "-preset", "veryfast", str(clip)],
                check=True,
            )  # fmt: skip
            print(f"{size}: running bpvideo ...", file=sys.stderr, flush=True)
            tree, own, kids, err = measure(
                [sys.executable, "-m", "bpvideo", "separate", str(clip), "-v", "-o",
                 str(Path(tmp) / f"out_{size}"), *shlex.split(args.extra_args)]
            )  # fmt: skip
            found = re.search(r"memory (\d+) MiB at most", err)
            plan = int(found.group(1)) if found else float("nan")
            mib = 2**20
            print(f"| {size} | {args.frames} | {plan} | {tree / mib:.0f} | {own / mib:.0f} | "
                  f"{kids / mib:.0f} | {plan / (tree / mib):.2f} |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
