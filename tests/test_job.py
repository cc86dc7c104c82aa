"""One job for every source (bpvideo/job.py): a live stream served by ffmpeg on 127.0.0.1
gets, per segment, the files a file run of the same clip gets, through the same sinks, the
same regions and the same guard; two runs into one OUTDIR never both write it; a run
killed mid-segment leaves nothing half-written once the next run has started."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo.sinks.outputs import LOCK_NAME, STAGING_PREFIX
from bpvideo.sinks.table import SUMMARY
from tests.conftest import process_env, read_masks, street_frames
from tests.live_helpers import free_port, serve, url, write_clip
from tests.sinks.test_report_chromium import WINDOW, chromium

#: Polygons of the 96x72 street clip: report only inside ROI, never inside EXCLUDE.
ROI = "0,0 95,0 95,71 0,71"
EXCLUDE = "0,36 47,36 47,71 0,71"


@pytest.fixture(scope="module")
def street(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 6-second street clip: 150 frames of 96x72 at 25 fps."""
    frames, _ = street_frames(n=150)
    return write_clip(tmp_path_factory.mktemp("job") / "street.mkv", frames)


def _separate(*args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bpvideo", "separate", *map(str, args)],
                          capture_output=True, env=process_env(), timeout=timeout,
                          check=False)  # fmt: skip


def _start(*args: str | Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bpvideo", "separate", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=process_env())  # fmt: skip


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def _files(folder: Path) -> set[str]:
    """The entries of a result folder, with the kinds of file in its subfolders."""
    names = set()
    for path in folder.rglob("*"):
        rel = path.relative_to(folder)
        if len(rel.parts) > 1:  # masks/bin000001.png -> masks/*.png
            rel = Path(rel.parts[0], "*" + path.suffix)
        names.add(str(rel))
    return names


def _wait_for_line(proc: subprocess.Popen, pattern: str) -> list[str]:
    """Read the process's log until a line matches (its own word that it got there)."""
    assert proc.stderr is not None
    lines = []
    for raw in proc.stderr:
        lines.append(raw.decode(errors="replace"))
        if re.search(pattern, lines[-1]):
            return lines
    raise AssertionError(f"the run ended before {pattern!r}:\n{''.join(lines)}")


def test_a_live_segment_holds_the_files_of_a_file_run(street, tmp_path):
    options = ["--learn", "0:50", "--event-threshold", "0.01", "--overlay", "--clips",
               "--roi", ROI, "--exclude", EXCLUDE, "--count-line", "48,0 48,71"]  # fmt: skip
    port = free_port()
    server = serve(street, port)
    try:
        live = _separate(url(port), "-o", tmp_path / "live", "--reconnect", "1", "--segment",
                         "3s", "--logfile", tmp_path / "live.log", *options)  # fmt: skip
    finally:
        _stop(server)
    assert live.returncode == 0, live.stderr.decode()
    done = _separate(street, "-o", tmp_path / "file", *options)
    assert done.returncode == 0, done.stderr.decode()
    segments = sorted((tmp_path / "live").iterdir())
    assert [p.name for p in segments] == sorted(p.name for p in segments if p.is_dir())
    assert len(segments) == 2  # 150 frames in segments of 3 s
    expected = _files(tmp_path / "file")
    assert {"events.csv", "frames.csv", "report.html", "overlay.mp4", "clips", "objects.csv",
            "tracks.csv"} <= expected  # fmt: skip
    shown = np.zeros((72, 96), bool)
    shown[36:, :48] = True  # the excluded corner
    for folder in segments:
        assert _files(folder) == expected, folder
        summary = json.loads((folder / SUMMARY).read_text())
        assert summary["frames"] == 75
        events = (folder / "events.csv").read_text().splitlines()
        assert len(summary["events"]) == len(events) - 1
        assert summary["objects"] == len((folder / "objects.csv").read_text().splitlines()) - 1
        assert len(list((folder / "clips").glob("event_*.mp4"))) == len(summary["events"])
        masks = read_masks(folder / "masks") > 0
        assert masks.any() and not masks[:, shown].any()
        foreground = _decode(folder / "foreground.mp4")
        assert len(foreground) == 75 and foreground[:, shown].max() <= 16  # H.264 noise
    assert "learned the background" in (tmp_path / "live.log").read_text()
    shot = tmp_path / "report.png"
    chromium(f"--screenshot={shot}", f"--window-size={WINDOW[0]},{WINDOW[1]}",
             (segments[0] / "report.html").as_uri(), profile=tmp_path / "profile")  # fmt: skip
    image = cv2.imread(str(shot))
    assert image is not None and image.shape[:2] == (WINDOW[1], WINDOW[0])
    assert image.std() > 10  # a page was drawn, not a blank one


def _decode(path: Path) -> np.ndarray:
    capture = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY))
    capture.release()
    return np.stack(frames)


