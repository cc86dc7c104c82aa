"""Sources: video files and image folders read as streams of numbered frames."""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo.errors import InputError
from bpvideo.sinks.writers import write_video
from bpvideo.sources.files import TruncatedVideoError, list_image_files, open_source
from bpvideo.sources.video import read_video
from bpvideo.synthetic import make_scene
from tests.conftest import tiny_frames


def test_lossless_round_trip_is_exact(tiny_clip: Path) -> None:
    frames, _ = tiny_frames()
    video = read_video(tiny_clip, gray=False)
    assert video.n_frames == len(frames)
    assert np.array_equal(video.frames, frames)
    assert video.frame_shape == (36, 48, 3) and video.data.shape == (36 * 48 * 3, 24)
    assert video.data.dtype == np.float32 and video.fps == pytest.approx(10.0)
    # Columns are frames: column j reshaped is frame j.
    assert np.array_equal(video.as_frames(video.data)[5], frames[5].astype(np.float32))


def test_gray_matches_opencv(tiny_clip: Path) -> None:
    frames, _ = tiny_frames()
    video = read_video(tiny_clip)
    gray = cv2.cvtColor(frames[3], cv2.COLOR_BGR2GRAY)
    assert video.frame_shape == (36, 48)
    assert np.array_equal(video.data[:, 3].reshape(36, 48), gray.astype(np.float32))
    assert video.frames.shape == (24, 36, 48, 3)  # colour is kept


@pytest.mark.parametrize("source", ["tiny_clip", "tiny_folder"])
def test_selection(source: str, request: pytest.FixtureRequest) -> None:
    path = request.getfixturevalue(source)
    frames, _ = tiny_frames()
    video = read_video(path, start=2, frames=5, step=3)
    assert video.n_frames == 5
    expected = [cv2.cvtColor(frames[i], cv2.COLOR_BGR2GRAY) for i in (2, 5, 8, 11, 14)]
    assert np.array_equal(video.as_frames(video.data), np.stack(expected).astype(np.float32))
    offset = 1 if source == "tiny_folder" else 0  # in000001.png is frame 0
    assert video.frame_numbers == [i + offset for i in (2, 5, 8, 11, 14)]


def test_scale(tiny_folder: Path) -> None:
    video = read_video(tiny_folder, scale=0.5)
    assert video.frame_shape == (18, 24) and video.frames.shape[1:3] == (18, 24)


def test_folder_groups_by_prefix(tmp_path: Path) -> None:
    frames, _ = tiny_frames(n=6)
    for i, f in enumerate(frames):
        cv2.imwrite(str(tmp_path / f"b{i:05d}.bmp"), f)
    cv2.imwrite(str(tmp_path / "hand_segmented_00005.BMP"), frames[0])
    files = list_image_files(tmp_path)
    assert [f.name for f in files] == [f"b{i:05d}.bmp" for i in range(6)]


def test_folder_mixed_sizes(tmp_path: Path) -> None:
    frames, _ = tiny_frames(n=3)
    cv2.imwrite(str(tmp_path / "f1.png"), frames[0])
    cv2.imwrite(str(tmp_path / "f2.png"), frames[1][:20])
    with pytest.raises(InputError, match=r"f2\.png.*one size"):
        read_video(tmp_path)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda p: p, "no such file"),
        (lambda p: (p.write_bytes(b""), p)[1], "empty"),
        (lambda p: (p.write_text("not a video\n" * 50), p)[1], "cannot be decoded"),
    ],
)
def test_bad_sources(tmp_path: Path, make, match: str) -> None:
    path = make(tmp_path / "clip.mp4")
    with pytest.raises(InputError, match=match):
        read_video(path)


def test_source_closed_before_reading_stops_its_decoder(tmp_path: Path) -> None:
    path = tmp_path / "clip.mkv"
    write_video(path, make_scene(32, 24, 5, seed=7).frames, 25.0, lossless=True)
    source = open_source(path)
    decoder = source._decoder
    source.close()
    with pytest.raises(StopIteration):
        next(decoder)  # closed: ffmpeg was stopped


