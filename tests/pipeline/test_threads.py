"""Threads change no mask (issue 39): the compiled match split across threads equals the
one-thread match, and blocks of masks formed side by side equal those formed one after
another, on real frames."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo import cores, separate
from bpvideo.masks import appearances as ap
from bpvideo.masks.appearances import build_appearances
from bpvideo.pipeline.finish import in_order


def _frames(folder: Path, n: int) -> np.ndarray:
    files = sorted(p for p in (folder / "input").iterdir() if p.suffix in (".jpg", ".png"))
    return np.stack([cv2.imread(str(p)) for p in files[:n]])


@pytest.fixture
def _restore_threads(monkeypatch):
    monkeypatch.setattr(cores, "_STATE", dict(cores._STATE))


@pytest.mark.shared_data
@pytest.mark.usefixtures("_restore_threads")
def test_the_threaded_match_equals_the_single_thread_one_on_real_frames(shared_data, monkeypatch):
    pytest.importorskip("numba")
    from bpvideo.masks import _appearance_kernel as kernel

    frames = _frames(shared_data / "cdnet_fall", 60)  # leaves in the wind: most pixels tested
    samples = frames[:48:4]
    fg = np.zeros(samples.shape[:3], dtype=bool)
    modes = build_appearances(samples, fg, np.arange(0, 48, 4), 60, 12.0)
    tested = frames[50:56]
    median = np.median(frames[:48], axis=0)
    candidates = (np.abs(tested - median) > 12).any(axis=3)
    monkeypatch.setattr(ap, "COMPILED_FROM", 0)
    monkeypatch.setattr(kernel, "SPLIT_FROM", 1000)
    answers = []
    for threads in (1, 2, 4):
        cores.use(threads)
        answers.append(modes.unexplained(tested, candidates, first=50))
    assert candidates.sum() > 20_000
    assert 0 < answers[0].sum() < candidates.sum()
    assert all(np.array_equal(answers[0], a) for a in answers[1:])


@pytest.mark.shared_data
@pytest.mark.slow
@pytest.mark.usefixtures("_restore_threads")
def test_masks_formed_side_by_side_equal_those_formed_one_by_one(shared_data):
    frames = _frames(shared_data / "sbi_PeopleAndFoliage", 80)
    one = separate(frames, threads=1)
    three = separate(frames, threads=3)
    assert one.masks.any()
    assert np.array_equal(one.masks, three.masks)
    assert np.array_equal(one.background, three.background)


def _same(a, b) -> bool:
    """Whether two models (or their appearances) hold the same bytes, field by field."""
    if dataclasses.is_dataclass(a):
        fields = [f.name for f in dataclasses.fields(a)]
        return type(a) is type(b) and all(_same(getattr(a, f), getattr(b, f)) for f in fields)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    return a == b


@pytest.mark.shared_data
@pytest.mark.usefixtures("_restore_threads")
@pytest.mark.parametrize("name", ["sbi_PeopleAndFoliage", "cdnet_highway"])
def test_a_windows_model_is_the_same_with_one_thread_and_two(shared_data, monkeypatch, name):
    """The window's model forms its background colour and bursts beside the thresholds'
    spreads, and the pooled test's limits beside the appearances, with two threads: the
    same bytes as one after the other."""
    from bpvideo.masks import bursts, sample
    from bpvideo.pipeline import run

    frames = _frames(shared_data / name, 40)
    models, found = [], []
    model_of, burst_samples = run.window_model, bursts.burst_samples

    def kept(*args, **kwargs):
        models.append(model_of(*args, **kwargs))
        return models[-1]

    def bursts_kept(*args):
        found.append(burst_samples(*args))
        return found[-1]

    monkeypatch.setattr(run, "window_model", kept)
    monkeypatch.setattr(sample, "burst_samples", bursts_kept)
    one_run, two_run = separate(frames, threads=1), separate(frames, threads=2)
    one, two = models
    assert one.shade is not None and one.appearances is not None
    assert found[0] is not None and np.array_equal(found[0], found[1])
    assert _same(one, two)
    assert np.array_equal(one_run.masks, two_run.masks)


def test_in_order_keeps_the_order_and_stops_early():
    import time

    def slow(i):
        time.sleep(0.01 * (5 - i % 5))
        return i * i

    assert list(in_order(slow, range(12), 3)) == [i * i for i in range(12)]
    assert list(in_order(slow, range(4), 1)) == [0, 1, 4, 9]
    first = in_order(slow, range(100), 2)
    assert next(first) == 0
    first.close()  # the rest cancelled, the pool shut down


@pytest.mark.shared_data
def test_a_spooled_run_writes_the_same_with_one_thread_and_two(shared_data, tmp_path):
    """A video at 320x240 is spooled and solved downscaled: its background's detail is
    formed beside the solve with two threads, after it with one; the masks, the
    background still and the summary's numbers are the same bytes either way."""
    from tests.conftest import bpvideo_process

    clip = shared_data / "videos" / "highway.avi"
    outs = []
    for threads in (1, 2):
        out = tmp_path / f"t{threads}"
        done = bpvideo_process("separate", clip, "-o", out, "--frames", "60", "--threads",
                               str(threads), "--no-video", "-q")  # fmt: skip
        assert done.returncode == 0, done.stderr.decode()
        outs.append(out)
    one, two = outs
    summary = json.loads((one / "summary.json").read_text())
    assert summary["windows"]["spooled"] and summary["solver"]["solve_scale"] < 1
    names = sorted(p.name for p in (one / "masks").iterdir())
    assert len(names) == 60 and names == sorted(p.name for p in (two / "masks").iterdir())
    for name in names:
        assert (one / "masks" / name).read_bytes() == (two / "masks" / name).read_bytes(), name
    assert (one / "background.png").read_bytes() == (two / "background.png").read_bytes()
    windows = [json.loads((o / "summary.json").read_text())["windows"]["list"] for o in outs]
    assert windows[0] == windows[1]


@pytest.mark.usefixtures("_restore_threads")
def test_a_result_folder_is_the_same_bytes_with_one_thread_and_two(tmp_path, monkeypatch):
    """With two threads each window's first backgrounds go to the background video while
    the window's model is formed (:class:`~bpvideo.pipeline.finish.EarlyBackground`),
    with one they go with their blocks: the videos, masks and frame table are the same
    bytes either way, over windows."""
    from bpvideo import separate_file
    from bpvideo.sinks.folder import FolderSink
    from bpvideo.sinks.writers import write_video
    from tests.conftest import street_frames

    frames, _ = street_frames(n=100, seed=6)
    clip = tmp_path / "street.mkv"
    write_video(clip, frames, 10.0, lossless=True)
    handed: list[int] = []
    early = FolderSink.early
    monkeypatch.setattr(FolderSink, "early", lambda s, b: (handed.append(len(b)), early(s, b)))
    outs = []
    for threads in (1, 2):
        outs.append(tmp_path / f"t{threads}")
        separate_file(clip, outs[-1], threads=threads, window=40, overlap=10, rank=1)
        handed.append(-1)  # the end of a run
    assert handed == [-1, 32, 8, 30, 30, -1]  # two threads: every new frame, block by block
    one, two = outs
    names = sorted(p.name for p in (one / "masks").iterdir())
    assert len(names) == 100
    for name in ["background.mp4", "foreground.mp4", "frames.csv", "background.png"] + [
        f"masks/{n}" for n in names
    ]:
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
