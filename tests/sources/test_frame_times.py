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
from tests.sources.test_files import _bpvideo_log


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
    from bpvideo.sources.ffmpeg import data_bounds_of

    clip = tmp_path / "clip.mkv"
    write_video(clip, make_scene(32, 24, 10, seed=3).frames, 10.0, lossless=True)
    start, span = data_bounds_of(clip)
    assert start == pytest.approx(0.0, abs=1e-9) and span == pytest.approx(1.0, abs=0.01)


def test_a_clock_jump_is_kept_in_the_times(tmp_path: Path, caplog) -> None:
    """Two transport streams one after the other, the second's clock 2 hours on: every
    frame is read (not "truncated" for the hours the container's duration spans), the
    times keep the gap, a log line says where it is, and no frame counts as lost."""
    import subprocess

    from bpvideo.sources.ffmpeg import executable

    parts = []
    for k, offset in enumerate(("100", "7300")):  # the clocks of 2 s parts start 2 h apart
        part = tmp_path / f"{k}.ts"
        subprocess.run([executable(), "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                        "testsrc2=s=48x36:r=10:d=2", "-c:v", "libx264", "-output_ts_offset",
                        offset, str(part)], check=True)  # fmt: skip
        parts.append(part.read_bytes())
    clip = tmp_path / "jump.ts"
    clip.write_bytes(b"".join(parts))
    source = open_source(clip)
    with _bpvideo_log(caplog):
        numbers = [n for n, _ in source.frames]
    assert numbers == list(range(40)) and not source.partial
    gaps = np.diff([source.times[n] for n in numbers])
    assert gaps[19] == pytest.approx(7200 - 1.9) and np.allclose(np.delete(gaps, 19), 0.1)
    assert any("clock jumps" in r.getMessage() and "19 and 20" in r.getMessage()
               for r in caplog.records)  # fmt: skip
    assert source.lost.dropped == 0


def test_the_options_are_asked_while_the_input_is_probed(tmp_path: Path, monkeypatch) -> None:
    """``ffmpeg -h full`` (needed when the decoder starts) is asked once, from the probe,
    and is not asked again when the video is decoded."""
    from bpvideo.sources import ffmpeg

    clip = tmp_path / "clip.mkv"
    write_video(clip, make_scene(32, 24, 4, seed=1).frames, 25.0, lossless=True)
    real = frame_times._read_options
    asked: list[str] = []

    def read_options(exe: str) -> str:
        asked.append(exe)
        return real(exe)

    monkeypatch.setattr(frame_times, "_read_options", read_options)
    monkeypatch.setattr(frame_times, "_ASKED", {})
    ffmpeg.probe(clip)
    question = frame_times._ASKED.get(ffmpeg.executable())
    assert question is not None  # asked by the probe, before any decoding
    assert "-fps_mode" in question.result(timeout=60)
    assert asked == [ffmpeg.executable()]
    source = open_source(clip)
    assert len([n for n, _ in source.frames]) == 4
    assert asked == [ffmpeg.executable()]


def test_a_forked_child_asks_again_what_its_parent_had_not_heard(monkeypatch) -> None:
    """A question open in the parent at a fork has no thread in the child: asked anew."""
    import os
    from concurrent.futures import Future

    open_question: Future[str] = Future()
    monkeypatch.setattr(frame_times, "_ASKED", {"ffmpeg-a": open_question})
    monkeypatch.setattr(frame_times, "_read_options", lambda exe: f"{exe} -fps_mode")
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only with the answer asked here
        os._exit(0 if frame_times._options_of("ffmpeg-a") == "ffmpeg-a -fps_mode" else 1)
    assert os.waitpid(pid, 0)[1] == 0
    assert not open_question.done()  # the parent's question is still its own
