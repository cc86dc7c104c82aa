"""Layouts and writers of the faster paths give the same results as the plain ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bpvideo.errors import WorkError
from bpvideo.masks import clean_mask, foreground_masks, noise_level
from bpvideo.pipeline import _to_uint8, columns_to_frames
from bpvideo.reader import read_video
from bpvideo.synthetic import make_scene
from bpvideo.writer import VideoStream, write_streams, write_video


@pytest.mark.parametrize("frame_shape", [(24, 32), (12, 16, 3)])
def test_masks_of_columns_and_of_frames_agree(frame_shape) -> None:
    rng = np.random.default_rng(0)
    n, m = 30, int(np.prod(frame_shape))
    L = np.repeat(rng.random((m, 1)).astype(np.float32) * 200, n, axis=1)
    A = L + rng.normal(0, 2, (m, n)).astype(np.float32)
    A[: m // 3, ::3] += 80  # blobs of foreground
    by_columns = foreground_masks(A, L, None, frame_shape, min_area=4)
    frames = lambda M: np.ascontiguousarray(M.T).reshape((n, *frame_shape))  # noqa: E731
    by_frames = foreground_masks(frames(A), frames(L), None, frame_shape, min_area=4)
    assert by_columns.threshold == by_frames.threshold
    np.testing.assert_array_equal(by_columns.masks, by_frames.masks)
    assert by_columns.masks[::3].any() and not by_columns.masks[1::3].any()
    assert 1.5 < noise_level(A, L) < 2.5  # the noise drawn: sigma 2


def test_clean_mask_in_place_equals_a_new_mask() -> None:
    rng = np.random.default_rng(1)
    mask = rng.random((40, 50)) > 0.7
    mask[5:20, 5:25] = True
    want = clean_mask(mask.copy(), open_radius=1, close_radius=2, min_area=20)
    got = mask.copy()
    assert clean_mask(got, open_radius=1, close_radius=2, min_area=20, out=got) is got
    np.testing.assert_array_equal(got, want)
    assert want[10, 10] and want.sum() < mask.sum()


@pytest.mark.parametrize("frame_shape", [(6, 8), (4, 5, 3)])
def test_columns_to_frames_rounds_saturates_and_transposes(frame_shape) -> None:
    rng = np.random.default_rng(2)
    m = int(np.prod(frame_shape))
    M = rng.uniform(-40, 300, (m, 7)).astype(np.float32)
    M[0, :4] = [0.5, 1.5, 2.5, 254.5]  # ties go to even, like np.rint
    got = columns_to_frames(M, frame_shape)
    np.testing.assert_array_equal(got, _to_uint8(M.T.reshape((7, *frame_shape))))
    np.testing.assert_array_equal(got[:4].reshape(4, -1)[:, 0], [0, 2, 2, 254])
    np.testing.assert_array_equal(columns_to_frames(M[:, 2:5], frame_shape), got[2:5])


def test_interleaved_early_started_streams_write_the_same_videos(tmp_path: Path) -> None:
    scene = make_scene(32, 24, 12, seed=1)
    grey = scene.frames[..., 1].copy()
    write_video(tmp_path / "a.mkv", grey, 25.0, lossless=True)
    write_video(tmp_path / "b.mkv", scene.frames, 25.0, lossless=True)
    a = VideoStream(tmp_path / "a2.mkv", 25.0, lossless=True)
    b = VideoStream(tmp_path / "b2.mkv", 25.0, lossless=True)
    a.open((24, 32))
    b.open((24, 32, 3))
    write_streams([(a, grey[:5]), (b, scene.frames[:5])])
    write_streams([(a, grey[5:]), (b, scene.frames[5:])])
    a.close()
    b.close()
    for one, two in (("a", "a2"), ("b", "b2")):
        first = read_video(tmp_path / f"{one}.mkv", gray=False)
        second = read_video(tmp_path / f"{two}.mkv", gray=False)
        np.testing.assert_array_equal(first.frames, second.frames)
    assert len(read_video(tmp_path / "b2.mkv").frame_numbers) == 12
    c = VideoStream(tmp_path / "c.mkv", 25.0, lossless=True)
    c.open((24, 32))
    with pytest.raises(WorkError, match=r"c\.mkv"):
        c.write(scene.frames[:1])  # colour frames into a grey stream
    assert c._proc is None  # aborted: no ffmpeg left running
