"""The background still: the per-pixel median of decimated frames, in memory or, for
large frames, from a temporary file read back a few rows at a time."""

from __future__ import annotations

import numpy as np
import pytest

from bpvideo import still
from bpvideo.still import Still


@pytest.mark.parametrize("shape", [(37, 23), (37, 23, 3)])
def test_a_still_kept_on_disk_is_the_median_of_the_same_frames(shape, monkeypatch):
    rng = np.random.default_rng(1)
    frames = rng.integers(0, 256, (300, *shape), dtype=np.uint8)
    in_memory, on_disk = Still(), Still(memory=0)
    for lo in range(0, 300, 7):  # blocks, as the sinks offer them
        in_memory.add(frames[lo : lo + 7])
        on_disk.add(frames[lo : lo + 7])
    kept = frames[:: in_memory.stride][: len(in_memory.kept)]
    want = np.clip(np.rint(np.median(kept, axis=0)), 0, 255).astype(np.uint8)
    monkeypatch.setattr(still, "MEDIAN_BYTES", 200)  # a few rows at a time
    assert np.array_equal(in_memory.median(), want)
    assert np.array_equal(on_disk.median(), want)
    # no frame held by the process; the file's slots are reused as frames are dropped
    assert all(isinstance(k, int) for k in on_disk.kept)
    assert on_disk._slots <= still.STILL_FRAMES + 1


def test_large_frames_go_to_disk_small_ones_stay():
    small, large = Still(), Still()
    small.add(np.zeros((1, 240, 320), np.uint8))
    large.add(np.zeros((1, 1080, 1920), np.uint8))
    assert isinstance(small.kept[0], np.ndarray)
    assert isinstance(large.kept[0], int)
