"""Frame times from ffmpeg's machine output, and the options an older ffmpeg lacks
(bpvideo/sources/frame_times.py, issue 27)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bpvideo.sinks.writers import write_video
from bpvideo.sources import frame_times
from bpvideo.sources.files import open_source
from bpvideo.synthetic import make_scene


def test_an_older_ffmpeg_gets_the_flags_it_has(monkeypatch) -> None:
    monkeypatch.setattr(frame_times, "_options_of", lambda ffmpeg: "-vsync ... -r ...")
    assert frame_times.passthrough_flag("ffmpeg") == ["-vsync", "passthrough"]
    assert frame_times.passthrough_options("ffmpeg", 5) == ["-vsync", "passthrough"]
    monkeypatch.setattr(frame_times, "_options_of",
                        lambda ffmpeg: "-fps_mode -enc_time_base -stats_enc_pre_fmt")  # fmt: skip
    options = frame_times.passthrough_options("ffmpeg", 5)
    assert options[:2] == ["-fps_mode", "passthrough"] and "pipe:5" in options


def test_without_frame_times_a_video_is_timed_by_its_rate(tmp_path: Path, monkeypatch) -> None:
    """An ffmpeg without -stats_enc_pre: every frame still read, times = index / rate."""
    clip = tmp_path / "clip.mkv"
    write_video(clip, make_scene(32, 24, 6, seed=3).frames, 25.0, lossless=True)
    monkeypatch.setattr(frame_times, "supports_times", lambda ffmpeg: False)
    source = open_source(clip)
    numbers = [n for n, _ in source.frames]
    assert numbers == list(range(6))
    assert np.allclose([source.times[n] for n in numbers], np.arange(6) / 25)


def test_data_end_counts_every_stream(tmp_path: Path) -> None:
    from bpvideo.sources.ffmpeg import data_end_of

    clip = tmp_path / "clip.mkv"
    write_video(clip, make_scene(32, 24, 10, seed=3).frames, 10.0, lossless=True)
    assert data_end_of(clip) == pytest.approx(1.0, abs=0.01)
