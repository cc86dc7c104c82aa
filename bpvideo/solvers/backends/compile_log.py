"""One line in the log when numba compiles a kernel (instead of a silent pause).

The compiled kernels (:mod:`._numba_kernels`, :mod:`bpvideo.masks._appearance_kernel`)
are cached on disk (``cache=True``): the first run after an install (or an upgrade of
numba or of bpvideo) compiles them, later runs load them. numba announces a compilation,
and only a compilation (not a load from the cache), with its ``numba:compile`` event:
:func:`watch_compiles` turns the first one of a process into an INFO record of the
``bpvideo`` logger, and each into a DEBUG record with its seconds; :func:`compiles`
counts them.
"""

from __future__ import annotations

import logging
import time

__all__ = ["compiles", "watch_compiles"]

logger = logging.getLogger("bpvideo")

_WATCHING: list = []


def watch_compiles() -> None:
    """Log numba's compilations from now on (once per process; numba imported)."""
    if _WATCHING:
        return
    from numba.core import event

    class _Compiles(event.Listener):
        """Logs the outermost compilations (a kernel compiles the functions it calls)."""

        def __init__(self) -> None:
            self.depth = 0
            self.started = 0.0
            self.told = False
            self.count = 0

        def on_start(self, ev) -> None:
            self.depth += 1
            if self.depth > 1:
                return
            self.started = time.perf_counter()
            if not self.told:
                self.told = True
                logger.info(
                    "compiling the fast kernels with numba (once: they are cached on disk, "
                    "later runs load them; a few seconds)"
                )

        def on_end(self, ev) -> None:
            self.depth -= 1
            if self.depth == 0:
                self.count += 1
                name = getattr((ev.data or {}).get("dispatcher"), "__name__", "a kernel")
                logger.debug("numba compiled %s (%.2fs)", name, time.perf_counter() - self.started)

    listener = _Compiles()
    event.register("numba:compile", listener)
    _WATCHING.append(listener)


def compiles() -> int:
    """Kernels numba compiled in this process since :func:`watch_compiles` (the outermost
    compilations: a kernel's callees are part of it)."""
    return _WATCHING[0].count if _WATCHING else 0
