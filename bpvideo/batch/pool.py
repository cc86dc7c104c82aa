"""Local worker processes of a batch that live and die with it.

:class:`WorkerPool` is a :class:`concurrent.futures.Executor` (the batch runner treats it
as it treats a Dask cluster's executor), with what a batch needs of its workers:

- a worker dies with the batch: each one watches the batch process (the sentinel
  :mod:`multiprocessing` hands every child), and when the batch is gone, even killed by
  SIGKILL, it stops its job as SIGTERM would (staged outputs removed, ffmpeg children
  stopped) and exits; a worker that does not within :data:`GRACE` seconds is ended with
  its children;
- :meth:`WorkerPool.stop` ends every worker at once (SIGTERM, then SIGKILL after
  :data:`GRACE` seconds, children included): a batch stops within 2 s of a signal;
- a future is *running* exactly while its job is on a worker, and a worker that dies
  fails only its own job (a new worker takes its place).

Workers start from a fork server where available (a fresh, single-threaded process), so
forking never copies the batch's threads.
"""

from __future__ import annotations

import collections
import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from multiprocessing.connection import Connection, wait
from typing import Any

from bpvideo.errors import Terminated

__all__ = ["GRACE", "WorkerDied", "WorkerPool", "identities", "wait_for"]

#: Seconds a worker has to stop by itself (SIGTERM, or the batch gone) before it is killed.
GRACE = 1.2


class WorkerDied(RuntimeError):
    """The worker process running a job died (killed, out of memory, a crash)."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated(signum)


def _end_children() -> None:
    """Kill this process's children (ffmpeg encoders and decoders of its job)."""
    import psutil

    with contextlib.suppress(psutil.Error):
        for child in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                child.kill()


def _watch_batch() -> None:
    """Thread of a worker: when the batch process is gone, stop as on SIGTERM; if the
    job does not end within :data:`GRACE` seconds, end its children and exit."""
    parent = multiprocessing.parent_process()
    if parent is None:  # pragma: no cover - not started by multiprocessing
        return
    wait([parent.sentinel])
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(GRACE)
    _end_children()
    os._exit(128 + signal.SIGTERM)


def _worker_main(
    conn: Connection, initializer: Callable[..., None] | None, initargs: tuple
) -> None:
    """A worker: run ``(fn, args)`` items from ``conn`` until told to stop (``None``)."""
    # Ctrl-C (and a hang-up, SIGQUIT) reach every process of the terminal's group: the
    # batch stops its workers. Other stop signals sent to a worker stop its job as SIGTERM.
    from bpvideo.sinks.outputs import STOP_SIGNALS

    for signum in STOP_SIGNALS:
        group = signum in (signal.SIGINT, signal.SIGHUP, getattr(signal, "SIGQUIT", -1))
        signal.signal(signum, signal.SIG_IGN if group else _raise_terminated)
    threading.Thread(target=_watch_batch, name="bpvideo-watch-batch", daemon=True).start()
    try:
        if initializer is not None:
            initializer(*initargs)
        while True:
            item = conn.recv()
            if item is None:
                return
            fn, args = item
            try:
                reply: tuple[str, Any] = ("ok", fn(*args))
            except Exception as exc:
                reply = ("error", exc)
            conn.send(reply)
    except (Terminated, EOFError, OSError):
        sys.exit(128 + signal.SIGTERM)


class _Worker:
    def __init__(self, context: Any, initializer: Any, initargs: tuple) -> None:
        self.conn, child = context.Pipe()
        self.process = context.Process(
            target=_worker_main, args=(child, initializer, initargs), daemon=True
        )
        self.process.start()
        child.close()
        self.future: Future | None = None


