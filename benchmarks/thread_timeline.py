"""Where a run's wall time goes: the CPU of every thread of a command and of its children.

Runs a command (``bpvideo separate CLIP -o OUT -v`` by default) and reads
``/proc/PID/task/*/stat`` of its whole process tree every ``--every`` seconds: each
thread's user + sys seconds, and whether it is runnable. Prints

- a timeline (one line per ``--bin`` seconds): the tree's CPU share (100 % = one core
  busy), how many of its threads were runnable at the samples, and the CPU seconds of
  each thread that ran (``main`` / ``t1``, ``t2``... : the command's own threads in the
  order they appeared; ``ffNNN:name``: a child process's thread, by its short name);
- the phases between the command's log lines (``--phase WORD``: each stderr line
  containing WORD closes a phase), each with its wall and CPU seconds and share;
- the CPU seconds of every thread over the run.

Samples taken while a process of the tree is stopped (state ``T``: another job's
measurement may freeze niced processes with SIGSTOP) are left out of the timeline's
clock, so that a frozen second does not read as an idle one.

Usage::

    PYTHONPATH=. python benchmarks/thread_timeline.py CLIP
    PYTHONPATH=. python benchmarks/thread_timeline.py CLIP --bin 0.2 -- --threads 1
    python benchmarks/thread_timeline.py --command "ffmpeg -i CLIP -f null -"

Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import bisect
import collections
import itertools
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

TICK = os.sysconf("SC_CLK_TCK")
#: Log lines of ``bpvideo separate -v`` that end its phases.
PHASES = ("read ", "iterations,", "wrote ")


@dataclass
class Sample:
    """One look at the tree: seconds since start (wall, and not counting stopped
    samples), each thread's CPU seconds and whether it was runnable."""

    wall: float
    clock: float
    cpu: dict[tuple[int, int, str], float] = field(default_factory=dict)
    runnable: int = 0


def _task_files(pid: int, leaf: str) -> Iterator[tuple[int, str]]:
    """(thread id, text of ``/proc/PID/task/TID/LEAF``) of each thread of ``pid`` still
    there (threads and processes come and go while they are read)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/{leaf}") as f:
                yield int(task), f.read()
        except OSError:
            continue


def _children(pid: int) -> list[int]:
    return [int(c) for _, text in _task_files(pid, "children") for c in text.split()]


def _tree(pid: int) -> list[int]:
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        seen.append(p)
        todo += _children(p)
    return seen


def _threads(pid: int) -> dict[tuple[int, int, str], tuple[float, str]]:
    """(pid, tid, name) -> (CPU seconds, state) of each thread of ``pid``."""
    out = {}
    for tid, stat in _task_files(pid, "stat"):
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        out[(pid, tid, name)] = ((int(fields[11]) + int(fields[12])) / TICK, fields[0])
    return out


def record(cmd: list[str], every: float) -> tuple[int, list[Sample], list[tuple[float, str]]]:
    """Run ``cmd``; its pid, the samples, and its stderr lines with their clock times."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    lines: list[tuple[float, str]] = []
    samples: list[Sample] = []

    def read_log() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            # the clock of the last sample: the log is placed on the same time axis
            lines.append((samples[-1].clock if samples else 0.0, line.rstrip()))

    reader = threading.Thread(target=read_log, daemon=True)
    reader.start()
    clock, last = 0.0, start
    while proc.poll() is None:
        now = time.perf_counter()
        seen: dict[tuple[int, int, str], tuple[float, str]] = {}
        for pid in _tree(proc.pid):
            seen.update(_threads(pid))
        if not any(state == "T" for _, state in seen.values()):
            clock += now - last
        last = now
        runnable = sum(state == "R" for _, state in seen.values())
        cpu = {key: seconds for key, (seconds, _) in seen.items()}
        samples.append(Sample(now - start, clock, cpu, runnable))
        time.sleep(every)
    reader.join(timeout=5)
    return proc.pid, samples, lines


def _labels(pid: int, samples: list[Sample]) -> dict[tuple[int, int, str], str]:
    """``main``, ``t1``, ``t2``... for the command's threads in order of appearance;
    ``ffNNN:name`` (the pid's last three digits) for its children's."""
    labels: dict[tuple[int, int, str], str] = {}
    own = 0
    for sample in samples:
        for key in sample.cpu:
            if key in labels:
                continue
            if key[0] != pid:
                labels[key] = f"ff{key[0] % 1000}:{key[2]}"
            elif key[1] == pid:
                labels[key] = "main"
            else:
                own += 1
                labels[key] = f"t{own}"
    return labels


