"""Finishing solved windows: masks, backgrounds and foreground formed a block at a time, and the
fast paths of their outputs."""

from __future__ import annotations

import numpy as np
import pytest

from bpvideo.pipeline.finish import columns_to_frames
from bpvideo.records import masked_frames


@pytest.mark.parametrize("colour", [False, True])
def test_masked_frames_equal_numpy_where(colour: bool) -> None:
    rng = np.random.default_rng(4)
    frames = rng.integers(0, 256, (5, 24, 32, 3) if colour else (5, 24, 32), dtype=np.uint8)
    masks = rng.random((5, 24, 32)) < 0.3
    want = np.where(masks[..., None] if colour else masks, frames, 0)
    np.testing.assert_array_equal(masked_frames(frames, masks), want)


@pytest.mark.parametrize("frame_shape", [(6, 8), (4, 5, 3)])
def test_columns_to_frames_rounds_saturates_and_transposes(frame_shape) -> None:
    rng = np.random.default_rng(2)
    m = int(np.prod(frame_shape))
    M = rng.uniform(-40, 300, (m, 7)).astype(np.float32)
    M[0, :4] = [0.5, 1.5, 2.5, 254.5]  # ties go to even, like np.rint
    got = columns_to_frames(M, frame_shape)
    want = np.clip(np.rint(M.T.reshape((7, *frame_shape))), 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got[:4].reshape(4, -1)[:, 0], [0, 2, 2, 254])
    np.testing.assert_array_equal(columns_to_frames(M[:, 2:5], frame_shape), got[2:5])
