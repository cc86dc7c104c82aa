"""The console script's malloc settings (bpvideo.allocator)."""

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
