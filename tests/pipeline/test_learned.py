"""A learned background: fit once, then masks of new frames without a solve."""

from __future__ import annotations

import numpy as np
import pytest

import bpvideo
from bpvideo.errors import InputError
from bpvideo.pipeline.learned import iter_learned_blocks, learn, robust_coefficients
from bpvideo.settings import SeparateSettings
from bpvideo.sources.arrays import open_frames
from bpvideo.sources.video import video_from_frames
from tests.conftest import f_measure, street_frames


@pytest.fixture(scope="module")
def street() -> tuple[np.ndarray, np.ndarray]:
    return street_frames(n=160, seed=0)


def test_apply_to_unseen_frames_gives_the_masks_of_the_batch_solve(street) -> None:
    """The model learns on frames 0-59 and masks frames 60-159, which it never saw; the
    batch solve separates all 160 frames at once. Tolerance: the two mask sets agree on
    at least 98.5 % of the pixels, their F-measure against each other is at least 0.90,
    and against the ground truth the learned masks are within 0.03 of the batch ones
    (measured: 99.3 %, 0.933; 0.946 against 0.957)."""
    frames, truth = street
    batch = bpvideo.separate(frames).masks[60:]
    model = bpvideo.BackgroundModel().fit(frames[:60])
    applied = model.apply(frames[60:])
    assert applied.shape == batch.shape == (100, 72, 96) and applied.dtype == bool
    assert (applied == batch).mean() >= 0.985
    assert f_measure(applied, batch) >= 0.90
    assert f_measure(applied, truth[60:]) >= f_measure(batch, truth[60:]) - 0.03


def test_apply_one_frame_or_many(street) -> None:
    frames, _ = street
    model = bpvideo.BackgroundModel(rank=1).fit(frames[:40])
    many = model.apply(frames[40:50])
    one = model.apply(frames[45])
    assert one.shape == (72, 96) and np.array_equal(one, many[5])
    assert np.array_equal(model.apply(iter(frames[40:50])), many)  # an iterable of frames
    grey = model.apply(frames[40:50, :, :, 1])  # grey frames are accepted too
    assert grey.shape == many.shape
    assert model.background_image.shape == (72, 96) and model.background_image.dtype == np.uint8
    assert model.threshold > 0


def test_apply_needs_a_fit_and_frames_of_that_size(street) -> None:
    frames, _ = street
    with pytest.raises(InputError, match="call fit"):
        bpvideo.BackgroundModel().apply(frames[0])
    model = bpvideo.BackgroundModel().fit(frames[:30])
    with pytest.raises(InputError, match="learned on 96x72"):
        model.apply(frames[:5, :40, :40])


@pytest.mark.parametrize(
    ("frame", "match"),
    [
        (lambda f: f[0, :40, :56], r"the frame is 56x40 but the background was learned on 96x72"),
        (lambda f: f[0, :12, :16], r"the frame is 16x12 but .* learned on 96x72"),
        (lambda f: f[0, :, :, :1].repeat(4, axis=2), r"shape \(72, 96, 4\)"),
        (lambda f: f[0].astype(np.float32) / 255, r"values in 0\.\.1 .*multiply by 255"),
        (lambda f: f[:4].astype(np.float64) / 255, r"values in 0\.\.1 .*multiply by 255"),
    ],
    ids=["colour-other-size", "small-colour", "four-channels", "float-0-1", "floats-0-1"],
)
def test_apply_refuses_frames_it_would_misread(street, frame, match) -> None:
    """A colour frame of another size is one frame (not H grey frames of W x 3), floats
    of 0..1 are no black frames."""
    frames, _ = street
    model = bpvideo.BackgroundModel(rank=1).fit(frames[:30])
    with pytest.raises(InputError, match=match):
        model.apply(frame(frames))
    floats = model.apply(frames[40:44].astype(np.float32))  # 0..255 floats: the rule
    assert np.array_equal(floats, model.apply(frames[40:44]))


def test_robust_coefficients_leave_the_foreground_out(street) -> None:
    """With a bright object over a quarter of the frame, the background coefficients are
    those of the frame without it (plain least squares would be pulled up)."""
    frames, _ = street
    settings = SeparateSettings(rank=1).validate()
    learned = learn(open_frames(frames[:30]), settings)
    clean = video_from_frames([(0, frames[40])])
    dirty_frame = frames[40].copy()
    dirty_frame[:36, :48] = 255
    dirty = video_from_frames([(0, dirty_frame)])
    want = robust_coefficients(learned, clean.data)
    got = robust_coefficients(learned, dirty.data)
    plain = learned.basis.T @ dirty.data.astype(np.float32)
    assert abs(got - want).max() < 0.01 * abs(want).max()
    assert abs(plain - want).max() > 5 * abs(got - want).max()


def test_learned_windows_are_finished_like_solved_ones(street) -> None:
    frames, _ = street
    settings = SeparateSettings().validate()
    learned = learn(open_frames(frames[:60]), settings)
    blocks = list(iter_learned_blocks(learned, open_frames(frames[60:]), settings))
    assert sum(len(b) for b in blocks) == 100
    firsts = [b for b in blocks if b.offset == 0]
    assert [b.numbers[0] for b in firsts] == [0, 64]  # windows of APPLY_FRAMES frames
    assert [b.window.index for b in firsts] == [0, 1]
    for b in blocks:
        assert b.window.report is None
        assert b.masks.shape == (len(b), 72, 96) and b.background.dtype == np.uint8