# --- frames as the file holds them (issue 27) --------------------------------------------


def _ffmpeg_clip(path: Path, *args: str, pattern: str = "testsrc=s=48x36:r=10") -> Path:
    """A 48x36 clip made by ffmpeg from its test pattern (10 frames/s), with ``args``."""
    import subprocess

    from bpvideo.sources.ffmpeg import executable

    cmd = [executable(), "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
           pattern, *args, str(path)]  # fmt: skip
    subprocess.run(cmd, check=True, timeout=60)
    return path


def test_variable_frame_rate_is_passed_through_with_its_times(tmp_path: Path) -> None:
    """40 frames with a 2 s gap after the 20th: 40 frames (no copies fill the gap), each
    with its own time, and no 'truncated' for the 60 the container's duration implies."""
    vfr = _ffmpeg_clip(tmp_path / "vfr.mkv", "-frames:v", "40", "-vf",
                       "setpts='if(gte(N,20),PTS+20,PTS)'", "-fps_mode", "passthrough",
                       "-c:v", "ffv1")  # fmt: skip
    source = open_source(vfr)
    numbers = [n for n, _ in source.frames]
    assert numbers == list(range(40))
    times = [source.times[n] for n in numbers]
    gaps = np.diff(times)
    assert gaps[19] == pytest.approx(2.1) and np.allclose(np.delete(gaps, 19), 0.1)
    source = open_source(vfr, start=30, frames=5, step=2)
    assert {n: round(source.times[n], 6) for n, _ in source.frames} == {
        30: 5.0,
        32: 5.2,
        34: 5.4,
        36: 5.6,
        38: 5.8,
    }
    with open(vfr, "rb") as stdin:  # a container on stdin: passed through too
        piped = open_source("-", stdin=stdin)
        assert len(list(piped.frames)) == 40


def test_audio_longer_than_video_is_no_truncation(tmp_path: Path) -> None:
    clip = _ffmpeg_clip(tmp_path / "av.mkv", "-f", "lavfi", "-i", "sine=d=10", "-c:v", "ffv1",
                        "-c:a", "flac", pattern="testsrc=s=48x36:r=10:d=4")  # fmt: skip
    source = open_source(clip)
    assert source.frame_count == 100  # the container's duration at the video's rate
    assert len(list(source.frames)) == 40 and not source.partial


