"""Sources: video files and image folders read as streams of numbered frames."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo.errors import InputError
from bpvideo.io.sources import list_image_files, open_source
from bpvideo.io.video import read_video
from bpvideo.io.writers import write_video
from bpvideo.synthetic import make_scene
from tests.conftest import tiny_frames


def test_lossless_round_trip_is_exact(tiny_clip: Path) -> None:
    frames, _ = tiny_frames()
    video = read_video(tiny_clip, gray=False)
    assert video.n_frames == len(frames)
    assert np.array_equal(video.frames, frames)
    assert video.frame_shape == (36, 48, 3) and video.data.shape == (36 * 48 * 3, 24)
    assert video.data.dtype == np.float32 and video.fps == pytest.approx(10.0)
    # Columns are frames: column j reshaped is frame j.
    assert np.array_equal(video.as_frames(video.data)[5], frames[5].astype(np.float32))


def test_gray_matches_opencv(tiny_clip: Path) -> None:
    frames, _ = tiny_frames()
    video = read_video(tiny_clip)
    gray = cv2.cvtColor(frames[3], cv2.COLOR_BGR2GRAY)
    assert video.frame_shape == (36, 48)
    assert np.array_equal(video.data[:, 3].reshape(36, 48), gray.astype(np.float32))
    assert video.frames.shape == (24, 36, 48, 3)  # colour is kept


@pytest.mark.parametrize("source", ["tiny_clip", "tiny_folder"])
def test_selection(source: str, request: pytest.FixtureRequest) -> None:
    path = request.getfixturevalue(source)
    frames, _ = tiny_frames()
    video = read_video(path, start=2, frames=5, step=3)
    assert video.n_frames == 5
    expected = [cv2.cvtColor(frames[i], cv2.COLOR_BGR2GRAY) for i in (2, 5, 8, 11, 14)]
    assert np.array_equal(video.as_frames(video.data), np.stack(expected).astype(np.float32))
    offset = 1 if source == "tiny_folder" else 0  # in000001.png is frame 0
    assert video.frame_numbers == [i + offset for i in (2, 5, 8, 11, 14)]


def test_scale(tiny_folder: Path) -> None:
    video = read_video(tiny_folder, scale=0.5)
    assert video.frame_shape == (18, 24) and video.frames.shape[1:3] == (18, 24)


def test_folder_groups_by_prefix(tmp_path: Path) -> None:
    frames, _ = tiny_frames(n=6)
    for i, f in enumerate(frames):
        cv2.imwrite(str(tmp_path / f"b{i:05d}.bmp"), f)
    cv2.imwrite(str(tmp_path / "hand_segmented_00005.BMP"), frames[0])
    files = list_image_files(tmp_path)
    assert [f.name for f in files] == [f"b{i:05d}.bmp" for i in range(6)]


def test_folder_mixed_sizes(tmp_path: Path) -> None:
    frames, _ = tiny_frames(n=3)
    cv2.imwrite(str(tmp_path / "f1.png"), frames[0])
    cv2.imwrite(str(tmp_path / "f2.png"), frames[1][:20])
    with pytest.raises(InputError, match=r"f2\.png.*one size"):
        read_video(tmp_path)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda p: p, "no such file"),
        (lambda p: (p.write_bytes(b""), p)[1], "empty"),
        (lambda p: (p.write_text("not a video\n" * 50), p)[1], "cannot be decoded"),
    ],
)
def test_bad_sources(tmp_path: Path, make, match: str) -> None:
    path = make(tmp_path / "clip.mp4")
    with pytest.raises(InputError, match=match):
        read_video(path)


def test_source_closed_before_reading_stops_its_decoder(tmp_path: Path) -> None:
    path = tmp_path / "clip.mkv"
    write_video(path, make_scene(32, 24, 5, seed=7).frames, 25.0, lossless=True)
    source = open_source(path)
    decoder = source._decoder
    source.close()
    with pytest.raises(StopIteration):
        next(decoder)  # closed: ffmpeg was stopped
