"""Logging and progress on stderr (stdout carries only data: paths or JSON)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from bpvideo.solver import Iterate

__all__ = ["configure_logging", "iteration_reporter"]

logger = logging.getLogger("bpvideo")


class _Formatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        level = "" if record.levelno == logging.INFO else f"{record.levelname.lower()}: "
        if record.levelno == logging.DEBUG:
            level = ""
        return f"bpvideo: {level}{record.getMessage()}"


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
