"""Batch runs: many ``separate`` jobs from a YAML config, on local processes or Dask.

The config is loaded and checked by :mod:`bpvideo.batch.config`; this module runs its jobs.
Both executors go through one code path, :func:`execute`, which needs only a
``concurrent.futures``-style executor: a :class:`~concurrent.futures.ProcessPoolExecutor`
(``--workers N``, one BLAS thread per worker), or a Dask cluster's
``Client.get_executor()`` (``--executor dask``). Every job runs :func:`run_job`, which
calls :func:`bpvideo.separate_file` and never raises: a failing job is a result with
``status: failed`` and the one-line error, and the others go on.

The report (``batch_report.json``, next to the config unless ``--report``/``report:``
says otherwise) is rewritten atomically after every finished job, so an interrupted
batch leaves a report saying which jobs finished.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bpvideo.batch.config import BatchConfig, Job, load_config
from bpvideo.batch.report import BatchReport, Progress, format_table
from bpvideo.errors import BpvideoError, InputError

__all__ = [
    "BatchOptions",
    "completed",
    "execute",
    "run_batch",
    "run_job",
]

logger = logging.getLogger("bpvideo")

REPORT_NAME = "batch_report.json"
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


def default_workers() -> int:
    """Cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


# --------------------------------------------------------------------------------------
# One job
# --------------------------------------------------------------------------------------


def run_job(job: Job, blas_threads: int | None = 1) -> dict[str, Any]:
    """Run one job; return its result (never raises for a failed job).

    Parameters
    ----------
    job : Job
        The job.
    blas_threads : int or None, default 1
        Cap on BLAS threads while the job runs (``None``: leave as is). Parallelism comes
        from running several jobs at once, so one thread per job keeps the cores busy
        without oversubscribing them.

    Returns
    -------
    dict
        ``status`` ("ok" or "failed"), ``seconds``, ``cpu_seconds``, ``frames``, ``error``
        (one line or None), ``iterations``, ``converged``.
    """
    from threadpoolctl import threadpool_limits

    from bpvideo.api import separate_file

    t0, cpu0 = time.perf_counter(), time.process_time()
    result: dict[str, Any] = {"status": "failed", "frames": None, "error": None}
    if blas_threads is not None:
        import cv2

        cv2.setNumThreads(blas_threads)  # OpenCV's own pool (resize, morphology)
    try:
        with threadpool_limits(limits=blas_threads):
            summary = separate_file(job.input, job.output, **job.settings)
        result.update(
            status="ok",
            frames=summary["frames"],
            iterations=summary["solver"]["iterations"],
            converged=summary["solver"]["converged"],
        )
    except BpvideoError as exc:
        result["error"] = exc.message
    except MemoryError:
        result["error"] = f"{job.input}: out of memory: use --scale, --frames or fewer --workers"
    except Exception as exc:  # a bug must not take the other jobs down
        result["error"] = f"internal error: {type(exc).__name__}: {exc}"
    result["seconds"] = round(time.perf_counter() - t0, 3)
    # CPU time of the worker process during the job (this process's, ffmpeg children
    # aside; with several jobs in one process, as on threaded Dask workers, it mixes them).
    result["cpu_seconds"] = round(time.process_time() - cpu0, 3)
    return result


def _init_worker(blas_threads: int) -> None:
    """Initializer of local worker processes: cap BLAS/OpenMP threads, quiet logging."""
    for name in THREAD_ENV:
        os.environ[name] = str(blas_threads)
    from threadpoolctl import threadpool_limits

    import bpvideo.api  # noqa: F401  (load numpy/scipy/cv2 so their pools are capped)

    threadpool_limits(limits=blas_threads)
    logging.getLogger("bpvideo").setLevel(logging.ERROR)


def completed(job: Job) -> bool:
    """Whether ``job.output`` holds a complete result of this very job (for ``--resume``).

    Complete means: ``summary.json`` is there (it is written last), its input is the
    job's input and its ``settings`` equal the job's (``overwrite`` aside, which does not
    change the result; options that a result of an older version does not record count
    at their defaults).
    """
    import json

    summary_path = Path(job.output) / "summary.json"
    try:
        summary = json.loads(summary_path.read_text())
        recorded = dict(summary["settings"])
        same_input = Path(summary["input"]).resolve() == Path(job.input).resolve()
    except (OSError, ValueError, KeyError, TypeError):
        return False
    from bpvideo.settings import option_specs

    recorded = {name: value for name, value, _ in option_specs()} | recorded  # added options
    wanted = dict(job.settings)
    recorded.pop("overwrite", None)
    wanted.pop("overwrite", None)
    return same_input and recorded == wanted


# --------------------------------------------------------------------------------------
# Executors
# --------------------------------------------------------------------------------------


@contextmanager
def local_executor(workers: int, blas_threads: int = 1) -> Iterator[Executor]:
    """A process pool of ``workers`` processes with ``blas_threads`` BLAS threads each.

    Workers start from a fork server where available (a fresh, single-threaded
    process), so forking never copies the parent's threads.
    """
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else None
    context = multiprocessing.get_context(method)
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=_init_worker,
        initargs=(blas_threads,),
    )
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


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
        from distributed import Client, LocalCluster
    except ImportError:
        raise InputError(DASK_MISSING) from None
    cluster = None
    try:
        if scheduler is None:
            cluster = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
            )
            client = Client(cluster)
        else:
            client = Client(scheduler, timeout="10s")
    except (OSError, TimeoutError) as exc:
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


