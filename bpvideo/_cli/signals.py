"""Stop signals of the ``bpvideo`` process: said at once, turned into exceptions so
that cleanup runs, and never lost in a finalizer."""

from __future__ import annotations

import _thread
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from bpvideo.errors import Terminated

__all__ = ["signal_name", "stop_signals_raise"]

logger = logging.getLogger("bpvideo")


def signal_name(signum: int) -> str:
    """`` (SIGHUP)``, or nothing for a number without a name."""
    try:
        return f" ({signal.Signals(signum).name})"
    except ValueError:
        return ""


def _acknowledge(signum: int) -> None:
    """Say at once that a stop signal was received (the process then stops, tidies up
    and says how): ``bpvideo: stopping: received signal 1 (SIGHUP)``, an INFO line.

    Written to file descriptor 2 directly: the handler may run in the middle of a write
    to ``sys.stderr``, and writing to that buffered stream again from here raised
    "reentrant call" (an internal error instead of exit 130/143).
    """
    if logger.isEnabledFor(logging.INFO):
        line = f"bpvideo: stopping: received signal {signum}{signal_name(signum)}\n"
        with contextlib.suppress(OSError, ValueError):
            os.write(2, line.encode())


#: Signals delivered again after their exception was lost in a finalizer: said once.
_redelivered: set[int] = set()


def _raise_terminated(signum: int, frame: object) -> None:
    if signum not in _redelivered:
        _acknowledge(signum)
    _redelivered.discard(signum)
    raise Terminated(signum)


def _raise_interrupt(signum: int, frame: object) -> None:
    if signum not in _redelivered:
        _acknowledge(signum)
    _redelivered.discard(signum)
    raise KeyboardInterrupt


def _redeliver_lost_stop(previous: Callable[[Any], None]) -> Callable[[Any], None]:
    """A :data:`sys.unraisablehook` that does not lose a stop signal.

    A handler's exception raised while a finalizer runs (``Popen.__del__`` at garbage
    collection) cannot leave the finalizer: Python prints "Exception ignored" with a
    traceback and the run goes on. The signal is marked as arrived again instead, by a
    thread that waits until this hook has returned (marked from here, the handler would
    run inside the hook and be lost the same way), so that it is raised in ordinary code;
    anything else goes to the previous hook.
    """

    def hook(unraisable: Any) -> None:
        error = unraisable.exc_value
        if not isinstance(error, Terminated | KeyboardInterrupt):
            previous(unraisable)
            return
        signum = error.signum if isinstance(error, Terminated) else signal.SIGINT
        _redelivered.add(signum)
        returned = threading.Lock()
        returned.acquire()

        def mark_again() -> None:
            with returned:
                _thread.interrupt_main(signum)

        threading.Thread(target=mark_again, name="bpvideo-signal", daemon=True).start()
        returned.release()  # the last call: no Python line of this hook runs after it

    return hook


@contextmanager
def stop_signals_raise(process_exit: bool = False) -> Iterator[None]:
    """Turn SIGTERM into :class:`~bpvideo.errors.Terminated` while the command runs.

    Python's default for SIGTERM is to die at once, skipping ``finally`` blocks: staged
    outputs and ffmpeg children would be left behind. Only the main thread can set signal
    handlers; elsewhere (``main`` called from a worker thread) nothing changes.

    With ``process_exit`` (the ``bpvideo`` process itself, not an in-process call), once
    the command is over SIGINT and SIGTERM get their default action back: a signal that
    arrives while the process exits ends it quietly instead of raising in the
    interpreter's shutdown (a traceback after the work is done).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    from bpvideo.sinks.outputs import STOP_SIGNALS

    previous = {}
    for signum in STOP_SIGNALS:
        handler = signal.getsignal(signum)
        # SIGINT stays a KeyboardInterrupt; an ignored signal stays ignored (nohup)
        if signum == signal.SIGINT and handler is signal.default_int_handler:
            previous[signum] = signal.signal(signum, _raise_interrupt)
        elif signum != signal.SIGINT and handler is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, _raise_terminated)
    unraisable = sys.unraisablehook
    sys.unraisablehook = _redeliver_lost_stop(unraisable)
    try:
        yield
    finally:
        sys.unraisablehook = unraisable
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if process_exit else handler)
        if process_exit:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
