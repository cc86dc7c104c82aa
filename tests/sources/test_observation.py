"""The observation mask: from an image, a folder of masks, or drawn at random."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo.errors import InputError
from bpvideo.sources.observation import load_observation_mask, random_observation
from bpvideo.sources.video import read_video


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
