"""The run loop: blocks in order, windows solved one at a time, the report of each."""

from __future__ import annotations

import numpy as np
import pytest

import bpvideo.pipeline.finish as finish_module
from bpvideo import cores
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


@pytest.mark.parametrize("budget", [None, 40])
def test_a_windows_first_backgrounds_are_handed_on_before_its_blocks(monkeypatch, budget) -> None:
    """``Job.early`` gets the background of each window's first whole blocks (all of a
    small window's; one block with a 40-frame budget), in order, before the window's
    first block comes, and those are the blocks' own backgrounds: the blocks equal those
    of a run without it."""
    if budget is not None:
        monkeypatch.setattr(finish_module, "EARLY_PIXELS", budget * 96 * 72)
    monkeypatch.setattr(cores, "_STATE", dict(cores._STATE))  # the run sets its threads
    frames, _ = street_frames(n=90, seed=4)
    settings = SeparateSettings(window=40, overlap=10, threads=2).validate()
    plain = list(iter_blocks(Job.of(open_frames(frames), settings)))
    job = Job.of(open_frames(frames), settings)
    handed: list[tuple[int, np.ndarray]] = []  # (blocks out when handed, frames)
    out: list = []
    job.early = lambda background: handed.append((len(out), background.copy()))
    for block in iter_blocks(job):
        out.append(block)
    assert [len(b) for b in out] == [len(b) for b in plain] == [32, 8, 30, 20]
    for a, b in zip(out, plain, strict=True):
        assert a.numbers == b.numbers
        np.testing.assert_array_equal(a.masks, b.masks)
        np.testing.assert_array_equal(a.background, b.background)
    # each window's first whole blocks (32 + 8 frames of the first window; one block
    # each with the budget), handed on before the window's first block came out
    first = {id(b.window): i for i, b in reversed(list(enumerate(out)))}
    want = [i for i, b in enumerate(out) if budget is None or b.offset == 0]
    assert len(handed) == len(want) == (4 if budget is None else 3)
    for (when, background), i in zip(handed, want, strict=True):
        assert when == first[id(out[i].window)]
        np.testing.assert_array_equal(background, out[i].background)


def test_one_thread_hands_nothing_on_early(monkeypatch) -> None:
    """``--threads 1``: the background is formed with the masks, in turn (no thread)."""
    monkeypatch.setattr(cores, "_STATE", dict(cores._STATE))  # the run sets its threads
    frames, _ = street_frames(n=40, seed=4)
    job = Job.of(open_frames(frames), SeparateSettings(window=0, threads=1).validate())
    handed: list[np.ndarray] = []
    job.early = handed.append
    assert sum(len(b) for b in iter_blocks(job)) == 40
    assert handed == []