class WorkerPool(Executor):
    """``workers`` local processes that run submitted calls (see the module docstring).

    Parameters
    ----------
    workers : int
        Processes.
    initializer : callable, optional
        Called in each worker before its first job, with ``initargs``.
    initargs : tuple
        Its arguments.
    """

    def __init__(
        self, workers: int, initializer: Callable[..., None] | None = None, initargs: tuple = ()
    ) -> None:
        method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else None
        self._context = multiprocessing.get_context(method)
        self._init = (initializer, initargs)
        self._queue: collections.deque[tuple[Future, Callable, tuple]] = collections.deque()
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = self._context.Pipe(duplex=False)
        self._closing = False
        self._stopped = False
        self._workers = [_Worker(self._context, *self._init) for _ in range(workers)]
        self._thread = threading.Thread(target=self._dispatch, name="bpvideo-pool", daemon=True)
        self._thread.start()

    @property
    def pids(self) -> list[int]:
        """Process ids of the workers."""
        return [w.process.pid for w in self._workers if w.process.pid is not None]

    def submit(self, fn: Callable, /, *args: Any, **kwargs: Any) -> Future:
        if kwargs:
            raise TypeError("WorkerPool.submit takes positional arguments only")
        future: Future = Future()
        with self._lock:
            if self._closing:
                raise RuntimeError("cannot submit to a pool that is shutting down")
            self._queue.append((future, fn, args))
        self._wake()
        return future

    def _wake(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._wake_w.send(None)

    def _dispatch(self) -> None:
        """Thread: hand queued calls to idle workers, collect results, replace the dead."""
        while True:
            with self._lock:
                if self._stopped:
                    return
                for worker in self._workers:
                    while worker.future is None and self._queue:
                        future, fn, args = self._queue.popleft()
                        if future.set_running_or_notify_cancel():
                            worker.future = future
                            worker.conn.send((fn, args))
                busy = [w for w in self._workers if w.future is not None]
                if self._closing and not busy and not self._queue:
                    return
            ready = wait(
                [self._wake_r]
                + [w.conn for w in busy]
                + [w.process.sentinel for w in self._workers]
            )
            if self._wake_r in ready:
                with contextlib.suppress(EOFError, OSError):
                    while self._wake_r.poll():
                        self._wake_r.recv()
            for worker in list(self._workers):
                self._collect(worker, ready)

    def _collect(self, worker: _Worker, ready: list[Any]) -> None:
        """A result, or the death, of ``worker``."""
        if worker.future is not None and worker.conn in ready:
            try:
                status, value = worker.conn.recv()
            except (EOFError, OSError):
                pass  # it died: its sentinel says so
            else:
                future, worker.future = worker.future, None
                if status == "ok":
                    future.set_result(value)
                else:
                    future.set_exception(value)
                return
        if worker.process.sentinel in ready or not worker.process.is_alive():
            worker.process.join(1)
            if worker.future is not None:
                code = worker.process.exitcode
                worker.future.set_exception(WorkerDied(f"worker process exited with {code}"))
                worker.future = None
            with self._lock:
                self._workers.remove(worker)
                if not self._stopped and not self._closing:
                    self._workers.append(_Worker(self._context, *self._init))

    def stop(self) -> None:
        """End every worker now (SIGTERM, then SIGKILL with its children after
        :data:`GRACE` seconds); cancel what was not started."""
        with self._lock:
            self._stopped = self._closing = True
            for future, _, _ in self._queue:
                future.cancel()
            self._queue.clear()
            workers = list(self._workers)
        self._wake()
        for worker in workers:
            with contextlib.suppress(OSError):
                worker.process.terminate()
        deadline = time.monotonic() + GRACE
        for worker in workers:
            worker.process.join(max(0.0, deadline - time.monotonic()))
        for worker in workers:
            if worker.process.is_alive():
                _kill_tree(worker.process.pid)
            worker.process.join(1)
            worker.conn.close()
        self._thread.join(1)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._closing = True
            if cancel_futures:
                for future, _, _ in self._queue:
                    future.cancel()
                self._queue.clear()
        self._wake()
        if wait:
            self._thread.join()
        for worker in list(self._workers):
            with contextlib.suppress(OSError, ValueError):
                worker.conn.send(None)
        for worker in list(self._workers):
            worker.process.join(5)
            if worker.process.is_alive():
                _kill_tree(worker.process.pid)
            worker.conn.close()
        self._wake_r.close()
        self._wake_w.close()


def _kill_tree(pid: int | None) -> None:
    """SIGKILL a process and its children (ffmpeg of its job)."""
    import psutil

    if pid is None:
        return
    with contextlib.suppress(psutil.Error):
        process = psutil.Process(pid)
        for child in process.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                child.kill()
        process.kill()


def identities(pids: list[int]) -> list[list[float]]:
    """``[pid, create_time]`` of processes (a later ``--resume`` waits for them)."""
    import psutil

    found = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            found.append([pid, psutil.Process(pid).create_time()])
    return found


def wait_for(processes: list[Any], timeout: float = 3 * GRACE) -> None:
    """Wait (a few seconds at most) for processes ``[pid, create_time]`` to end."""
    import psutil

    alive = []
    for item in processes if isinstance(processes, list) else []:
        with contextlib.suppress(psutil.Error, TypeError, ValueError):
            process = psutil.Process(int(item[0]))
            if abs(process.create_time() - float(item[1])) < 0.01:
                alive.append(process)
    psutil.wait_procs(alive, timeout=timeout)
