"""Compile kernels in a helper process, on the other core, into the shared disk cache.

numba compiles one kernel at a time in a process (a global lock), so the first run after
an install (an empty cache) compiles its kernels one after the other on one core while
the frames are read. :func:`start` runs some of them in a child process instead
(``python -m bpvideo.solvers.backends.aside MODULE:FUNCTION ...``): the child compiles
them into the same cache (numba's cache directory is the same for both: the one beside
the sources, or ``NUMBA_CACHE_DIR``, inherited), while this process compiles the others;
after :func:`finish`, this process loads the child's kernels from the cache. Nothing
depends on the child: when it fails or is slow, what it did not cache is compiled here
when first used, as before. The results are the same bits: the same code, compiled by
the same numba for the same CPU.
"""

from __future__ import annotations

import importlib
import logging
import os
import subprocess
import sys
from pathlib import Path

__all__ = ["HANG_GUARD", "finish", "start"]

logger = logging.getLogger("bpvideo")

#: Seconds :func:`finish` waits for the child at most (a hang guard: it takes a few).
HANG_GUARD = 300.0


def start(*jobs: str) -> subprocess.Popen | None:
    """A child process that calls each ``"module:function"`` of ``jobs`` (no arguments),
    or None when it cannot start (the caller then compiles everything itself)."""
    root = str(Path(__file__).resolve().parents[3])  # where this bpvideo is imported from
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": root if not path else os.pathsep.join([root, path])}
    try:
        return subprocess.Popen(
            [sys.executable, "-m", __name__, *jobs],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    except OSError as exc:  # pragma: no cover - no interpreter to start
        logger.debug("could not compile beside this process: %s", exc)
        return None


def finish(child: subprocess.Popen | None) -> None:
    """Wait for ``child`` (of :func:`start`), at most :data:`HANG_GUARD` seconds."""
    if child is None:
        return
    try:
        child.wait(HANG_GUARD)
    except subprocess.TimeoutExpired:  # pragma: no cover - hang guard
        child.kill()
        child.wait()
    if child.returncode:
        logger.debug("the helper compilation exited with %s", child.returncode)


def main(jobs: list[str]) -> int:
    """Call each ``"module:function"`` of ``jobs``."""
    for job in jobs:
        module, _, function = job.partition(":")
        getattr(importlib.import_module(module), function)()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
