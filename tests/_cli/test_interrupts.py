"""Interrupted runs (issue 7): SIGINT, SIGTERM and SIGKILL at any moment of a real run.

Each test runs ``python -m bpvideo separate`` as a child process and signals it. The
contract: SIGINT exits 130 and SIGTERM 143, with one line on stderr, no partial outputs
and no staging folder or ffmpeg child left; SIGKILL (which no program can catch) may leave
a hidden ``.bpvideo-partial-*`` folder, but never an OUTDIR with ``summary.json`` whose
files are incomplete; the next run removes such stale folders.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import click
import psutil
import pytest

from bpvideo._cli import console
from bpvideo.errors import Terminated
from bpvideo.sinks.outputs import STAGING_PREFIX
from bpvideo.sinks.writers import write_video
from bpvideo.sources.video import read_video
from tests.conftest import REPO, default_signals, tiny_frames

EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129, signal.SIGQUIT: 131,
        signal.SIGUSR1: 128 + signal.SIGUSR1}  # fmt: skip


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), OPENBLAS_NUM_THREADS="1")
    env.pop("BPVIDEO_DEBUG", None)
    return env


def _start(*args: str | os.PathLike) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bpvideo", "separate", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        preexec_fn=default_signals,
    )
    _STARTED.append(proc)
    return proc


_STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _no_child_outlives_its_test():
    """A child left running by a failed test would compete with every later one."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _wait_for_line(proc: subprocess.Popen, pattern: str, timeout: float = 600) -> list[str]:
    """Read stderr lines until one contains ``pattern``; return the lines read. The
    timeout is a hang guard, not a guess: a loaded machine took over 30 s from the
    ``read`` line to the first ``iter`` line (start-up of the compiled kernels)."""
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        if pattern in line:
            return lines
    proc.kill()
    pytest.fail(f"never saw {pattern!r} on stderr: {''.join(lines)}")


def _acknowledged(proc: subprocess.Popen, signum: int) -> list[str]:
    """Wait for the process's own word that it received ``signum`` (the line it logs in
    its handler), then for its end; the stderr lines read. No guess of how long that
    takes: a loaded machine only makes it later."""
    lines = _wait_for_line(proc, f"stopping: received signal {int(signum)}")
    return lines + proc.stderr.readlines()


#: Moments of a run, each known from the process itself: a line it printed (``-v``), or a
#: file it wrote in its staging folder (masks, the background picture), or the result
#: being renamed into place (``masks/`` in OUTDIR before ``summary.json``).
MOMENTS = [("line", "bpvideo: read "), ("line", "iter"), ("line", "bestpair:"),
           ("staged", "masks/bin*.png", 1), ("staged", "masks/bin*.png", 12),
           ("staged", "masks/bin*.png", 24), ("staged", "background.png", 1),
           ("placed", "masks", 1), ("line", "bpvideo: wrote")]  # fmt: skip


def _at(proc: subprocess.Popen, out: Path, moment: tuple) -> str:
    """Return once the run reached ``moment`` (see :data:`MOMENTS`), or ended; the stderr
    read meanwhile."""
    read = ""
    if moment[0] == "line":
        while line := proc.stderr.readline():
            read += line
            if moment[1] in line:
                break
        return read
    _, pattern, count = moment
    while proc.poll() is None:
        where = out if moment[0] == "placed" else next(iter(_staging_dirs(out)), None)
        if where is not None and len(list(where.glob(pattern))) >= count:
            break
        time.sleep(0.002)  # polls the process's own files
    return read


def _leftover_children(token: str) -> list[str]:
    """Command lines of running processes (ffmpeg children) that mention ``token``."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            cmd = " ".join(proc.info["cmdline"] or [])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if token in cmd and proc.pid != os.getpid():
            found.append(cmd)
    return found


def _no_leftover_children(token: str) -> None:
    """No process mentioning ``token`` outlives the run: those still there (being reaped)
    are waited for, and must end on their own."""
    pids = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if token in " ".join(proc.info["cmdline"] or []) and proc.pid != os.getpid():
                pids.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    _, alive = psutil.wait_procs(pids, timeout=120)  # a hang guard, not a guess
    assert _leftover_children(token) == [], [p.pid for p in alive]


def _staging_dirs(out: Path) -> list[Path]:
    return sorted(out.glob(f"{STAGING_PREFIX}*")) if out.is_dir() else []


def _assert_nothing_left(out: Path, stderr: str = "") -> None:
    """No result, no staging folder, no OUTDIR (this run created it)."""
    assert not out.exists(), (stderr, sorted(p.name for p in out.rglob("*")))


def _assert_complete_if_marked(out: Path) -> bool:
    """If OUTDIR has summary.json, every output it lists is there and complete."""
    summary_path = out / "summary.json"
    if not summary_path.exists():
        return False
    summary = json.loads(summary_path.read_text())  # a partial JSON file would fail here
    n = summary["frames"]
    for key, name in summary["outputs"].items():
        if key == "masks":
            masks = sorted(p.name for p in (out / "masks").iterdir())
            assert masks == [f"bin{i:06d}.png" for i in range(1, n + 1)]
        else:
            assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    assert read_video(out / summary["outputs"]["background_video"]).n_frames == n
    return True


@pytest.fixture(scope="module")
def long_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clip that the solver works on until it is stopped (with --tol 0)."""
    path = tmp_path_factory.mktemp("sig") / "long.mkv"
    frames, _ = tiny_frames(n=60, h=72, w=96)
    write_video(path, frames, 10.0, lossless=True)
    return path


