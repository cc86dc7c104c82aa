"""The output directory: results appear complete or not at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from bpvideo.errors import InputError, WorkError
from bpvideo.sinks.outputs import OutputDir
from tests.conftest import output_files


def test_output_dir_commit_and_failure(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b"
    with OutputDir(target) as out:
        out.stage("summary.json").write_text("{}")
        out.stage("x.txt").write_text("x")
        out.commit()
    assert output_files(target) == ["summary.json", "x.txt"]
    with pytest.raises(InputError, match="already holds results"):
        OutputDir(target).check()

    fresh = tmp_path / "c" / "d"
    with pytest.raises(WorkError), OutputDir(fresh) as out:
        out.stage("x.txt").write_text("x")
        raise WorkError("boom")
    assert not (tmp_path / "c").exists()  # everything this run created is gone

    with pytest.raises(WorkError), OutputDir(target, overwrite=True) as out:
        out.stage("x.txt").write_text("new")
        raise WorkError("boom")
    assert output_files(target) == ["summary.json", "x.txt"]  # old result untouched
    assert (target / "x.txt").read_text() == "x"


def test_output_dir_is_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(InputError, match="is a file"):
        OutputDir(tmp_path / "f").check()
    with pytest.raises(InputError, match="is a file"):
        OutputDir(tmp_path / "f" / "sub").check()


def test_one_run_at_a_time_writes_an_output(tmp_path: Path) -> None:
    """A second OutputDir on the same folder while the first is open is refused (with or
    without overwrite); the lock file goes with the first run, failed or not."""
    target = tmp_path / "out"
    with OutputDir(target) as first:
        for overwrite in (False, True):
            with pytest.raises(InputError, match="another bpvideo run is writing it"):
                with OutputDir(target, overwrite=overwrite):
                    pass
        first.stage("summary.json").write_text("{}")
        first.commit()
    assert output_files(target) == ["summary.json"]  # no lock file left
    with pytest.raises(WorkError), OutputDir(target, overwrite=True):
        raise WorkError("boom")
    assert output_files(target) == ["summary.json"]
    with OutputDir(target, overwrite=True) as again:  # the lock was released
        again.commit()


def test_a_run_that_finished_meanwhile_is_not_replaced(tmp_path: Path) -> None:
    """Checked before the work, and again once the lock is held: the other run may have
    finished in between."""
    target = tmp_path / "out"
    late = OutputDir(target)
    late.check()
    with OutputDir(target) as first:
        first.stage("summary.json").write_text("{}")
        first.commit()
    with pytest.raises(InputError, match="already holds results"), late:
        pass
    assert output_files(target) == ["summary.json"]


def test_what_a_killed_worker_left_is_removed_only_when_its_owner_is_known_gone(
    tmp_path: Path,
) -> None:
    """A staging folder younger than this process is kept (its owner may be a run in
    another pid namespace) unless its pid is one this process killed (a batch's worker):
    then it goes, with the lock and the folder the job created; a complete result stays."""
    import subprocess
    import sys

    from bpvideo.sinks.outputs import LOCK_NAME, STAGING_PREFIX, remove_killed

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    pid = int(gone.stdout)
    job = tmp_path / "job"
    staging = job / f"{STAGING_PREFIX}{pid}-abc"
    staging.mkdir(parents=True)
    (staging / "masks.npz").write_bytes(b"partial")
    (job / LOCK_NAME).write_text(str(pid))
    assert not remove_killed(job) and staging.is_dir()
    assert remove_killed(job, killed=[pid]) and not job.exists()

    done = tmp_path / "done"
    (done / f"{STAGING_PREFIX}{pid}-abc").mkdir(parents=True)
    (done / "summary.json").write_text("{}")
    assert not remove_killed(done, killed=[pid]) and (done / "summary.json").is_file()
