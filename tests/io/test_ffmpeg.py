"""The ffmpeg decoder and the probe: every frame, libavformat's fields, names as data."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from bpvideo.io import _ffmpeg
from bpvideo.io.sources import iter_frames, open_source, probe
from bpvideo.io.writers import write_video
from bpvideo.synthetic import make_scene


def test_decoder_gives_every_frame_and_the_probe_the_header(tmp_path: Path) -> None:
    scene = make_scene(32, 24, 9, seed=6)
    path = tmp_path / "clip.mkv"
    write_video(path, scene.frames, 25.0, lossless=True)
    found = _ffmpeg.probe(path)
    assert (found.width, found.height, found.frame_count) == (32, 24, 9)
    assert found.fps == pytest.approx(25.0)
    got = [np.frombuffer(b, np.uint8).reshape(24, 32, 3) for b in _ffmpeg.decode(path, 32, 24)]
    np.testing.assert_array_equal(np.stack(got), scene.frames)  # FFV1: lossless
    source = open_source(path, pix_fmt="bgr24")
    assert (source.width, source.height, source.frame_count) == (32, 24, 9)
    np.testing.assert_array_equal(np.stack([f for _, f in source.frames]), scene.frames)
    source.close()
    assert [n for n, _ in iter_frames(path, start=2, step=3, info=probe(path))] == [2, 5, 8]


def test_probe_refuses_a_file_that_is_not_a_video(tmp_path: Path) -> None:
    path = tmp_path / "notes.mp4"
    path.write_text("not a video\n" * 20)
    with pytest.raises(OSError, match="Invalid data"):
        _ffmpeg.probe(path)


@pytest.mark.parametrize(
    "name",
    [
        "concat:other.mkv",
        "-i",
        "a\nStream #0:0: Video: rawvideo, 640x480, 25 fps\nb.mkv",
        "x?y#z.mkv",
    ],
)
def test_a_file_name_is_only_a_name(tmp_path: Path, name: str) -> None:
    """A name shaped like an ffmpeg protocol, an option or ffmpeg's own log lines reads
    that very file: its own frames and size (the probe reads no text)."""
    scene = make_scene(32, 24, 6, seed=1)
    other = make_scene(16, 16, 9, seed=2)
    write_video(tmp_path / "clip.mkv", scene.frames, 25.0, lossless=True)
    write_video(tmp_path / "other.mkv", other.frames, 25.0, lossless=True)
    hostile = tmp_path / name
    shutil.copy(tmp_path / "clip.mkv", hostile)
    source = open_source(hostile, pix_fmt="bgr24")
    try:
        assert (source.width, source.height, source.frame_count) == (32, 24, 6)
        frames = np.stack([f for _, f in source.frames])
    finally:
        source.close()
    np.testing.assert_array_equal(frames, scene.frames)


def test_a_relative_name_with_a_colon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``concat:a.mkv|b.mkv`` given relative to the working folder is that file, not
    ffmpeg's concatenation of two others."""
    monkeypatch.chdir(tmp_path)
    scene = make_scene(32, 24, 5, seed=3)
    write_video(Path("a.mkv"), make_scene(32, 24, 7, seed=4).frames, 25.0, lossless=True)
    write_video(Path("concat:a.mkv|a.mkv"), scene.frames, 25.0, lossless=True)
    info = probe("concat:a.mkv|a.mkv")
    assert info.frame_count == 5
    assert len(list(iter_frames("concat:a.mkv|a.mkv", info=info))) == 5


def test_file_url_is_absolute() -> None:
    assert _ffmpeg.file_url("concat:x.mkv").startswith("file:/")
    assert _ffmpeg.file_url("/a/-i") == "file:/a/-i"
