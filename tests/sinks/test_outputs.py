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
