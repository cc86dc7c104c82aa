"""The cores a run may use, and the threads it spreads its work over (``--threads``).

A low module (it imports nothing of bpvideo): the option table reads its default here,
the job sets the run's count once (:func:`use`), and the layers below read it
(:func:`threads`): the numba solver's kernels, the compiled match of the masks, the pool
that forms blocks of masks side by side (:mod:`bpvideo.pipeline.finish`), the one thread
that runs a piece of work beside the caller's (:func:`beside`), the two halves of a
matrix's rows worked on side by side (:func:`in_blocks`). A thread of
such a pool is marked (:func:`in_pool`): the work it runs stays on one thread, so that N
threads never start N more each.

The cores a process may use are those of its affinity mask (``os.sched_getaffinity``,
as ``taskset`` or a container's cpuset set it) and no more than its cgroup v2 CPU quota
allows (``/sys/fs/cgroup/cpu.max``: ``QUOTA PERIOD``, or ``max``): a container given 2
CPUs on a 64-core host runs 2 threads, not 64. A batch worker's share (:func:`limit`)
caps it further: the batch divides the cores between its workers.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "CPU_MAX",
    "available_cores",
    "beside",
    "by_rows",
    "cgroup_cpus",
    "halves",
    "in_blocks",
    "in_pool",
    "limit",
    "limited",
    "threads",
    "use",
]

#: The cgroup v2 CPU quota of this process's cgroup (the namespace's root in a container).
CPU_MAX = Path("/sys/fs/cgroup/cpu.max")

_STATE: dict[str, int | None] = {"threads": None, "limit": None}
_LOCAL = threading.local()

#: :func:`in_blocks` splits work over at least this many entries (below it, handing a
#: block to a thread costs about what it saves).
SPLIT_ENTRIES = 1 << 18
#: Entries of the chunk of rows :func:`by_rows` hands its work at a time (its
#: temporaries, a few float32 arrays of that size, stay in a core's cache).
CHUNK_ENTRIES = 1 << 16
_BLOCKS: dict[int, ThreadPoolExecutor] = {}
_T = TypeVar("_T")


def cgroup_cpus(path: Path | str = CPU_MAX) -> float | None:
    """CPUs the cgroup quota at ``path`` allows (quota / period), or None: no file, no
    quota (``max``), or a file that cannot be read as one."""
    try:
        fields = Path(path).read_text().split()
    except OSError:
        return None
    if len(fields) < 1 or fields[0] == "max":
        return None
    try:
        quota = int(fields[0])
        period = int(fields[1]) if len(fields) > 1 else 100_000
    except ValueError:
        return None
    if quota <= 0 or period <= 0:
        return None
    return quota / period


def available_cores(cpu_max: Path | str = CPU_MAX) -> int:
    """Cores this process may use: its affinity, capped by the cgroup quota (rounded up:
    1.5 CPUs is 2 threads' worth of work) and by a batch worker's share; at least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        cores = os.cpu_count() or 1
    quota = cgroup_cpus(cpu_max)
    if quota is not None:
        cores = min(cores, math.ceil(quota))
    share = _STATE["limit"]
    if share is not None:
        cores = min(cores, share)
    return max(1, cores)


def limit(cores: int | None) -> None:
    """Cap :func:`available_cores` of this process at ``cores`` (a batch worker's share
    of the machine; None: no cap)."""
    _STATE["limit"] = None if cores is None else max(1, int(cores))


def limited() -> int | None:
    """The cap :func:`limit` set (None: none)."""
    return _STATE["limit"]


def use(count: int | str | None) -> int:
    """Set the threads of this run (``--threads``: a count, or ``"auto"``/None for
    :func:`available_cores`); return the count."""
    n = available_cores() if count is None or count == "auto" else max(1, int(count))
    _STATE["threads"] = n
    return n


def threads() -> int:
    """Threads the calling thread may spread its work over: the run's count
    (:func:`use`; :func:`available_cores` when none was set), 1 in a pool's thread."""
    if getattr(_LOCAL, "pooled", False):
        return 1
    n = _STATE["threads"]
    return available_cores() if n is None else n


def in_pool() -> None:
    """Mark the calling thread as a pool's (an initializer): :func:`threads` is 1 there."""
    _LOCAL.pooled = True


@contextmanager
def beside(name: str) -> Iterator[Callable[..., Future]]:
    """A ``start(work, *args)`` that runs ``work(*args)`` in one more thread (named
    ``name``, marked :func:`in_pool`) while the caller goes on, and returns its
    ``Future``, when the calling thread may use more than one (:func:`threads`); else
    ``work`` runs at once in the caller's thread (its error raised there). The pieces
    started run one after another in that thread; leaving the block waits for them
    (and drops those not started when the block failed)."""
    if threads() <= 1:
        yield _at_once
        return
    pool = ThreadPoolExecutor(1, thread_name_prefix=name, initializer=in_pool)
    try:
        yield pool.submit
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _at_once(work: Callable[..., Any], *args: Any) -> Future:
    done: Future = Future()
    done.set_result(work(*args))
    return done


def in_blocks(work: Callable[[int, int], _T], length: int, entries: int) -> list[_T]:
    """``[work(lo, hi)]`` over the two halves of ``range(length)`` side by side
    (:func:`halves`) when the calling thread may use more than one (:func:`threads`) and
    the work goes over at least :data:`SPLIT_ENTRIES` ``entries``; else
    ``[work(0, length)]``.

    For work whose answer for an index is its own (each row of a matrix formed alone,
    as numpy's elementwise operations and reductions along a row form it): the same
    bytes whichever way it ran. Sums over the rows are left to the caller, whole.
    """
    if length < 2 or entries < SPLIT_ENTRIES or threads() <= 1:
        return [work(0, length)]
    return halves(work, length)


def halves(work: Callable[[int, int], _T], length: int) -> list[_T]:
    """``[work(0, h), work(h, length)]``, ``h = length // 2``: the second in one more
    thread (marked :func:`in_pool`, kept for the next call, one per process) while the
    caller's works on the first, when the calling thread may use more than one
    (:func:`threads`); else one after the other in the caller's thread. The same two
    calls either way: for work whose answer depends on the blocks (sums of each half,
    added by the caller), the same bytes with any count of threads."""
    half = length // 2
    if threads() <= 1:
        return [work(0, half), work(half, length)]
    pid = os.getpid()  # a forked child has no thread of its parent's pool: its own
    pool = _BLOCKS.get(pid)
    if pool is None:
        pool = _BLOCKS.setdefault(
            pid, ThreadPoolExecutor(1, thread_name_prefix="bpvideo-rows", initializer=in_pool)
        )
    second = pool.submit(work, half, length)
    try:
        first = work(0, half)
    except BaseException:
        second.exception()  # waits: no block is still written to when the caller goes on
        raise
    return [first, second.result()]


def by_rows(work: Callable[[int, int], object], rows: int, columns: int) -> None:
    """``work(lo, hi)`` over the rows of a ``rows`` x ``columns`` matrix, a chunk of
    about :data:`CHUNK_ENTRIES` entries at a time, the rows' two halves side by side
    (:func:`in_blocks`). For work that forms each row alone (numpy's elementwise
    operations, reductions along a row): the same bytes as one call over every row."""
    step = max(1, CHUNK_ENTRIES // max(columns, 1))

    def chunks(lo: int, hi: int) -> None:
        for c in range(lo, hi, step):
            work(c, min(hi, c + step))

    in_blocks(chunks, rows, rows * columns)
