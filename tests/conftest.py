"""Shared fixtures: generated clips, the ../shared data folder, a CLI runner; the guard
that makes a missing optional dependency fail the run where CI asks for all of them."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import signal
import subprocess
import sys

# Imported before any test runs: a test that imported it first could meet, mid-import, an
# earlier test's object whose finalizer raises, and pytest's hook for that exception then
# failed on the half-made module (a flaky failure of the tracemalloc tests).
import tracemalloc  # noqa: F401
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo._cli import main
from bpvideo.sinks.writers import write_video

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


#: Optional dependencies of the tests, and the extra that installs each.
EXTRAS = {"numba": "fast", "distributed": "dask", "skimage": "test", "selenium": "test"}


def extras_required() -> bool:
    """Whether a missing extra must fail the run (``BPVIDEO_REQUIRE_EXTRAS=1``, set by the
    README's test command and so by CI): no numba or Dask test is skipped unnoticed."""
    return os.environ.get("BPVIDEO_REQUIRE_EXTRAS", "") not in ("", "0")


def pytest_configure(config: pytest.Config) -> None:
    if not extras_required():
        return
    missing = [f"{name} (bpvideo[{extra}])" for name, extra in EXTRAS.items()
               if importlib.util.find_spec(name) is None]  # fmt: skip
    if missing:
        raise pytest.UsageError(
            f"BPVIDEO_REQUIRE_EXTRAS is set but {', '.join(missing)} is not installed: "
            "pip install '.[test,fast,dask]'"
        )


class _ErrorRecords(logging.Handler):
    """Keeps the records of ERROR and above that reach it."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(autouse=True)
def no_unexpected_errors(request: pytest.FixtureRequest):
    """Fail a test that logs an ERROR it did not expect (mark it ``expect_errors``): an
    error logged and then swallowed is a bug the test would not otherwise see. Records
    are taken from the ``bpvideo`` logger (which stops propagating once the CLI has
    configured it) and from the root logger."""
    handler = _ErrorRecords()
    loggers = [logging.getLogger("bpvideo"), logging.getLogger()]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield handler
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
    if request.node.get_closest_marker("expect_errors") is None and handler.records:
        seen = {id(r): r for r in handler.records}.values()  # one record, two loggers
        lines = "; ".join(f"{r.name}: {r.getMessage()}" for r in seen)
        pytest.fail(f"unexpected ERROR logged: {lines}", pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    """With :func:`extras_required`, a test skipped for a missing module fails instead."""
    outcome = yield
    report = outcome.get_result()
    if not (report.skipped and extras_required() and call.excinfo is not None):
        return
    if item.get_closest_marker("gpu") is not None:  # CuPy and a GPU: not an extra CI has
        return
    reason = str(call.excinfo.value)
    if "not installed" in reason or "could not import" in reason:
        report.outcome = "failed"
        report.longrepr = f"BPVIDEO_REQUIRE_EXTRAS is set, and this test skipped: {reason}"


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self) -> dict:
        return json.loads(self.out)


@pytest.fixture(autouse=True)
def _cpu_unless_marked_gpu(request: pytest.FixtureRequest, monkeypatch) -> None:
    """``device="auto"`` means the CPU in tests not marked ``gpu`` (child processes too):
    the same results on a machine with a GPU as without."""
    if request.node.get_closest_marker("gpu") is None:
        monkeypatch.setenv("BPVIDEO_CUDA", "0")


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run ``bpvideo ARGS`` in-process; returns exit code, stdout and stderr."""

    def run(*args: str | os.PathLike) -> CliResult:
        capsys.readouterr()
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real sequences in ../shared/data; tests using it skip when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is absent (a user's clone has no ../shared)")
    return SHARED_DATA


def tiny_frames(
    n: int = 24, h: int = 36, w: int = 48, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """BGR frames of a textured static background with one bright moving square, and its GT."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    base = 60 + 40 * np.sin(xx / 5.0) + 30 * np.cos(yy / 4.0) + rng.normal(0, 5, (h, w))
    frames = np.empty((n, h, w, 3), np.uint8)
    gt = np.zeros((n, h, w), bool)
    for t in range(n):
        img = base + rng.normal(0, 1.5, (h, w))
        x0 = (2 * t) % (w - 8)
        img[10:18, x0 : x0 + 8] = 235
        gt[t, 10:18, x0 : x0 + 8] = True
        frame = np.clip(img, 0, 255).astype(np.uint8)
        frames[t] = np.stack([frame, frame, np.clip(frame.astype(int) + 10, 0, 255)], axis=2)
    return frames, gt


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 24-frame 48x36 lossless clip (FFV1 .mkv) of :func:`tiny_frames`."""
    path = tmp_path_factory.mktemp("clips") / "tiny.mkv"
    frames, _ = tiny_frames()
    write_video(path, frames, 10.0, lossless=True)
    return path


@pytest.fixture(scope="session")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same frames as PNG files in a changedetection.net-like ``input/`` folder."""
    root = tmp_path_factory.mktemp("cdnet")
    (root / "input").mkdir()
    frames, _ = tiny_frames()
    for i, frame in enumerate(frames, start=1):
        cv2.imwrite(str(root / "input" / f"in{i:06d}.png"), frame)
    return root


def output_files(folder: Path) -> list[str]:
    """Every path under ``folder`` (relative), hidden ones included."""
    if not folder.exists():
        return []
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def process_env() -> dict[str, str]:
    """The environment of a ``bpvideo`` child process: this checkout, one BLAS thread."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["OPENBLAS_NUM_THREADS"] = "1"
    return env


def bpvideo_process(
    *args: str | os.PathLike, stdin: bytes | None = None
) -> subprocess.CompletedProcess:
    """Run ``python -m bpvideo ARGS`` in a child process; returns its completed process."""
    return subprocess.run(
        [sys.executable, "-m", "bpvideo", *map(str, args)],
        input=stdin,
        capture_output=True,
        env=process_env(),
        timeout=300,
        check=False,
    )


def read_masks(folder: Path) -> np.ndarray:
    """The ``bin*.png`` masks of a folder, in name order, as (n, H, W) uint8."""
    files = sorted(folder.glob("bin*.png"))
    return np.stack([cv2.imread(str(f), cv2.IMREAD_GRAYSCALE) for f in files])


def street_frames(
    n: int = 160, w: int = 96, h: int = 72, seed: int = 0, street: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """A static street (the clean background of :func:`~bpvideo.synthetic.make_scene`, of
    seed ``street``, default ``seed``) with sensor noise and two textured objects crossing
    it at constant speeds; BGR frames and ground-truth masks. Nothing stops, so one
    background model fits every frame."""
    from bpvideo.synthetic import make_scene

    rng = np.random.default_rng(seed)
    street = seed if street is None else street
    background = make_scene(w, h, 1, seed=street, noise=0.0, drift=0.0).background
    background = background.astype(np.float32)
    frames = np.empty((n, h, w, 3), np.uint8)
    truth = np.zeros((n, h, w), bool)
    objects = [(14, 12, 1.3, 235.0), (44, 16, 2.1, 20.0)]  # row, size, pixels per frame, level
    for t in range(n):
        image = background + rng.normal(0, 2.0, background.shape)
        for k, (y, size, speed, level) in enumerate(objects):
            x = int((speed * t + 37 * k) % (w + size)) - size
            x0, x1 = max(x, 0), min(x + size, w)
            if x1 > x0:
                image[y : y + size, x0:x1] = level + rng.normal(0, 6, (size, x1 - x0, 1))
                truth[t, y : y + size, x0:x1] = True
        frames[t] = np.clip(np.rint(image), 0, 255)
    return frames, truth


def f_measure(masks: np.ndarray, truth: np.ndarray) -> float:
    """F-measure of boolean masks against boolean ground truth (or another mask set)."""
    tp = np.count_nonzero(masks & truth)
    return float(2 * tp / max(np.count_nonzero(masks) + np.count_nonzero(truth), 1))


def default_signals() -> None:
    """``preexec_fn`` of a child that a test signals: every stop signal gets its default
    action and is unblocked, whatever started the tests. A shell starts background jobs
    with SIGINT and SIGQUIT ignored, ``nohup`` ignores SIGHUP, and an ignored signal stays
    ignored across ``exec`` (bpvideo keeps it ignored, the Unix convention): a child
    started from such a test run went on solving when signalled (issue 42)."""
    from bpvideo.sinks.outputs import STOP_SIGNALS

    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


@pytest.fixture
def small_disk(tmp_path: Path):
    """A folder on a tmpfs of 128 KiB (a full disk in a few frames); skips where mounting
    is not allowed (not root, a container without the capability)."""
    folder = tmp_path / "small"
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", str(folder)],
                          capture_output=True, check=False)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)