def timeline(pid: int, samples: list[Sample], width: float) -> tuple[list[str], dict]:
    """The lines of the timeline, and each thread's CPU seconds over the run."""
    labels = _labels(pid, samples)
    bins: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    runnable: collections.Counter = collections.Counter()
    count: collections.Counter = collections.Counter()
    before: dict[tuple[int, int, str], float] = {}
    for sample in samples:
        b = int(sample.clock / width)
        runnable[b] += sample.runnable
        count[b] += 1
        for key, seconds in sample.cpu.items():
            bins[b][labels[key]] += seconds - before.get(key, 0.0)
            before[key] = seconds
    total: collections.Counter = collections.Counter()
    lines = []
    for b in sorted(bins):
        row = bins[b]
        total.update(row)
        busy = " ".join(f"{k}={v:.2f}" for k, v in row.most_common() if v > 0)
        share = 100 * sum(row.values()) / width
        lines.append(f"{b * width:6.2f} s {share:4.0f} % R{runnable[b] / count[b]:4.1f}  {busy}")
    return lines, dict(total)


def phases(samples: list[Sample], marks: list[float], pid: int) -> list[str]:
    """Wall and CPU seconds between successive ``marks`` (clock times), the command's
    own threads apart from its children's (a thread's CPU counts in the phase of the
    sample that saw it)."""
    bounds = [0.0, *marks, samples[-1].clock if samples else 0.0]
    own = [0.0] * (len(bounds) - 1)
    kids = [0.0] * (len(bounds) - 1)
    before: dict[tuple[int, int, str], float] = {}
    for sample in samples:
        phase = min(bisect.bisect_left(bounds, sample.clock), len(own)) - 1
        for key, seconds in sample.cpu.items():
            spent = seconds - before.get(key, 0.0)
            before[key] = seconds
            if key[0] == pid:
                own[max(phase, 0)] += spent
            else:
                kids[max(phase, 0)] += spent
    lines = []
    for i, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        wall = hi - lo
        share = 100 * (own[i] + kids[i]) / wall if wall > 0 else 0.0
        lines.append(f"{lo:6.2f} - {hi:6.2f} s: wall {wall:5.2f} s, CPU own {own[i]:5.2f} s "
                     f"+ children {kids[i]:5.2f} s = {share:4.0f} %")  # fmt: skip
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clip", nargs="?", help="input of `bpvideo separate`")
    parser.add_argument("extra", nargs="*", help="options added to bpvideo separate")
    parser.add_argument("--command", help="time this command instead (a shell-quoted line)")
    parser.add_argument("--every", type=float, default=0.05, help="seconds between samples")
    parser.add_argument("--bin", type=float, default=0.1, help="seconds per timeline line")
    parser.add_argument("--phase", action="append", help="a log line with it ends a phase")
    args = parser.parse_args(argv)
    if not args.command and not args.clip:
        parser.error("give a CLIP or --command")
    with tempfile.TemporaryDirectory() as tmp:
        if args.command:
            cmd = shlex.split(args.command)
        else:
            out = os.path.join(tmp, "out")
            cmd = [sys.executable, "-m", "bpvideo", "separate", args.clip, "-o", out, "-v",
                   *args.extra]  # fmt: skip
        pid, samples, log = record(cmd, args.every)
    words = args.phase or (() if args.command else PHASES)
    marks = [t for t, line in log if any(w in line for w in words)]
    lines, total = timeline(pid, samples, args.bin)
    wall = samples[-1].wall if samples else 0.0
    clock = samples[-1].clock if samples else 0.0
    print(f"{' '.join(cmd)}\nwall {wall:.2f} s, not stopped {clock:.2f} s, "
          f"CPU {sum(total.values()):.2f} s\n")  # fmt: skip
    print("\n".join(lines))
    print("\nphases:\n" + "\n".join(phases(samples, marks, pid)))
    ranked = sorted(total.items(), key=lambda kv: -kv[1])
    print("\nthreads (CPU s): " + " ".join(f"{k}={v:.2f}" for k, v in ranked))
    print("\nlog:\n" + "\n".join(f"{t:6.2f} {line}" for t, line in log))
    return 0


if __name__ == "__main__":
    sys.exit(main())
