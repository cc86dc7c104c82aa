"""report.html in a real browser: headless Chromium driven by Selenium through Debian's
``chromium-driver``, one browser for the module. The page's numbers are those of
events.csv, objects.csv and summary.json; its pictures open whole and its links point at
files that exist; the regions and the counting line are drawn where they are (a
screenshot's pixels); clicks on the region picker give option text that the CLI accepts
and that names the clicked pixels, whatever size the page shows the picture at.

Skipped when Chromium, chromedriver or Selenium is missing, unless BPVIDEO_REQUIRE_EXTRAS
is set (then such a skip fails: tests/conftest.py)."""

from __future__ import annotations

import csv
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlparse

import cv2
import numpy as np
import pytest

from bpvideo import separate_file
from bpvideo.events.objects import parse_line
from bpvideo.events.regions import parse_region
from bpvideo.settings import SeparateSettings, option_name
from bpvideo.sources.ffmpeg import probe
from tests.sinks.test_events import EVENTS, FPS, H, W, bursts

WINDOW = (1000, 1400)
#: The regions and the counting line of the module's run (pixels of the 48x36 input): the
#: square crosses the line, left to right on screen, in both bursts.
ROI, EXCLUDE, LINE = "0,0 39,0 39,35 0,35", "0,30 47,30 47,35 0,35", "32,2 32,33"


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


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory):
    """One headless Chromium for the module, driven by Debian's chromedriver."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if binary is None or driver_path is None:
        pytest.skip("chromium or chromedriver is not installed "
                    "(apt-get install chromium chromium-driver)")  # fmt: skip
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed (pip install '.[test]')")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--hide-scrollbars",
                "--force-device-scale-factor=1", f"--window-size={WINDOW[0]},{WINDOW[1]}",
                f"--user-data-dir={tmp_path_factory.mktemp('profile')}"):  # fmt: skip
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of the two bursts with a region, an excluded band, a counting line, the
    overlay and the clips."""
    folder = tmp_path_factory.mktemp("report")
    clip = folder / "bursts.mkv"
    from bpvideo.sinks.writers import write_video

    write_video(clip, bursts()[0], FPS, lossless=True)
    out = folder / "run"
    separate_file(clip, out, overlay=True, clips=True, roi=ROI, exclude=EXCLUDE,
                  count_line=LINE, **EVENTS)  # fmt: skip
    return out


@pytest.fixture
def page(browser, result: Path):
    """The browser on the run's report, at the module's window size."""
    browser.set_window_size(*WINDOW)
    browser.get((result / "report.html").as_uri())
    return browser


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def _cells(row) -> dict[str, tuple[str, str]]:
    """CSV column -> (its value in the file as the page holds it, the cell's text)."""
    out = {}
    for td in row.find_elements("css selector", "td[data-col]"):
        names = td.get_attribute("data-col").split(";")
        values = td.get_attribute("data-value").split(";")
        for name, value in zip(names, values, strict=True):
            out[name] = (value, td.text)
    return out


def _numbers(text: str) -> list[float]:
    return [float(v) for v in re.findall(r"\d+(?:\.\d+)?", text)]


def test_the_page_shows_the_numbers_of_the_csv_files(page, result: Path):
    events = _csv(result / "events.csv")
    objects = _csv(result / "objects.csv")
    summary = json.loads((result / "summary.json").read_text())
    assert events and objects
    rows = page.find_elements("css selector", "#events tbody tr[data-event]")
    assert len(rows) == len(events)
    for tr, row in zip(rows, events, strict=True):
        cells = _cells(tr)
        assert {k: v for k, (v, _) in cells.items()} == row  # every column, as in the file
        shown = {k: t for k, (_, t) in cells.items()}  # and what a person reads is that
        assert shown["start_time"] == row["start_time"] and shown["end_time"] == row["end_time"]
        assert _numbers(shown["duration"])[0] == pytest.approx(float(row["duration"]), abs=0.005)
        percent = _numbers(shown["peak_area"])[0]
        assert percent == pytest.approx(100 * float(row["peak_area"]), abs=0.005)
        assert _numbers(shown["x"]) == [float(row[k]) for k in "xywh"]
        assert _numbers(shown["start_frame"]) == [float(row["start_frame"]),
                                                  float(row["end_frame"])]  # fmt: skip
    listed = page.find_elements("css selector", "#objects tbody tr[data-object]")
    assert [{k: v for k, (v, _) in _cells(tr).items()} for tr in listed] == sorted(
        objects, key=lambda r: int(r["object"])
    )
    assert page.find_element("id", "event-count").text == str(len(events))
    assert page.find_element("id", "object-count").text == str(summary["objects"])
    (line,) = page.find_elements("css selector", "#counts tbody tr")
    counted = summary["counts"][LINE]
    assert counted["left_to_right"] + counted["right_to_left"] > 0
    ways = [counted["left_to_right"], counted["right_to_left"]]
    assert _numbers(line.text)[-3:] == [*ways, sum(ways)]
    assert len(page.find_elements("css selector", "#plot rect.event")) == len(events)


