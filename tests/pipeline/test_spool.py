"""The spool of full-resolution frames: read back as written, removed when done, and a
spooled run equal to one holding the frames in memory."""

from __future__ import annotations

import os

import cv2
import numpy as np
import pytest

import bpvideo
from bpvideo.pipeline import plan as plan_module
from bpvideo.pipeline.scale import resize_columns
from bpvideo.pipeline.spool import SEGMENT_FRAMES, FrameSpool, SpooledVideo
from bpvideo.synthetic import make_scene


@pytest.mark.parametrize("gray", [True, False])
def test_spool_reads_back_what_a_video_in_memory_holds(gray):
    frames = make_scene(48, 32, SEGMENT_FRAMES + 8, seed=1).frames
    shape = (32, 48) if gray else (32, 48, 3)
    spool = FrameSpool(shape, (12, 8))
    try:
        indices = [spool.add(f) for f in frames]
        video = SpooledVideo(spool, indices, list(range(len(frames))), 25.0, "test")
        memory = bpvideo.sources.video.video_from_frames(list(enumerate(frames)), gray=gray)
        assert video.shape == memory.shape
        cols = np.array([0, 3, len(frames) - 1])
        np.testing.assert_array_equal(video.rows(5, 700, cols, 3), memory.rows(5, 700, cols, 3))
        np.testing.assert_array_equal(video.pixels(10, 90, cols), memory.pixels(10, 90, cols))
        np.testing.assert_array_equal(video.frame_block(2, 6), memory.frame_block(2, 6))
        np.testing.assert_array_equal(video.plane_block(2, 6), memory.plane_block(2, 6))
        small = resize_columns(memory.data, shape, (12, 8), cv2.INTER_AREA)
        np.testing.assert_array_equal(video.small, small)
        spool.release_before(SEGMENT_FRAMES + 1)  # the first segment file goes
        assert len(os.listdir(spool.folder)) == 1
        with pytest.raises(RuntimeError, match="released"):
            spool.frame(0)
    finally:
        spool.close()
    assert not os.path.exists(spool.folder)


def test_spooled_run_gives_the_masks_of_a_run_in_memory(monkeypatch):
    frames = make_scene(96, 64, 60, seed=2).frames
    options = dict(solve_scale=0.5, window=30, overlap=5)
    spooled = bpvideo.separate(frames, **options)
    monkeypatch.setattr(plan_module, "spools", lambda settings, scale: False)
    memory = bpvideo.separate(frames, **options)
    np.testing.assert_array_equal(spooled.masks, memory.masks)
    np.testing.assert_array_equal(spooled.background, memory.background)
    np.testing.assert_array_equal(spooled.foreground, memory.foreground)


def test_a_full_tmpdir_is_named_as_such(small_disk, tmp_path, monkeypatch) -> None:
    """The spool fills TMPDIR (not the output's disk): the error says TMPDIR, the run
    keeps nothing, and the spool is gone."""
    from bpvideo.errors import WorkError
    from bpvideo.sinks.writers import write_video

    clip = tmp_path / "big.mkv"
    write_video(clip, make_scene(320, 240, 6, seed=2).frames, 10.0, lossless=True)
    monkeypatch.setenv("TMPDIR", str(small_disk))
    monkeypatch.setattr("tempfile.tempdir", None)  # read TMPDIR again
    with pytest.raises(WorkError, match=r"temporary folder .*small \(TMPDIR\) is full"):
        bpvideo.separate_file(clip, tmp_path / "out", rank=1, no_video=True)
    assert not (tmp_path / "out").exists() and os.listdir(small_disk) == []
