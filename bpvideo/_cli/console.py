"""What the user of the command line sees besides data: logging and progress on stderr
(stdout carries only data: paths or JSON), errors as one line, exit codes, signals.

Errors are one line on stderr (``bpvideo: error: ...``), with options spelled as flags
(``--rank 0 must be >= 1``), exit code 2 for usage errors and 1 for failed work;
``--debug`` (or ``BPVIDEO_DEBUG=1``) shows the traceback.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import click

from bpvideo._cli.signals import signal_name, stop_signals_raise
from bpvideo.allocator import own_process
from bpvideo.errors import BpvideoError, InputError, Terminated
from bpvideo.failures import check_open_files, resource_failure
from bpvideo.progress import Progress
from bpvideo.settings import cli_flags
from bpvideo.solvers import Iterate

__all__ = [
    "ProgressBar",
    "configure_logging",
    "error_line",
    "iteration_table",
    "one_line",
    "progress_bar",
    "run",
]

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


class _ConsoleHandler(logging.StreamHandler):
    """stderr, through tqdm when it is loaded: a record clears the progress bars, is
    written on its own line, and the bars are drawn again below it (lines never glue)."""

    def emit(self, record: logging.LogRecord) -> None:
        tqdm_module = sys.modules.get("tqdm.std")  # not loaded: no bar can be on screen
        if tqdm_module is None:
            super().emit(record)
            return
        try:
            tqdm_module.tqdm.write(self.format(record), file=self.stream)
        except Exception:  # as StreamHandler: a broken stderr does not stop the work
            self.handleError(record)


class _LogFileHandler(logging.FileHandler):
    """``--logfile``: a file that fails (a full disk) is said once, on stderr, in one
    line, and dropped; the run and its log on stderr go on (no traceback per record)."""

    def handleError(self, record: logging.LogRecord) -> None:
        error = sys.exc_info()[1]
        why = getattr(error, "strerror", None) or str(error)
        logger.removeHandler(self)
        with contextlib.suppress(Exception):
            self.close()
        with contextlib.suppress(Exception):
            sys.stderr.write(
                f"bpvideo: warning: --logfile {one_line(self.baseFilename)} cannot be written "
                f"({one_line(why)}): the log goes on on stderr only\n"
            )


#: Lines of a ``--logfile``: a time stamp and the level before the message.
LOGFILE_FORMAT = "%(asctime)s %(levelname)s %(message)s"


def configure_logging(verbosity: int, logfile: str | None = None) -> None:
    """Send the ``bpvideo`` logger to stderr, and to ``logfile`` when given.

    Parameters
    ----------
    verbosity : int
        -1 = errors only (``-q``), 0 = info, 1 = debug with the iteration table (``-v``).
    logfile : str, optional
        Also append the records to this file, with time stamps: info and above (debug
        with ``-v``), even with ``-q``.

    Raises
    ------
    InputError
        ``logfile`` cannot be opened for appending.
    """
    level = {-1: logging.ERROR, 0: logging.INFO}.get(verbosity, logging.DEBUG)
    for old in list(logger.handlers):
        if getattr(old, "_bpvideo", False):
            logger.removeHandler(old)
            if isinstance(old, logging.FileHandler):
                old.close()
    handlers: list[logging.Handler] = [_ConsoleHandler(sys.stderr)]
    handlers[0].setFormatter(_Formatter())
    handlers[0].setLevel(level)
    if logfile is not None:
        try:
            handlers.append(_LogFileHandler(logfile, mode="a", encoding="utf-8"))
        except OSError as exc:
            raise InputError(
                f"{{logfile=}} cannot be opened ({exc.strerror}): give a file in a folder "
                "that exists and is writable",
                option=("logfile", logfile),
            ) from None
        handlers[1].setFormatter(logging.Formatter(LOGFILE_FORMAT))
        handlers[1].setLevel(min(level, logging.INFO))
    for handler in handlers:
        handler._bpvideo = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(min(handler.level for handler in handlers))
    logger.propagate = False


class ProgressBar:
    """A :data:`~bpvideo.progress.ProgressCallback` that draws one bar on stderr (tqdm):
    frames finished out of the frames expected, with the stage and the window.

    ``bpvideo: solving window 2/5 (iteration 12): 40%|####    | 400/1000 frames ...``.
    Drawn only when ``enabled`` (stderr a terminal, not ``-q``); at most every
    :attr:`interval` seconds unless the stage changes. Log records go through the bar
    (:class:`_ConsoleHandler`).
    """

    interval = 0.1

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._bar: Any = None
        self._shown: tuple[str, int] = ("", 0)
        self._last = 0.0

    def __call__(self, progress: Progress) -> None:
        if not self.enabled:
            return
        if self._bar is None:
            from tqdm import tqdm

            try:  # a terminal that reports no size (some ptys) gets 80 columns
                sized = os.get_terminal_size(sys.stderr.fileno()).columns > 0
            except (OSError, ValueError):
                sized = False
            self._bar = tqdm(total=progress.total, unit="frame", file=sys.stderr, leave=False,
                             dynamic_ncols=sized, ncols=None if sized else 80,
                             nrows=None if sized else 20, smoothing=0,
                             desc="bpvideo: reading")  # fmt: skip
        now = time.monotonic()
        moved = (progress.stage, progress.window) != self._shown
        if not moved and now - self._last < self.interval:
            return
        self._shown, self._last = (progress.stage, progress.window), now
        bar = self._bar
        bar.n = progress.frames
        bar.set_description_str(f"bpvideo: {_stage_text(progress)}", refresh=False)
        bar.set_postfix_str(f"read {progress.read}", refresh=False)
        bar.refresh()

    def close(self) -> None:
        """Remove the bar (the next input gets a new one)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
            self._shown = ("", 0)