def test_headings_are_words_with_units_and_the_settings_are_folded(page, result: Path):
    heads = [th.text for th in page.find_elements("css selector", "#events th, #objects th")]
    assert "Largest area (% of region)" in heads and "Duration (s)" in heads
    assert not {"peak_area", "start_frame", "speed", "area"} & set(heads)
    run = page.find_element("id", "run").text
    assert re.search(r"bpvideo \d+\.\d+", run) and "bursts.mkv" in run
    assert re.search(r"report written \d{4}-\d\d-\d\d \d\d:\d\d", run)
    ticks = [t.text for t in page.find_elements("css selector", "#plot .tick-x")]
    assert len(ticks) >= 4 and all(re.fullmatch(r"\d+:\d\d(\.\d)?", t) for t in ticks)
    titles = [t.text for t in page.find_elements("css selector", "#plot .axis-title")]
    assert "Time into the input (m:ss)" in titles and "Foreground (% of region)" in titles
    settings = page.find_element("id", "settings")
    assert settings.get_attribute("open") is None
    assert not page.find_element("css selector", "#settings table").is_displayed()
    html = page.page_source  # offline: no address but the SVG namespace
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", html)


def test_pictures_open_whole_and_links_point_at_files_that_exist(page, result: Path):
    events = _csv(result / "events.csv")
    for row in events:
        tr = page.find_element("id", f"event-{row['event']}")
        img = tr.find_element("css selector", "a.thumb img")
        natural = page.execute_script("return arguments[0].naturalWidth", img)
        assert natural >= 480 and img.size["width"] == 360  # a 48-px frame, enlarged
        clip = tr.find_element("css selector", "a.clip").get_attribute("href")
        path = Path(unquote(urlparse(clip).path))
        assert path == result / "clips" / f"event_{int(row['event']):04d}.mp4" and path.is_file()
        overlay = urlparse(tr.find_element("css selector", "a.overlay").get_attribute("href"))
        assert Path(unquote(overlay.path)) == result / "overlay.mp4"
        h, m, s = row["start_time"].split(":")
        assert float(overlay.fragment.removeprefix("t=")) == pytest.approx(
            int(h) * 3600 + int(m) * 60 + float(s), abs=1e-3
        )
    assert probe(result / "overlay.mp4").frame_count == len(bursts()[0])
    first = page.find_element("css selector", "a.thumb")
    page.execute_script("arguments[0].scrollIntoView({block: 'center'})", first)
    first.click()
    viewer = page.find_element("id", "viewer-img")
    assert page.find_element("id", "viewer").get_attribute("open") is not None
    assert viewer.get_attribute("src") == first.find_element("tag name", "img").get_attribute("src")
    assert viewer.size["width"] >= 480  # the whole picture, not the 360-px thumbnail


def test_the_regions_and_the_line_are_drawn_where_they_are(page, result: Path):
    scale = 1.0  # the run's --scale: the still is at the input's size
    shown = {p.get_attribute("class"): p.get_attribute("points")
             for p in page.find_elements("css selector", "#overlay polygon")}  # fmt: skip
    for kind, spec in (("roi", ROI), ("exclude", EXCLUDE)):
        corners = np.array([[float(v) for v in p.split(",")] for p in shown[kind].split()])
        np.testing.assert_allclose(corners, parse_region(spec).points * scale + 0.5)
    stage = page.find_element("id", "stage")
    page.execute_script("arguments[0].scrollIntoView({block: 'center'})", stage)
    shot = cv2.imdecode(np.frombuffer(stage.screenshot_as_png, np.uint8), cv2.IMREAD_COLOR)
    f = shot.shape[1] / W  # screen pixels per pixel of the still
    assert shot.shape[0] == pytest.approx(H * f, abs=2) and f > 5
    b, g, r = (shot[..., i].astype(int) for i in range(3))
    blue = (b > 150) & (r < 90) & (b - g > 40)
    x1, y1, _, y2 = parse_line(LINE)
    column = round((x1 + 0.5) * f)
    rows = slice(round((y1 + 0.5) * f) + 4, round((y2 + 0.5) * f) - 4)
    assert blue[rows, column - 2 : column + 3].any(axis=1).mean() > 0.9  # the line, all along
    assert blue[:, : column - 6].mean() < 0.01  # and nowhere far left of it
    green = (g > r + 30) & (g > b + 20)
    roi_edge = round((39 + 0.5) * f)  # the region's right side
    assert green[round(5 * f) : round(25 * f), roi_edge - 2 : roi_edge + 3].any(axis=1).mean() > 0.9
    red = (r > 150) & (r > g + 60) & (r > b + 60)
    assert red[round(31 * f) :, :].mean() > 0.1 and red[: round(29 * f), :].mean() < 0.01


