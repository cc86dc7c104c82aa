"""The own ffmpeg decoder: every frame and the header, one process probing and decoding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bpvideo.io import _ffmpeg
from bpvideo.io.sources import iter_frames, open_source, probe
from bpvideo.io.writers import write_video
from bpvideo.synthetic import make_scene


def test_decoder_gives_every_frame_and_the_header(tmp_path: Path) -> None:
    scene = make_scene(32, 24, 9, seed=6)
    path = tmp_path / "clip.mkv"
    write_video(path, scene.frames, 25.0, lossless=True)
    frames, meta = _ffmpeg.decode(str(path))
    got = [np.frombuffer(b, np.uint8).reshape(24, 32, 3) for b in frames]
    assert tuple(meta["size"]) == (32, 24) and meta["fps"] == pytest.approx(25.0)
    np.testing.assert_array_equal(np.stack(got), scene.frames)  # FFV1: lossless
    # open_source decodes with the ffmpeg it probed with: the same frames
    source = open_source(path, pix_fmt="bgr24")
    assert (source.width, source.height, source.frame_count) == (32, 24, 9)
    np.testing.assert_array_equal(np.stack([f for _, f in source.frames]), scene.frames)
    source.close()
    assert [n for n, _ in iter_frames(path, start=2, step=3, info=probe(path))] == [2, 5, 8]


def test_decoder_refuses_a_file_that_is_not_a_video(tmp_path: Path) -> None:
    path = tmp_path / "notes.mp4"
    path.write_text("not a video\n" * 20)
    with pytest.raises(OSError):
        _ffmpeg.decode(str(path))
