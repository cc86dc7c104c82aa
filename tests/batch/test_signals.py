"""``bpvideo batch`` stopped by signals, killed, resumed; its report named and true.

The slow jobs never converge (``tol: 0`` with a huge ``max_iter``), so that a signal always
finds them running; the fast ones finish in a moment. A batch runs as a real process (its
own session, so that a failed test can end all of it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from bpvideo.sinks.writers import write_video
from tests.conftest import REPO, default_signals, tiny_frames

FAST = "    rank: 1\n"
SLOW = "    rank: 1\n    tol: 0\n    max_iter: 1000000\n"


@pytest.fixture
def clips(tmp_path: Path) -> list[Path]:
    paths = []
    for seed in range(4):
        path = tmp_path / "cams" / f"c{seed}.mkv"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_video(path, tiny_frames(n=12, seed=seed)[0], 10.0, lossless=True)
        paths.append(path)
    return paths


def config_of(tmp_path: Path, clips: list[Path], kinds: str, name: str = "night.yaml") -> Path:
    """A config of one job per clip, ``kinds`` saying which are fast (``f``) or slow (``s``)."""
    text = "jobs:\n"
    for clip, kind in zip(clips, kinds, strict=False):
        text += f"  - input: {clip}\n    output: {tmp_path / 'out' / clip.stem}\n"
        text += FAST if kind == "f" else SLOW
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture
def start() -> Iterator[Callable[..., subprocess.Popen]]:
    """Start ``bpvideo ARGS`` as a process; whatever is left of it is killed at the end."""
    started: list[subprocess.Popen] = []

    def run(*args: str | os.PathLike) -> subprocess.Popen:
        env = dict(os.environ, PYTHONPATH=str(REPO), OPENBLAS_NUM_THREADS="1")
        proc = subprocess.Popen(
            [sys.executable, "-m", "bpvideo", *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
            preexec_fn=default_signals,
        )
        started.append(proc)
        return proc

    yield run
    for proc in started:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()


def report_of(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def wait_for(path: Path, ready: Callable[[list[str]], bool], proc: subprocess.Popen) -> dict:
    """The report once ``ready(statuses)`` holds (it is replaced atomically: always whole)."""
    deadline = time.monotonic() + 300  # a hang guard: the report is the batch's own word
    while time.monotonic() < deadline:
        report = report_of(path)
        if report and ready([j["status"] for j in report["jobs"]]):
            return report
        assert proc.poll() is None, proc.communicate()[1].decode()
        time.sleep(0.05)
    raise AssertionError(f"the report never got there: {report_of(path)}")


def alive(report: dict) -> list[psutil.Process]:
    """Worker processes of a report still alive (and their children)."""
    found = []
    for pid, created in report["worker_processes"]:
        try:
            process = psutil.Process(pid)
            if abs(process.create_time() - created) < 0.01 and process.is_running():
                if process.status() != psutil.STATUS_ZOMBIE:
                    found += [process, *process.children(recursive=True)]
        except psutil.NoSuchProcess:
            pass
    return found


def staged(tmp_path: Path) -> list[Path]:
    return (
        [p for p in (tmp_path / "out").rglob(".bpvideo-*")] if (tmp_path / "out").exists() else []
    )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_batch_and_its_workers(
    start, clips: list[Path], tmp_path: Path, signum: int
) -> None:
    """Signalled once its report says two slow jobs run (the batch's own word, not a
    guess of time): it stops them (workers that do not stop within GRACE are killed),
    says so in the report and exits 128 + N. No wall-clock bound is asserted: a loaded
    machine only makes it later."""
    config = config_of(tmp_path, clips, "fsss")
    proc = start("batch", config, "--workers", "2")
    path = tmp_path / "night.report.json"
    report = wait_for(path, lambda s: s[0] == "ok" and s.count("running") == 2, proc)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=600)  # a hang guard
    assert proc.returncode == 128 + signum, err
    final = report_of(path)
    statuses = [j["status"] for j in final["jobs"]]
    assert statuses[0] == "ok" and sorted(statuses[1:]) == ["interrupted", "interrupted", "pending"]
    assert final["interrupted_by"] == signum and final["counts"]["ok"] == 1
    assert final["jobs"][0]["seconds"] == report["jobs"][0]["seconds"]
    assert (tmp_path / "out/c0/summary.json").is_file()
    assert not any((tmp_path / "out" / c.stem).exists() for c in clips[1:])
    assert staged(tmp_path) == [] and alive(final) == []
    assert len(err.decode().strip().splitlines()[-1:]) == 1 and "--resume" in err.decode()


def test_workers_die_with_a_killed_batch_and_resume_runs_the_rest(
    start, clips: list[Path], tmp_path: Path
) -> None:
    config = config_of(tmp_path, clips, "fssf")
    proc = start("batch", config, "--workers", "2")
    path = tmp_path / "night.report.json"
    report = wait_for(path, lambda s: s[0] == "ok" and s.count("running") == 2, proc)
    workers = alive(report)
    assert workers
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=600)
    _, left = psutil.wait_procs(workers, timeout=120)  # a hang guard: they must end
    assert left == [], left  # no worker (nor its ffmpeg) outlives its batch
    assert staged(tmp_path) == []  # each stopped its job as SIGTERM would
    # The report stayed true: the killed batch's jobs say running, the others what they are.
    statuses = [j["status"] for j in report_of(path)["jobs"]]
    assert statuses == ["ok", "running", "running", "pending"]
    first_seconds = report_of(path)["jobs"][0]["seconds"]
    # --resume: exactly the three jobs without a result, once they can finish.
    config_of(tmp_path, clips, "ffff")
    proc = start("batch", config, "--resume", "--dry-run")
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert [line.split("\t")[0] for line in out.decode().splitlines()] == list(map(str, clips[1:]))
    proc = start("batch", config, "--resume", "--workers", "2")
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()
    final = report_of(path)
    assert [j["status"] for j in final["jobs"]] == ["ok"] * 4
    assert final["jobs"][0]["earlier_run"] is True
    assert final["jobs"][0]["seconds"] == first_seconds
    assert not any(j.get("earlier_run") for j in final["jobs"][1:])


def test_each_config_has_its_own_report(run_cli, clips: list[Path], tmp_path: Path) -> None:
    day = config_of(tmp_path, clips[:1], "f", name="day.yaml")
    night = config_of(tmp_path, clips[1:2], "f", name="night.yaml")
    assert run_cli("batch", day, "--workers", "1").code == 0
    assert run_cli("batch", night, "--workers", "1").code == 0
    inputs = {
        name: [j["input"] for j in report_of(tmp_path / f"{name}.report.json")["jobs"]]
        for name in ("day", "night")
    }
    assert inputs == {"day": [str(clips[0])], "night": [str(clips[1])]}
    chosen = tmp_path / "reports" / "mine.json"
    dawn = config_of(tmp_path, clips[2:3], "f", name="dawn.yaml")
    res = run_cli("batch", dawn, "--workers", "1", "--report", chosen)
    assert res.code == 0, res.err
    assert report_of(chosen)["jobs"][0]["input"] == str(clips[2])
    assert not (tmp_path / "dawn.report.json").exists() and str(chosen) in res.err


def _saved_frames(out: Path) -> int:
    """The frames a job's checkpoint keeps so far (its own word), 0 before the first."""
    from bpvideo.errors import InputError
    from bpvideo.sinks.checkpoint import read_checkpoint

    try:
        saved = read_checkpoint(out)
    except InputError:  # caught between two of its files: look again
        return 0
    return 0 if saved is None else saved.frames