def _click_pixels(page, points: list[tuple[int, int]]) -> None:
    """Click the middle of each pixel ``(x, y)`` of the still, as shown now."""
    from selenium.webdriver.common.action_chains import ActionChains

    stage = page.find_element("id", "stage")
    page.execute_script("arguments[0].scrollIntoView({block: 'center'})", stage)
    size = stage.size
    f = size["width"] / W
    for x, y in points:  # offsets from the element's centre
        dx, dy = round((x + 0.5) * f - size["width"] / 2), round((y + 0.5) * f - size["height"] / 2)
        ActionChains(page).move_to_element_with_offset(stage, dx, dy).click().perform()


def _mode(page, value: str) -> None:
    page.find_element("css selector", f'input[name="picker-mode"][value="{value}"]').click()


def _accepted(text: str) -> SeparateSettings:
    """The settings the CLI makes of ``bpvideo separate in.mp4 TEXT``."""
    from bpvideo._cli import separate

    params = separate.make_context("separate", ["in.mp4", *shlex.split(text)]).params
    given = {k: v for k, v in params.items() if v is not None and v != ()}
    return SeparateSettings.from_mapping({k: v for k, v in given.items() if option_name(k)})


@pytest.mark.parametrize("width", [WINDOW[0], 420])
def test_the_picker_gives_the_clicked_pixels_as_options_the_cli_accepts(page, width: int):
    page.set_window_size(width, WINDOW[1])
    shown = page.find_element("id", "stage").size["width"]
    assert shown == (720 if width == WINDOW[0] else pytest.approx(width - 48, abs=30))
    roi, line, drop = (
        [(2, 3), (40, 3), (40, 30), (2, 30)],
        [(5, 20), (44, 20)],
        [(0, 0), (9, 0), (9, 9)],
    )
    _click_pixels(page, roi)
    _mode(page, "line")
    _click_pixels(page, line)
    _mode(page, "exclude")
    _click_pixels(page, drop)
    text = page.find_element("id", "picker-text").get_property("value")
    assert text == ('--roi "2,3 40,3 40,30 2,30" --count-line "5,20 44,20" '
                    '--exclude "0,0 9,0 9,9"')  # fmt: skip
    settings = _accepted(text)
    assert parse_region(settings.roi[0]).points.tolist() == [list(map(float, p)) for p in roi]
    assert parse_region(settings.exclude[0]).points.tolist() == [list(map(float, p)) for p in drop]
    assert parse_line(settings.count_line[0]) == (5.0, 20.0, 44.0, 20.0)
    drawn = page.find_elements("css selector", "#picked .picked-point")
    assert len(drawn) == len(roi) + len(line) + len(drop)
    page.find_element("id", "picker-undo").click()
    assert page.find_element("id", "picker-text").get_property("value").endswith('"5,20 44,20"')
    page.find_element("id", "picker-clear").click()
    assert page.find_element("id", "picker-text").get_property("value") == ""


def test_the_picker_gives_pixels_of_the_input_when_the_still_is_scaled(browser, tmp_path: Path):
    """With ``--scale 0.5`` the still has half the input's pixels: a click in its pixel
    ``j`` is pixel ``2 j`` of the input (the options are in pixels of the input)."""
    from bpvideo.sinks.report import report_html

    _, png = cv2.imencode(".png", np.full((H, W, 3), 128, np.uint8))
    page = report_html(title="half.mp4", series=(np.zeros(1), np.zeros(1)), events=[],
                       thumbs={}, background_png=png.tobytes(),
                       settings={"scale": 0.5, "count_line": ("0,10 95,10",)},
                       facts={})  # fmt: skip
    path = tmp_path / "report.html"
    path.write_text(page)
    browser.set_window_size(*WINDOW)
    browser.get(path.as_uri())
    line = browser.find_element("css selector", "#overlay .count-line line")
    assert [float(line.get_attribute(k)) for k in ("x1", "y1", "x2", "y2")] == [0.5, 5.5, 48.0, 5.5]
    _mode(browser, "line")
    _click_pixels(browser, [(3, 4), (W - 1, H - 1)])
    text = browser.find_element("id", "picker-text").get_property("value")
    assert text == f'--count-line "6,8 {2 * W - 2},{2 * H - 2}"'
    assert parse_line(_accepted(text).count_line[0]) == (6.0, 8.0, 2.0 * W - 2, 2.0 * H - 2)
