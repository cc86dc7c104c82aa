"""Long runs survive a stop (issue 41): SIGINT/SIGTERM keep the finished windows as a
result marked incomplete, SIGKILL leaves a checkpoint, and ``--resume`` finishes the run
to the uninterrupted run's result, mask for mask.

Each stop is sent when the process itself says a window was saved (its ``checkpoint:``
line, ``-v``), never after a guessed time.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bpvideo.batch.config import Job
from bpvideo.batch.run import completed
from bpvideo.resume import stopped
from bpvideo.settings import SeparateSettings
from bpvideo.sinks.checkpoint import CHECKPOINT
from bpvideo.sinks.writers import write_video
from bpvideo.sources.video import read_video
from tests._cli.test_interrupts import (
    _env,
    _no_child_outlives_its_test,  # noqa: F401 - fixture
    _start,
    _wait_for_line,
)
from tests.conftest import tiny_frames

#: Windows of 30 frames sharing 5: a 120-frame clip is solved in 5 windows, new frames
#: 1-30, 31-55, 56-80, 81-105, 106-120 (the last is never saved: the result is then about
#: to be complete).
WINDOWS = ("--window", "30", "--overlap", "5")
BOUNDARIES = (30, 55, 80, 105)


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("resume") / "long.mkv"
    frames, _ = tiny_frames(n=120, h=72, w=96)
    write_video(path, frames, 10.0, lossless=True)
    return path


def _run(*args: str | Path) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "bpvideo", "separate", *map(str, args)],
                          capture_output=True, text=True, env=_env(), timeout=600)  # fmt: skip
    return done


@pytest.fixture(scope="module")
def whole(clip: Path) -> Path:
    """The uninterrupted run's result."""
    out = clip.parent / "whole"
    done = _run(clip, "-o", out, *WINDOWS)
    assert done.returncode == 0, done.stderr
    return out


def _stop_after_window(clip: Path, out: Path, signum: int, saved: int) -> tuple[int, str]:
    """Run into ``out``; send ``signum`` once the run says frames 1-``saved`` are saved.
    The exit code and stderr."""
    proc = _start(clip, "-o", out, *WINDOWS, "-v")
    lines = _wait_for_line(proc, f"checkpoint: frames 1-{saved} saved")
    proc.send_signal(signum)
    _, rest = proc.communicate(timeout=600)
    return proc.returncode, "".join(lines) + rest


def _masks(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((out / "masks").iterdir())}