def execute(
    jobs: list[Job],
    executor: Executor,
    on_result: Callable[[Job, dict[str, Any]], None],
    *,
    blas_threads: int | None = 1,
) -> None:
    """Submit every job to ``executor``; call ``on_result`` as each one finishes.

    A job whose worker died (killed, out of memory) is reported as failed, like a job
    that raised; the others go on.
    """
    futures: dict[Future, Job] = {executor.submit(run_job, job, blas_threads): job for job in jobs}
    for future in as_completed(futures):
        job = futures[future]
        try:
            result = future.result()
        except Exception as exc:  # the worker died: BrokenProcessPool, KilledWorker...
            result = {
                "status": "failed",
                "frames": None,
                "seconds": None,
                "error": f"worker failed: {type(exc).__name__}: {exc}".strip(),
            }
        on_result(job, result)


# --------------------------------------------------------------------------------------
# The batch
# --------------------------------------------------------------------------------------


@dataclass
class BatchOptions:
    """Options of ``bpvideo batch`` (``None``: from the config, then the default)."""

    workers: int | None = None
    executor: str | None = None
    scheduler: str | None = None
    report: str | None = None
    resume: bool = False
    dry_run: bool = False
    progress: bool = True


def report_path(config: BatchConfig, options: BatchOptions) -> Path:
    """``--report``, else ``report:`` of the config, else ``batch_report.json`` beside it."""
    if options.report is not None:
        return Path(options.report)
    if config.report is not None:
        return config.report
    return config.path.resolve().parent / REPORT_NAME


def run_batch(
    config_path: str | os.PathLike,
    options: BatchOptions,
    *,
    stdout: Callable[[str], None] = print,
) -> int:
    """Validate a config, run its jobs, write the report; return the exit code.

    Parameters
    ----------
    config_path : path-like
        The YAML config.
    options : BatchOptions
        Command-line options (they win over the config's ``executor:``, ``workers:``...).
    stdout : callable
        Receives the lines of ``--dry-run`` (one per job that would run).

    Returns
    -------
    int
        0 when every job succeeded (or was complete already), 1 otherwise.

    Raises
    ------
    InputError
        Invalid config (:class:`~bpvideo.batch.config.ConfigError`), bad options, Dask
        missing.
    """
    config = load_config(config_path)
    executor_name, scheduler, workers = _executor(config, options)
    report = BatchReport(config, report_path(config, options))
    todo: list[Job] = []
    for job, entry in zip(config.jobs, report.entries, strict=True):
        if options.resume and completed(job):
            entry["status"] = "skipped"
        else:
            todo.append(job)
    skipped = len(config.jobs) - len(todo)
    if options.dry_run:
        for job in todo:
            stdout(f"{job.input}\t{job.output}")
        if options.progress:
            logger.info("dry run: %d job(s) would run, %d complete already (nothing was run)",
                        len(todo), skipped)  # fmt: skip
        return 0
    if executor_name == "dask":
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise InputError(DASK_MISSING) from None
    report.check()
    report.state.update(executor=executor_name, scheduler=scheduler,
                        workers=workers if executor_name == "local" or scheduler is None
                        else None)  # fmt: skip
    if options.progress:
        if skipped:
            logger.info("resume: %d of %d job(s) complete already, skipped", skipped,
                        len(config.jobs))  # fmt: skip
        where = f"Dask ({scheduler or f'local cluster, {workers} workers'})"
        if executor_name == "local":
            where = f"{min(workers, max(len(todo), 1))} local worker process(es)"
        logger.info("running %d job(s) on %s", len(todo), where)
    report.save()
    progress = Progress(total=len(todo), enabled=options.progress)
    try:
        if todo:
            pool = (
                local_executor(min(workers, len(todo)))
                if executor_name == "local"
                else dask_executor(scheduler, workers)
            )
            with pool as executor:
                execute(todo, executor, lambda job, result: report.finished(job, result, progress))
    finally:
        progress.close()
        report.save()
    if options.progress:
        print(format_table(report.entries), file=sys.stderr, flush=True)
        logger.info("report: %s", report.path)
    failed = sum(1 for e in report.entries if e["status"] not in ("ok", "skipped"))
    return 1 if failed else 0


def _executor(config: BatchConfig, options: BatchOptions) -> tuple[str, str | None, int]:
    """Where the jobs run: the executor's name, the Dask scheduler, the workers."""
    executor_name = options.executor or config.executor or "local"
    scheduler = options.scheduler or config.scheduler
    if scheduler is not None and executor_name != "dask":
        if options.executor == "local":
            raise InputError(
                "--scheduler needs --executor dask: drop --scheduler or use --executor dask"
            )
        executor_name = "dask"
    workers = options.workers or config.workers or default_workers()
    if workers < 1:
        raise InputError(f"--workers must be >= 1, got {workers}")
    return executor_name, scheduler, workers
