"""``--solve-scale``: solve on downscaled frames, masks and outputs at full resolution."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo.pipeline import resize_columns
from bpvideo.synthetic import make_scene
from bpvideo.writer import write_video


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
