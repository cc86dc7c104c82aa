"""report.html without a browser: clock times when the input's start is known, pictures
whose burnt-in time is large enough to read, and the page that ``bpvideo events``
rewrites (no link to clips that belong to the events it replaced)."""

from __future__ import annotations

import re
import shutil
from datetime import datetime
from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo.events import Event
from bpvideo.sinks.event_report import PICTURE_WIDTHS, thumbnail
from bpvideo.sinks.report import Links, report_html
from bpvideo.sinks.report.data import clock, time_ticks
from tests.sinks.test_events import clip, result  # noqa: F401 - the fixtures


def _page(start: datetime | None) -> str:
    times = np.arange(0, 600, 1.0)  # ten minutes
    shares = np.where((times > 100) & (times < 160), 0.05, 0.0)
    event = Event(1, 101, 160, "00:01:40.000", "00:02:40.000", 60.0, 0.05, 1, 2, 3, 4,
                  100.0, 160.0, 100, 159)  # fmt: skip
    return report_html(title="cam.mp4", series=(times, shares), events=[event], thumbs={},
                       background_png=None, settings={"event_threshold": 0.01},
                       facts={"input": "cam.mp4"}, links=Links({}, "overlay.mp4"),
                       start=start)  # fmt: skip


def test_times_are_clock_times_when_the_start_is_known():
    ticks = re.findall(r'class="tick-x"[^>]*>([^<]+)<', _page(datetime(2026, 5, 1, 23, 57, 30)))
    # every two minutes on even minutes of the clock, across midnight
    assert ticks == ["23:58", "00:00", "00:02", "00:04", "00:06"]
    page = _page(datetime(2026, 5, 1, 23, 57, 30))
    assert "Time of day" in page and "23:59:10" in page  # the event starts 100 s in
    assert "input starts 2026-05-01 23:57:30" in page
    untimed = _page(None)
    assert re.findall(r'class="tick-x"[^>]*>([^<]+)<', untimed)[:3] == ["0:00", "2:00", "4:00"]
    assert "Time into the input (m:ss)" in untimed
    assert 'href="overlay.mp4#t=100.000"' in untimed


def test_ticks_fall_on_round_steps():
    ticks, step = time_ticks(3.2, 47.9, None)
    assert step == 10 and ticks == [10, 20, 30, 40]
    assert clock(125.0, None) == "2:05" and clock(3725, None) == "1:02:05"


@pytest.mark.parametrize("width", [48, 320, 1920])
def test_a_picture_is_large_enough_to_read_its_time(width: int):
    height = width * 3 // 4
    frame = np.full((height, width, 3), 90, np.uint8)
    mask = np.zeros((height, width), bool)
    image = cv2.imdecode(np.frombuffer(thumbnail(frame, mask, "00:01:23.040"), np.uint8),
                         cv2.IMREAD_COLOR)  # fmt: skip
    assert PICTURE_WIDTHS[0] <= image.shape[1] <= PICTURE_WIDTHS[1]
    white = np.flatnonzero((image[: image.shape[0] // 4].min(axis=2) > 200).any(axis=1))
    text = white[-1] - white[0] + 1  # the label's height
    assert text >= 0.04 * image.shape[1]  # 14 px or more where the page shows it 360 px wide


def test_the_page_of_bpvideo_events_links_no_old_clip(result: Path, tmp_path: Path):  # noqa: F811
    """bpvideo events cuts the clips of its new events (issue 41): the page links each
    of them, and only them; the overlay still."""
    import json

    from bpvideo.sinks.rederive import rederive

    copy = tmp_path / "run"
    shutil.copytree(result, copy)
    assert 'class="clip"' in (copy / "report.html").read_text()
    rederive(copy, event_threshold=0.0, min_event=1)
    page = (copy / "report.html").read_text()
    events = json.loads((copy / "summary.json").read_text())["events"]
    linked = re.findall(r'class="clip" href="(clips/event_\d{4}\.mp4)"', page)
    assert linked == [f"clips/event_{e['event']:04d}.mp4" for e in events]
    assert sorted(linked) == sorted(f"clips/{p.name}" for p in (copy / "clips").iterdir())
    assert 'class="overlay" href="overlay.mp4#t=' in page
