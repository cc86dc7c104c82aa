"""``bpvideo events OUTDIR``: the events of a result again, from its masks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bpvideo import separate_file
from bpvideo.sinks.writers import write_video
from tests.sinks.test_events import EVENTS, FPS, bursts


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("events-cli")
    write_video(root / "bursts.mkv", bursts()[0], FPS, lossless=True)
    separate_file(root / "bursts.mkv", root / "out", no_video=True, **EVENTS)
    return root / "out"


def _copy(run: Path, tmp_path: Path) -> Path:
    out = tmp_path / "copy"
    shutil.copytree(run, out)
    return out


def test_events_reproduces_the_run(run: Path, tmp_path: Path, run_cli):
    out = _copy(run, tmp_path)
    before = {n: (out / n).read_bytes() for n in ("events.csv", "frames.csv")}
    summary = json.loads((out / "summary.json").read_text())
    result = run_cli("events", out)
    assert result.code == 0, result.err
    assert result.out.strip() == str(out / "events.csv")
    for name, data in before.items():
        assert (out / name).read_bytes() == data
    assert json.loads((out / "summary.json").read_text())["events"] == summary["events"]
    assert (out / "report.html").stat().st_size > 0


def test_new_options_change_the_events_and_the_summary(run: Path, tmp_path: Path, run_cli):
    out = _copy(run, tmp_path)
    result = run_cli("events", out, "--event-gap", "2s", "--event-pad", "0", "--json")
    assert result.code == 0, result.err
    events = json.loads(result.out)
    assert len(events) == 1  # the two bursts, 0.8 s apart, are one event
    summary = json.loads((out / "summary.json").read_text())
    assert summary["events"] == events
    assert summary["settings"]["event_gap"] == "2s"
    assert (out / "events.csv").read_text().count("\n") == 2


def test_a_region_narrows_the_events(run: Path, tmp_path: Path, run_cli):
    out = _copy(run, tmp_path)
    result = run_cli("events", out, "--roi", "0,0 3,0 3,3 0,3", "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--roi", "1,2 3,4"], "--roi '1,2 3,4' needs three corners"),
        (["--roi", "missing.png"], "missing.png: --roi is neither a polygon"),
        (["--min-event", "1.5"], "--min-event"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(run: Path, tmp_path: Path, run_cli, args, message):
    out = _copy(run, tmp_path)
    before = (out / "summary.json").read_bytes()
    result = run_cli("events", out, *args)
    assert result.code == 2
    assert result.err.count("\n") == 1 and message in result.err
    assert "Traceback" not in result.err
    assert (out / "summary.json").read_bytes() == before


def test_a_folder_that_is_no_result_is_refused(tmp_path: Path, run_cli):
    result = run_cli("events", tmp_path)
    assert result.code == 2
    assert "no summary.json" in result.err


def test_separate_refuses_a_bad_roi_before_any_work(tmp_path: Path, run_cli):
    write_video(tmp_path / "c.mkv", bursts()[0][:4], FPS, lossless=True)
    result = run_cli("separate", tmp_path / "c.mkv", "-o", tmp_path / "o", "--roi", "5,5")
    assert result.code == 2
    assert result.err.count("\n") == 1 and "--roi" in result.err
    assert not (tmp_path / "o").exists()
