"""OS errors while writing, told in one line (bpvideo/failures.py): the file that
failed first, under the name it would have had, why (a full disk, the file size limit, too
few open files, a removed folder) and the fix (issue 42)."""

from __future__ import annotations

import errno
import re
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bpvideo.sinks.writers
from bpvideo.errors import WorkError
from bpvideo.failures import resource_failure, unstaged, write_failure
from bpvideo.sinks.writers import write_video
from tests.conftest import output_files, process_env, tiny_frames


def _process(*args: object, limit: tuple[int, int] | None = None) -> subprocess.CompletedProcess:
    """``python -m bpvideo ARGS`` with a resource limit ``(RLIMIT_*, value)`` set (soft
    and hard) in the child."""

    def preexec() -> None:
        if limit is not None:
            resource.setrlimit(limit[0], (limit[1], limit[1]))

    return subprocess.run([sys.executable, "-m", "bpvideo", *map(str, args)],
                          capture_output=True, text=True, env=process_env(),
                          preexec_fn=preexec, timeout=300, check=False)  # fmt: skip


def _one_error_line(done: subprocess.CompletedProcess, code: int) -> str:
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("bpvideo: error: "), done.stderr
    assert ".bpvideo-partial" not in lines[0]  # never a hidden name that is gone
    return lines[0]


@pytest.fixture
def clip(tmp_path: Path) -> Path:
    path = tmp_path / "clip.mkv"
    write_video(path, tiny_frames(n=24)[0], 10.0, lossless=True)
    return path


def test_the_first_write_that_failed_is_named_where_it_would_be(tmp_path: Path) -> None:
    """A mask filled the disk; closing frames.csv then failed too: the mask is named,
    under OUTDIR (its staged name is gone)."""
    out, staging = tmp_path / "out", tmp_path / "out" / ".bpvideo-partial-1-x"
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left", str(staging / "masks/bin000017.png"))
        except OSError:
            raise OSError(errno.ENOSPC, "No space left", str(staging / "frames.csv")) from None
    except OSError as exc:
        error = write_failure(out, exc, [(staging, out)])
    assert error.message == (
        f"{out}: writing the outputs failed: disk full (no space left on the device) "
        f"({out}/masks/bin000017.png): free some space or choose another output; nothing "
        "was kept"
    )


def test_an_encoder_error_names_the_file_in_place() -> None:
    staging, out = Path("o/.bpvideo-partial-7-abc"), Path("o")
    error = WorkError(f"{staging}/background.mkv: ffmpeg could not write the video: x")
    assert unstaged(error, [(staging, out)]).message == (
        "o/background.mkv: ffmpeg could not write the video: x; nothing was kept"
    )
    assert unstaged(WorkError("x: y; nothing was kept"), [(staging, out)]) is None


@pytest.mark.parametrize(
    ("code", "said"),
    [(errno.ENOSPC, "disk full"), (errno.EFBIG, "the file size limit was reached (ulimit -f:"),
     (errno.EMFILE, "too many open files (ulimit -n:")],
)  # fmt: skip
def test_limits_and_full_disks_anywhere_are_named_not_internal(code: int, said: str) -> None:
    error = resource_failure(OSError(code, "x", "somewhere/file.bin"))
    assert error is not None and error.message.startswith(f"somewhere/file.bin: {said}")
    assert resource_failure(OSError(errno.EACCES, "x")) is None  # not a limit: a bug to report


def test_a_full_disk_names_the_file_that_filled_it(small_disk: Path, clip: Path) -> None:
    out = small_disk / "out"
    line = _one_error_line(_process("separate", clip, "-o", out, "-q"), 1)
    named = re.search(r"\((\S+)\)", line.split("disk full (no space left on the device)")[1])
    assert named is not None, line
    assert Path(named.group(1)).parent in (out, out / "masks"), line
    assert line.endswith("free some space or choose another -o; nothing was kept")
    assert output_files(small_disk) == []


@pytest.mark.parametrize("lossless", [False, True])
def test_the_file_size_limit_is_named_as_such(clip: Path, tmp_path: Path, lossless: bool) -> None:
    """RLIMIT_FSIZE: EFBIG in bpvideo (which ignores SIGXFSZ), SIGXFSZ in its ffmpeg
    children; either is 'the file size limit', not an internal error or a broken pipe."""
    out = tmp_path / "out"
    args = ["separate", clip, "-o", out, "-q", *(["--lossless"] if lossless else [])]
    line = _one_error_line(_process(*args, limit=(resource.RLIMIT_FSIZE, 2048)), 1)
    assert re.search(rf"^bpvideo: error: {out}\S*: (writing the outputs failed|ffmpeg could "
                     r"not write the video): the file size limit was reached \(ulimit -f: 2 "
                     r"KiB\)", line), line  # fmt: skip
    assert "raise the limit (ulimit -f unlimited)" in line
    assert not out.exists()


def test_too_few_open_files_is_said_before_any_work(clip: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = _process("separate", clip, "-o", out, limit=(resource.RLIMIT_NOFILE, 12))
    assert _one_error_line(done, 1) == (
        "bpvideo: error: too few open files allowed (ulimit -n: 12; a run needs 32): raise "
        "the limit (ulimit -n 1024) and run again"
    )
    assert not out.exists()


def test_an_output_directory_removed_during_the_run_is_said_so(
    run_cli, clip: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OUTDIR removed while the masks are written: named as OUTDIR, not by the hidden
    staging path of a file that failed to be written."""
    import shutil

    out = tmp_path / "out"
    original = bpvideo.sinks.writers._write_mask_png

    def removing(folder: Path, number: int, image: np.ndarray) -> None:
        if number == 5:
            # as `rm -rf` run until it succeeds: the encoders' threads keep writing into
            # the folder, and a file they add fails one pass ("directory not empty")
            while out.exists():
                shutil.rmtree(out, ignore_errors=True)
        original(folder, number, image)

    monkeypatch.setattr(bpvideo.sinks.writers, "_write_mask_png", removing)
    res = run_cli("separate", clip, "-o", out, "-q")
    assert res.code == 1
    assert res.err == (
        f"bpvideo: error: {out}: the output directory was removed while the run wrote into "
        "it: leave it in place while bpvideo runs, or choose another -o; nothing was kept\n"
    )
