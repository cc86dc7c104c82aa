"""Writers: videos (one encoder per stream, fed by a thread), mask PNGs, raw masks."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo.errors import WorkError
from bpvideo.sinks.writers import MaskWriter, VideoStream, write_masks, write_streams, write_video
from bpvideo.sources.files import probe
from bpvideo.sources.video import read_video
from bpvideo.synthetic import make_scene
from tests.conftest import tiny_frames


def test_interleaved_early_started_streams_write_the_same_videos(tmp_path: Path) -> None:
    scene = make_scene(32, 24, 12, seed=1)
    grey = scene.frames[..., 1].copy()
    write_video(tmp_path / "a.mkv", grey, 25.0, lossless=True)
    write_video(tmp_path / "b.mkv", scene.frames, 25.0, lossless=True)
    a = VideoStream(tmp_path / "a2.mkv", 25.0, lossless=True)
    b = VideoStream(tmp_path / "b2.mkv", 25.0, lossless=True)
    a.open((24, 32))
    b.open((24, 32, 3))
    write_streams([(a, grey[:5]), (b, scene.frames[:5])])
    write_streams([(a, grey[5:]), (b, scene.frames[5:])])
    a.close()
    b.close()
    for one, two in (("a", "a2"), ("b", "b2")):
        first = read_video(tmp_path / f"{one}.mkv", gray=False)
        second = read_video(tmp_path / f"{two}.mkv", gray=False)
        np.testing.assert_array_equal(first.frames, second.frames)
    assert len(read_video(tmp_path / "b2.mkv").frame_numbers) == 12
    c = VideoStream(tmp_path / "c.mkv", 25.0, lossless=True)
    c.open((24, 32))
    with pytest.raises(WorkError, match=r"c\.mkv"):
        c.write(scene.frames[:1])  # colour frames into a grey stream
    assert c._proc is None  # aborted: no ffmpeg left running


def test_ended_stream_finishes_its_file_before_close(tmp_path: Path) -> None:
    frames, _ = tiny_frames(n=9, h=24, w=32)
    stream = VideoStream(tmp_path / "clip.mp4", 25.0)
    stream.write(frames)
    stream.end()  # the input closes once the queued frames are in: ffmpeg ends alone
    assert stream._proc is not None
    assert stream._proc.wait(timeout=60) == 0
    stream.close()
    assert read_video(tmp_path / "clip.mp4", gray=False).n_frames == 9
    stream.close()  # closing twice is harmless


def test_h264_round_trip_is_close(tmp_path: Path) -> None:
    frames, _ = tiny_frames(n=12, h=35, w=47)  # odd sizes are padded to even
    path = tmp_path / "clip.mp4"
    write_video(path, frames, 12.0)
    info = probe(path)
    assert (info.width, info.height) == (48, 36) and info.fps == pytest.approx(12.0)
    video = read_video(path, gray=False)
    assert video.n_frames == 12
    err = np.abs(video.frames[:, :35, :47].astype(int) - frames.astype(int)).mean()
    assert err < 4.0


@pytest.mark.parametrize("colour", [(60, 120, 200), (200, 30, 90), (128, 128, 128), (20, 20, 20)])
def test_h264_colours_come_back_unbiased(tmp_path: Path, colour: tuple[int, int, int]) -> None:
    # flat frames: nothing for the encoder to lose, so what comes back is the colour
    # conversions' rounding alone (ffmpeg's default scaler put grey 128 back as
    # (123, 126, 124): U and V truncated)
    frames = np.empty((6, 32, 48, 3), dtype=np.uint8)
    frames[:] = colour
    write_video(tmp_path / "flat.mp4", frames, 25.0)
    back = read_video(tmp_path / "flat.mp4", gray=False).frames.astype(float)
    assert np.abs(back.mean(axis=(0, 1, 2)) - colour).max() <= 1.0
    grey = frames[..., 1].copy()
    write_video(tmp_path / "grey.mp4", grey, 25.0)
    back = read_video(tmp_path / "grey.mp4", gray=False).frames.astype(float)
    assert np.abs(back - colour[1]).max() <= 1.0


def test_h264_is_tagged_bt601_limited(tmp_path: Path) -> None:
    import subprocess

    from bpvideo.sources import ffmpeg as _ffmpeg

    write_video(tmp_path / "clip.mp4", tiny_frames(n=3, h=16, w=16)[0], 25.0)
    cmd = [_ffmpeg.executable(), "-hide_banner", "-i", str(tmp_path / "clip.mp4")]
    info = subprocess.run(cmd, capture_output=True, text=True).stderr
    assert "yuv420p(tv, smpte170m" in info


def test_masks_numbered_from_one(tmp_path: Path) -> None:
    masks = np.zeros((3, 5, 7), bool)
    masks[1, 2, 3] = True
    assert write_masks(tmp_path / "m", masks) == 3
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == [
        "bin000001.png",
        "bin000002.png",
        "bin000003.png",
    ]
    back = cv2.imread(str(tmp_path / "m" / "bin000002.png"), cv2.IMREAD_UNCHANGED)
    assert back.dtype == np.uint8 and set(np.unique(back)) == {0, 255} and back[2, 3] == 255


def test_mask_writer_round_trip_and_numbering(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    masks = rng.random((7, 24, 32)) < 0.4
    writer = MaskWriter(tmp_path / "masks")
    writer.write(masks[:3])
    writer.write(masks[3:])
    writer.close()
    names = sorted(p.name for p in (tmp_path / "masks").iterdir())
    assert names == [f"bin{i:06d}.png" for i in range(1, 8)]
    for i, mask in enumerate(masks, start=1):
        image = cv2.imread(str(tmp_path / "masks" / f"bin{i:06d}.png"), cv2.IMREAD_UNCHANGED)
        np.testing.assert_array_equal(image, np.where(mask, 255, 0).astype(np.uint8))


def test_mask_writer_reports_a_failed_write(tmp_path: Path) -> None:
    writer = MaskWriter(tmp_path / "masks")
    (tmp_path / "masks").rmdir()  # the folder is gone: the writes fail
    writer.write(np.ones((2, 8, 8), dtype=bool))
    with pytest.raises(OSError):
        writer.close()


def test_raw_masks_to_a_named_pipe(tmp_path: Path) -> None:
    """A FIFO nobody reads is refused at once (not a wait for ever); one whose reader
    goes away is a WorkError naming it (not a quiet exit as for stdout)."""
    import os
    import subprocess
    import time

    from bpvideo.errors import InputError, WorkError
    from bpvideo.sinks.raw import RawMaskSink

    fifo = tmp_path / "masks.fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=r"masks\.fifo: no program reads this pipe"):
        RawMaskSink(str(fifo))
    reader = subprocess.Popen(["head", "-c", "100", str(fifo)], stdout=subprocess.DEVNULL)
    while True:  # until the reader has opened the pipe (its own doing, however late)
        try:
            sink = RawMaskSink(str(fifo))
            break
        except InputError:
            assert reader.poll() is None
            time.sleep(0.01)
    masks = np.ones((4, 240, 320), bool)
    with pytest.raises(WorkError, match=r"the program reading this pipe stopped after \d+"):
        for _ in range(100):
            sink.write(masks)
    reader.wait(timeout=10)


def test_an_encoder_stopped_by_a_signal_mid_write_is_that_signal(tmp_path: Path) -> None:
    """ffmpeg stopped by SIGTERM while frames are still being written: the broken pipe
    comes first, and the writer still reports the signal (a stop), not a full disk."""
    import signal

    from bpvideo.errors import Terminated

    stream = VideoStream(tmp_path / "clip.mp4", 25.0)
    frame = np.zeros((64, 64, 3), dtype=np.uint8)
    stream.write([frame])
    stream._proc.send_signal(signal.SIGTERM)
    stream._proc.wait(300)  # a hang guard
    with pytest.raises(Terminated) as stop:
        for _ in range(10_000):  # until the queue meets the broken pipe
            stream.write([frame])
    assert stop.value.signum == signal.SIGTERM


@pytest.mark.parametrize("stop", [KeyboardInterrupt(), "terminated"])
def test_a_stop_while_waiting_for_the_queue_is_that_stop(tmp_path: Path, stop) -> None:
    """SIGINT (or SIGTERM's Terminated) raised in the caller while it waits for room in
    the encoder's queue: the run was stopped, so the stop goes on up as itself (exit 130 or
    143), never as "could not write the video: check free disk space"; ffmpeg is killed."""
    import signal

    from bpvideo.errors import Terminated

    if stop == "terminated":
        stop = Terminated(signal.SIGTERM)
    stream = VideoStream(tmp_path / "clip.mp4", 25.0)
    frame = np.zeros((64, 64, 3), dtype=np.uint8)
    stream.write([frame])
    proc = stream._proc

    def interrupted(*args, **kwargs):
        raise stop

    stream._worker.put = interrupted  # where the signal lands: the wait in put()
    with pytest.raises(type(stop)):
        stream.write([frame])
    assert stream._proc is None and proc.poll() is not None


def _x264_options(path: Path) -> str:
    """The options x264 wrote into a video's first frame (its SEI: ``options: ...``)."""
    data = path.read_bytes()
    at = data.index(b"options: ")
    return data[at : data.index(b"\x00", at)].decode()


