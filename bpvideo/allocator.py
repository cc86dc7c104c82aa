"""Memory management of bpvideo's own processes (the CLI, batch workers): :func:`own_process`.

**Freed memory kept for reuse.** glibc's malloc gives every allocation above a threshold
(128 KiB, raised as it goes up to 32 MiB) its own ``mmap`` and returns it to the kernel
when freed; the next block of frames then faults in fresh zeroed pages again. A 320x240
run of 300 frames spent 1.1 s of its 2.4 s in the kernel that way. Raising both
thresholds lets freed blocks be reused: the same run spends 0.6 s there, and its peak
memory grows by ~15 MiB (numbers and command in docs/performance.md).

**Start-up objects out of the collector's sight.** The modules, classes and functions
imported at start (numpy, OpenCV, click, bpvideo: ~30,000 objects) live as long as the
process; every full collection walks them again, and so does the last one at exit. Moved
to the collector's permanent generation (:func:`gc.freeze`) once imported, they cost
nothing more: a 320x240 run of 300 frames takes ~0.14 s less (docs/performance.md).

A library call never changes its host process's allocator or collector; only
:func:`own_process`, called by the console script and the batch workers, does.
"""

from __future__ import annotations

import ctypes
import gc
import sys

__all__ = [
    "MMAP_THRESHOLD",
    "TRIM_THRESHOLD",
    "freeze_imports",
    "keep_freed_memory",
    "own_process",
]

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
        libc = ctypes.CDLL(None)  # the C library the interpreter runs on
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and others: no mallopt
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    done = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
    return mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1 and done


def freeze_imports() -> int:
    """Move every object alive now to the collector's permanent generation
    (:func:`gc.freeze`): call once the modules are imported. Returns how many objects
    are frozen."""
    gc.freeze()
    return gc.get_freeze_count()


def own_process() -> None:
    """Set up a process that runs bpvideo only (the console script, a batch worker):
    :func:`keep_freed_memory` and :func:`freeze_imports`."""
    keep_freed_memory()
    freeze_imports()
