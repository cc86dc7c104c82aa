"""``--solve-scale``: solve on downscaled frames, masks and outputs at full resolution."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo.masks import foreground_masks
from bpvideo.pipeline.scale import (
    AUTO_SOLVE_MAX_PIXELS,
    AUTO_SOLVE_SCALE,
    Background,
    effective_solve_scale,
    nearest_rows,
    resize_columns,
    solve_size,
    upsample_factors,
)
from bpvideo.settings import SeparateSettings
from bpvideo.sinks.writers import write_video
from bpvideo.solvers import SolverResult
from bpvideo.sources.video import read_video
from bpvideo.synthetic import make_scene


def test_resize_columns_round_trip_of_a_smooth_frame() -> None:
    h, w, n = 24, 32, 3
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    frames = np.stack([xx * 2 + yy + 10 * k for k in range(n)])  # planes, linear ramps
    data = np.ascontiguousarray(frames.reshape(n, -1).T)
    small = resize_columns(data, (h, w), (w // 2, h // 2), cv2.INTER_AREA)
    assert small.shape == (h * w // 4, n) and small.dtype == np.float32
    back = resize_columns(small, (h // 2, w // 2), (w, h), cv2.INTER_LINEAR)
    assert back.shape == data.shape
    inner = (slice(2, h - 2), slice(2, w - 2))  # the borders are extrapolated
    err = np.abs(back.T.reshape(n, h, w) - frames)[:, inner[0], inner[1]]
    assert err.max() < 1e-3  # linear ramps survive area-down and linear-up exactly
    # each column is resized on its own: the frame means follow the data
    np.testing.assert_allclose(small.mean(axis=0), data.mean(axis=0), rtol=1e-5)


def _f_measure(masks: np.ndarray, truth: np.ndarray) -> float:
    tp = np.logical_and(masks, truth).sum()
    return float(2 * tp / (masks.sum() + truth.sum()))


@pytest.fixture(scope="module")
def street(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    scene = make_scene(128, 96, 60, seed=5)
    path = tmp_path_factory.mktemp("street") / "street.mkv"
    write_video(path, scene.frames, 25.0, lossless=True)
    return path, scene


def _masks(folder: Path) -> np.ndarray:
    files = sorted(folder.glob("bin*.png"))
    return np.stack([cv2.imread(str(p), cv2.IMREAD_GRAYSCALE) > 127 for p in files])


def test_solve_scale_gives_full_resolution_masks_of_the_same_quality(
    run_cli, street, tmp_path: Path
) -> None:
    path, scene = street
    truth = np.asarray(scene.masks, dtype=bool)
    scores = {}
    for scale in ("1.0", "0.5"):
        out = tmp_path / scale
        res = run_cli("separate", path, "-o", out, "-q", "--solve-scale", scale, "--json")
        assert res.code == 0, res.err
        assert res.json()["settings"]["solve_scale"] == float(scale)
        masks = _masks(out / "masks")
        assert masks.shape == truth.shape == (60, 96, 128)
        scores[scale] = _f_measure(masks, truth)
    assert scores["1.0"] > 0.5  # this small synthetic scene at defaults (rank 2)
    assert scores["0.5"] > scores["1.0"] - 0.05, scores


def test_solve_scale_out_of_range_is_a_usage_error(run_cli, tiny_clip, tmp_path) -> None:
    res = run_cli("separate", tiny_clip, "-o", tmp_path / "o", "--solve-scale", "1.5")
    assert res.code == 2
    assert res.err.startswith("bpvideo: error:") and "solve" in res.err


# --- the downscaled path: auto scale, resizing all frames at once, factors, seams -------


def test_auto_solve_scale_follows_the_frame_size(run_cli, tiny_clip, tmp_path) -> None:
    assert effective_solve_scale("auto", 320, 240) == AUTO_SOLVE_SCALE == 0.25
    assert effective_solve_scale("auto", 640, 480) == 0.25
    assert effective_solve_scale("auto", 720, 480) == 0.25  # cdnet_fall: 180x120
    # larger frames: at most AUTO_SOLVE_MAX_PIXELS solved pixels, so windows need not shrink
    for w, h in ((1280, 720), (1920, 1080), (3840, 2160)):
        small = solve_size((h, w), effective_solve_scale("auto", w, h))
        assert abs(small[0] * small[1] - AUTO_SOLVE_MAX_PIXELS) < 0.02 * AUTO_SOLVE_MAX_PIXELS
    assert effective_solve_scale("auto", 200, 136) == 1.0  # CaVignal: F drops when scaled
    assert effective_solve_scale("auto", 160, 120) == 1.0
    assert effective_solve_scale(1.0, 320, 240) == 1.0
    assert effective_solve_scale(0.5, 64, 48) == 0.5
    assert SeparateSettings().solve_scale == "auto"
    res = run_cli("separate", tiny_clip, "-o", tmp_path / "o", "-q", "--json")
    assert res.code == 0, res.err
    summary = res.json()
    assert summary["settings"]["solve_scale"] == "auto"
    assert summary["solver"]["solve_scale"] == 1.0  # a small clip is solved whole
    res = run_cli("separate", tiny_clip, "-o", tmp_path / "p", "-q", "--json",
                  "--solve-scale", "AUTO")  # fmt: skip
    assert res.code == 0 and res.json()["settings"]["solve_scale"] == "auto"
    res = run_cli("separate", tiny_clip, "-o", tmp_path / "q", "--solve-scale", "half")
    assert res.code == 2 and "--solve-scale 'half' must be a number or 'auto'" in res.err


def test_auto_solve_scale_downscales_a_320x240_clip(run_cli, tmp_path: Path) -> None:
    scene = make_scene(320, 240, 24, seed=2)
    path = tmp_path / "big.mkv"
    write_video(path, scene.frames, 25.0, lossless=True)
    res = run_cli("separate", path, "-o", tmp_path / "o", "-q", "--json")
    assert res.code == 0, res.err
    assert res.json()["solver"]["solve_scale"] == 0.25
    masks = _masks(tmp_path / "o" / "masks")
    assert masks.shape == (24, 240, 320)
    assert _f_measure(masks, np.asarray(scene.masks, dtype=bool)) > 0.5


@pytest.mark.parametrize("shape", [(24, 32), (12, 16, 3)])
@pytest.mark.parametrize("n", [5, 700])  # 700 x 3 channels: more than one cv2.resize call
@pytest.mark.parametrize("interp", [cv2.INTER_AREA, cv2.INTER_LINEAR, cv2.INTER_NEAREST])
def test_resize_columns_equals_resizing_each_frame(shape, n, interp) -> None:
    rng = np.random.default_rng(n)
    frames = (rng.random((n, *shape)) * 255).astype(np.float32)
    data = np.ascontiguousarray(frames.reshape(n, -1).T)
    size = (shape[1] // 2 + 1, shape[0] // 2) if interp != cv2.INTER_AREA else (8, 6)
    got = resize_columns(data, shape, size, interp)
    want = np.stack([cv2.resize(f, size, interpolation=interp) for f in frames])
    # the same up to float rounding (OpenCV's vector paths differ with the channel count)
    np.testing.assert_allclose(got, want.reshape(n, -1).T, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("small_shape", [(6, 8), (5, 7, 3)])
def test_nearest_rows_is_a_nearest_neighbour_upsampling(small_shape) -> None:
    rng = np.random.default_rng(1)
    M = rng.standard_normal((int(np.prod(small_shape)), 9)).astype(np.float32)
    size = (small_shape[1] * 2 + 1, small_shape[0] * 2)
    index = nearest_rows(small_shape, size)
    np.testing.assert_array_equal(M[index], resize_columns(M, small_shape, size, 0))


def _factored(m_small: int, n: int, r: int = 2) -> SolverResult:
    rng = np.random.default_rng(4)
    U = rng.standard_normal((m_small, r)).astype(np.float32)
    V = rng.standard_normal((n, r)).astype(np.float32)
    L = U @ V.T
    return SolverResult(L=L, S=np.zeros_like(L), iterations=1, converged=True, factors=(U, V))


def upsample_background(*args, **kwargs) -> np.ndarray:
    """:func:`upsample_factors` as a dense (m, k) matrix."""
    background = upsample_factors(*args, **kwargs)
    return background.columns(0, background.shape[1])


def test_upsampling_through_the_factors_equals_resizing_L() -> None:
    small_shape, frame_shape, n = (6, 8), (12, 16), 10
    result = _factored(48, n)
    detail = np.random.default_rng(5).standard_normal((192, 1)).astype(np.float32)
    previous = np.zeros_like(detail)
    without = dataclasses.replace(result, factors=None)
    for cols in (slice(0, n), slice(3, n)):
        for prev, ramp in ((None, 0), (previous, 2)):
            got = upsample_background(result, cols, small_shape, frame_shape, detail, prev, ramp)
            want = upsample_background(without, cols, small_shape, frame_shape, detail, prev, ramp)
            np.testing.assert_allclose(got, want, atol=1e-4)
    # the plain resize of L plus the detail, column by column
    got = upsample_background(result, slice(0, n), small_shape, frame_shape, detail)
    up = resize_columns(result.L, small_shape, (16, 12), cv2.INTER_LINEAR)
    np.testing.assert_allclose(got, up + detail, atol=1e-4)
    # from the previous window's detail to this one's across the columns written
    ramped = upsample_background(result, slice(0, n), small_shape, frame_shape, detail,
                                 previous, ramp_from=2)  # fmt: skip
    t = np.clip((np.arange(n) - 2 + 1) / (n - 2), 0, 1)
    np.testing.assert_allclose(ramped, up + detail * t, atol=1e-4)
    assert np.allclose(ramped[:, 1], up[:, 1]) and np.allclose(ramped[:, -1], got[:, -1])


def _seams(out: Path, n: int, boundaries: list[int]) -> tuple[np.ndarray, float]:
    """Mean |change| of the background where windows meet, and its largest change inside."""
    bg = read_video(out / "background.mkv").data.T.reshape(n, -1)
    jumps = np.abs(np.diff(bg, axis=0)).mean(axis=1)
    at = [b - 1 for b in boundaries]
    return jumps[at], float(np.delete(jumps, at).max())


def test_windows_of_a_downscaled_solve_meet_without_a_jump(run_cli, tmp_path: Path) -> None:
    """Each window adds its own median detail: it is ramped from the previous window's.

    Without the ramp (each window adding its own detail to all its frames) this clip's
    background jumped by 2.5-2.8 grey levels where windows meet, against 1.6 at most
    inside them (and 1.4-1.8 at the seams of the full-resolution solve).
    """
    scene = make_scene(64, 48, 120, seed=3)
    path = tmp_path / "scene.mkv"
    write_video(path, scene.frames, 25.0, lossless=True)
    # exact H_r (--sweeps 0): the one-sweep approximation moves seams of so small a clip
    # by up to 0.7 grey levels on its own, which would hide what the ramp does
    args = ["--lossless", "-q", "--rank", "1", "--window", "40", "--overlap", "8", "--sweeps", "0"]
    boundaries = [40, 72, 104]  # 40 frames, then 32 new ones per window
    seams = {}
    for scale in ("1", "0.5"):
        out = tmp_path / scale
        assert run_cli("separate", path, "-o", out, "--solve-scale", scale, *args).code == 0
        seams[scale], inside = _seams(out, 120, boundaries)
        assert seams[scale].max() <= inside + 1.0, (scale, seams[scale], inside)
    assert seams["0.5"].max() <= seams["1"].max() + 0.5, seams


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
