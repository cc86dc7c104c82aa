"""The memory set-up of bpvideo's own processes (bpvideo.allocator)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bpvideo.allocator import keep_freed_memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_freed_memory_is_kept_on_glibc() -> None:
    # in a child: the test process's allocator stays as it was
    code = "from bpvideo.allocator import keep_freed_memory; print(keep_freed_memory())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    import platform

    assert out.stdout.strip() == str(platform.libc_ver()[0] == "glibc")


def test_elsewhere_nothing_is_changed(monkeypatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert keep_freed_memory() is False


def test_own_process_freezes_start_up_objects_and_still_collects() -> None:
    # in a child: freezing is for processes that run bpvideo only
    code = (
        "import gc, weakref\n"
        "import bpvideo._cli\n"  # what the console script has loaded when it calls it
        "from bpvideo.allocator import own_process\n"
        "own_process()\n"
        "print(gc.get_freeze_count())\n"
        "class Node: pass\n"
        "a, b = Node(), Node(); a.other, b.other = b, a\n"  # a cycle made after the freeze
        "gone = weakref.ref(a); del a, b\n"
        "gc.collect(); print(gone() is None)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    frozen, collected = out.stdout.split()
    assert int(frozen) > 10_000  # numpy, OpenCV and bpvideo's modules
    assert collected == "True"