def _stage_text(progress: Progress) -> str:
    """``reading``, ``solving window 2/5 (iteration 12)``, ``writing``, ``finishing``."""
    verb = {"read": "reading", "solve": "solving", "write": "writing"}.get(progress.stage)
    if verb is None:
        return "finishing"
    window = ""
    if progress.windows is None or progress.windows > 1:
        window = f" window {progress.window}/{progress.windows or '?'}"
    iteration = f" (iteration {progress.iteration})" if progress.iteration else ""
    return f"{verb}{window}{iteration}"


def iteration_table(verbosity: int) -> Callable[[Iterate], None] | None:
    """A solver callback that logs one row per iteration (``-v``), else None."""
    if verbosity < 1:
        return None
    pending_header = [True]  # printed at the first iteration: not before a bad-input error

    def table(it: Iterate) -> None:
        if pending_header:
            pending_header.clear()
            logger.debug("%6s  %12s  %12s", "iter", "residual", "change")
        logger.debug("%6d  %12.4e  %12.4e", it.iteration, it.residual, it.change)

    return table


def progress_bar(verbosity: int) -> ProgressBar:
    """The bar of ``separate``: on when stderr is a terminal and not ``-q``."""
    try:
        terminal = sys.stderr.isatty()
    except (AttributeError, ValueError):
        terminal = False
    return ProgressBar(verbosity >= 0 and terminal)


#: Options of the command line that are no settings (:func:`~bpvideo.settings.cli_flags`).
CLI_FLAGS = {"logfile": "--logfile", "config": "--config"}


def error_line(error: BpvideoError) -> str:
    """``bpvideo: error: ...``: the error's message with its options spelled as flags."""
    return f"bpvideo: error: {one_line(error.render({**cli_flags(), **CLI_FLAGS}))}"


def _cwd_gone() -> bool:
    """Whether the working folder was removed (relative paths then name nothing)."""
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    return False


def _debug_requested(argv: list[str]) -> bool:
    return "--debug" in argv or os.environ.get("BPVIDEO_DEBUG", "") not in ("", "0")


def _committed(name: str = "COMMITTED") -> list:
    outputs = sys.modules.get("bpvideo.sinks.outputs")  # not loaded: nothing was written
    return list(getattr(outputs, name)) if outputs is not None else []


def _interrupted(what: str, before: int, kept_before: int = 0) -> str:
    complete = _committed()[before:]
    kept = _committed("KEPT")[kept_before:]
    if kept and not complete:  # the finished windows of a stopped run
        return f"bpvideo: {what}: {kept[-1]}: run the same command with --resume to finish"
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


def check_json_stdout(as_json: bool) -> None:
    """Refuse ``--json`` when the process started with stdout closed: the JSON asked for
    would go nowhere, and the run would look done (exit 2)."""
    if as_json and 1 in CLOSED_STREAMS:
        raise InputError("--json but stdout is closed: leave it open, or a pipe on stdout")


