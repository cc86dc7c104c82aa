"""Tests of the synthetic street scene (:func:`bpvideo.synthetic.make_scene`) and of the
bundled ``sample_data/`` made from it."""

from __future__ import annotations

import gc
import importlib.util
import warnings
from pathlib import Path

import cv2
import imageio_ffmpeg
import numpy as np
import pytest

from bpvideo.synthetic import Scene, make_scene

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data"
W, H, T = 160, 120, 150


def grey(image: np.ndarray) -> np.ndarray:
    """Grey level (float) of a BGR image or stack of images, as cv2.COLOR_BGR2GRAY."""
    return np.asarray(image, dtype=np.float32) @ np.array([0.114, 0.587, 0.299], np.float32)


def read_grey_video(path: Path) -> tuple[dict, np.ndarray]:
    """Decode a video to grey frames, (meta, (n, H, W) uint8), with imageio-ffmpeg."""
    with warnings.catch_warnings():
        # imageio-ffmpeg does not close the pipes of an ffmpeg that has already exited
        # (ResourceWarning at garbage collection): collect them here, warnings off.
        warnings.simplefilter("ignore", ResourceWarning)
        gen = imageio_ffmpeg.read_frames(str(path), pix_fmt="gray", bpp=1)
        meta = next(gen)
        height = meta["size"][1]
        frames = np.stack([np.frombuffer(buf, np.uint8).reshape(height, -1) for buf in gen])
        del gen
        gc.collect()
    return meta, frames


@pytest.fixture(scope="module")
def scene() -> Scene:
    return make_scene()


@pytest.fixture(scope="module")
def clean() -> Scene:
    return make_scene(noise=0.0, drift=0.0)


def test_shapes_and_dtypes(scene: Scene) -> None:
    assert scene.frames.shape == (T, H, W, 3) and scene.frames.dtype == np.uint8
    assert scene.masks.shape == (T, H, W) and scene.masks.dtype == np.bool_
    assert scene.background.shape == (H, W, 3) and scene.background.dtype == np.uint8
    assert scene.fps == 25.0
    assert scene.labels is not None and scene.labels.shape == (T, H, W)
    np.testing.assert_array_equal(scene.masks, scene.labels > 0)
    assert scene.labels.max() == len(scene.objects) >= 4
    small = make_scene(48, 32, 7, seed=5)
    assert small.frames.shape == (7, 32, 48, 3)
    assert small.masks.shape == (7, 32, 48)
    assert small.background.shape == (32, 48, 3)


def test_deterministic_for_a_seed_and_different_across_seeds() -> None:
    a = make_scene(64, 48, 12, seed=3)
    b = make_scene(64, 48, 12, seed=3)
    c = make_scene(64, 48, 12, seed=4)
    np.testing.assert_array_equal(a.frames, b.frames)
    np.testing.assert_array_equal(a.masks, b.masks)
    np.testing.assert_array_equal(a.background, b.background)
    assert not np.array_equal(a.background, c.background)
    assert not np.array_equal(a.frames, c.frames)


def test_background_does_not_depend_on_clip_length() -> None:
    np.testing.assert_array_equal(
        make_scene(64, 48, 5, seed=2).background, make_scene(64, 48, 30, seed=2).background
    )


def test_masks_nonempty_in_most_frames_and_empty_without_objects(scene: Scene) -> None:
    counts = scene.masks.reshape(T, -1).sum(axis=1)
    assert (counts > 0).mean() > 0.85
    # The clip starts and ends with an empty street: those frames are background only.
    assert counts[0] == 0 and counts[-1] == 0
    assert counts.max() < 0.25 * H * W  # foreground is a minority of each frame
    empty = np.flatnonzero(counts == 0)
    assert 2 <= len(empty) < 0.15 * T
    for t in empty:
        residual = np.abs(scene.frames[t] - scene.background * scene.gain[t])
        assert residual.mean() < 3.0


def test_stopping_object_is_static(scene: Scene) -> None:
    first, last = scene.stop_frames
    assert 0.25 * T <= last - first <= 0.4 * T
    k = scene.objects.index("parked car") + 1
    parked = scene.labels[first:last] == k
    assert parked[0].sum() > 100
    assert (parked == parked[0]).all()  # its own pixels never change
    # Nothing else covers that area while it stands, so the GT is constant there.
    ys, xs = np.nonzero(parked[0])
    box = (slice(None), slice(ys.min(), ys.max() + 1), slice(xs.min(), xs.max() + 1))
    window = scene.masks[first:last][box]
    assert (window == window[0]).all()
    # It moves before and after the stop.
    assert not np.array_equal(scene.labels[first - 3] == k, parked[0])
    assert not np.array_equal(scene.labels[last + 2] == k, parked[0])


