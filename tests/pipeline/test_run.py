"""The generator of finished windows: numbers, windows, release, the report of each."""

from __future__ import annotations

import numpy as np
import pytest

from bpvideo.errors import InputError
from bpvideo.io.arrays import open_frames
from bpvideo.io.summary import ReportBuilder, Stopwatch
from bpvideo.pipeline.run import iter_windows
from bpvideo.settings import SeparateSettings
from tests.conftest import f_measure, street_frames


def test_windows_come_finished_one_at_a_time() -> None:
    frames, truth = street_frames(n=90, seed=4)
    settings = SeparateSettings(window=40, overlap=10).validate()
    clock = Stopwatch()
    source = open_frames(frames)
    builder = ReportBuilder(source, settings)
    seen = []
    for window in iter_windows(source, settings, clock=clock):
        assert window.report is not None and window.plan.window == 40
        assert window.report.new_frames == len(window) == len(window.masks)
        blocks = list(window.blocks(16))  # formed 32 at a time, handed out 16 at a time
        assert sum(len(b.masks) for b in blocks) == len(window)
        assert np.array_equal(np.concatenate([b.masks for b in blocks]), window.masks)
        builder.add(window)
        seen.append(window)
    assert [w.numbers[0] for w in seen] == [0, 40, 70] and seen[-1].numbers[-1] == 89
    # released windows keep their finished arrays, not what they were made from
    assert all(w._source is None and w.background.dense is None for w in seen)
    masks = np.concatenate([w.masks for w in seen])
    assert f_measure(masks, truth) > 0.7
    report = builder.build(seconds=clock.total()).to_dict()
    assert report["windows"]["count"] == 3 and report["frames"] == 90
    assert report["mask_numbers"] == list(range(1, 91))
    assert set(report["seconds"]) == {"read", "solve", "masks", "write", "total"}


def test_nothing_selected_is_an_input_error() -> None:
    frames, _ = street_frames(n=10)
    settings = SeparateSettings(start=20).validate()
    with pytest.raises(InputError, match="no frames selected"):
        list(iter_windows(open_frames(frames, start=20), settings))


def test_streamed_blocks_are_the_kept_ones_and_are_not_kept() -> None:
    """A writer streams a window's outputs (blocks(keep=False)), as the old output stage
    did: the same blocks, the window keeps none of them, and still counts its foreground."""
    frames, _ = street_frames(n=70, seed=5)
    settings = SeparateSettings(window=0).validate()
    kept = next(iter_windows(open_frames(frames), settings))
    masks, background = kept.masks.copy(), kept.background_frames.copy()
    streamed = next(iter_windows(open_frames(frames), settings))
    blocks = list(streamed.blocks(keep=False))
    assert [len(b.masks) for b in blocks] == [32, 32, 6]
    assert np.array_equal(np.concatenate([b.masks for b in blocks]), masks)
    assert np.array_equal(np.concatenate([b.background for b in blocks]), background)
    assert streamed.foreground_pixels == int(masks.sum()) == kept.foreground_pixels
    with pytest.raises(RuntimeError, match="streamed"):
        _ = streamed.masks
    streamed.release()  # nothing to form: they were streamed