def run(cli: click.Command, argv: list[str] | None = None) -> int:
    """Run the command line ``cli`` on ``argv`` (default: this process's arguments), with
    bpvideo's errors, exit codes and signals; return the exit code.

    Exit codes: 0 done, 1 failed work, 2 usage error, 130 interrupted (SIGINT, Ctrl-C),
    ``128 + N`` stopped by signal N (143 SIGTERM, 129 SIGHUP, 131 SIGQUIT...: the
    :data:`~bpvideo.sinks.outputs.STOP_SIGNALS`). Interrupted runs remove their staged
    outputs first.
    """
    _open_closed_streams()
    if argv is None:  # this process is bpvideo's own
        own_process()
    args = list(sys.argv[1:] if argv is None else argv)
    debug = _debug_requested(args)
    before, kept_before = len(_committed()), len(_committed("KEPT"))
    try:
        result = _main(cli, args, own=argv is None)
    except Terminated as exc:
        name = signal_name(exc.signum)
        what = f"terminated by signal {exc.signum}{name}"
        click.echo(_interrupted(what, before, kept_before), err=True)
        return 128 + exc.signum
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.NoArgsIsHelpError as exc:  # ``bpvideo`` alone: its help, as is
        click.echo(exc.format_message(), err=True)
        return exc.exit_code
    except click.ClickException as exc:
        hint = ""
        if isinstance(exc, click.UsageError) and exc.ctx is not None:
            hint = f" (see '{exc.ctx.command_path} --help')"
        click.echo(f"bpvideo: error: {one_line(exc.format_message())}{hint}", err=True)
        return exc.exit_code
    except (KeyboardInterrupt, click.exceptions.Abort):
        click.echo(_interrupted("interrupted", before, kept_before), err=True)
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
        return _unexpected(exc, before)
    try:  # what is still buffered for stdout: written now, where a failure can be said
        sys.stdout.flush()
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            _stdout_to_devnull()
            return 1
        click.echo(_stdout_lost(exc, before), err=True)
        _stdout_to_devnull()
        return 1
    return result if isinstance(result, int) else 0


def _main(cli: click.Command, args: list[str], own: bool) -> Any:
    """``cli.main`` on ``args`` with the stop signals raising; an error that a stop's
    exception caused on its way out is that stop."""
    try:
        with stop_signals_raise(process_exit=own):
            if own:  # this process's limits are bpvideo's to set
                check_open_files()
            return cli.main(args=args, prog_name="bpvideo", standalone_mode=False)
    except Exception as exc:
        stop = _stop_behind(exc)
        if stop is None:
            raise
        raise stop from exc


def _stop_behind(exc: BaseException) -> Terminated | KeyboardInterrupt | None:
    """The stop signal's exception that ``exc`` was raised while handling, if any.

    A signal's exception can land inside the standard library's lock code (between a
    ``Condition`` releasing its lock and the ``try`` that takes it back): unwinding, the
    ``with`` around it then fails with "release unlocked lock", and that error, not the
    stop, reaches the top; its ``__context__`` is the stop.
    """
    seen: set[int] = set()
    error: BaseException | None = exc.__context__
    while error is not None and id(error) not in seen:
        if isinstance(error, Terminated | KeyboardInterrupt):
            return error
        seen.add(id(error))
        error = error.__context__
    return None


def _unexpected(exc: Exception, before: int) -> int:
    """Say what an exception no layer named was (stdout lost, the working folder gone, or
    a bug), in one line; the exit code."""
    stdout_failed = _stdout_failure(exc)
    if stdout_failed is not None:
        click.echo(_stdout_lost(stdout_failed, before), err=True)
        return 1
    failure = resource_failure(exc)  # a full disk, a process limit: not a bug
    if failure is not None:
        click.echo(error_line(failure), err=True)
        return failure.exit_code
    if isinstance(exc, OSError) and _cwd_gone():
        click.echo(
            "bpvideo: error: the current folder no longer exists (it was removed while "
            "the shell was in it): cd to a folder that exists, or give absolute paths",
            err=True,
        )
        return 2
    click.echo(
        f"bpvideo: internal error: {type(exc).__name__}: {one_line(str(exc))} (rerun with "
        "--debug for the traceback and report it)",
        err=True,
    )
    return 1


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null, dropping what is buffered: the interpreter's last flush
    then cannot fail (or print a traceback) after the error was said."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _stdout_failure(exc: BaseException) -> OSError | None:
    """``exc`` when it is a failed write to stdout (a full device, an I/O error), checked
    by writing out what stdout still buffers; else None."""
    if not isinstance(exc, OSError) or isinstance(exc, BrokenPipeError):
        return None
    tb = exc.__traceback__
    while tb is not None:  # raised inside click.echo(..., file=stdout)?
        frame = tb.tb_frame
        if frame.f_code.co_name == "echo" and "click" in frame.f_code.co_filename:
            stream = frame.f_locals.get("file")
            if getattr(stream, "name", None) == "<stdout>" or stream is sys.stdout:
                return exc
        tb = tb.tb_next
    try:
        sys.stdout.flush()
    except OSError:
        return exc
    return None


def _stdout_lost(exc: OSError, before: int) -> str:
    """The line for data that stdout could not take; names a result that is complete."""
    why = one_line(exc.strerror or str(exc))
    complete = _committed()[before:]
    done = (f"; the result in {complete[-1]} is complete (summary.json written): read it "
            "there" if complete else "")  # fmt: skip
    _stdout_to_devnull()
    return f"bpvideo: error: stdout could not be written ({why}){done}"
