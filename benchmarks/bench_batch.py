"""Wall time of ``bpvideo batch`` on 8 short clips: 1 worker, 2 workers, a 2-worker Dask cluster.

Generates 8 synthetic street clips (:func:`bpvideo.synthetic.make_scene`, 160x120, 100
frames, different seeds) in a temporary folder, writes one config whose single job is a
glob over them, and runs the batch (in-process, through :func:`bpvideo.batch.run.run_batch`,
the code path of the CLI) with:

- ``local-1``: ``--workers 1`` (one worker process, one BLAS thread);
- ``local-2``: ``--workers 2``;
- ``dask-2``: ``--executor dask --scheduler ADDR`` on the :class:`distributed.LocalCluster`
  of two single-threaded worker processes that ``--executor dask`` starts
  (:func:`bpvideo.batch.executors.local_cluster`), started once beforehand (its start-up
  time is printed apart).

Wall times include starting the process pool (a fork server and two workers importing
numpy, scipy and OpenCV) but not the Dask cluster's start-up. The configurations are run
in turn, ``--repeat`` times, and the table gives the median and the minimum of each, and
the speed-up against ``local-1`` as the median of the ratios measured in the same round
(robust to load that changes between rounds on a shared machine), and the CPU time the
jobs used (summed; it stays flat when workers do not oversubscribe the cores, and shows
when the machine, not bpvideo, limits the speed-up: wall time >> CPU time / workers).

Usage::

    python benchmarks/bench_batch.py --repeat 3

Results go to stdout (the table); progress to stderr.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bpvideo.batch.run import BatchOptions, default_workers, run_batch
from bpvideo.sinks.writers import write_video
from bpvideo.synthetic import make_scene


def _burn(n: int = 20_000_000) -> float:
    """A pure-Python CPU loop (no BLAS, no I/O); returns its wall time."""
    t = time.perf_counter()
    x = 0
    for i in range(n):
        x += i
    return time.perf_counter() - t


def machine_parallelism(workers: int = 2) -> float:
    """Throughput of ``workers`` CPU-bound processes relative to one, measured now.

    On an idle machine with ``workers`` free cores this is close to ``workers``; on a host
    whose cores are shared with other tenants it is lower, and it bounds the speed-up any
    batch can show. Printed beside the table so that the speed-up can be read against it.
    """
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers) as pool:
        list(pool.map(_burn, [1_000_000] * workers))  # start the workers
        one = statistics.median(pool.submit(_burn).result() for _ in range(3))
        t = time.perf_counter()
        list(pool.map(_burn, [20_000_000] * workers))
        both = time.perf_counter() - t
    return workers * one / both


def busy_seconds() -> float | None:
    """CPU seconds the whole machine has spent busy since boot (``/proc/stat``: user,
    nice, system, irq, softirq), or None off Linux. Its growth over a run counts what
    the batch's processes and their ffmpeg children used, which their own CPU time
    (``cpu_seconds`` of the report: each job's process only) leaves out."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
    except OSError:
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    return sum(int(fields[i]) for i in (1, 2, 3, 6, 7)) / ticks


def make_clips(folder: Path, count: int, frames: int, width: int, height: int) -> None:
    """Write ``count`` lossless synthetic clips into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for seed in range(count):
        scene = make_scene(width, height, frames, seed=seed)
        write_video(folder / f"clip{seed}.mkv", scene.frames, scene.fps, lossless=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=8)
    parser.add_argument("--frames", type=int, default=100)
    parser.add_argument("--width", type=int, default=160)
    parser.add_argument("--height", type=int, default=120)
    parser.add_argument("--repeat", type=int, default=3, help="rounds (median reported)")
    parser.add_argument("--no-dask", action="store_true", help="skip the Dask configuration")
    args = parser.parse_args(argv)
    logging.getLogger("bpvideo").setLevel(logging.ERROR)

    root = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    try:
        t = time.perf_counter()
        make_clips(root / "clips", args.clips, args.frames, args.width, args.height)
        print(
            f"generated {args.clips} clips of {args.width}x{args.height}x{args.frames} "
            f"({time.perf_counter() - t:.1f}s); {default_workers()} cores; "
            f"load average {os.getloadavg()[0]:.2f}",
            file=sys.stderr,
        )
        config = root / "bench.yaml"
        config.write_text("defaults:\n  output: out/{stem}\njobs:\n  - input: clips/*.mkv\n")

        cluster = None
        runs: dict[str, BatchOptions] = {
            "local-1": BatchOptions(workers=1, executor="local", progress=False),
            "local-2": BatchOptions(workers=2, executor="local", progress=False),
        }
        cluster_start = None
        if not args.no_dask:
            from bpvideo.batch.executors import local_cluster

            t = time.perf_counter()
            cluster, client = local_cluster(2)  # the cluster --executor dask starts
            cluster_start = time.perf_counter() - t
            runs["dask-2"] = BatchOptions(
                executor="dask", scheduler=cluster.scheduler_address, progress=False
            )
        times: dict[str, list[float]] = {name: [] for name in runs}
        ratios: dict[str, list[float]] = {name: [] for name in runs}
        cpu: dict[str, list[float]] = {name: [] for name in runs}
        busy: dict[str, list[float]] = {name: [] for name in runs}
        try:
            for round_ in range(args.repeat):
                for name, options in runs.items():
                    shutil.rmtree(root / "out", ignore_errors=True)
                    options.report = str(root / f"report-{name}.json")
                    t, b = time.perf_counter(), busy_seconds()
                    code = run_batch(config, options, stdout=lambda s: None)
                    wall = time.perf_counter() - t
                    if b is not None:
                        busy[name].append((busy_seconds() - b) / wall)
                    if code != 0:
                        print(f"{name}: batch failed (exit {code})", file=sys.stderr)
                        return 1
                    times[name].append(wall)
                    report = json.loads(Path(options.report).read_text())
                    cpu[name].append(sum(j["cpu_seconds"] for j in report["jobs"]))
                    print(
                        f"round {round_ + 1}: {name} {wall:.2f}s wall, {cpu[name][-1]:.1f}s CPU "
                        f"in jobs, load average {os.getloadavg()[0]:.2f}",
                        file=sys.stderr,
                    )
                for name in runs:
                    ratios[name].append(times["local-1"][-1] / times[name][-1])
        finally:
            if cluster is not None:
                client.close()
                cluster.close()

        print(
            f"bpvideo batch: {args.clips} clips of {args.width}x{args.height}x{args.frames}, "
            f"{args.repeat} rounds, {default_workers()} cores"
        )
        print(f"{'run':<8} {'median s':>9} {'min s':>7} {'speed-up':>9} {'job CPU s':>10} "
              f"{'cores busy':>11}")  # fmt: skip
        for name in runs:
            used = f"{statistics.median(busy[name]):11.2f}" if busy[name] else f"{'-':>11}"
            print(
                f"{name:<8} {statistics.median(times[name]):9.2f} {min(times[name]):7.2f} "
                f"{statistics.median(ratios[name]):8.2f}x {statistics.median(cpu[name]):10.1f} "
                f"{used}"
            )
        print(
            "(speed-up: median over rounds of local-1's wall time / this run's, same round; "
            "job CPU s: median of the CPU time summed over the jobs; cores busy: the "
            "machine's busy CPU seconds over the run's wall time, ffmpeg children and the "
            "batch process included, median)"
        )
        if cluster_start is not None:
            print(f"(Dask LocalCluster start-up, not included above: {cluster_start:.2f}s)")
        print(
            f"(machine parallelism now: {machine_parallelism(2):.2f}x, the throughput of 2 "
            "CPU-bound Python processes relative to 1; no batch can show more)"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
