"""What an operator sees on a terminal (issue 16): a progress bar over frames and windows
with log lines printed above it (never glued to it), no bar when stderr is not a
terminal, ``--logfile``, and ``--masks-to -`` refused when stdout is a terminal."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from bpvideo._cli.console import ProgressBar, _stage_text
from bpvideo.progress import Progress, expected_windows
from tests.conftest import process_env

WINDOWED = ["--rank", "1", "--window", "10", "--overlap", "2"]


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks)


def run_on_terminal(*args: object, stdout_tty: bool = False) -> tuple[int, str, bytes]:
    """``python -m bpvideo ARGS`` with stderr (and, with ``stdout_tty``, stdout) on a
    pseudo-terminal; returns the exit code, what the terminal got, and the piped stream
    (stdout, or stderr when stdout is the terminal)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    piped = subprocess.PIPE
    proc = subprocess.Popen(
        [sys.executable, "-m", "bpvideo", *map(str, args)],
        stdin=subprocess.DEVNULL,
        stdout=slave if stdout_tty else piped,
        stderr=piped if stdout_tty else slave,
        env=process_env(),
    )
    os.close(slave)
    terminal = _read_all(master)
    os.close(master)
    other = (proc.stderr if stdout_tty else proc.stdout).read()
    proc.wait(timeout=120)
    return proc.returncode, terminal.decode(), other


