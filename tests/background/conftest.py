"""Fixtures of the background's tests."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from bpvideo import cores


@pytest.fixture
def in_row_blocks(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[[], Any]], tuple]:
    """``both(run)``: ``run()`` with one thread (each matrix in one call over its rows),
    then with two, every matrix split in two row blocks side by side in chunks of a few
    rows; returns the two answers and the names of the threads the blocks ran in."""
    monkeypatch.setattr(cores, "_STATE", dict(cores._STATE))

    def both(run: Callable[[], Any]) -> tuple[Any, Any, set[str]]:
        cores.use(1)
        with monkeypatch.context() as patch:
            patch.setattr(cores, "CHUNK_ENTRIES", 1 << 30)
            one = run()
        cores.use(2)
        names: set[str] = set()
        blocks = cores.in_blocks

        def seen(work, length, entries):
            def where(lo: int, hi: int) -> Any:
                names.add(threading.current_thread().name)
                return work(lo, hi)

            return blocks(where, length, entries)

        with monkeypatch.context() as patch:
            patch.setattr(cores, "SPLIT_ENTRIES", 1)
            patch.setattr(cores, "CHUNK_ENTRIES", 4096)
            patch.setattr(cores, "in_blocks", seen)
            split = run()
        return one, split, names

    return both