def test_frames_equal_background_exactly_outside_masks_without_noise(clean: Scene) -> None:
    same = (clean.frames == clean.background[None]).all(axis=-1)
    np.testing.assert_array_equal(same | clean.masks, np.ones_like(same))


def test_frames_differ_from_background_where_masks_are_set(scene: Scene) -> None:
    bg = scene.background.astype(np.float32)
    gain = scene.gain.astype(np.float32)
    residual = scene.frames - bg[None] * gain[:, None, None, None]
    outside = residual[~scene.masks]
    # Outside the masks: sensor noise (std 2) plus rounding, nothing else.
    assert np.abs(outside).max() <= 6 * 2.0 + 1.0
    assert 1.5 < outside.std(dtype=float) < 2.5
    assert abs(outside.mean(dtype=float)) < 0.2
    # Inside: every object, in every frame it shows, differs clearly from the background.
    grey_residual = np.abs(grey(scene.frames) - grey(bg)[None] * gain[:, None, None])
    n = len(scene.objects) + 1
    index = (np.arange(T)[:, None, None] * n + scene.labels).ravel()
    area = np.bincount(index, minlength=T * n).reshape(T, n)[:, 1:]
    total = np.bincount(index, grey_residual.ravel().astype(float), minlength=T * n).reshape(T, n)[
        :, 1:
    ]
    shown = area > 0
    assert shown.sum() > T  # objects show in many frames
    assert (total[shown] / area[shown]).min() > 30.0


def test_illumination_drift_and_fresh_noise(scene: Scene) -> None:
    assert scene.gain.shape == (T,)
    assert np.isclose(scene.gain.max(), 1.08, atol=0.005)
    assert np.isclose(scene.gain.min(), 0.92, atol=0.005)
    assert np.abs(np.diff(scene.gain)).max() < 0.01  # smooth
    no_drift = make_scene(32, 24, 3, drift=0.0)
    np.testing.assert_array_equal(no_drift.gain, np.ones(3))
    # Noise differs between two empty frames under (almost) the same gain.
    a = scene.frames[0].astype(float) / scene.gain[0]
    b = scene.frames[1].astype(float) / scene.gain[1]
    assert np.abs(a - b).mean() > 1.0


@pytest.mark.parametrize(
    "kwargs",
    [{"width": 8}, {"height": 10}, {"frames": 0}, {"noise": -1.0}, {"drift": 0.5}],
)
def test_invalid_arguments(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        make_scene(**kwargs)


def test_sample_video_decodes(scene: Scene) -> None:
    path = SAMPLE / "sample.mp4"
    assert path.is_file(), "sample_data/sample.mp4 is missing: run sample_data/make_sample.py"
    meta, frames = read_grey_video(path)
    assert tuple(meta["size"]) == (W, H)
    assert meta["fps"] == pytest.approx(25.0)
    assert frames.shape == (T, H, W)
    # Lossy, but close to the scene it was encoded from.
    rmse = np.sqrt(((frames - grey(scene.frames)) ** 2).mean())
    assert rmse < 5.0
    assert path.stat().st_size < 1_000_000


def test_sample_groundtruth_matches_make_scene(scene: Scene) -> None:
    files = sorted((SAMPLE / "groundtruth").glob("*.png"))
    assert [f.name for f in files] == [f"gt{i:06d}.png" for i in range(1, T + 1)]
    for path, mask in zip(files, scene.masks, strict=True):
        gt = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
        assert gt is not None and gt.dtype == np.uint8 and gt.shape == (H, W)
        np.testing.assert_array_equal(gt, np.where(mask, 255, 0).astype(np.uint8))


def test_sample_data_is_small_and_documented() -> None:
    total = sum(p.stat().st_size for p in SAMPLE.rglob("*") if p.is_file())
    assert total < 2_000_000
    readme = (SAMPLE / "README.md").read_text(encoding="utf-8")
    assert "CC0" in readme and "make_sample.py" in readme


def test_make_sample_script_writes_atomically(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("make_sample", SAMPLE / "make_sample.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--out", str(tmp_path)]) == 0
    names = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    assert names[:3] == ["README.md", "groundtruth", "groundtruth/gt000001.png"]
    assert names[-1] == "sample.mp4" and len(names) == 3 + T  # no temporary files left
    for name in ("README.md", "groundtruth/gt000001.png", "groundtruth/gt000075.png"):
        assert (tmp_path / name).read_bytes() == (SAMPLE / name).read_bytes()