def test_log_lines_print_above_the_bar_on_a_terminal(tiny_clip: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, terminal, stdout = run_on_terminal("separate", tiny_clip, "-o", out, *WINDOWED)
    assert code == 0, terminal
    assert stdout == f"{out}\n".encode()  # the bar and the logs stay off stdout
    segments = [seg for line in terminal.split("\n") for seg in line.rstrip("\r").split("\r")]
    bars = [seg for seg in segments if "%|" in seg]
    assert any("solving window 2/3" in seg and "frame" in seg for seg in bars), bars
    assert any(re.search(r"writing window 3/3: +75%\|.*\| 18/24 \[", seg) for seg in bars), bars
    assert any(re.search(r"finishing: 100%\|.*\| 24/24 \[.*read 24\]", seg) for seg in bars)
    logs = [seg for seg in segments if seg.startswith("bpvideo: ") and "%|" not in seg]
    expected = ["bpvideo: read 10 frames", "bpvideo: window 1: frames 1-10",
                "bpvideo: window 2: frames 11-18", "bpvideo: window 3: frames 19-24",
                f"bpvideo: wrote {out}"]  # fmt: skip
    for start in expected:  # each a whole line of its own
        assert sum(seg.startswith(start) for seg in logs) == 1, (start, logs)
    for seg in segments:  # no line glued to the bar: every message starts a line
        assert seg.find("bpvideo: ") in (-1, 0) and seg.count("bpvideo: ") <= 1, seg


def test_no_bar_and_clean_stderr_off_a_terminal(run_cli, tiny_clip: Path, tmp_path: Path):
    res = run_cli("separate", tiny_clip, "-o", tmp_path / "out", *WINDOWED)
    assert res.code == 0, res.err
    assert "\r" not in res.err and "\x1b" not in res.err
    lines = res.err.splitlines()
    assert len(lines) == 5 and all(line.startswith("bpvideo: ") for line in lines), lines


def test_quiet_has_no_bar_on_a_terminal(tiny_clip: Path, tmp_path: Path) -> None:
    code, terminal, _ = run_on_terminal("separate", tiny_clip, "-o", tmp_path / "o", "-q")
    assert code == 0 and terminal == ""


def test_masks_to_stdout_refused_on_a_terminal(tiny_clip: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, terminal, stderr = run_on_terminal(
        "separate", tiny_clip, "-o", out, "--masks-to", "-", stdout_tty=True
    )
    assert code == 2 and terminal == ""  # not one byte of binary on the terminal
    assert stderr.decode() == (
        "bpvideo: error: --masks-to - writes binary masks to stdout, which is a terminal: "
        "pipe or redirect stdout ('| ffmpeg -f rawvideo ...' or '> masks.raw'), or give "
        "--masks-to a file\n"
    )
    assert not out.exists()


def test_logfile_gets_time_stamped_records_even_when_quiet(
    run_cli, tiny_clip: Path, tmp_path: Path
) -> None:
    log = tmp_path / "run.log"
    res = run_cli("separate", tiny_clip, "-o", tmp_path / "o", "-q", "--logfile", log)
    assert res.code == 0 and res.err == ""
    lines = log.read_text().splitlines()
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO "
    assert re.fullmatch(stamp + r"read 24 frames of 48x36 from .*tiny\.mkv \(.*", lines[0])
    assert re.fullmatch(
        stamp
        + f"wrote {tmp_path / 'o'} "
        + r"\(.*s in all\): \d+ events?"
        + rf"(, \d+ objects?)?; {tmp_path / 'o' / 'report.html'}",
        lines[-1],
    )
    res = run_cli("separate", tiny_clip, "-o", tmp_path / "p", "-v", "--logfile", log)
    assert res.code == 0 and "iter      residual" in log.read_text()  # -v: debug too, appended
    assert log.read_text().count(" INFO read 24 frames") == 2
    bad = tmp_path / "no-such-folder" / "run.log"
    res = run_cli("separate", tiny_clip, "-o", tmp_path / "q", "--logfile", bad)
    assert res.code == 2 and res.err.count("\n") == 1  # one line (a long path is elided)
    assert res.err.startswith("bpvideo: error: --logfile '") and res.err.endswith(
        "no-such-folder/run.log' cannot be opened (No such file or directory): "
        "give a file in a folder that exists and is writable\n"
    )


def test_progress_of_the_library(tiny_clip: Path, tmp_path: Path) -> None:
    import bpvideo

    seen: list[Progress] = []
    bpvideo.separate_file(tiny_clip, tmp_path / "o", progress=seen.append, rank=1, window=10,
                          overlap=2, no_video=True)  # fmt: skip
    assert [p.read for p in seen if p.stage == "read"] == list(range(1, 25))
    assert {(p.window, p.windows) for p in seen if p.stage == "solve"} == {(1, 3), (2, 3), (3, 3)}
    writes = [(p.window, p.frames) for p in seen if p.stage == "write"]
    assert writes[-1] == (3, 24) and (1, 10) in writes and (2, 18) in writes
    assert seen[-1].stage == "finish" and seen[-1].frames == seen[-1].total == 24
    assert max(p.iteration for p in seen) >= 2  # the solver's iterations show while it runs


@pytest.mark.parametrize(
    ("progress", "text"),
    [
        (Progress("read", 0, 100, 5, 1, 1), "reading"),
        (Progress("solve", 0, 100, 50, 2, 5, 12), "solving window 2/5 (iteration 12)"),
        (Progress("write", 10, None, 50, 3, None), "writing window 3/?"),
        (Progress("finish", 100, 100, 100, 5, 5), "finishing"),
    ],
)
def test_stage_text(progress: Progress, text: str) -> None:
    assert _stage_text(progress) == text


def test_windows_expected_and_a_disabled_bar() -> None:
    assert expected_windows(24, 10, 2, 0) == 3
    assert expected_windows(None, 10, 2, 0) is None and expected_windows(None, None, 0, 0) == 1
    assert expected_windows(300, 200, 20, 400) == 1  # auto: short clips are solved whole
    bar = ProgressBar(enabled=False)
    bar(Progress("read", 0, 10, 1, 1, 1))
    assert bar._bar is None


def test_progress_and_log_of_frames_read_ahead(caplog: pytest.LogCaptureFixture) -> None:
    """A stream read ahead (``--window auto`` reads past its first windows to decide):
    the bar reaches the last window, the log counts every frame read."""
    import dataclasses

    from bpvideo.pipeline import Job, iter_blocks, plan_run
    from bpvideo.progress import track
    from bpvideo.settings import SeparateSettings
    from bpvideo.sinks import drain
    from bpvideo.sources.arrays import open_frames
    from tests.conftest import tiny_frames

    settings = SeparateSettings(rank=1, window=10, overlap=2, max_iter=3)
    source = open_frames(tiny_frames(n=40)[0][..., 0])
    plan = dataclasses.replace(plan_run(source, settings), whole_max=24)  # reads 25 first
    seen: list[Progress] = []
    tracker = track(seen.append, source, plan)
    with caplog.at_level("INFO", logger="bpvideo"):
        drain(iter_blocks(Job.of(source, settings, plan=plan, progress=tracker)), [], tracker)
    solving = sorted({p.window for p in seen if p.stage == "solve"})
    assert solving == [1, 2, 3, 4, 5] and max(p.windows for p in seen) == 5
    reads = [r.getMessage() for r in caplog.records if r.getMessage().startswith("read ")]
    assert reads[0].startswith("read 25 frames")
    iterations = [r.getMessage() for r in caplog.records if "iteration" in r.getMessage()]
    assert all(re.search(r"\b(1 iteration|[02-9]\d* iterations|1\d+ iterations),", m)
               for m in iterations), iterations  # fmt: skip


def test_bpvideo_alone_prints_its_help() -> None:
    """No arguments: the help as it is (lines, not one line of literal ``\\n``), exit 2."""
    proc = subprocess.run([sys.executable, "-m", "bpvideo"], capture_output=True, text=True,
                          env=process_env(), timeout=60, check=False)  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == ""
    assert "\\n" not in proc.stderr and proc.stderr.startswith("Usage: bpvideo")
    assert "separate" in proc.stderr and len(proc.stderr.splitlines()) > 5


@pytest.mark.parametrize("as_json", [False, True])
def test_stdout_on_a_full_device(tiny_clip: Path, tmp_path: Path, as_json: bool) -> None:
    """stdout cannot take the path (or the JSON): one line saying so, and that the result
    is complete where it is; exit 1, no traceback."""
    out = tmp_path / "out"
    args = ["separate", str(tiny_clip), "-o", str(out), "-q"] + (["--json"] if as_json else [])
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "bpvideo", *args], stdout=full,
                              stderr=subprocess.PIPE, text=True, env=process_env(),
                              timeout=120, check=False)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("bpvideo: error: stdout could not be written (No space")
    assert f"the result in {out} is complete" in proc.stderr
    assert (out / "summary.json").is_file()


def test_a_logfile_on_a_full_disk(tiny_clip: Path, tmp_path: Path) -> None:
    """--logfile that cannot be written (a full device): said once, the run goes on with
    its log on stderr; no 'Logging error' traceback per record."""
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "bpvideo", "separate", str(tiny_clip), "-o",
                           str(out), "--logfile", "/dev/full"], capture_output=True, text=True,
                          env=process_env(), timeout=120, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "Logging error" not in proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "--logfile" in line]
    assert warnings == ["bpvideo: warning: --logfile /dev/full cannot be written (No space left "
                        "on device): the log goes on on stderr only"]  # fmt: skip
    assert "bpvideo: wrote" in proc.stderr and (out / "summary.json").is_file()
