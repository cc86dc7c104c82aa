"""Clips cut from a video: a stream copy (the input's own packets) where the clip starts on
a keyframe, an exact re-encode elsewhere; the frames asked for, either way."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from bpvideo.sinks.clips import cut_clip, keyframe_at
from bpvideo.sinks.writers import write_video
from bpvideo.sources import ffmpeg as _ffmpeg
from bpvideo.sources.files import iter_frames
from tests.sinks.test_events import FPS, bursts


def _h264(tmp_path: Path, gop: int) -> Path:
    """The bursts clip as H.264 with a keyframe every ``gop`` frames."""
    lossless = tmp_path / "bursts.mkv"
    write_video(lossless, bursts()[0], FPS, lossless=True)
    out = tmp_path / f"g{gop}.mp4"
    subprocess.run([_ffmpeg.executable(), "-v", "error", "-y", "-i", str(lossless), "-c:v",
                    "libx264", "-g", str(gop), "-keyint_min", str(gop), "-sc_threshold", "0",
                    "-bf", "0", "-pix_fmt", "yuv420p", str(out)], check=True)  # fmt: skip
    return out


def _frames(path: Path) -> np.ndarray:
    return np.stack([frame for _, frame in iter_frames(path)])


def test_keyframes_are_found_at_or_before_a_time(tmp_path: Path):
    clip = _h264(tmp_path, 10)
    assert keyframe_at(str(clip), 0.0) == pytest.approx(0.0)
    assert keyframe_at(str(clip), 1.45) == pytest.approx(1.0)
    assert keyframe_at(str(clip), 2.05) == pytest.approx(2.0)


def test_a_clip_on_a_keyframe_is_the_inputs_own_frames(tmp_path: Path):
    clip = _h264(tmp_path, 10)
    whole = _frames(clip)
    out = tmp_path / "copy.mp4"
    assert cut_clip(str(clip), out, 10, 7, FPS, crf=18, preset="veryfast") == "copy"
    np.testing.assert_array_equal(_frames(out), whole[10:17])


def test_a_clip_between_keyframes_is_reencoded_exactly(tmp_path: Path):
    clip = _h264(tmp_path, 10)
    whole = _frames(clip)
    out = tmp_path / "encoded.mp4"
    assert cut_clip(str(clip), out, 13, 6, FPS, crf=0, preset="veryfast") == "encode"
    got = _frames(out)
    assert len(got) == 6
    # the frames asked for, not their neighbours: each is closest to its own input frame
    for i, frame in enumerate(got):
        errors = [np.abs(frame.astype(int) - w.astype(int)).mean() for w in whole]
        assert int(np.argmin(errors)) == 13 + i
