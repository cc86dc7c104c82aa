"""Reader and writer: round trips through real files, selection, masks, atomic outputs."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo.errors import InputError, WorkError
from bpvideo.reader import (
    list_image_files,
    load_observation_mask,
    probe,
    random_observation,
    read_video,
)
from bpvideo.writer import OutputDir, write_masks, write_video
from tests.conftest import output_files, tiny_frames


def test_lossless_round_trip_is_exact(tiny_clip: Path) -> None:
    frames, _ = tiny_frames()
    video = read_video(tiny_clip, gray=False)
    assert video.n_frames == len(frames)
    assert np.array_equal(video.frames, frames)
    assert video.frame_shape == (36, 48, 3) and video.data.shape == (36 * 48 * 3, 24)
    assert video.data.dtype == np.float32 and video.fps == pytest.approx(10.0)
    # Columns are frames: column j reshaped is frame j.
    assert np.array_equal(video.as_frames(video.data)[5], frames[5].astype(np.float32))


def test_h264_round_trip_is_close(tmp_path: Path) -> None:
    frames, _ = tiny_frames(n=12, h=35, w=47)  # odd sizes are padded to even
    path = tmp_path / "clip.mp4"
    write_video(path, frames, 12.0)
    info = probe(path)
    assert (info.width, info.height) == (48, 36) and info.fps == pytest.approx(12.0)
    video = read_video(path, gray=False)
    assert video.n_frames == 12
    err = np.abs(video.frames[:, :35, :47].astype(int) - frames.astype(int)).mean()
    assert err < 4.0


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


def test_observation_mask_image_and_folder(tiny_clip: Path, tmp_path: Path) -> None:
    video = read_video(tiny_clip, frames=6)
    single = np.zeros((36, 48), np.uint8)
    single[:, :24] = 255
    cv2.imwrite(str(tmp_path / "mask.png"), single)
    mask = load_observation_mask(tmp_path / "mask.png", video, native_size=(48, 36))
    assert mask.shape == video.data.shape
    assert np.array_equal(mask[:, 0].reshape(36, 48), single > 0)
    assert (mask == mask[:, :1]).all()

    per_frame = tmp_path / "masks"
    per_frame.mkdir()
    for i in range(6):
        m = np.zeros((36, 48), np.uint8)
        m[i : i + 10] = 1
        cv2.imwrite(str(per_frame / f"m{i:03d}.png"), m)
    mask = load_observation_mask(per_frame, video, native_size=(48, 36))
    assert mask[:, 4].reshape(36, 48)[4:14].all() and not mask[:, 4].reshape(36, 48)[:4].any()

    cv2.imwrite(str(tmp_path / "small.png"), single[:10])
    with pytest.raises(InputError, match="mask is 48x10 but frames are 48x36"):
        load_observation_mask(tmp_path / "small.png", video, native_size=(48, 36))
    cv2.imwrite(str(tmp_path / "none.png"), single * 0)
    with pytest.raises(InputError, match="observes no pixel"):
        load_observation_mask(tmp_path / "none.png", video, native_size=(48, 36))


def test_random_observation_repeatable() -> None:
    a = random_observation((1000, 50), 0.6, seed=3)
    assert np.array_equal(a, random_observation((1000, 50), 0.6, seed=3))
    assert not np.array_equal(a, random_observation((1000, 50), 0.6, seed=4))
    assert abs(a.mean() - 0.6) < 0.01


def test_masks_numbered_from_one(tmp_path: Path) -> None:
    masks = np.zeros((3, 5, 7), bool)
    masks[1, 2, 3] = True
    assert write_masks(tmp_path / "m", masks) == 3
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == [
        "bin000001.png",
        "bin000002.png",
        "bin000003.png",
    ]
    back = cv2.imread(str(tmp_path / "m" / "bin000002.png"), cv2.IMREAD_UNCHANGED)
    assert back.dtype == np.uint8 and set(np.unique(back)) == {0, 255} and back[2, 3] == 255


def test_output_dir_commit_and_failure(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b"
    with OutputDir(target) as out:
        out.stage("summary.json").write_text("{}")
        out.stage("x.txt").write_text("x")
        out.commit()
    assert output_files(target) == ["summary.json", "x.txt"]
    with pytest.raises(InputError, match="already holds results"):
        OutputDir(target).check()

    fresh = tmp_path / "c" / "d"
    with pytest.raises(WorkError), OutputDir(fresh) as out:
        out.stage("x.txt").write_text("x")
        raise WorkError("boom")
    assert not (tmp_path / "c").exists()  # everything this run created is gone

    with pytest.raises(WorkError), OutputDir(target, overwrite=True) as out:
        out.stage("x.txt").write_text("new")
        raise WorkError("boom")
    assert output_files(target) == ["summary.json", "x.txt"]  # old result untouched
    assert (target / "x.txt").read_text() == "x"


def test_output_dir_is_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(InputError, match="is a file"):
        OutputDir(tmp_path / "f").check()
    with pytest.raises(InputError, match="is a file"):
        OutputDir(tmp_path / "f" / "sub").check()
