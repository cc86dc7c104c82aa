"""The fixed cost of a ``bpvideo separate`` run: the time to its first frames, checkouts
taking turns (issue 39, docs/performance.md "Start-up").

Each round runs ``python -m bpvideo separate CLIP -o OUT -v`` once with each checkout
(on ``PYTHONPATH``, from a folder outside both; their order alternates from round to
round) and notes the seconds from the process's start to its ``read`` log line (the
imports, the opening of the input, the first window's frames read), to its exit (wall),
and its CPU seconds (user + sys of the process and of the ffmpeg processes it waited
for: ``RUSAGE_CHILDREN``). Printed: each run, then per checkout the medians, and per
checkout after the first the median of its difference to the first in the same round
(steadier than the difference of medians on a shared machine). Compile the checkouts
first (``python -m compileall -q bpvideo``): an uncompiled one compiles every module in
every run where ``PYTHONDONTWRITEBYTECODE`` is set.

Usage::

    python benchmarks/bench_start.py CLIP --repeat 12 . /path/to/main
    python benchmarks/bench_start.py CLIP . 'OPENBLAS_NUM_THREADS=1 /path/to/main'

A checkout may be preceded by ``NAME=VALUE`` settings of its environment.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def parse_checkout(text: str) -> tuple[str, dict[str, str]]:
    """``(path, environment)`` of ``"[NAME=VALUE ...] PATH"``."""
    *settings, path = text.split()
    return str(Path(path).resolve()), dict(s.split("=", 1) for s in settings)


def one_run(python: str, clip: str, checkout: str, env: dict[str, str], out: Path) -> tuple:
    """``(read, wall, cpu)`` seconds of one ``separate`` run (read: None if not logged)."""
    shutil.rmtree(out, ignore_errors=True)
    environ = {**os.environ, **env, "PYTHONPATH": checkout}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen([python, "-m", "bpvideo", "separate", clip, "-o", str(out), "-v"],
                            cwd=out.parent, env=environ, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)  # fmt: skip
    read = None
    for line in proc.stderr:
        if read is None and line.startswith(b"bpvideo: read "):
            read = time.perf_counter() - start
    if proc.wait() != 0:
        raise SystemExit(f"{checkout}: bpvideo separate exited with {proc.returncode}")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return read, wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clip", help="the input of every run")
    parser.add_argument("checkouts", nargs="+", help="[NAME=VALUE ...] PATH of each checkout")
    parser.add_argument("--repeat", type=int, default=8, help="rounds (default 8)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter to run")
    args = parser.parse_args()
    clip = str(Path(args.clip).resolve())
    checkouts = [parse_checkout(c) for c in args.checkouts]
    runs: dict[int, list[tuple]] = {k: [] for k in range(len(checkouts))}
    with tempfile.TemporaryDirectory(prefix="bench-start-") as tmp:
        for round_ in range(args.repeat):
            order = list(runs) if round_ % 2 == 0 else list(runs)[::-1]
            for k in order:
                path, env = checkouts[k]
                runs[k].append(one_run(args.python, clip, path, env, Path(tmp) / "out"))
                read, wall, cpu = runs[k][-1]
                print(f"{args.checkouts[k]}: read {read:.3f} wall {wall:.3f} cpu {cpu:.3f}",
                      flush=True)  # fmt: skip
    for k, rows in runs.items():
        medians = [statistics.median(column) for column in zip(*rows, strict=True)]
        line = "median read {:.3f} wall {:.3f} cpu {:.3f}".format(*medians)
        if k:
            diffs = [statistics.median(a[i] - b[i] for a, b in zip(rows, runs[0], strict=True))
                     for i in range(3)]  # fmt: skip
            line += "; minus the first's, per round: read {:+.3f} wall {:+.3f} cpu {:+.3f}"
            line = line.format(*diffs)
        print(f"{args.checkouts[k]}: {line} (n={len(rows)})")


if __name__ == "__main__":
    main()
