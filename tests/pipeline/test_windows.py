"""Windowed streaming solve, stdin pipes, colour, many inputs, the memory plan."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo.pipeline.windows import chunk_windows
from bpvideo.sinks.writers import write_video
from bpvideo.sources.video import read_video
from bpvideo.synthetic import make_scene
from tests.conftest import read_masks


@pytest.fixture(scope="module")
def scene_clip(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """A 120-frame 64x48 street scene (lossless) with ground truth."""
    scene = make_scene(64, 48, 120, seed=3)
    path = tmp_path_factory.mktemp("scene") / "scene.mkv"
    write_video(path, scene.frames, 25.0, lossless=True)
    return path, scene


# --- windows ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "window", "overlap"), [(100, 30, 5), (31, 30, 5), (30, 30, 0), (7, 30, 5), (61, 12, 11)]
)
def test_windows_cover_every_frame_once_in_order(n: int, window: int, overlap: int) -> None:
    frames = ((i, np.full((1, 1, 3), i % 256, np.uint8)) for i in range(n))
    new: list[int] = []
    previous: list[int] = []
    for chunk, new_from in chunk_windows(frames, window, overlap, 0, min_frames=6):
        numbers = [i for i, _ in chunk]
        assert len(numbers) <= max(window, 6)
        assert numbers == sorted(numbers) and numbers == list(range(numbers[0], numbers[-1] + 1))
        if previous:  # the shared frames are the previous window's last ones
            assert numbers[:new_from] == previous[len(previous) - new_from :]
            assert new_from >= overlap
        assert len(numbers) >= min(n, 6)
        new += numbers[new_from:]
        previous = numbers
    assert new == list(range(n))


def test_windowed_run_is_continuous_ordered_and_complete(run_cli, scene_clip, tmp_path) -> None:
    path, scene = scene_clip
    common = ["--lossless", "-q", "--rank", "1"]
    assert run_cli("separate", path, "-o", tmp_path / "whole", "--window", "0", *common).code == 0
    res = run_cli("separate", path, "-o", tmp_path / "win", "--window", "40", "--overlap", "8",
                  *common)  # fmt: skip
    assert res.code == 0, res.err
    summary = json.loads((tmp_path / "win" / "summary.json").read_text())
    windows = summary["windows"]
    assert windows["window"] == 40 and windows["count"] == 4  # 40, then 32 new each
    assert [w["new_frames"] for w in windows["list"]] == [40, 32, 32, 16]
    assert summary["frames"] == 120 and summary["frame_numbers"] == list(range(120))
    masks = read_masks(tmp_path / "win" / "masks")
    assert masks.shape == (120, 48, 64)
    assert [p.name for p in sorted((tmp_path / "win" / "masks").iterdir())] == [
        f"bin{i:06d}.png" for i in range(1, 121)
    ]
    bg_win = read_video(tmp_path / "win" / "background.mkv").data.T.reshape(120, -1)
    bg_whole = read_video(tmp_path / "whole" / "background.mkv").data.T.reshape(120, -1)
    assert bg_win.shape == bg_whole.shape
    # The background is the same model, and does not jump where windows meet.
    assert np.abs(bg_win - bg_whole).mean() < 3.0
    jumps = np.abs(np.diff(bg_win, axis=0)).mean(axis=1)
    boundaries = [40, 72, 104]
    inside = np.delete(jumps, [b - 1 for b in boundaries])
    assert jumps[[b - 1 for b in boundaries]].max() <= inside.max() + 1.0
    # Masks as good as the whole-video solve on the known ground truth.
    gt = scene.masks

    def f1(m: np.ndarray) -> float:
        tp = (m & gt).sum()
        return 2 * tp / (m.sum() + gt.sum())

    whole = read_masks(tmp_path / "whole" / "masks") > 0
    assert f1(masks > 0) > 0.8 and f1(masks > 0) > f1(whole) - 0.05


# --- real data -------------------------------------------------------------------------


@pytest.mark.shared_data
@pytest.mark.slow
def test_highway_windowed_matches_whole(shared_data: Path, tmp_path: Path, run_cli) -> None:
    from bpvideo.evaluate import evaluate

    seq = shared_data / "cdnet_highway"
    gt = seq / "groundtruth"
    size = cv2.imread(str(sorted(gt.glob("gt*.png"))[0]), cv2.IMREAD_GRAYSCALE).shape[::-1]
    scores = {}
    for window in ("0", "120"):
        out = tmp_path / f"w{window}"
        # 240 frames: two windows of 120 against one of 240
        res = run_cli("separate", seq, "-o", out, "--scale", "0.5", "--window", window,
                      "--end", "240", "-q")  # fmt: skip
        assert res.code == 0, res.err
        # Score at the ground truth's size: masks scaled back up (nearest).
        full = tmp_path / f"full{window}"
        (full / "masks").mkdir(parents=True)
        shutil.copy(out / "summary.json", full / "summary.json")
        for p in (out / "masks").iterdir():
            m = cv2.imread(str(p), cv2.IMREAD_GRAYSCALE)
            up = cv2.resize(m, size, interpolation=cv2.INTER_NEAREST)
            cv2.imwrite(str(full / "masks" / p.name), up)
        scores[window] = evaluate(full, gt).summary["f_measure"]
    assert scores["0"] > 0.7
    assert abs(scores["120"] - scores["0"]) < 0.02, scores
