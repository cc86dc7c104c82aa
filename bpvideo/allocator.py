"""Freed memory kept for reuse in bpvideo's own processes (the CLI, batch workers).

glibc's malloc gives every allocation above a threshold (128 KiB, raised as it goes up to
32 MiB) its own ``mmap`` and returns it to the kernel when freed; the next block of frames
then faults in fresh zeroed pages again. A 320x240 run of 300 frames spent 1.1 s of its
2.4 s in the kernel that way. Raising both thresholds lets freed blocks be reused: the
same run spends 0.6 s there, and its peak memory grows by ~15 MiB (numbers and command in
docs/performance.md). A library call never changes its host process's allocator; only
:func:`keep_freed_memory`, called by the console script and the batch workers, does.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "keep_freed_memory"]

#: Allocations below this come from the heap, not from their own ``mmap``.
MMAP_THRESHOLD = 256 << 20
#: Free memory at the top of the heap kept, not returned to the kernel, up to this much.
TRIM_THRESHOLD = 512 << 20
# mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def keep_freed_memory() -> bool:
    """Set glibc's malloc thresholds (:data:`MMAP_THRESHOLD`, :data:`TRIM_THRESHOLD`) for
    this process; whether they were set (False on other C libraries and systems)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and others: no mallopt
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    done = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
    return mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1 and done
