"""The first run after an install against the second (issue 39: at most 2 s slower).

numba compiles bpvideo's kernels the first time they are used and caches them on disk;
a fresh install (``pip install`` writes the sources with new times, so no cache survives
it) compiles them in its first run. This benchmark makes that first run on purpose: for
each size, the synthetic street clip of :mod:`bench_scale` is encoded, then in each
round a new, empty ``NUMBA_CACHE_DIR`` is made (numba then caches there, not beside the
sources) and ``bpvideo separate CLIP -o OUT`` runs twice in a row in child processes:
the first compiles, the second loads. Reported per size, medians over the rounds: the
wall seconds of each run (process start to exit), their CPU seconds (user + sys of the
child and of the ffmpeg processes it waited for: ``RUSAGE_CHILDREN``, steadier than wall
time on a shared machine) and the differences; whether the first run logged the
compilation (once) and the second did not; whether the two runs' masks are the same
bytes (and the first 12 digits of their SHA-256, to compare versions).

By default the bpvideo of this checkout runs (on ``PYTHONPATH``); ``--python`` runs the
one installed in another environment, which is what a user gets::

    python3 -m venv /tmp/v39 && /tmp/v39/bin/pip install .
    python benchmarks/bench_first_run.py --python /tmp/v39/bin/python --repeat 3
    python benchmarks/bench_first_run.py --sizes 1280x720 --repeat 1   # this checkout
    python benchmarks/bench_first_run.py --compile-only --repeat 3     # the kernels alone

``--compile-only`` times what the compilation costs without the run around it: in a
child, the CPU seconds to get the solver's and the masks' kernels into an empty cache,
then in another child to load them from it.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_end_to_end as e2e
from bench_scale import make_clip
from output_hashes import masks_digest

SIZES = "320x240,1280x720"
#: The INFO line of :mod:`bpvideo.solvers.backends.compile_log`.
COMPILE_LINE = "compiling the fast kernels with numba"


def one_run(python: str, clip: Path, out: Path, env: dict) -> dict:
    """``bpvideo separate`` once: wall and CPU seconds, compile lines logged, masks' hash."""
    cmd = [python, "-m", "bpvideo", "separate", str(clip), "-o", str(out), "--overwrite"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"bpvideo failed on {clip}: {done.stderr.strip()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "wall": wall,
        "cpu": cpu,
        "compiles": done.stderr.count(COMPILE_LINE),
        "masks": masks_digest(out / "masks"),
    }


#: A child's work in ``--compile-only``: the solver's and the masks' kernels, loaded (or
#: compiled) as a run's warm-up threads do; prints its CPU seconds.
WARM = """
import time
start = time.process_time()
from bpvideo.solvers.backends import get_backend
from bpvideo.masks.appearances import warm_up
get_backend("numba").warm_up()
warm_up()
print("cpu", time.process_time() - start)
"""


def compile_only(args: argparse.Namespace) -> None:
    """The kernels alone, in children: CPU seconds to compile them into an empty cache,
    then to load them from it (medians of ``--repeat`` rounds, each a new cache)."""
    env = e2e._env() if args.python == sys.executable else dict(os.environ)
    seconds: dict[str, list[float]] = {"compile": [], "load": []}
    with tempfile.TemporaryDirectory(prefix="bpvideo-first-") as tmp:
        for rep in range(args.repeat):
            child_env = {**env, "NUMBA_CACHE_DIR": str(Path(tmp) / f"numba-{rep}")}
            for which in ("compile", "load"):
                done = subprocess.run([args.python, "-c", WARM], env=child_env,
                                      capture_output=True, text=True, check=True)  # fmt: skip
                cpu = float(done.stdout.split()[-1])
                seconds[which].append(cpu)
                print(f"round {rep + 1}: {which} {cpu:.2f} CPU s", file=sys.stderr)
    med = {k: statistics.median(v) for k, v in seconds.items()}
    print(f"\nkernels (solver + masks), median of {args.repeat}, python {args.python}: "
          f"compile {med['compile']:.2f} CPU s, load {med['load']:.2f} CPU s")  # fmt: skip


def run(args: argparse.Namespace) -> None:
    import imageio_ffmpeg

    ffmpeg = imageio_ffmpeg.get_ffmpeg_exe()
    env = e2e._env() if args.python == sys.executable else dict(os.environ)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bpvideo-first-") as tmp:
        for spec in args.sizes.split(","):
            w, h = (int(v) for v in spec.split("x"))
            clip = Path(tmp) / f"scene-{w}x{h}.mp4"
            print(f"{spec}: encoding the clip ...", file=sys.stderr)
            make_clip(clip, (w, h), args.frames, ffmpeg)
            runs: dict[str, list[dict]] = {"first": [], "second": []}
            for rep in range(args.repeat):
                cache = Path(tmp) / f"numba-{spec}-{rep}"
                cache.mkdir()
                child_env = {**env, "NUMBA_CACHE_DIR": str(cache)}
                for which in ("first", "second"):
                    print(f"{spec} round {rep + 1}/{args.repeat}: {which} run ...", file=sys.stderr)
                    out = Path(tmp) / f"out-{spec}-{rep}-{which}"
                    got = one_run(args.python, clip, out, child_env)
                    runs[which].append(got)
                    print(f"  {got['wall']:.2f} s wall, {got['cpu']:.2f} CPU s, masks "
                          f"{got['masks'][:12]}", file=sys.stderr)  # fmt: skip
                    subprocess.run(["rm", "-rf", str(out)], check=False)
                subprocess.run(["rm", "-rf", str(cache)], check=False)
            rows.append((spec, runs))
    print_table(rows, args)


def print_table(rows: list, args: argparse.Namespace) -> None:
    """The Markdown table of :func:`run`."""
    print(f"\n{args.frames} frames, median of {args.repeat} rounds, {time.strftime('%Y-%m-%d')}, "
          f"python {args.python}\n")  # fmt: skip
    print("| size | first s | second s | first - second s | first CPU s | second CPU s "
          "| first - second CPU s | compile logged first / second | masks same "
          "| masks sha256 |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for spec, runs in rows:
        first, second = runs["first"], runs["second"]
        med = {k: statistics.median(r[k] for r in first) for k in ("wall", "cpu")}
        med2 = {k: statistics.median(r[k] for r in second) for k in ("wall", "cpu")}
        pairs = list(zip(first, second, strict=True))
        gap = statistics.median(a["wall"] - b["wall"] for a, b in pairs)
        gap_cpu = statistics.median(a["cpu"] - b["cpu"] for a, b in pairs)
        logged = f"{max(r['compiles'] for r in first)} / {max(r['compiles'] for r in second)}"
        same = "yes" if all(a["masks"] == b["masks"] for a, b in pairs) else "NO"
        print(f"| {spec} | {med['wall']:.2f} | {med2['wall']:.2f} | {gap:.2f} | {med['cpu']:.2f} "
              f"| {med2['cpu']:.2f} | {gap_cpu:.2f} | {logged} | {same} "
              f"| {first[0]['masks'][:12]} |")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=SIZES, help=f"WxH,... (default {SIZES})")
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3, help="rounds, each a fresh cache")
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="a Python with bpvideo installed (default: this one, running this checkout)",
    )
    parser.add_argument(
        "--compile-only",
        action="store_true",
        help="time only the kernels' compilation and load, in children (no clip)",
    )
    args = parser.parse_args(argv)
    if args.compile_only:
        compile_only(args)
    else:
        run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
