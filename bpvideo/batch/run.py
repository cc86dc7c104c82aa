"""Batch runs: many ``separate`` jobs from a YAML config, on local processes or Dask.

The config is loaded and checked by :mod:`bpvideo.batch.config`; this module runs its jobs.
Both executors go through one code path, :func:`execute`, which needs only a
``concurrent.futures``-style executor: a :class:`~bpvideo.batch.pool.WorkerPool`
(``--workers N``, one BLAS thread per worker; workers that die with the batch), or a Dask
cluster's ``Client.get_executor()`` (``--executor dask``). Every job runs :func:`run_job`,
which calls :func:`bpvideo.separate_file` and never raises: a failing job is a result with
``status: failed`` and the one-line error, and the others go on.

The report (``night.report.json`` beside ``night.yaml`` unless ``--report``/``report:``
says otherwise) is rewritten atomically whenever a job starts or finishes, so that it is
true at every moment; SIGTERM or SIGINT stop the batch within 2 s, with the report saying
which jobs finished, which were interrupted and which never started.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bpvideo import cores
from bpvideo.batch.checks import is_scheduler
from bpvideo.batch.config import BatchConfig, Job, load_config
from bpvideo.batch.executors import DASK_MISSING, dask_executor, local_executor
from bpvideo.batch.pool import identities, wait_for
from bpvideo.batch.report import BatchReport, Progress, events_path, format_table, read_report
from bpvideo.errors import BpvideoError, InputError, Terminated, literal, shown
from bpvideo.limits import MAX_WORKERS, REPORT_SUFFIX
from bpvideo.sinks.guard import Access, check_access, logfile_access, separate_access
from bpvideo.sinks.outputs import remove_killed, remove_stale_staging, signals_deferred

__all__ = [
    "BatchOptions",
    "completed",
    "execute",
    "run_batch",
    "run_job",
]

logger = logging.getLogger("bpvideo")

#: Options a job's error names as ``bpvideo batch`` takes them (the others as config keys).
BATCH_FLAGS = {"overwrite": "--overwrite"}


def default_workers() -> int:
    """Cores this process may use (its affinity and cgroup quota: :mod:`bpvideo.cores`)."""
    return cores.available_cores()


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
        without oversubscribing them. In a process whose share of the cores no local pool
        set (a Dask worker), it is also the job's ``--threads auto``: a Dask worker of
        ``--nthreads 1`` runs beside others on the same machine, which it cannot see.

    Returns
    -------
    dict
        ``status`` ("ok" or "failed"), ``seconds``, ``cpu_seconds``, ``frames``, ``error``
        (one line or None), ``iterations``, ``converged``.
    """
    from threadpoolctl import threadpool_limits

    from bpvideo.job import separate_file

    t0, cpu0 = time.perf_counter(), time.process_time()
    result: dict[str, Any] = {"status": "failed", "frames": None, "error": None}
    shared = cores.limited() is None  # a Dask worker: its jobs run side by side
    if shared:
        cores.limit(blas_threads or 1)
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
            events=summary.events,
        )
    except BpvideoError as exc:
        result["error"] = exc.render(BATCH_FLAGS)
    except MemoryError:
        result["error"] = f"{job.input}: out of memory: use --scale, --frames or fewer --workers"
    except Exception as exc:  # a bug must not take the other jobs down
        result["error"] = f"internal error: {type(exc).__name__}: {exc}"
    finally:
        if shared:
            cores.limit(None)
    result["seconds"] = round(time.perf_counter() - t0, 3)
    # CPU time of the worker process during the job (this process's, ffmpeg children
    # aside; with several jobs in one process, as on threaded Dask workers, it mixes them).
    result["cpu_seconds"] = round(time.process_time() - cpu0, 3)
    return result


def completed(job: Job) -> bool:
    """Whether ``job.output`` holds a complete result of this very job (for ``--resume``).

    Complete means: ``summary.json`` is there (it is written last), not ``incomplete``
    (the finished windows of a stopped run), its input is the job's input, not modified
    since the summary was written (a new recording under the same name is no result of
    it), and its ``settings`` equal the job's (``overwrite`` aside, which does not
    change the result; options that a result of an older version does not record count
    at their defaults).
    """
    import json

    summary_path = Path(job.output) / "summary.json"
    try:
        summary = json.loads(summary_path.read_text())
        if summary.get("incomplete"):
            return False
        recorded = dict(summary["settings"])
        same_input = os.path.realpath(summary["input"]) == os.path.realpath(job.input)
        if os.stat(job.input).st_mtime_ns > summary_path.stat().st_mtime_ns:
            logger.warning("%s: changed since its result in %s was made: the job runs again",
                           job.input, job.output)  # fmt: skip
            return False
    except (OSError, ValueError, KeyError, TypeError):
        return False
    from bpvideo.settings import option_specs

    recorded = {name: value for name, value, _ in option_specs()} | recorded  # added options
    wanted = dict(job.settings)
    for free in ("overwrite", "resume"):  # they do not change the result
        recorded.pop(free, None), wanted.pop(free, None)
    as_json = lambda d: json.loads(json.dumps(d))  # noqa: E731 - tuples are lists there
    return same_input and as_json(recorded) == as_json(wanted)