def test_a_stopped_job_keeps_its_windows_and_resume_goes_on_from_them(
    start, run_cli, tmp_path: Path
) -> None:
    """A job of 4 windows of about a third of a second each (``tol: 0``: every window runs
    its 150 iterations), stopped once its checkpoint holds a window: the report and the last line
    say what is kept, and ``--resume`` finishes it to the masks of an uninterrupted run."""
    clip = tmp_path / "cams" / "long.mkv"
    clip.parent.mkdir()
    write_video(clip, tiny_frames(n=90, h=48, w=64)[0], 10.0, lossless=True)
    options = {"rank": "1", "tol": "0", "max_iter": "150", "window": "30", "overlap": "5"}
    out = tmp_path / "out" / "long"
    config = tmp_path / "night.yaml"
    config.write_text(f"jobs:\n  - input: {clip}\n    output: {out}\n"
                      + "".join(f"    {k}: {v}\n" for k, v in options.items()))  # fmt: skip
    proc = start("batch", config, "--workers", "1")
    deadline = time.monotonic() + 300  # a hang guard: the checkpoint is the job's own word
    while _saved_frames(out) == 0:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1]
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 128 + signal.SIGTERM, err
    entry = report_of(tmp_path / "night.report.json")["jobs"][0]
    kept = _saved_frames(out)
    assert entry["status"] == "interrupted" and entry["kept_frames"] == kept
    assert kept in (30, 55, 80), kept  # whole windows: frames 1-30, 31-55, 56-80
    assert f"its first {kept} frames are kept: --resume goes on from them" in entry["error"]
    last = err.decode().strip().splitlines()
    assert "(the finished windows of 1 interrupted job were kept)" in next(
        line for line in last if line.startswith("bpvideo: terminated by signal 15")
    )
    done = run_cli("batch", config, "--resume", "--workers", "1")
    assert done.code == 0, done.err
    whole = tmp_path / "whole"
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in options.items()]
    assert run_cli("separate", clip, "-o", whole, *flags).code == 0
    masks = sorted((out / "masks").iterdir())
    assert len(masks) == 90
    assert [p.read_bytes() for p in masks] == [
        p.read_bytes() for p in sorted((whole / "masks").iterdir())
    ]
    assert "incomplete" not in json.loads((out / "summary.json").read_text())
