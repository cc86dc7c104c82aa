"""Where a batch's jobs run: local worker processes that share the cores, or a Dask
cluster."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from concurrent.futures import Executor
from contextlib import contextmanager
from typing import Any

from bpvideo import cores
from bpvideo.allocator import own_process
from bpvideo.batch.pool import WorkerPool
from bpvideo.errors import InputError
from bpvideo.sinks.outputs import signals_deferred

__all__ = ["dask_executor", "local_cluster", "local_executor"]

#: Environment variables that cap the threads of BLAS/OpenMP libraries in a worker.
THREAD_ENV = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
DASK_MISSING = (
    "--executor dask needs dask.distributed, which is not installed: pip install 'bpvideo[dask]'"
)


def _init_worker(blas_threads: int, share: int | None = None) -> None:
    """Initializer of local worker processes: cap BLAS/OpenMP threads, the worker's share
    of the cores (its jobs' ``--threads auto``), quiet logging."""
    cores.limit(share)
    for name in THREAD_ENV:
        os.environ[name] = str(blas_threads)
    from threadpoolctl import threadpool_limits

    import bpvideo.api  # noqa: F401  (load numpy/scipy/cv2 so their pools are capped)

    threadpool_limits(limits=blas_threads)
    own_process()
    logging.getLogger("bpvideo").setLevel(logging.ERROR)


def _share(workers: int) -> int:
    """Each of ``workers`` workers' share of this machine's cores (at least 1)."""
    return max(1, cores.available_cores() // workers)


@contextmanager
def local_executor(workers: int, blas_threads: int = 1) -> Iterator[WorkerPool]:
    """A :class:`~bpvideo.batch.pool.WorkerPool` of ``workers`` processes with
    ``blas_threads`` BLAS threads each and an equal share of the cores (``--threads
    auto`` of their jobs: N workers on C cores run C // N threads each, not C); stopped at
    once when the block is left by an exception (a signal), shut down otherwise."""
    share = _share(workers)
    pool = WorkerPool(workers, initializer=_init_worker, initargs=(blas_threads, share))
    try:
        yield pool
    except BaseException:
        with signals_deferred():  # a second signal waits until the workers are ended
            pool.stop()
        raise
    pool.shutdown(wait=True)


def local_cluster(workers: int) -> tuple[Any, Any]:
    """A :class:`distributed.LocalCluster` of ``workers`` single-threaded worker processes
    set up as the local pool's are (:func:`_init_worker`: one BLAS thread, an equal share
    of the cores, bpvideo's allocator settings), and a client of it.

    Dask's nannies start workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which turns
    glibc's adaptive mmap threshold off: every array over 128 KiB was mapped afresh and
    faulted in page by page, and a job ran 1.4 to 1.6 times slower than in a local
    worker (docs/batch.md, "Speed"). The workers of this cluster are bpvideo's own, so
    they get the allocator settings of :func:`~bpvideo.allocator.own_process`; a cluster
    started by someone else is left as it is.
    """
    from distributed import Client, LocalCluster, WorkerPlugin

    share = _share(workers)

    class _SetUp(WorkerPlugin):  # sent to the workers by value (cloudpickle)
        name = "bpvideo-worker"

        def setup(self, worker: Any) -> None:
            _init_worker(1, share)

    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=None)  # fmt: skip
    try:
        client = Client(cluster)
        # register_plugin since distributed 2023.9.2; register_worker_plugin before it
        register = getattr(client, "register_plugin", None) or client.register_worker_plugin
        register(_SetUp())
    except BaseException:
        cluster.close()
        raise
    return cluster, client


@contextmanager
def dask_executor(scheduler: str | None, workers: int) -> Iterator[Executor]:
    """``Client.get_executor()`` of a Dask cluster.

    Parameters
    ----------
    scheduler : str or None
        Address of a running scheduler (``tcp://host:8786``); ``None`` starts a
        :class:`distributed.LocalCluster` of ``workers`` single-threaded worker processes.
    workers : int
        Workers of the local cluster (ignored with a scheduler).

    Raises
    ------
    InputError
        dask.distributed is not installed, or the scheduler cannot be reached.
    """
    try:
        from distributed import Client
    except ImportError:
        raise InputError(DASK_MISSING) from None
    cluster = None
    try:
        if scheduler is None:
            cluster, client = local_cluster(workers)
        else:
            client = Client(scheduler, timeout="10s")
    except (OSError, TimeoutError, ValueError) as exc:  # ValueError: a bad address
        if cluster is not None:
            cluster.close()
        where = scheduler or "a local cluster"
        raise InputError(
            f"cannot connect to the Dask scheduler {where} ({exc}): check the address and "
            "that the scheduler runs"
        ) from None
    try:
        yield client.get_executor(pure=False)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
