"""The report: summary.json's layout is a contract (keys are only ever added)."""

from __future__ import annotations

import json
from pathlib import Path

import bpvideo
from bpvideo.records import Stopwatch

#: The top-level keys of summary.json, in order (``learned`` and ``evaluation`` only when
#: there are some; ``mask_numbers`` came with issue 14, ``times`` and ``skipped`` with
#: issue 27, ``events`` with issue 28, ``frames_lost`` with issue 42, ``start_time`` and
#: ``start_time_source`` with issue 41).
KEYS = [
    "bpvideo_version", "input", "output", "frames", "frame_numbers", "mask_numbers", "times",
    "width",
    "height", "channels", "fps", "observed_fraction", "settings", "solver", "masks",
    "windows", "outputs", "partial", "frames_expected", "skipped", "seconds", "events",
    "frames_lost", "start_time", "start_time_source",
]  # fmt: skip


def test_summary_layout(tiny_clip: Path, tmp_path: Path) -> None:
    report = bpvideo.separate_file(tiny_clip, tmp_path / "o", rank=1, preview=True)
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert list(summary) == KEYS and summary == report.to_dict()
    assert list(summary["solver"]) == [
        "method", "iterations", "converged", "residual", "change", "solve_scale", "device",
        "worst_window",
    ]  # fmt: skip
    assert list(summary["masks"]) == [
        "rule", "threshold", "noise", "foreground_fraction", "self_check",
    ]  # fmt: skip
    assert list(summary["masks"]["self_check"]) == ["covered", "dynamic", "foreground", "warnings"]
    assert list(summary["windows"]) == [
        "window",
        "overlap",
        "whole_max",
        "spooled",
        "count",
        "list",
    ]
    assert list(summary["windows"]["list"][0]) == [
        "first_frame", "frames", "new_frames", "iterations", "converged", "residual",
        "change", "threshold", "noise", "sparsity", "observed", "covered", "dynamic",
    ]  # fmt: skip
    assert list(summary["outputs"]) == [
        "background_video", "foreground_video", "masks", "background_image", "summary",
        "preview", "events", "frames", "report",
    ]  # fmt: skip
    assert summary["mask_numbers"] == [n + 1 for n in summary["frame_numbers"]]
    assert list(summary["seconds"]) == ["read", "solve", "masks", "write", "total"]
    assert report["frames"] == report.frames == 24 and "solver" in report.keys()


def test_stopwatch_counts_stages() -> None:
    clock = Stopwatch()
    clock.add("solve", 1.5)
    clock.add("solve", 0.25)
    seconds = clock.total()
    assert seconds["solve"] == 1.75 and seconds["read"] == 0.0 and seconds["total"] >= 0


def test_summary_gives_the_worst_window_and_every_frames_time(tmp_path: Path) -> None:
    """Windows that differ: the top-level residual and change are the worst window's
    (not the last one's); times are the frames' own (here 25 frames/s)."""
    import numpy as np

    from tests.conftest import tiny_frames

    frames = tiny_frames(n=30)[0]
    frames[:10] = np.random.default_rng(0).integers(0, 256, frames[:10].shape)  # noise first
    clip = tmp_path / "clip.mkv"
    from bpvideo.sinks.writers import write_video

    write_video(clip, frames, 25.0, lossless=True)
    report = bpvideo.separate_file(clip, tmp_path / "o", rank=1, window=10, overlap=2,
                                   no_video=True, max_iter=20)  # fmt: skip
    windows = report["windows"]["list"]
    residuals = [w["residual"] for w in windows]
    assert len(windows) >= 3 and residuals.index(max(residuals)) != len(windows) - 1
    solver = report["solver"]
    assert solver["residual"] == max(residuals)
    assert solver["worst_window"] == residuals.index(max(residuals)) + 1
    assert solver["change"] == max(w["change"] for w in windows)
    assert np.allclose(report["times"], np.arange(30) / 25)


def _window(covered: float | None, dynamic: float | None):
    from bpvideo.records import WindowReport

    return WindowReport(0, 10, 10, "bestpair", 3, True, 0.01, 0.001, 12.0, 2.0,
                        covered=covered, dynamic=dynamic)  # fmt: skip


def test_self_check_warns_with_the_option_that_helps() -> None:
    from bpvideo.sinks.summary import self_check

    quiet = self_check([_window(0.01, 0.02), _window(0.03, 0.05)], 0.04, appearances=24)
    assert quiet == {"covered": 0.03, "dynamic": 0.05, "foreground": 0.04, "warnings": []}
    hard = self_check([_window(0.05, 0.1), _window(0.4, 0.5)], 0.6, appearances=0)
    assert hard["covered"] == 0.4 and hard["dynamic"] == 0.5
    text = "\n".join(hard["warnings"])
    assert len(hard["warnings"]) == 3
    assert "40% of the view" in text and "--background-from" in text
    assert "--appearances 24" in text and "60%" in text
    # a moving background is handled when its appearances are kept: no warning for it
    kept = self_check([_window(0.0, 0.5)], 0.1, appearances=24)
    assert kept["warnings"] == []
    unmeasured = self_check([_window(None, None)], 0.1, appearances=24)
    assert unmeasured["covered"] is None and unmeasured["warnings"] == []


def test_a_crowd_is_flagged_and_a_street_is_not() -> None:
    from bpvideo.synthetic.hard import make_hard_scene
    from tests.conftest import street_frames

    crowd = make_hard_scene("cover30")  # the benchmark's scene: 30 % of the view
    warnings = bpvideo.separate(crowd.frames).report.masks["self_check"]["warnings"]
    assert any("a crowd" in w and "--background-from" in w for w in warnings)
    street, _ = street_frames(n=100, w=96, h=72)
    assert bpvideo.separate(street).report.masks["self_check"]["warnings"] == []
