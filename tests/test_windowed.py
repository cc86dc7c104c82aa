"""Windowed streaming solve, stdin pipes, colour, many inputs, the memory plan."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo.errors import InputError, WorkError
from bpvideo.pipeline import _windows, expand_inputs, format_output, plan_window
from bpvideo.reader import open_source, read_video
from bpvideo.settings import SeparateSettings
from bpvideo.synthetic import make_scene
from bpvideo.writer import write_video
from tests.conftest import output_files, tiny_frames

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["OPENBLAS_NUM_THREADS"] = "1"
    return env


def _bpvideo(*args: str | Path, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bpvideo", *map(str, args)],
        input=stdin,
        capture_output=True,
        env=_env(),
        timeout=300,
        check=False,
    )


def _read_masks(folder: Path) -> np.ndarray:
    files = sorted(folder.glob("bin*.png"))
    return np.stack([cv2.imread(str(f), cv2.IMREAD_GRAYSCALE) for f in files])


@pytest.fixture(scope="module")
def scene_clip(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """A 120-frame 64x48 street scene (lossless) with ground truth."""
    scene = make_scene(64, 48, 120, seed=3)
    path = tmp_path_factory.mktemp("scene") / "scene.mkv"
    write_video(path, scene.frames, 25.0, lossless=True)
    return path, scene


# --- windows ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "window", "overlap"), [(100, 30, 5), (31, 30, 5), (30, 30, 0), (7, 30, 5), (61, 12, 11)]
)
def test_windows_cover_every_frame_once_in_order(n: int, window: int, overlap: int) -> None:
    frames = ((i, np.full((1, 1, 3), i % 256, np.uint8)) for i in range(n))
    new: list[int] = []
    previous: list[int] = []
    for chunk, new_from in _windows(frames, window, overlap, 0, min_frames=6):
        numbers = [i for i, _ in chunk]
        assert len(numbers) <= max(window, 6)
        assert numbers == sorted(numbers) and numbers == list(range(numbers[0], numbers[-1] + 1))
        if previous:  # the shared frames are the previous window's last ones
            assert numbers[:new_from] == previous[len(previous) - new_from :]
            assert new_from >= overlap
        assert len(numbers) >= min(n, 6)
        new += numbers[new_from:]
        previous = numbers
    assert new == list(range(n))


def test_windowed_run_is_continuous_ordered_and_complete(run_cli, scene_clip, tmp_path) -> None:
    path, scene = scene_clip
    common = ["--lossless", "-q", "--rank", "1"]
    assert run_cli("separate", path, "-o", tmp_path / "whole", "--window", "0", *common).code == 0
    res = run_cli("separate", path, "-o", tmp_path / "win", "--window", "40", "--overlap", "8",
                  *common)  # fmt: skip
    assert res.code == 0, res.err
    summary = json.loads((tmp_path / "win" / "summary.json").read_text())
    windows = summary["windows"]
    assert windows["window"] == 40 and windows["count"] == 4  # 40, then 32 new each
    assert [w["new_frames"] for w in windows["list"]] == [40, 32, 32, 16]
    assert summary["frames"] == 120 and summary["frame_numbers"] == list(range(120))
    masks = _read_masks(tmp_path / "win" / "masks")
    assert masks.shape == (120, 48, 64)
    assert [p.name for p in sorted((tmp_path / "win" / "masks").iterdir())] == [
        f"bin{i:06d}.png" for i in range(1, 121)
    ]
    bg_win = read_video(tmp_path / "win" / "background.mkv").data.T.reshape(120, -1)
    bg_whole = read_video(tmp_path / "whole" / "background.mkv").data.T.reshape(120, -1)
    assert bg_win.shape == bg_whole.shape
    # The background is the same model, and does not jump where windows meet.
    assert np.abs(bg_win - bg_whole).mean() < 3.0
    jumps = np.abs(np.diff(bg_win, axis=0)).mean(axis=1)
    boundaries = [40, 72, 104]
    inside = np.delete(jumps, [b - 1 for b in boundaries])
    assert jumps[[b - 1 for b in boundaries]].max() <= inside.max() + 1.0
    # Masks as good as the whole-video solve on the known ground truth.
    gt = scene.masks

    def f1(m: np.ndarray) -> float:
        tp = (m & gt).sum()
        return 2 * tp / (m.sum() + gt.sum())

    whole = _read_masks(tmp_path / "whole" / "masks") > 0
    assert f1(masks > 0) > 0.8 and f1(masks > 0) > f1(whole) - 0.05


def test_memory_estimate_refuses_what_cannot_fit(run_cli, tiny_clip, tmp_path, monkeypatch):
    settings = SeparateSettings(window=0).validate()
    with pytest.raises(InputError, match=r"--window \d+.*--scale"):
        plan_window(settings, 640, 480, 3000, name="cam.mp4", available=2 * 2**30)
    assert plan_window(settings, 64, 48, 100, name="x", available=2**30) == (None, 0)
    auto = SeparateSettings().validate()
    window, whole_max = plan_window(auto, 640, 480, 100_000, name="x", available=4 * 2**30)
    assert 20 < window <= 200 and whole_max > 0
    with pytest.raises(InputError, match="--scale"):
        plan_window(auto, 4000, 3000, None, name="x", available=2**30)
    # The CLI says so in one line, before writing anything.
    monkeypatch.setattr("bpvideo.pipeline.available_memory", lambda: 100_000)
    res = run_cli("separate", tiny_clip, "-o", tmp_path / "o", "--window", "0")
    assert res.code == 2 and res.err.count("\n") == 1
    assert "--window" in res.err and "--scale" in res.err and "available" in res.err
    assert not (tmp_path / "o").exists()


# --- pipes -----------------------------------------------------------------------------


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
    ref = _bpvideo("separate", path, "-o", tmp_path / "file", *opts)
    assert ref.returncode == 0, ref.stderr
    assert ref.stdout.decode().strip() == str(tmp_path / "file")
    raw = frames.tobytes()  # bgr24, as ffmpeg -f rawvideo -pix_fmt bgr24 - writes
    piped = _bpvideo("separate", "-", "--size", f"{w}x{h}", "--pix-fmt", "bgr24", "--fps", "25",
                     "-o", tmp_path / "pipe", "--masks-to", "-", *opts, stdin=raw)  # fmt: skip
    assert piped.returncode == 0, piped.stderr
    assert len(piped.stdout) == 60 * h * w  # stdout carries only the mask bytes
    out = np.frombuffer(piped.stdout, np.uint8).reshape(60, h, w)
    expected = _read_masks(tmp_path / "file" / "masks")
    for j in range(60):  # frame by frame
        assert np.array_equal(out[j], expected[j]), f"frame {j}"
    assert np.array_equal(_read_masks(tmp_path / "pipe" / "masks"), expected)
    summary = json.loads((tmp_path / "pipe" / "summary.json").read_text())
    assert summary["input"] == "stdin" and summary["fps"] == 25.0 and summary["frames"] == 60


def test_gray_pipe_and_truncated_frame(piped_frames, tmp_path: Path) -> None:
    frames, _ = piped_frames
    gray = np.stack([cv2.cvtColor(f, cv2.COLOR_BGR2GRAY) for f in frames[:20]])
    ok = _bpvideo("separate", "-", "--size", "48x36", "-o", tmp_path / "g", "-q", "--rank", "1",
                  stdin=gray.tobytes())  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert json.loads((tmp_path / "g" / "summary.json").read_text())["frames"] == 20
    bad = _bpvideo("separate", "-", "--size", "48x36", "-o", tmp_path / "t", "--rank", "1",
                   stdin=gray.tobytes()[:-100])  # fmt: skip
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
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(),
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
    truncated = io.BytesIO(y4m.read_bytes()[:-50])
    with pytest.raises(WorkError, match="truncated"):
        list(open_source("-", stdin=truncated).frames)


# --- colour ----------------------------------------------------------------------------


def test_color_writes_colour_outputs(run_cli, tiny_clip: Path, tmp_path: Path) -> None:
    out = tmp_path / "c"
    res = run_cli("separate", tiny_clip, "-o", out, "--color", "--lossless", "--rank", "1", "-q")
    assert res.code == 0, res.err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["channels"] == 3
    frames, gt = tiny_frames()
    bg = read_video(out / "background.mkv", gray=False).frames
    # The clip's red channel is the blue one + 10 grey levels: the background keeps it.
    diff = bg[..., 2].astype(int) - bg[..., 0].astype(int)
    assert 7 < np.median(diff) < 13
    still = cv2.imread(str(out / "background.png"), cv2.IMREAD_UNCHANGED)
    assert still.shape == (36, 48, 3)
    fg = read_video(out / "foreground.mkv", gray=False).frames
    masks = _read_masks(out / "masks") > 0
    assert np.array_equal(fg[masks], frames[masks]) and not fg[~masks].any()
    assert (masks & gt).sum() / gt.sum() > 0.9


# --- many inputs -----------------------------------------------------------------------


def test_format_output_and_expand(tmp_path: Path) -> None:
    assert format_output("out/{stem}", "cams/a.mp4", 1) == "out/a"
    assert format_output("o/{parent}-{name}-{index:02d}", "cams/a.mp4", 3) == "o/cams-a.mp4-03"
    assert format_output("o/{stem}", "data/highway/input", 1) == "o/highway"
    assert format_output(None, "cams/a.mp4", 1) == "a-bpvideo"
    assert format_output("plain", "a.mp4", 2) == "plain"
    with pytest.raises(InputError, match=r"unknown placeholder \{camera\}"):
        format_output("o/{camera}", "a.mp4", 1)
    for name in ("b.mp4", "a.mp4", "c.txt"):
        (tmp_path / name).write_bytes(b"x")
    pattern = str(tmp_path / "*.mp4")
    assert expand_inputs([pattern, str(tmp_path / "a.mp4")]) == [
        str(tmp_path / "a.mp4"),
        str(tmp_path / "b.mp4"),
    ]
    with pytest.raises(InputError, match=r"\*\.mkv: the glob matches no file"):
        expand_inputs([str(tmp_path / "*.mkv")])
    with pytest.raises(InputError, match="stdin"):
        expand_inputs(["-", pattern])


def test_many_inputs_one_failing(run_cli, tiny_clip: Path, tmp_path: Path) -> None:
    cams = tmp_path / "cams"
    cams.mkdir()
    shutil.copy(tiny_clip, cams / "a.mkv")
    shutil.copy(tiny_clip, cams / "b.mkv")
    (cams / "broken.mkv").write_text("not a video\n" * 40)
    template = str(tmp_path / "OUT" / "{stem}")
    res = run_cli("separate", str(cams / "*.mkv"), "-o", template, "--rank", "1", "-q")
    assert res.code == 1
    assert res.out.splitlines() == [str(tmp_path / "OUT" / s) for s in ("a", "b")]
    errors = [line for line in res.err.splitlines() if line.startswith("bpvideo: error:")]
    assert len(errors) == 1 and "broken.mkv" in errors[0] and "cannot be decoded" in errors[0]
    assert (tmp_path / "OUT" / "a" / "summary.json").exists()
    assert (tmp_path / "OUT" / "b" / "summary.json").exists()
    assert output_files(tmp_path / "OUT" / "broken") == []
    # JSON lines, and all succeeding: exit 0.
    res = run_cli("separate", cams / "a.mkv", cams / "b.mkv", "-o", template, "--rank", "1",
                  "-q", "--json", "--overwrite")  # fmt: skip
    assert res.code == 0, res.err
    lines = [json.loads(line) for line in res.out.splitlines()]
    assert [s["input"] for s in lines] == [str(cams / "a.mkv"), str(cams / "b.mkv")]
    # Two inputs, one output directory: refused before any work.
    res = run_cli("separate", cams / "a.mkv", cams / "b.mkv", "-o", tmp_path / "same")
    assert res.code == 2 and "would both write" in res.err and "{stem}" in res.err
    res = run_cli("separate", str(tmp_path / "nothing" / "*.mp4"), "-o", template)
    assert res.code == 2 and "nothing/*.mp4: the glob matches no file" in res.err


# --- real data -------------------------------------------------------------------------


@pytest.mark.shared_data
@pytest.mark.slow
def test_highway_windowed_matches_whole(shared_data: Path, tmp_path: Path, run_cli) -> None:
    from bpvideo.evaluate import evaluate

    seq = shared_data / "cdnet_highway"
    gt = seq / "groundtruth"
    size = cv2.imread(str(sorted(gt.glob("gt*.png"))[0]), cv2.IMREAD_GRAYSCALE).shape[::-1]
    scores = {}
    for window in ("0", "200"):
        out = tmp_path / f"w{window}"
        res = run_cli("separate", seq, "-o", out, "--scale", "0.5", "--window", window, "-q")
        assert res.code == 0, res.err
        # Score at the ground truth's size: masks scaled back up (nearest).
        full = tmp_path / f"full{window}"
        (full / "masks").mkdir(parents=True)
        shutil.copy(out / "summary.json", full / "summary.json")
        for p in (out / "masks").iterdir():
            m = cv2.imread(str(p), cv2.IMREAD_GRAYSCALE)
            up = cv2.resize(m, size, interpolation=cv2.INTER_NEAREST)
            cv2.imwrite(str(full / "masks" / p.name), up)
        scores[window] = evaluate(full, gt).summary["f_measure"]
    assert scores["0"] > 0.7
    assert abs(scores["200"] - scores["0"]) < 0.02, scores