def test_a_tuned_stream_adds_its_options_to_the_preset(tmp_path: Path, tiny_clip: Path) -> None:
    """A result's videos (``tuned``) add ``subme=1`` and no intra partitions to x264's
    ``veryfast``, and come back as close to the frames as the preset's own; another
    preset is left as x264 has it."""
    import bpvideo

    scene = make_scene(96, 72, 30, seed=3)
    errors = {}
    for name, tuned, preset in (("plain", False, "veryfast"), ("tuned", True, "veryfast"),
                                ("faster", True, "faster")):  # fmt: skip
        stream = VideoStream(tmp_path / f"{name}.mp4", 25.0, tuned=tuned, preset=preset)
        stream.write(scene.frames)
        stream.close()
        back = read_video(tmp_path / f"{name}.mp4", gray=False).frames
        errors[name] = np.abs(back.astype(int) - scene.frames.astype(int)).mean()
    plain, tuned = (_x264_options(tmp_path / f"{n}.mp4") for n in ("plain", "tuned"))
    assert "subme=2" in plain and "analyse=0x3:0x113" in plain
    assert "subme=1" in tuned and "analyse=0x3:0 " in tuned  # keyframes keep theirs
    assert "subme=1" not in _x264_options(tmp_path / "faster.mp4")
    assert errors["tuned"] < errors["plain"] + 0.3  # the same quality (a noisy scene: ~4.5)
    bpvideo.separate_file(tiny_clip, tmp_path / "out", rank=1, window=0)
    for video in ("background.mp4", "foreground.mp4"):
        assert "subme=1" in _x264_options(tmp_path / "out" / video)