#: Seconds between looks at which jobs a worker has taken (for the report).
POLL_SECONDS = 0.2


def execute(
    jobs: list[Job],
    executor: Executor,
    on_result: Callable[[Job, dict[str, Any]], None],
    *,
    blas_threads: int | None = 1,
    on_start: Callable[[list[Job]], None] | None = None,
) -> None:
    """Submit every job to ``executor``; call ``on_result`` as each one finishes.

    ``on_start`` is told of the jobs a worker has taken (within :data:`POLL_SECONDS`; and
    at once when a signal stops the loop, before the workers are stopped). A job whose
    worker died (killed, out of memory) is reported as failed, like a job that raised; the
    others go on.
    """
    futures: dict[Future, Job] = {executor.submit(run_job, job, blas_threads): job for job in jobs}
    pending, started = set(futures), set()

    def look() -> None:
        new = [f for f in pending if f not in started and f.running()]
        if new and on_start is not None:
            started.update(new)
            on_start([futures[f] for f in new])

    try:
        while pending:
            look()
            done, pending = wait(pending, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
            for future in done:
                on_result(futures[future], _result(future))
    except BaseException:
        look()  # the jobs that ran when the batch was stopped
        raise


def _result(future: Future) -> dict[str, Any]:
    """The result of a finished job's future (a failed one if its worker died)."""
    try:
        return future.result()
    except Exception as exc:  # the worker died: WorkerDied, KilledWorker...
        return {
            "status": "failed",
            "frames": None,
            "seconds": None,
            "error": f"worker failed: {type(exc).__name__}: {exc}".strip(),
        }


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
    overwrite: bool = False  #: every job replaces an earlier run's results
    dry_run: bool = False
    progress: bool = True
    #: ``--logfile``: checked by the guard like the report, then ``checked`` is called
    logfile: str | None = None
    checked: Callable[[], None] | None = None


def report_path(config: BatchConfig, options: BatchOptions) -> Path:
    """``--report``, else ``report:`` of the config, else the config's name with
    :data:`~bpvideo.settings.REPORT_SUFFIX` beside it (``night.yaml``:
    ``night.report.json``), so that two configs in one folder have two reports."""
    if options.report is not None:
        return Path(options.report)
    if config.report is not None:
        return config.report
    path = config.path.resolve()
    return path.parent / f"{path.stem}{REPORT_SUFFIX}"


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
    for job in config.jobs if options.overwrite else ():  # as 'overwrite: true' in each
        job.settings["overwrite"] = True
    executor_name, scheduler, workers = _executor(config, options)
    path = report_path(config, options)
    fix = (
        "--report"
        if options.report is not None or config.report is None
        else "'report:' (or --report)"
    )
    check_access(
        [Access(config.path, "the config"), *job_accesses(config, reads=True)],
        [Access(path, "the report", fix), Access(events_path(path), "the events table", fix),
         *logfile_access(options.logfile), *job_accesses(config, reads=False)],
    )  # fmt: skip
    if options.checked is not None:  # the paths are checked: the log file may be opened
        options.checked()
    report = BatchReport(config, path)
    todo = _todo(config, report, options)
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
    report.state.update(executor=executor_name, scheduler=scheduler,
                        workers=workers if executor_name == "local" or scheduler is None
                        else None)  # fmt: skip
    report.save()  # before any job or line: a report that cannot be written is refused now
    if options.progress:
        if skipped:
            logger.info("resume: %d of %d job(s) complete already", skipped,
                        len(config.jobs))  # fmt: skip
        used = min(workers, max(len(todo), 1))  # never more workers than jobs
        where = (f"{used} local worker process(es)" if executor_name == "local"
                 else f"Dask ({scheduler or f'local cluster, {used} workers'})")  # fmt: skip
        logger.info("running %d job(s) on %s", len(todo), where)
    code = _run(todo, report, options, executor_name, scheduler, workers)
    if options.progress:
        print(format_table(report.entries), file=sys.stderr, flush=True)
        logger.info("report: %s", report.path)
    if code:
        return code
    failed = sum(1 for e in report.entries if e["status"] not in ("ok", "skipped"))
    return 1 if failed else 0


def job_accesses(config: BatchConfig, *, reads: bool) -> list[Access]:
    """What the jobs read (or write), each named by its entry and line of the config, so
    that a clash says which ``output:`` (or ``masks-to:``) to change (batch has no -o)."""
    found = []
    for job in config.jobs:
        job_reads, job_writes = separate_access(job.input, job.output, job.make_settings())
        where = literal(f"jobs[{job.entry}] ({config.path.name}:{job.line})")
        for access in job_reads if reads else job_writes:
            key = "masks-to" if access.option and access.option[0] == "masks_to" else "output"
            what = literal(access.what) if reads else f"the {key} of {where}"
            fix = "" if reads else f"'{key}:' of {where}"
            found.append(dataclasses.replace(access, what=f"{what} of {where}" if reads else what,
                                             fix=fix, option=None))  # fmt: skip
    return found


def _todo(config: BatchConfig, report: BatchReport, options: BatchOptions) -> list[Job]:
    """The jobs to run; with ``--resume``, those complete already keep their earlier
    entry in the report (status, seconds...), and earlier workers still ending are
    waited for (they were told to stop when their batch died)."""
    from bpvideo.resume import stopped

    earlier = read_report(report.path) if options.resume else {}
    wait_for(earlier.get("worker_processes", []))
    todo = []
    for job in config.jobs:
        if options.resume and completed(job):
            report.kept(job, earlier.get("by_job", {}).get((job.input, job.output)))
        elif options.resume and stopped(job.input, job.output, job.settings):  # from its windows
            todo.append(dataclasses.replace(job, settings={**job.settings, "resume": True}))
        else:
            todo.append(job)
    return todo


def _remove_interrupted(todo: list[Job], report: BatchReport, existing: set[str]) -> None:
    """Remove what the local workers ended after :data:`~bpvideo.batch.pool.GRACE`
    (killed before they could tidy up) left of their jobs: staging folders, the lock,
    and an output folder the job created (one that existed before the batch stays)."""
    killed = [int(item[0]) for item in report.state.get("worker_processes", [])]
    for job in todo:
        if report.entries[job.index]["status"] != "interrupted":
            continue
        folder = Path(job.output)
        if job.output in existing:
            remove_stale_staging(folder, killed=killed)
        else:
            remove_killed(folder, killed=killed)


def _kept_frames(todo: list[Job]) -> Callable[[int], int]:
    """The frames the checkpoint of a stopped job keeps, by the job's index (0: none)."""
    from bpvideo.resume import stopped

    jobs = {job.index: job for job in todo}
    return lambda index: stopped(jobs[index].input, jobs[index].output, jobs[index].settings)


def _stopped_line(report: BatchReport) -> str:
    """What a stopped batch did and kept, and how to go on (the end of its last line)."""
    counts = report.state["counts"]
    done = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    kept = sum(1 for e in report.entries if e.get("kept_frames"))
    if kept == 0:
        what = "nothing of an interrupted job was kept"
    else:
        what = (f"the finished windows of {kept} interrupted job{'s' if kept > 1 else ''} "
                "were kept")  # fmt: skip
    return (f"{done} ({what}): the report {report.path} says which; run again with --resume "
            "for the rest")  # fmt: skip


def _run(
    todo: list[Job],
    report: BatchReport,
    options: BatchOptions,
    executor_name: str,
    scheduler: str | None,
    workers: int,
) -> int:
    """Run the jobs; 0, or ``128 + signal`` when SIGTERM or SIGINT stopped the batch."""
    progress = Progress(total=len(todo), enabled=options.progress)
    existing = {job.output for job in todo if os.path.lexists(job.output)}
    try:
        if todo:
            pool = (
                local_executor(min(workers, len(todo)))
                if executor_name == "local"
                else dask_executor(scheduler, min(workers, len(todo)))  # no idle cluster
            )
            with pool as executor:
                report.state["worker_processes"] = identities(getattr(executor, "pids", []))
                execute(todo, executor, lambda job, result: report.finished(job, result, progress),
                        on_start=report.running)  # fmt: skip
    except InputError:  # the workers never started (a scheduler out of reach): no job ran
        report.discard()
        raise
    except (Terminated, KeyboardInterrupt) as exc:
        signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
        progress.close()
        with signals_deferred():
            report.interrupted(signum, _kept_frames(todo))
            _remove_interrupted(todo, report, existing)  # staging and locks: never a checkpoint
        print(f"bpvideo: {'interrupted' if signum == signal.SIGINT else 'terminated'} by signal "
              f"{signum}: {_stopped_line(report)}", file=sys.stderr, flush=True)  # fmt: skip
        return 128 + signum
    finally:
        progress.close()
    report.save()
    return 0


def _executor(config: BatchConfig, options: BatchOptions) -> tuple[str, str | None, int]:
    """Where the jobs run: the executor's name, the Dask scheduler, the workers."""
    executor_name = options.executor or config.executor or "local"
    scheduler = options.scheduler or config.scheduler
    if options.scheduler is not None and not is_scheduler(options.scheduler):
        raise InputError(f"--scheduler {literal(shown(options.scheduler))} must be an address "
                         "such as tcp://host:8786: give the scheduler's host and port")  # fmt: skip
    if scheduler is not None and executor_name != "dask":
        if options.executor == "local":
            raise InputError(
                "--scheduler needs --executor dask: drop --scheduler or use --executor dask"
            )
        executor_name = "dask"
    workers = options.workers or config.workers or default_workers()
    if not 1 <= workers <= MAX_WORKERS:
        raise InputError(f"--workers must be from 1 to {MAX_WORKERS} (each worker is a process), "
                         f"got {workers}: give fewer")  # fmt: skip
    return executor_name, scheduler, workers