@pytest.mark.parametrize(
    "signum",
    [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1],
    ids=["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1"],
)
def test_signal_mid_solve(long_clip: Path, tmp_path: Path, signum: int) -> None:
    out = tmp_path / "out"
    proc = _start(long_clip, "-o", out, "-v", "--max-iter", "1000000", "--tol", "0")
    # The iteration table shows the solver is running: signal it in the middle.
    _wait_for_line(proc, "iter")
    _wait_for_line(proc, "e-")  # a first row of numbers
    proc.send_signal(signum)
    stderr = "".join(_acknowledged(proc, signum))
    stdout, _ = proc.communicate(timeout=600)
    assert proc.returncode == EXIT[signum], stderr
    assert stdout == ""
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("bpvideo: interrupted" if signum == signal.SIGINT else "bpvideo: term")
    assert "no output was kept" in last and "run the command again" in last
    assert "Traceback" not in stderr
    _assert_nothing_left(out)
    _no_leftover_children(str(long_clip))


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_at_every_moment_of_the_run(tiny_clip: Path, tmp_path: Path, signum: int) -> None:
    """At each moment of a run (:data:`MOMENTS`: reading, solving, writing, renaming, done),
    told by the process itself, never guessed from a clock: either the run finished (a
    complete result) or it exits 130/143 with nothing left."""
    outcomes = []
    for i, moment in enumerate(MOMENTS):
        out = tmp_path / f"out{i}"
        proc = _start(tiny_clip, "-o", out, "--rank", "1", "-v")
        read = _at(proc, out, moment)
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=600)
        stderr = read + stderr
        outcomes.append(proc.returncode)
        assert "Traceback" not in stderr
        if "was complete (summary.json written)" in stderr:
            # Arrived while the finished outputs were renamed into place (held back until
            # the renames were done), or after: the result is complete and says so.
            assert proc.returncode == EXIT[signum]
            assert _assert_complete_if_marked(out)
            assert _staging_dirs(out) == []
        elif proc.returncode == 0 or "bpvideo: wrote" in stderr:
            # Finished: the signal came too late, or while the process exited (it then
            # dies quietly of the signal; the work was done).
            assert proc.returncode in (0, -signum), stderr
            assert _assert_complete_if_marked(out)
            assert _staging_dirs(out) == []
        else:
            assert proc.returncode == EXIT[signum], stderr
            assert f"stopping: received signal {int(signum)}" in stderr
            assert "no output was kept" in stderr.strip().splitlines()[-1]
            _assert_nothing_left(out, stderr)
        _no_leftover_children(str(out))
    assert EXIT[signum] in outcomes  # at least some runs were really interrupted


def test_sigkill_never_leaves_an_incomplete_result(tiny_clip: Path, tmp_path: Path) -> None:
    """SIGKILL at every moment of a run (:data:`MOMENTS`, told by the process itself),
    twice over, into the same OUTDIR with --overwrite, so that kills also land while an
    earlier result is being replaced: OUTDIR never has summary.json with incomplete files.
    Staging folders of killed runs are hidden, and the next complete run removes them."""
    out = tmp_path / "out"
    args = (tiny_clip, "-o", out, "--rank", "1", "--overwrite", "-v")
    first = _start(*args)
    first.communicate(timeout=600)
    assert first.returncode == 0 and _assert_complete_if_marked(out)
    killed = 0
    for moment in MOMENTS * 2:
        proc = _start(*args)
        _at(proc, out, moment if moment[0] != "placed" else ("staged", "summary.json", 1))
        proc.kill()
        proc.communicate(timeout=600)
        killed += proc.returncode == -signal.SIGKILL
        _assert_complete_if_marked(out)  # the earlier result, the new one, or none
        for stale in _staging_dirs(out):
            assert stale.name.startswith(".")  # hidden, never mistaken for a result
    assert killed >= len(MOMENTS) // 3  # the kills did land mid-run, most of them
    # The next run cleans up what the killed ones left.
    final = _start(*args)
    final.communicate(timeout=600)
    assert final.returncode == 0
    assert _assert_complete_if_marked(out)
    assert _staging_dirs(out) == []
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == []


