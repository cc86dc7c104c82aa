"""``bpvideo.events`` (events of masks in memory): what it refuses, and known answers."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import numpy as np
import pytest

import bpvideo
from bpvideo.errors import InputError
from bpvideo.sinks.rederive import rederive


def _masks() -> np.ndarray:
    masks = np.zeros((40, 12, 16), bool)
    masks[10:20, 2:6, 3:9] = True
    return masks


def test_events_of_masks_have_their_known_frames_and_times():
    (event,) = bpvideo.events(_masks(), fps=10, event_pad=0)
    assert (event.start_frame, event.end_frame) == (11, 20)
    assert (event.start_time, event.end_time) == ("00:00:01.000", "00:00:02.000")
    # Masks as a generator give the same (they were "masks of shape ()"); of two shapes,
    # a one-line refusal (was numpy's "inhomogeneous shape").
    assert bpvideo.events(iter(_masks()), fps=10, event_pad=0) == [event]
    with pytest.raises(InputError, match=r"^masks are of several shapes: give"):
        bpvideo.events([*_masks()[:3], np.zeros((4, 4), bool)])


@pytest.mark.parametrize("fps", [0, 0.0, -5, float("nan"), float("inf"), None])
def test_a_rate_that_is_not_positive_and_finite_is_an_input_error_naming_fps(fps):
    with pytest.raises(InputError, match=r"^fps=.* must be a finite number > 0") as error:
        bpvideo.events(_masks(), fps=fps)
    assert isinstance(error.value, ValueError)
    assert error.value.option == ("fps", fps)


@pytest.mark.parametrize("times", [np.full(40, np.nan), np.r_[np.arange(39) / 10, np.inf]])
def test_times_that_are_not_finite_are_an_input_error_naming_times(times):
    with pytest.raises(InputError, match=r"^times holds"):
        bpvideo.events(_masks(), fps=10, times=times)


def test_times_of_another_count_are_an_input_error():
    with pytest.raises(InputError, match=r"^times has 3 value"):
        bpvideo.events(_masks(), fps=10, times=[0.0, 0.1, 0.2])


# ``bpvideo events OUTDIR`` run again: the whole set it owns is replaced as one (issue 41)

#: Options that cut the clip's track into several short events, and the run's defaults.
SHORT = {"event_threshold": 0.0095, "min_event": 0, "event_pad": 0, "event_gap": 0}


@pytest.fixture(scope="module")
def clipped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A result with clips, of a 120-frame clip whose square wraps round twice."""
    from bpvideo.sinks.writers import write_video
    from tests.conftest import tiny_frames

    folder = tmp_path_factory.mktemp("rederive")
    frames, _ = tiny_frames(n=120, h=72, w=96)
    write_video(folder / "long.mkv", frames, 10.0, lossless=True)
    bpvideo.separate_file(folder / "long.mkv", folder / "out", clips=True)
    return folder / "out"


def _set(out: Path) -> dict[str, bytes]:
    """The files of the set ``bpvideo events`` owns, by name."""
    names = ["events.csv", "frames.csv", "report.html", "summary.json"]
    files = {n: (out / n).read_bytes() for n in names}
    files.update({f"clips/{p.name}": p.read_bytes() for p in (out / "clips").iterdir()})
    return files


def _clips_match_events(out: Path) -> int:
    """The clips are those of events.csv, one per event with its frames; their count."""
    from bpvideo.sources.video import read_video

    with open(out / "events.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted(p.name for p in (out / "clips").iterdir()) == [
        f"event_{int(r['event']):04d}.mp4" for r in rows
    ]
    for row in rows:
        frames = read_video(out / "clips" / f"event_{int(row['event']):04d}.mp4").n_frames
        assert frames == round(float(row["duration"]) * 10), row
    return len(rows)


def test_events_run_again_replaces_its_clips_with_those_of_the_new_events(clipped, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(clipped, out)
    assert _clips_match_events(out) == 1  # the run's: the square is always somewhere
    rederive(out, **SHORT)
    assert _clips_match_events(out) == 5
    rederive(out, event_threshold=0.005, min_event="1s", event_pad=0, event_gap="1s")
    assert _clips_match_events(out) == 1
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_a_failure_midway_leaves_the_old_set_whole(clipped, tmp_path, monkeypatch):
    """The second clip fails to cut: events.csv, frames.csv, the report, the summary and
    the clips are the earlier ones, byte for byte; nothing staged is left."""
    import bpvideo.sinks.events as event_sinks
    from bpvideo.errors import WorkError

    out = tmp_path / "out"
    shutil.copytree(clipped, out)
    rederive(out, event_threshold=0.005, event_pad=0)
    before = _set(out)
    real, calls = event_sinks.cut_clip, []

    def failing(*args, **kwargs):
        calls.append(args)
        if len(calls) == 2:
            raise WorkError("injected: the disk filled up")
        return real(*args, **kwargs)

    monkeypatch.setattr(event_sinks, "cut_clip", failing)
    with pytest.raises(WorkError, match="injected"):
        rederive(out, **SHORT)
    assert len(calls) == 2
    assert _set(out) == before
    assert not [p for p in out.iterdir() if p.name.startswith(".")]
