"""What the user of the command line sees besides data: logging and progress on stderr
(stdout carries only data: paths or JSON), errors as one line, exit codes, signals.

Errors are one line on stderr (``bpvideo: error: ...``), with options spelled as flags
(``--rank 0 must be >= 1``), exit code 2 for usage errors and 1 for failed work;
``--debug`` (or ``BPVIDEO_DEBUG=1``) shows the traceback.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click

from bpvideo.errors import BpvideoError, Terminated
from bpvideo.settings import cli_flags
from bpvideo.solvers import Iterate

__all__ = ["configure_logging", "error_line", "iteration_reporter", "main", "one_line"]

logger = logging.getLogger("bpvideo")


#: Control characters (a newline in a file name, say) as a message shows them.
_CONTROL = {c: f"\\x{c:02x}" for c in (*range(32), 127)} | {10: "\\n", 13: "\\r", 9: "\\t"}


def one_line(text: str) -> str:
    """``text`` with its control characters escaped: a message stays one line whatever
    the file names in it hold."""
    return text.translate(_CONTROL)


class _Formatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        level = "" if record.levelno == logging.INFO else f"{record.levelname.lower()}: "
        if record.levelno == logging.DEBUG:
            level = ""
        message = record.getMessage()
        if record.levelno != logging.DEBUG:  # the iteration table is ours, and multi-line
            message = one_line(message)
        return f"bpvideo: {level}{message}"


def configure_logging(verbosity: int) -> None:
    """Send the ``bpvideo`` logger to stderr.

    Parameters
    ----------
    verbosity : int
        -1 = errors only (``-q``), 0 = info, 1 = debug with the iteration table (``-v``).
    """
    level = {-1: logging.ERROR, 0: logging.INFO}.get(verbosity, logging.DEBUG)
    for handler in list(logger.handlers):
        if getattr(handler, "_bpvideo", False):
            logger.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter())
    handler._bpvideo = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False


def iteration_reporter(
    max_iter: int, verbosity: int
) -> tuple[Callable[[Iterate], None], Callable[[], None]]:
    """A solver callback that reports progress on stderr, and a function to close it.

    With ``verbosity >= 1`` it logs one row per iteration (the iteration table); with
    ``verbosity == 0`` and stderr a terminal it shows a progress bar (tqdm); otherwise it
    is silent.

    Returns
    -------
    (callback, close)
    """
    if verbosity >= 1:
        pending_header = [True]  # printed at the first iteration: not before a bad-input error

        def table(it: Iterate) -> None:
            if pending_header:
                pending_header.clear()
                logger.debug("%6s  %12s  %12s", "iter", "residual", "change")
            logger.debug("%6d  %12.4e  %12.4e", it.iteration, it.residual, it.change)

        return table, lambda: None
    if verbosity == 0 and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=max_iter, desc="solving", unit="it", file=sys.stderr, leave=False)

        def advance(it: Iterate) -> None:
            bar.update(1)
            bar.set_postfix(change=f"{it.change:.1e}", refresh=False)

        return advance, bar.close
    return (lambda it: None), (lambda: None)


def error_line(error: BpvideoError) -> str:
    """``bpvideo: error: ...``: the error's message with its options spelled as flags."""
    return f"bpvideo: error: {one_line(error.render(cli_flags()))}"


def _debug_requested(argv: list[str]) -> bool:
    return "--debug" in argv or os.environ.get("BPVIDEO_DEBUG", "") not in ("", "0")


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated(signum)


@contextmanager
def _sigterm_raises(process_exit: bool = False) -> Iterator[None]:
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
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        if process_exit:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
        else:
            signal.signal(signal.SIGTERM, previous)


def _committed() -> list:
    outputs = sys.modules.get("bpvideo.io.outputs")  # not loaded: nothing was written
    return list(outputs.COMMITTED) if outputs is not None else []


def _interrupted(what: str, before: int) -> str:
    complete = _committed()[before:]
    if complete:
        return (
            f"bpvideo: {what} after the result in {complete[-1]} was complete (summary.json "
            "written)"
        )
    return (
        f"bpvideo: {what}: no output was kept (outputs appear only when complete); "
        "run the command again"
    )


#: Standard streams (0, 1, 2) that were closed when the process started (``2>&-``).
CLOSED_STREAMS: set[int] = set()


def _open_closed_streams() -> None:
    """Open ``/dev/null`` on standard file descriptors that were closed at start.

    Otherwise the first file bpvideo opens would get fd 2 (or 1), and log lines would be
    written into an output; and Python leaves ``sys.stderr`` as None, on which every log
    line fails. Records the closed ones in :data:`CLOSED_STREAMS` (a command that needs
    stdin or stdout refuses to run without it).
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            CLOSED_STREAMS.add(fd)
    for fd in sorted(CLOSED_STREAMS):
        new = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
        if new != fd:
            os.dup2(new, fd)
            os.close(new)
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``bpvideo`` console script; returns the exit code.

    Exit codes: 0 done, 1 failed work, 2 usage error, 130 interrupted (SIGINT, Ctrl-C),
    143 terminated (SIGTERM). Interrupted runs remove their staged outputs first.
    """
    from bpvideo._cli import cli

    _open_closed_streams()
    args = list(sys.argv[1:] if argv is None else argv)
    debug = _debug_requested(args)
    before = len(_committed())
    try:
        with _sigterm_raises(process_exit=argv is None):
            result = cli.main(args=args, prog_name="bpvideo", standalone_mode=False)
    except Terminated as exc:
        click.echo(_interrupted(f"terminated by signal {exc.signum}", before), err=True)
        return 128 + exc.signum
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        hint = ""
        if isinstance(exc, click.UsageError) and exc.ctx is not None:
            hint = f" (see '{exc.ctx.command_path} --help')"
        click.echo(f"bpvideo: error: {one_line(exc.format_message())}{hint}", err=True)
        return exc.exit_code
    except (KeyboardInterrupt, click.exceptions.Abort):
        click.echo(_interrupted("interrupted", before), err=True)
        return 130
    except BpvideoError as exc:
        if debug:
            raise
        click.echo(error_line(exc), err=True)
        return exc.exit_code
    except BrokenPipeError:
        # The reader of stdout went away (``... | head``): end quietly. Point stdout at
        # /dev/null so that the interpreter's final flush cannot complain.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 1

    except Exception as exc:
        if debug:
            raise
        click.echo(
            f"bpvideo: internal error: {type(exc).__name__}: {one_line(str(exc))} (rerun with "
            "--debug for the traceback and report it)",
            err=True,
        )
        return 1
    return result if isinstance(result, int) else 0
