"""Encoder settings (``--crf``, ``--preset``) and the masks-only mode (``--no-video``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from bpvideo.sinks.writers import VideoStream
from tests.conftest import output_files, process_env, read_masks

# imageio-ffmpeg (and so the ffmpeg binary) missing, as on a GPU machine without it
NO_FFMPEG = "raise ImportError('no imageio_ffmpeg on this machine')\n"


def test_video_stream_passes_crf_and_preset(tmp_path: Path) -> None:
    stream = VideoStream(tmp_path / "a.mp4", 25.0, crf=30, preset="ultrafast")
    command = stream._command(np.zeros((4, 6), np.uint8))
    assert command[command.index("-crf") + 1] == "30"
    assert command[command.index("-preset") + 1] == "ultrafast"
    default = VideoStream(tmp_path / "b.mp4", 25.0)._command(np.zeros((4, 6), np.uint8))
    assert default[default.index("-crf") + 1] == "18"  # today's behaviour by default
    assert default[default.index("-preset") + 1] == "veryfast"


def test_crf_changes_the_size_of_the_videos(run_cli, tiny_clip: Path, tmp_path: Path) -> None:
    sizes = {}
    for crf in ("10", "40"):
        out = tmp_path / crf
        res = run_cli("separate", tiny_clip, "-o", out, "--rank", "1", "-q", "--crf", crf,
                      "--preset", "ultrafast")  # fmt: skip
        assert res.code == 0, res.err
        settings = json.loads((out / "summary.json").read_text())["settings"]
        assert settings["crf"] == int(crf) and settings["preset"] == "ultrafast"
        sizes[crf] = sum((out / f"{n}.mp4").stat().st_size for n in ("background", "foreground"))
    # far less than the halving per +6 of a large clip: the MP4 headers are most of a tiny one
    assert sizes["40"] < 0.8 * sizes["10"]


def test_encoder_options_are_checked(run_cli, tiny_clip: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"
    res = run_cli("separate", tiny_clip, "-o", out, "--crf", "52")
    assert res.code == 2 and "--crf 52 must be >= 0 and <= 51" in res.err
    res = run_cli("separate", tiny_clip, "-o", out, "--preset", "turbo")
    assert res.code == 2 and "'turbo' is not one of 'ultrafast', 'superfast'" in res.err
    res = run_cli("separate", tiny_clip, "-o", out, "--lossless", "--crf", "20")
    assert res.code == 2
    assert res.err == (
        "bpvideo: error: --crf 20 sets the H.264 encoder, but --lossless writes FFV1: drop one\n"
    )
    res = run_cli("separate", tiny_clip, "-o", out, "--no-video", "--preset", "slow")
    assert res.code == 2 and "--no-video writes no video: drop one" in res.err
    res = run_cli("separate", tiny_clip, "-o", out, "--no-video", "--lossless")
    assert res.code == 2 and "--lossless and --no-video cannot be combined" in res.err
    assert not out.exists()


def test_no_video_runs_without_ffmpeg(tiny_folder: Path, tmp_path: Path) -> None:
    """Masks only: no encoder is started, so a folder of frames needs no ffmpeg at all."""
    fake = tmp_path / "fake" / "imageio_ffmpeg"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(NO_FFMPEG)
    env = process_env()
    env["PYTHONPATH"] = f"{fake.parent}:{env['PYTHONPATH']}"
    run = lambda *args: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "bpvideo", "separate", tiny_folder, "--rank", "1", *args],
        capture_output=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    out = tmp_path / "masks-only"
    done = run("-o", out, "--no-video", "--preview")
    assert done.returncode == 0, done.stderr.decode()
    top = [f for f in output_files(out) if "/" not in f]
    assert top == ["background.png", "events.csv", "frames.csv", "masks", "preview.png",
                   "report.html", "summary.json"]  # fmt: skip
    assert len(read_masks(out / "masks")) == 24
    summary = json.loads((out / "summary.json").read_text())
    assert summary["outputs"] == {  # which outputs exist
        "masks": "masks/bin%06d.png",
        "background_image": "background.png",
        "summary": "summary.json",
        "preview": "preview.png",
        "events": "events.csv",
        "frames": "frames.csv",
        "report": "report.html",
    }
    assert summary["settings"]["no_video"] is True
    # the same run with videos fails on this machine, with one line and nothing kept
    failed = run("-o", tmp_path / "videos")
    assert failed.returncode == 2 and failed.stderr.decode() == (
        "bpvideo: error: ffmpeg is not available (no imageio_ffmpeg on this machine): pip "
        "install imageio-ffmpeg, or set IMAGEIO_FFMPEG_EXE to an ffmpeg binary; --no-video "
        "writes the masks of a folder of frames without it\n"
    )
    assert not (tmp_path / "videos").exists()
