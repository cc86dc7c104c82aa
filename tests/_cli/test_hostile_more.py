"""Hostile inputs, second round (issue 27): data loss, crashes, silent wrong results,
through the real CLI (in-process and as child processes).

Every refusal is one line on stderr naming the input and the fix, with the documented
exit status, and leaves nothing behind: no file outside the output, no staging folder,
no lock file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bpvideo.io.writers import write_video
from tests._cli.test_bad_inputs import assert_one_error_line
from tests.conftest import REPO, CliResult, output_files, tiny_frames


@pytest.fixture
def clip(tmp_path: Path) -> Path:
    path = tmp_path / "clip.mkv"
    write_video(path, tiny_frames(n=12)[0], 10.0, lossless=True)
    return path


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), OPENBLAS_NUM_THREADS="1", **extra)
    env.pop("BPVIDEO_DEBUG", None)
    return env


def start(*args: str | os.PathLike, **env: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bpvideo", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_env(**env))  # fmt: skip


def finish(proc: subprocess.Popen, timeout: float = 120) -> CliResult:
    out, err = proc.communicate(timeout=timeout)
    return CliResult(proc.returncode, out, err)


# --- data loss ---------------------------------------------------------------------------


def test_two_runs_into_one_outdir(clip: Path, tmp_path: Path) -> None:
    """Started together, neither with --overwrite: one result, the other run refused
    with one line (busy, or already holding the first one's result)."""
    out = tmp_path / "out"
    runs = [start("separate", clip, "-o", out, "-q") for _ in range(2)]
    results = sorted((finish(p) for p in runs), key=lambda r: r.code)
    assert [r.code for r in results] == [0, 2], [r.err for r in results]
    assert_one_error_line(results[1], 2, "out", "(another bpvideo run|already holds)")
    assert "summary.json" in output_files(out)
    assert not [f for f in output_files(out) if f.startswith(".bpvideo")]
