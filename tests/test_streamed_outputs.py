"""The streamed output stage: factored backgrounds, threaded writers, the own ffmpeg decoder
and the split numpy kernels give the same results as the whole-matrix paths."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo import _ffmpeg, _kernels
from bpvideo.masks import foreground_masks, noise_level
from bpvideo.pipeline import Background, masked_frames
from bpvideo.reader import iter_frames, open_source, probe
from bpvideo.solver import best_pair, project_sparse
from bpvideo.synthetic import make_scene
from bpvideo.writer import MaskWriter, write_video


def factored(m: int, k: int, q: int = 3, seed: int = 0) -> Background:
    rng = np.random.default_rng(seed)
    left = (rng.random((m, q)) * 90).astype(np.float32)
    right = rng.random((k, q)).astype(np.float32)
    return Background(left=left, right=right)


def test_factored_background_equals_its_dense_product() -> None:
    bg = factored(24 * 32, 10)
    dense = bg.left @ bg.right.T
    assert bg.shape == dense.shape
    np.testing.assert_allclose(bg.columns(2, 7), dense[:, 2:7], rtol=1e-6)
    np.testing.assert_allclose(bg.take(np.array([0, 4, 9])), dense[:, [0, 4, 9]], rtol=1e-6)
    frames = bg.frames(3, 6, (24, 32))
    assert frames.shape == (3, 24, 32)
    np.testing.assert_allclose(frames, dense[:, 3:6].T.reshape(3, 24, 32), rtol=1e-5)
    index = np.array([0, 5, 77, dense.size - 1])
    np.testing.assert_allclose(bg.entries(index), dense.reshape(-1)[index], rtol=1e-5)
    whole = Background(dense)
    np.testing.assert_array_equal(whole.columns(2, 7), dense[:, 2:7])
    np.testing.assert_array_equal(whole.entries(index), dense.reshape(-1)[index])


def test_noise_level_of_a_background_given_by_entries_equals_the_dense_one() -> None:
    bg = factored(40 * 30, 50, seed=1)
    dense = bg.left @ bg.right.T
    rng = np.random.default_rng(2)
    A = np.clip(np.rint(dense + rng.normal(0, 3, dense.shape)), 0, 255).astype(np.uint8)
    by_array = noise_level(A, dense)
    by_entries = noise_level(A, bg.entries)
    assert by_entries == pytest.approx(by_array, rel=1e-5)
    assert 2.0 < by_array < 4.0  # the noise drawn: sigma 3 (rounded to integers)


def test_masks_of_uint8_frames_against_a_factored_background_match_float_columns() -> None:
    shape = (24, 32)
    bg = factored(24 * 32, 12, seed=3)
    dense = bg.left @ bg.right.T
    A = np.clip(np.rint(dense), 0, 255).astype(np.uint8)
    A[:200, 1::2] = 255  # foreground in odd frames
    planes = np.ascontiguousarray(A.T).reshape(12, *shape)
    by_columns = foreground_masks(A.astype(np.float32), dense, None, shape, threshold=10.0)
    by_frames = foreground_masks(planes, bg.frames(0, 12, shape), None, shape, threshold=10.0)
    np.testing.assert_array_equal(by_columns.masks, by_frames.masks)
    assert by_frames.masks[1::2].any() and not by_frames.masks[::2].any()


@pytest.mark.parametrize("colour", [False, True])
def test_masked_frames_equal_numpy_where(colour: bool) -> None:
    rng = np.random.default_rng(4)
    frames = rng.integers(0, 256, (5, 24, 32, 3) if colour else (5, 24, 32), dtype=np.uint8)
    masks = rng.random((5, 24, 32)) < 0.3
    want = np.where(masks[..., None] if colour else masks, frames, 0)
    np.testing.assert_array_equal(masked_frames(frames, masks), want)


def test_mask_writer_round_trip_and_numbering(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    masks = rng.random((7, 24, 32)) < 0.4
    writer = MaskWriter(tmp_path / "masks")
    writer.write(masks[:3])
    writer.write(masks[3:])
    writer.close()
    names = sorted(p.name for p in (tmp_path / "masks").iterdir())
    assert names == [f"bin{i:06d}.png" for i in range(1, 8)]
    for i, mask in enumerate(masks, start=1):
        image = cv2.imread(str(tmp_path / "masks" / f"bin{i:06d}.png"), cv2.IMREAD_UNCHANGED)
        np.testing.assert_array_equal(image, np.where(mask, 255, 0).astype(np.uint8))


def test_mask_writer_reports_a_failed_write(tmp_path: Path) -> None:
    writer = MaskWriter(tmp_path / "masks")
    (tmp_path / "masks").rmdir()  # the folder is gone: the writes fail
    writer.write(np.ones((2, 8, 8), dtype=bool))
    with pytest.raises(OSError):
        writer.close()


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


def test_source_closed_before_reading_stops_its_decoder(tmp_path: Path) -> None:
    path = tmp_path / "clip.mkv"
    write_video(path, make_scene(32, 24, 5, seed=7).frames, 25.0, lossless=True)
    source = open_source(path)
    decoder = source._decoder
    source.close()
    with pytest.raises(StopIteration):
        next(decoder)  # closed: ffmpeg was stopped


def test_split_numpy_kernels_equal_the_whole_matrix_ones(monkeypatch) -> None:
    rng = np.random.default_rng(8)
    A = (rng.random((600, 80)) * 50).astype(np.float32)
    A[rng.random(A.shape) < 0.05] += 120
    before = _kernels.use_numba()
    _kernels.use_numba(False)
    try:
        monkeypatch.setattr(_kernels, "NP_SPLIT_SIZE", 1 << 40)  # one block
        whole = best_pair(A, 2, 0.1, tol=1e-6)
        whole_p = project_sparse(np.rint(A), 0.1)  # integer ties
        monkeypatch.setattr(_kernels, "NP_SPLIT_SIZE", 0)  # row and column blocks
        split = best_pair(A, 2, 0.1, tol=1e-6)
        split_p = project_sparse(np.rint(A), 0.1)
    finally:
        _kernels.use_numba(before)
    np.testing.assert_array_equal(split_p, whole_p)
    assert split.iterations == whole.iterations
    np.testing.assert_allclose(split.L, whole.L, rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(split.S != 0, whole.S != 0)


def test_numba_is_used_by_size_in_auto_mode(monkeypatch) -> None:
    if not _kernels.HAVE_NUMBA:
        pytest.skip("numba is not installed")
    before = _kernels.use_numba()
    try:
        assert _kernels.use_numba("auto") == "auto"
        assert not _kernels.numba_for(_kernels.NUMBA_MIN_SIZE - 1)
        assert _kernels.numba_for(_kernels.NUMBA_MIN_SIZE)
        _kernels.use_numba(True)
        assert _kernels.numba_for(1)
        _kernels.use_numba(False)
        assert not _kernels.numba_for(1 << 40)
        with pytest.raises(ValueError):
            _kernels.use_numba("sometimes")
    finally:
        _kernels.use_numba(before)