def test_an_ignored_hang_up_stays_ignored(tiny_clip: Path, tmp_path: Path) -> None:
    """Under nohup (SIGHUP ignored) a hang-up changes nothing: the run completes."""

    def nohup() -> None:
        default_signals()
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "bpvideo", "separate", tiny_clip, "-o", out,
                             "--rank", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env(), preexec_fn=nohup)  # fmt: skip
    _STARTED.append(proc)
    _wait_for_line(proc, "bpvideo: read ")
    proc.send_signal(signal.SIGHUP)
    _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    assert "stopping: received signal" not in stderr
    assert _assert_complete_if_marked(out)


def test_encoders_stopped_by_a_signal_are_no_disk_failure(long_clip: Path, tmp_path: Path):
    """The encoders (in their own process group) get the signal, bpvideo does not: the
    run stops as signalled (143, "no output was kept"), not as a full disk (it said
    "check free disk space", exit 1), and leaves nothing."""
    out = tmp_path / "out"
    proc = _start(long_clip, "-o", out, "--rank", "1")
    _wait_for_line(proc, "bpvideo: read ")  # the encoders are open until the last frame
    encoders = [p for p in psutil.Process(proc.pid).children(recursive=True)
                if str(out) in " ".join(p.cmdline())]  # fmt: skip
    assert len(encoders) == 2
    for encoder in encoders:
        encoder.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == EXIT[signal.SIGTERM], stderr
    last = stderr.strip().splitlines()[-1]
    assert "no output was kept" in last and "disk" not in stderr
    _assert_nothing_left(out, stderr)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_signal_arriving_in_a_finalizer_still_stops_the_command(
    signum: int, capfd: pytest.CaptureFixture[str]
) -> None:
    """A signal whose handler runs inside ``__del__`` (a ``Popen`` collected mid-run) is
    not lost as an "Exception ignored" traceback: the command still stops, said once."""
    import gc
    import logging

    from bpvideo._cli.signals import stop_signals_raise
    from bpvideo.errors import Terminated

    class SignalledWhileCollected:
        def __del__(self) -> None:
            signal.raise_signal(signum)
            sum(range(1000))  # the handler runs here, inside the finalizer

    expected = KeyboardInterrupt if signum == signal.SIGINT else Terminated
    logger = logging.getLogger("bpvideo")
    level = logger.level
    logger.setLevel(logging.INFO)
    default = signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL
    before = signal.signal(signum, default)
    try:
        with pytest.raises(expected), stop_signals_raise():
            SignalledWhileCollected()
            gc.collect()
            # raised again once the finalizer is over: marked by a thread, whose turn
            # comes within Python's switch interval (5 ms); the bound only ends a failure
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                sum(range(10))
            pytest.fail("the signal was lost in the finalizer")
    finally:
        signal.signal(signum, before)
        logger.setLevel(level)
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception ignored" not in err
    assert err.count("bpvideo: stopping: received signal") == 1


@pytest.mark.parametrize("stop", [Terminated(signal.SIGTERM), KeyboardInterrupt()],
                         ids=["SIGTERM", "SIGINT"])  # fmt: skip
def test_a_stop_that_lands_inside_lock_code_is_still_the_stop(
    stop: BaseException, capsys: pytest.CaptureFixture[str]
) -> None:
    """A signal's exception raised between a ``Condition`` releasing its lock and the
    ``try`` that takes it back (what ``Event.wait`` or ``Queue.put`` do on the main thread)
    makes the ``with`` around it fail with "release unlocked lock": the run still ends as
    stopped by that signal (exit 143 / 130, the stop's line), not as an internal error."""
    lock = threading.Lock()

    @click.command()
    def waits() -> None:
        with lock:
            lock.release()  # the condition's wait gives the lock up...
            raise stop  # ...and the signal's exception arrives before it is taken back

    code = console.run(waits, [])
    err = capsys.readouterr().err
    assert "internal error" not in err
    if isinstance(stop, Terminated):
        assert code == 143 and "terminated by signal 15" in err
    else:
        assert code == 130 and "interrupted" in err