def _assert_same_result(out: Path, whole: Path) -> None:
    """Every mask file identical, bit for bit; the same events and frame table; valid
    videos of every frame; a complete summary; no checkpoint or staging left."""
    assert _masks(out) == _masks(whole)
    for name in ("events.csv", "frames.csv"):
        assert (out / name).read_bytes() == (whole / name).read_bytes(), name
    summary = json.loads((out / "summary.json").read_text())
    assert "incomplete" not in summary and summary["frames"] == 120
    expected = json.loads((whole / "summary.json").read_text())
    for key in ("frame_numbers", "times", "windows", "events", "masks"):
        assert summary[key] == expected[key], key
    assert read_video(out / "background.mp4").n_frames == 120
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_keeps_the_finished_windows_and_resume_finishes_them(
    clip: Path, whole: Path, tmp_path: Path, signum: int
) -> None:
    out = tmp_path / "out"
    code, stderr = _stop_after_window(clip, out, signum, BOUNDARIES[1])
    assert code == 128 + signum, stderr
    assert "Traceback" not in stderr
    # the windows saved by the time the signal landed: those the process said it saved
    kept = int(re.findall(r"checkpoint: frames 1-(\d+) saved", stderr)[-1])
    assert kept in BOUNDARIES[1:]
    what = "interrupted" if signum == signal.SIGINT else "terminated by signal 15 (SIGTERM)"
    assert stderr.strip().splitlines()[-1] == (
        f"bpvideo: {what}: frames 1-{kept} of 120 kept in {out} (incomplete): run the same "
        "command with --resume to finish"
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["incomplete"]["frames"] == kept == summary["frames"]
    assert summary["incomplete"]["of"] == 120
    # the kept masks are the uninterrupted run's; the videos hold the kept frames
    assert _masks(out) == dict(list(_masks(whole).items())[:kept])
    assert read_video(out / "background.mp4").n_frames == kept
    assert not any(p.name.startswith(".bpvideo-partial-") for p in out.iterdir())
    # never taken for a complete result
    job = Job(0, 0, 1, str(clip), str(out), _settings())
    assert not completed(job) and stopped(job.input, job.output, job.settings)
    # bpvideo events works on the frames kept, and the result stays incomplete
    events = subprocess.run([sys.executable, "-m", "bpvideo", "events", str(out)],
                            capture_output=True, text=True, env=_env(), timeout=600)  # fmt: skip
    assert events.returncode == 0 and "an incomplete result" in events.stderr, events.stderr
    assert json.loads((out / "summary.json").read_text())["incomplete"]["frames"] == kept
    again = _run(clip, "-o", out, *WINDOWS)
    assert again.returncode == 2 and "--resume" in again.stderr.strip().splitlines()[-1]
    resumed = _run(clip, "-o", out, *WINDOWS, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    _assert_same_result(out, whole)
    assert completed(job) and not stopped(job.input, job.output, job.settings)


def _settings() -> dict:
    return SeparateSettings.from_mapping({"window": "30", "overlap": 5}).to_dict()


def test_sigkill_leaves_a_checkpoint_that_resume_finishes(
    clip: Path, whole: Path, tmp_path: Path
) -> None:
    """SIGKILL cannot be caught: no result is written, but the windows saved before it
    are enough; --resume with other settings or another input is refused first."""
    out = tmp_path / "out"
    code, _ = _stop_after_window(clip, out, signal.SIGKILL, BOUNDARIES[0])
    assert code == -signal.SIGKILL
    assert not (out / "summary.json").exists()
    assert (out / CHECKPOINT / "run.json").is_file()
    plain = _run(clip, "-o", out, *WINDOWS)
    assert plain.returncode == 2
    assert "holds a stopped run" in plain.stderr and "--resume" in plain.stderr
    other = _run(clip, "-o", out, "--window", "30", "--overlap", "6", "--resume")
    assert other.returncode == 2, other.stderr
    assert "other settings (overlap=5 then, 6 now)" in other.stderr
    copy = tmp_path / "copy.mkv"
    shutil.copy(clip, copy)
    moved = _run(copy, "-o", out, *WINDOWS, "--resume")
    assert moved.returncode == 2 and "its stopped run was of" in moved.stderr
    for refused in (plain, other, moved):
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    # on another number of threads (another machine): the same result all the same
    resumed = _run(clip, "-o", out, *WINDOWS, "--resume", "-v", "--threads", "1")
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming: frames 1-" in resumed.stderr
    _assert_same_result(out, whole)


def test_resume_with_nothing_to_resume_is_a_usage_error(clip: Path, whole: Path, tmp_path):
    empty = _run(clip, "-o", tmp_path / "new", *WINDOWS, "--resume")
    assert empty.returncode == 2
    assert empty.stderr.strip() == (
        f"bpvideo: error: {tmp_path / 'new'}: nothing to resume (no stopped run was kept "
        "there): run without --resume"
    )
    assert not (tmp_path / "new").exists()
    done = _run(clip, "-o", whole, *WINDOWS, "--resume")
    assert done.returncode == 2 and "holds a complete result" in done.stderr
    stdin = _run("-", "-o", tmp_path / "s", "--resume")
    assert stdin.returncode == 2 and "not stdin" in stdin.stderr


@pytest.mark.parametrize(
    "run_json",
    ['{"windows": [{"ind', '{"windows": [{"index": 0}]}', '{"windows": 5}'],
    ids=["truncated", "state-missing", "wrong-type"],
)
def test_a_damaged_checkpoint_is_said_so_and_overwrite_replaces_it(tmp_path, run_json):
    """A checkpoint that cannot be read back: --resume says it is damaged (a truncated
    run.json said "nothing to resume", a wrong type was an internal error), and the fix it
    names, --overwrite without --resume, starts again (it failed on the same checkpoint)."""
    from bpvideo.errors import InputError
    from bpvideo.resume import check_resume

    out = tmp_path / "out"
    (out / CHECKPOINT).mkdir(parents=True)
    (out / CHECKPOINT / "run.json").write_text(run_json)
    for resume in (True, False):
        with pytest.raises(InputError) as info:
            check_resume("cam.mkv", str(out), SeparateSettings(resume=resume).validate(), False)
        message = info.value.render({"resume": "--resume", "overwrite": "--overwrite"})
        assert "the checkpoint is damaged" in message
        assert message.endswith("run without --resume and with --overwrite"), message
    check_resume("cam.mkv", str(out), SeparateSettings(overwrite=True).validate(), False)