def test_a_second_run_into_the_same_outdir_is_refused_at_its_start(street, tmp_path):
    port = free_port()
    server = serve(street, port)
    first = _start(url(port), "-o", tmp_path / "out", "--reconnect", "1", "--segment", "2s",
                   "--learn", "0:50")  # fmt: skip
    try:
        _wait_for_line(first, "learned the background")  # it holds OUTDIR and records
        second = _separate(url(free_port()), "-o", tmp_path / "out", "--segment", "2s")
        _, err = first.communicate(timeout=60)
    finally:
        _stop(first)
        _stop(server)
    assert second.returncode == 2
    assert "another bpvideo run is writing it now" in second.stderr.decode()
    assert first.returncode == 0, err.decode()
    segments = sorted((tmp_path / "out").iterdir())
    assert len(segments) == 3
    frames = sum(json.loads((s / SUMMARY).read_text())["frames"] for s in segments)
    assert frames == 150  # the first run recorded every frame


def test_a_rerun_removes_what_a_killed_run_left(street, tmp_path):
    port = free_port()
    server = serve(street, port, loop=3)
    proc = _start(url(port), "-o", tmp_path / "out", "--segment", "2s", "--learn", "0:50")
    try:
        _wait_for_line(proc, "learned the background")
        while not list((tmp_path / "out").glob(f"*/{STAGING_PREFIX}*/masks/*.png")):
            assert proc.poll() is None
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        _stop(proc)
        _stop(server)
    left = list((tmp_path / "out").glob(f"*/{STAGING_PREFIX}*"))
    assert left, "the killed run left a segment half-written"
    port = free_port()
    server = serve(street, port)
    try:
        again = _separate(url(port), "-o", tmp_path / "out", "--reconnect", "1", "--segment",
                          "2s", "--learn", "0:50")  # fmt: skip
    finally:
        _stop(server)
    assert again.returncode == 0, again.stderr.decode()
    assert not any(path.exists() for path in left)
    for folder in (tmp_path / "out").iterdir():
        assert (folder / SUMMARY).is_file(), f"{folder} is no complete result"
        assert not (folder / LOCK_NAME).exists()
    assert not (tmp_path / "out" / LOCK_NAME).exists()


def test_a_live_run_passes_the_one_guard(tmp_path):
    defaults = tmp_path / "defaults.yaml"
    defaults.write_text(f"events_to: {defaults}\n")
    done = _separate(url(free_port()), "-o", tmp_path / "out", "-c", defaults)
    assert done.returncode == 2
    assert "defaults file" in done.stderr.decode()
    assert defaults.read_text() == f"events_to: {defaults}\n"
    log = tmp_path / "out.log"
    done = _separate(url(free_port()), "-o", tmp_path / "out", "--events-to", log,
                     "--logfile", log)  # fmt: skip
    assert done.returncode == 2, done.stderr.decode()
    assert not log.exists()


def test_a_region_image_of_another_size_is_refused_on_a_live_stream(street, tmp_path):
    roi = tmp_path / "roi.png"
    cv2.imwrite(str(roi), np.full((50, 50), 255, np.uint8))
    port = free_port()
    server = serve(street, port)
    try:
        done = _separate(url(port), "-o", tmp_path / "out", "--roi", roi, "--reconnect", "1")
    finally:
        _stop(server)
    assert done.returncode == 2
    assert "roi.png" in done.stderr.decode() and "96x72" in done.stderr.decode()
    assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")
