"""stdin pipes: raw frames, y4m and containers in, raw masks out (``--masks-to -``)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
import tracemalloc
from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo.errors import InputError, WorkError
from bpvideo.sinks.writers import write_video
from bpvideo.sources.files import open_source
from bpvideo.sources.video import read_video
from tests.conftest import bpvideo_process, process_env, read_masks, tiny_frames


@pytest.fixture(scope="module")
def piped_frames(tmp_path_factory: pytest.TempPathFactory) -> tuple[np.ndarray, Path]:
    frames, _ = tiny_frames(n=60)
    path = tmp_path_factory.mktemp("pipe") / "clip.mkv"
    write_video(path, frames, 25.0, lossless=True)
    return frames, path


def test_real_pipe_matches_file_run(piped_frames, tmp_path: Path) -> None:
    frames, path = piped_frames
    h, w = frames.shape[1:3]
    opts = ["--window", "25", "--overlap", "5", "--rank", "1", "-q"]
    ref = bpvideo_process("separate", path, "-o", tmp_path / "file", *opts)
    assert ref.returncode == 0, ref.stderr
    assert ref.stdout.decode().strip() == str(tmp_path / "file")
    raw = frames.tobytes()  # bgr24, as ffmpeg -f rawvideo -pix_fmt bgr24 - writes
    piped = bpvideo_process("separate", "-", "--size", f"{w}x{h}", "--pix-fmt", "bgr24",
                            "--fps", "25", "-o", tmp_path / "pipe", "--masks-to", "-", *opts,
                            stdin=raw)  # fmt: skip
    assert piped.returncode == 0, piped.stderr
    assert len(piped.stdout) == 60 * h * w  # stdout carries only the mask bytes
    out = np.frombuffer(piped.stdout, np.uint8).reshape(60, h, w)
    expected = read_masks(tmp_path / "file" / "masks")
    for j in range(60):  # frame by frame
        assert np.array_equal(out[j], expected[j]), f"frame {j}"
    assert np.array_equal(read_masks(tmp_path / "pipe" / "masks"), expected)
    summary = json.loads((tmp_path / "pipe" / "summary.json").read_text())
    assert summary["input"] == "stdin" and summary["fps"] == 25.0 and summary["frames"] == 60


def test_gray_pipe_and_truncated_frame(piped_frames, tmp_path: Path) -> None:
    frames, _ = piped_frames
    gray = np.stack([cv2.cvtColor(f, cv2.COLOR_BGR2GRAY) for f in frames[:20]])
    ok = bpvideo_process("separate", "-", "--size", "48x36", "-o", tmp_path / "g", "-q",
                         "--rank", "1", stdin=gray.tobytes())  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert json.loads((tmp_path / "g" / "summary.json").read_text())["frames"] == 20
    bad = bpvideo_process("separate", "-", "--size", "48x36", "-o", tmp_path / "t", "--rank",
                          "1", stdin=gray.tobytes()[:-100])  # fmt: skip
    assert bad.returncode == 1
    lines = bad.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "stream ended inside frame 19" in lines[0], bad.stderr
    assert not (tmp_path / "t").exists()  # nothing half-written


def test_closed_stdout_ends_quietly(piped_frames, tmp_path: Path) -> None:
    frames, _ = piped_frames
    proc = subprocess.Popen(
        [sys.executable, "-m", "bpvideo", "separate", "-", "--size", "48x36", "--pix-fmt",
         "bgr24", "-o", str(tmp_path / "b"), "--masks-to", "-", "--window", "20",
         "--overlap", "2", "--rank", "1", "-q"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=process_env(),
    )  # fmt: skip
    data = np.concatenate([frames] * 3).tobytes()

    def feed() -> None:  # from a thread: bpvideo writes masks while it still reads
        try:
            proc.stdin.write(data)
            proc.stdin.close()
        except BrokenPipeError:
            pass

    feeder = threading.Thread(target=feed)
    feeder.start()
    proc.stdout.read(100)  # the reader takes a little and goes away
    proc.stdout.close()
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=300)
    feeder.join()
    assert err == "", err  # no traceback, no message
    assert code == 1
    assert not (tmp_path / "b" / "summary.json").exists()


def test_y4m_and_container_on_stdin(piped_frames, tmp_path: Path) -> None:
    import imageio_ffmpeg

    frames, path = piped_frames
    y4m = tmp_path / "clip.y4m"
    subprocess.run(
        [imageio_ffmpeg.get_ffmpeg_exe(), "-loglevel", "error", "-i", str(path), "-frames:v",
         "10", "-f", "yuv4mpegpipe", "-pix_fmt", "yuv420p", str(y4m)],
        check=True,
    )  # fmt: skip
    reference = read_video(y4m, gray=False).frames  # ffmpeg's own YUV -> BGR
    src = open_source("-", stdin=io.BytesIO(y4m.read_bytes()))
    assert (src.width, src.height, src.fps) == (48, 36, 25.0)
    got = np.stack([f for _, f in src.frames])
    assert got.shape == reference.shape
    assert np.abs(got.astype(int) - reference.astype(int)).mean() < 2.0
    # A container (Matroska/FFV1) is decoded by an ffmpeg child.
    src = open_source("-", stdin=io.BytesIO(path.read_bytes()), frames=12, step=2)
    got = np.stack([f for _, f in src.frames])
    assert got.shape == (12, 36, 48, 3)
    assert np.abs(got.astype(int) - frames[:24:2].astype(int)).mean() < 2.0
    with pytest.raises(InputError, match="stdin cannot be decoded"):
        open_source("-", stdin=io.BytesIO(b"this is not a video" * 100))
    with pytest.raises(InputError, match="is empty"):
        open_source("-", stdin=io.BytesIO(b""))
    audio = tmp_path / "audio.mka"  # said so, not ffmpeg's last line ("Invalid argument")
    subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-loglevel", "error", "-f", "lavfi", "-i",
                    "sine=d=0.5", "-c:a", "mp2", str(audio)], check=True)  # fmt: skip
    with pytest.raises(InputError, match=r"stdin cannot be decoded as a video \(it has no video"):
        open_source("-", stdin=io.BytesIO(audio.read_bytes()))
    truncated = io.BytesIO(y4m.read_bytes()[:-50])
    with pytest.raises(WorkError, match="truncated"):
        list(open_source("-", stdin=truncated).frames)


@pytest.mark.parametrize("size", [(3, 2), (1, 64)])
def test_raw_frames_of_any_size_the_solver_takes(size: tuple[int, int], tmp_path: Path) -> None:
    """Raw frames of 3x2 or 1x64 pixels are separated (the bound is ``rank`` < pixels, not
    a smallest side): the background is the still level where a pixel is lit in frames
    10-19, and that pixel is foreground there (no clean-up of small blobs), not elsewhere."""
    w, h = size
    rng = np.random.default_rng(1)
    frames = np.clip(100 + rng.normal(0, 1.0, (40, h, w)), 0, 255).astype(np.uint8)
    frames[10:20, 0, 0] = 250
    done = bpvideo_process("separate", "-", "--size", f"{w}x{h}", "-o", tmp_path / "o", "-q",
                           "--rank", "1", "--open-radius", "0", "--min-area", "0",
                           stdin=frames.tobytes())  # fmt: skip
    assert done.returncode == 0, done.stderr
    background = cv2.imread(str(tmp_path / "o" / "background.png"), cv2.IMREAD_GRAYSCALE)
    assert background.shape == (h, w) and abs(int(background[0, 0]) - 100) <= 3
    masks = read_masks(tmp_path / "o" / "masks") > 0
    assert masks.shape == (40, h, w)
    lit = masks[:, 0, 0]
    assert lit[10:20].sum() >= 8 and lit[:10].sum() + lit[20:].sum() <= 1


def test_empty_stdin_of_raw_frames_says_it_is_empty() -> None:
    """No byte on stdin is "empty" for raw frames too (not "no frames selected: lower
    start", which is wrong advice)."""
    source = open_source("-", stdin=io.BytesIO(b""), size=(8, 8))
    with pytest.raises(InputError, match=r"^stdin: is empty"):
        list(source.frames)


def _y4m(pix_fmt: str, *args: str, source: str = "testsrc2=s=64x48:r=10:d=0.5") -> bytes:
    """A y4m stream of ffmpeg's test pattern in ``pix_fmt``."""
    from bpvideo.sources.ffmpeg import executable

    cmd = [executable(), "-loglevel", "error", "-f", "lavfi", "-i", source, *args,
           "-pix_fmt", pix_fmt, "-strict", "-1", "-f", "yuv4mpegpipe", "-"]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, check=True, timeout=60).stdout