def test_a_truncated_file_is_still_one(tmp_path: Path) -> None:
    from bpvideo.sources.stream import TruncatedVideoError

    clip = _ffmpeg_clip(tmp_path / "c.mkv", "-frames:v", "40", "-c:v", "ffv1")
    cut = tmp_path / "cut.mkv"
    cut.write_bytes(clip.read_bytes()[: clip.stat().st_size // 2])
    with pytest.raises(TruncatedVideoError, match="truncated or damaged"):
        list(open_source(cut).frames)


@pytest.mark.parametrize("name", ["s{x}.mkv", "s{start}.mkv", "t{b}.mkv"])
def test_braces_in_a_name_are_shown_as_they_are(tiny_clip: Path, tmp_path: Path, name: str) -> None:
    """A name is data: its braces are neither options nor dropped, in any message."""
    from bpvideo.settings import cli_flags

    path = tmp_path / name
    shutil.copyfile(tiny_clip, path)
    assert sum(1 for _ in open_source(path).frames) == 24  # it is read
    source = open_source(path, start=500)
    assert not list(source.frames)
    error = source.nothing_selected(500, 1)
    assert error.render(cli_flags()).startswith(f"{path}: no frames selected")
    cut = tmp_path / ("cut" + name)
    cut.write_bytes(tiny_clip.read_bytes()[: tiny_clip.stat().st_size * 2 // 3])
    with pytest.raises(TruncatedVideoError) as caught:
        list(open_source(cut).frames)
    assert caught.value.render(cli_flags()).startswith(f"{cut}: ")


@contextlib.contextmanager
def _bpvideo_log(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """``caplog`` gets the warnings of the ``bpvideo`` logger, which the CLI keeps from
    the root logger once it has run (``propagate = False``, its level that of ``-q``)."""
    logger = logging.getLogger("bpvideo")
    level = logger.level
    logger.addHandler(caplog.handler)
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.removeHandler(caplog.handler)
        logger.setLevel(level)


def _corrupt_middle(path: Path, out: Path, length: int = 300) -> Path:
    """A copy of ``path`` with ``length`` bytes in its middle overwritten."""
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + length] = b"\xaa" * length
    out.write_bytes(bytes(data))
    return out


def test_frames_lost_to_damage_are_counted(tmp_path: Path, caplog) -> None:
    """A damaged part in the middle of a Matroska file (its demuxer skips a cluster):
    every frame the container announces is either read or counted as dropped, with a
    warning; ``strict`` refuses it at the end of the frames."""
    from bpvideo.errors import WorkError

    clip = _ffmpeg_clip(tmp_path / "c.mkv", "-frames:v", "40", "-c:v", "ffv1")
    bad = _corrupt_middle(clip, tmp_path / "bad.mkv")
    source = open_source(bad)
    with _bpvideo_log(caplog):
        read = len(list(source.frames))
    assert read < 40 and not source.partial
    assert source.lost.dropped == 40 - read and source.lost.repeated == 0
    assert any("dropped" in r.getMessage() and r.levelname == "WARNING" for r in caplog.records)
    whole = open_source(clip)
    assert len(list(whole.frames)) == 40 and whole.lost.total == 0  # nothing when none
    strict = open_source(bad, strict=True)
    with pytest.raises(WorkError, match=r"bad\.mkv: \d+ frame\(s\) dropped"):
        list(strict.frames)


def test_a_frame_size_change_loses_no_frame_silently(tmp_path: Path) -> None:
    """H.264 whose size changes mid-stream (64x48, then 80x60; B-frames): every frame is
    given at the first size, and the one the decoder gives nothing for is counted."""
    import subprocess

    from bpvideo.sources.ffmpeg import executable

    parts = []
    for k, size in enumerate(("64x48", "80x60")):
        part = _ffmpeg_clip(tmp_path / f"{k}.h264", "-frames:v", "20", "-c:v", "libx264",
                            pattern=f"testsrc2=s={size}:r=10")  # fmt: skip
        parts.append(part.read_bytes())
    (tmp_path / "both.h264").write_bytes(b"".join(parts))
    clip = tmp_path / "both.mp4"
    subprocess.run([executable(), "-loglevel", "error", "-y", "-r", "10", "-i",
                    str(tmp_path / "both.h264"), "-c", "copy", str(clip)], check=True)  # fmt: skip
    source = open_source(clip)
    frames = [frame for _, frame in source.frames]
    assert {f.shape for f in frames} == {(48, 64, 3)}
    assert len(frames) + source.lost.dropped == 40 and source.lost.dropped >= 1


def test_a_damaged_frame_file_skipped_is_counted(tiny_folder: Path, tmp_path: Path) -> None:
    """A damaged frame of a folder skipped by ``allow_partial`` is a frame lost."""
    from bpvideo.errors import WorkError

    folder = tmp_path / "f"
    shutil.copytree(tiny_folder / "input", folder)
    damaged = sorted(folder.iterdir())[5]
    damaged.write_bytes(damaged.read_bytes()[:100])
    source = open_source(folder, allow_partial=True)
    assert len(list(source.frames)) == 23
    assert source.lost.dropped == 1 and damaged.name in source.lost.causes[0]
    with pytest.raises(WorkError, match="1 frame\\(s\\) dropped"):
        list(open_source(folder, allow_partial=True, strict=True).frames)
