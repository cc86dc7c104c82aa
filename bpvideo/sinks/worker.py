"""A thread that does queued work in order (:class:`Worker`): the writers' feeding threads.

The encoders' pipes and the mask files are written from such threads, so that the main
thread forms the next frames meanwhile (pipe writes, PNG encoding and file writes release
the interpreter lock).
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["Worker"]

_END = object()


class Worker:
    """A daemon thread that runs ``work(item)`` on queued items, in order.

    The first error is kept and handed to the caller: :meth:`put` raises it, and
    :meth:`finish` returns it; items queued after it are dropped.

    Parameters
    ----------
    work : callable
        Called with each item, in the thread.
    maxsize : int
        Items queued at most (:meth:`put` waits while the queue is full).
    name : str
        The thread's name.
    last : callable, optional
        Called in the thread after the last item (see :meth:`end`), even after an error:
        an encoder's input is closed there, so that it finishes its file while the
        caller goes on.
    """

    def __init__(
        self,
        work: Callable[[Any], None],
        maxsize: int,
        name: str,
        last: Callable[[], None] | None = None,
    ) -> None:
        self._work = work
        self._last = last
        self._queue: queue.Queue = queue.Queue(maxsize=max(1, maxsize))
        self._ended = False
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _END:
                break
            if self.error is None:
                try:
                    self._work(item)
                except BaseException as exc:  # handed to the caller
                    self.error = exc
        if self._last is not None:
            try:
                self._last()
            except BaseException as exc:  # handed to the caller
                self.error = self.error or exc

    def put(self, item: Any) -> None:
        """Queue ``item`` (waits while the queue is full); raises the thread's error."""
        while True:
            if self.error is not None:
                raise self.error
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                if not self._thread.is_alive():  # pragma: no cover - cannot happen
                    self.error = RuntimeError(f"{self._thread.name} stopped")

    def end(self) -> None:
        """No more items: the thread finishes the queued ones, then runs ``last``, without
        the caller waiting for it (waits only while the queue is full)."""
        if self._ended:
            return
        self._ended = True
        with contextlib.suppress(BaseException):
            self._queue.put(_END)

    def finish(self) -> BaseException | None:
        """:meth:`end`, then wait until every item is done; return the error, if any."""
        self.end()
        self._thread.join()
        return self.error

    def stop(self) -> None:
        """Drop the queued items and wait for the thread to end (its current item ends
        first: stop what it waits on, such as a child process, before)."""
        self.error = self.error or RuntimeError("stopped")
        self._ended = True
        while self._thread.is_alive():
            with contextlib.suppress(queue.Empty):
                self._queue.get_nowait()
            with contextlib.suppress(queue.Full):
                self._queue.put_nowait(_END)
            self._thread.join(0.05)
