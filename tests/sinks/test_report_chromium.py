"""report.html in a real browser (Debian's ``chromium``, headless): it renders, offline,
and the numbers it shows are those of events.csv."""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
from pathlib import Path

import cv2
import numpy as np
import pytest

from tests.sinks.test_events import clip, result  # noqa: F401 - the fixtures

WINDOW = (1000, 1400)


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess:
    """Run headless Chromium with no network service, sync or first-run work."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return subprocess.run(
        [binary, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", f"--user-data-dir={profile}", *args],
        capture_output=True, timeout=120, check=True,
    )  # fmt: skip


def test_report_renders(result: Path, tmp_path: Path):  # noqa: F811
    shot = tmp_path / "report.png"
    chromium(f"--screenshot={shot}", f"--window-size={WINDOW[0]},{WINDOW[1]}",
             (result / "report.html").as_uri(), profile=tmp_path / "profile")  # fmt: skip
    image = cv2.imread(str(shot))
    assert image is not None and image.shape[:2] == (WINDOW[1], WINDOW[0])
    # the plot's events (yellow bands) and the curve (red) are drawn
    b, g, r = (image[..., i].astype(int) for i in range(3))
    assert np.count_nonzero((r > 200) & (g > 180) & (b < 200) & (r - b > 40)) > 1000
    assert np.count_nonzero((r > 150) & (g < 100) & (b < 100)) > 50


def test_report_numbers_match_events_csv(result: Path, tmp_path: Path):  # noqa: F811
    dom = chromium("--dump-dom", (result / "report.html").as_uri(),
                   profile=tmp_path / "profile").stdout.decode()  # fmt: skip
    with open(result / "events.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows
    shown = re.findall(r'<tr data-event="(\d+)">(.*?)</tr>', dom)
    assert len(shown) == len(rows)
    for (number, cells), row in zip(shown, rows, strict=True):
        assert number == row["event"]
        values = dict(re.findall(r'<td class="(\w+)">([^<]*)</td>', cells))
        assert values == row
    assert re.search(r'<td id="event-count">(\d+)</td>', dom).group(1) == str(len(rows))
    assert len(re.findall(r'<rect class="event"', dom)) == len(rows)
    assert "http://" not in dom.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in dom