@pytest.mark.parametrize(
    ("deep", "twin"),
    [("yuv420p10le", "yuv420p"), ("yuv444p12le", "yuv444p"), ("yuv422p10le", "yuv422p"),
     ("gray10le", "gray"), ("gray16le", "gray")],
)  # fmt: skip
def test_y4m_of_any_bit_depth_reads_as_its_8_bit_twin(deep: str, twin: str) -> None:
    """A 10-, 12- or 16-bit y4m stream (C420p10, Cmono16...) gives the frames its 8-bit
    twin gives, within a grey level or two (it was refused, or misread as 8-bit)."""
    got = [f for _, f in open_source("-", stdin=io.BytesIO(_y4m(deep))).frames]
    want = [f for _, f in open_source("-", stdin=io.BytesIO(_y4m(twin))).frames]
    assert len(got) == len(want) == 5
    diff = np.abs(np.stack(got).astype(int) - np.stack(want).astype(int))
    assert diff.mean() < 0.5 and np.percentile(diff, 99) <= 2


def test_y4m_frames_are_scaled_as_they_are_read() -> None:
    """With ``scale``, a y4m frame's planes are scaled before anything else is made of
    them: reading never holds more than two full-size frames' bytes (the conversion of a
    full-size frame to colour took about twenty), and the frames match the full-size ones
    scaled."""
    stream = _y4m("yuv420p", source="testsrc2=s=640x480:r=10:d=0.3")
    full = [f for _, f in open_source("-", stdin=io.BytesIO(stream)).frames]
    source = open_source("-", stdin=io.BytesIO(stream), scale=0.25)
    tracemalloc.start()
    try:
        small = [f for _, f in source.frames]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (source.width, source.height) == (160, 120) and len(small) == 3
    assert peak < 2 * full[0].nbytes
    expected = cv2.resize(full[1], (160, 120), interpolation=cv2.INTER_AREA)
    assert np.abs(small[1].astype(int) - expected.astype(int)).mean() < 1.0
