"""The run loop: blocks in order, windows solved one at a time, the report of each."""

from __future__ import annotations

import numpy as np
import pytest

from bpvideo.errors import InputError
from bpvideo.pipeline import Job, iter_blocks, iter_solutions
from bpvideo.pipeline.finish import finish
from bpvideo.settings import SeparateSettings
from bpvideo.sinks.summary import ReportBuilder
from bpvideo.sources.arrays import open_frames
from tests.conftest import f_measure, street_frames


def test_blocks_come_in_order_window_by_window() -> None:
    frames, truth = street_frames(n=90, seed=4)
    settings = SeparateSettings(window=40, overlap=10).validate()
    source = open_frames(frames)
    job = Job.of(source, settings)
    assert job.plan.window == 40
    builder = ReportBuilder(source, settings, job.plan)
    blocks = []
    for block in iter_blocks(job):
        builder.write(block)
        blocks.append(block)
    windows = [b.window for b in blocks if b.last]
    assert [w.index for w in windows] == [0, 1, 2] and [w.frames for w in windows] == [40, 30, 20]
    # the blocks of a window cover its new frames exactly, in order
    for w in windows:
        mine = [b for b in blocks if b.window is w]
        assert [b.offset for b in mine] == list(np.cumsum([0] + [len(b) for b in mine])[:-1])
        assert w.report is not None and w.report.new_frames == w.frames == sum(map(len, mine))
    numbers = [n for b in blocks for n in b.numbers]
    assert numbers == list(range(90))
    masks = np.concatenate([b.masks for b in blocks])
    assert f_measure(masks, truth) > 0.7
    report = builder.build(seconds=job.clock.total()).to_dict()
    assert report["windows"]["count"] == 3 and report["frames"] == 90
    assert report["mask_numbers"] == list(range(1, 91))
    assert set(report["seconds"]) == {"read", "solve", "masks", "write", "total"}


def test_nothing_selected_is_an_input_error() -> None:
    frames, _ = street_frames(n=10)
    settings = SeparateSettings(start=20).validate()
    with pytest.raises(InputError, match="no frames selected"):
        list(iter_blocks(Job.of(open_frames(frames, start=20), settings)))


def test_a_solution_finishes_into_the_blocks_of_the_run() -> None:
    """Finishing a solved window by hand gives the blocks the loop gives, 32 frames a
    block at 96x72 (the last one short)."""
    frames, _ = street_frames(n=70, seed=5)
    settings = SeparateSettings(window=0).validate()
    run = list(iter_blocks(Job.of(open_frames(frames), settings)))
    solution = next(iter_solutions(Job.of(open_frames(frames), settings)))
    again = list(finish(solution, settings.masks))
    assert [len(b) for b in run] == [len(b) for b in again] == [32, 32, 6]
    for a, b in zip(run, again, strict=True):
        assert a.numbers == b.numbers and a.offset == b.offset
        np.testing.assert_array_equal(a.masks, b.masks)
        np.testing.assert_array_equal(a.background, b.background)
    assert run[-1].last and not run[0].last
