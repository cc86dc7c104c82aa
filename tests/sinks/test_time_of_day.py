"""Times of day (issue 41): ``--start-time``, else the container's ``creation_time``,
else none; events.csv, objects.csv and summary.json carry them, ``bpvideo events`` too.
(A live stream's arrival clock: tests/_cli/test_live.py.)"""

from __future__ import annotations

import csv
import datetime as dt
import json
import subprocess
from pathlib import Path

import pytest

from bpvideo.batch.config import load_config
from bpvideo.sources.ffmpeg import executable

TAGGED = "2026-11-27T08:30:00.000000Z"
#: Options of the runs: every frame of the moving square an event, an object counted.
OPTIONS = ("--no-video", "--rank", "1", "--event-threshold", "0", "--count-line",
           "24,0 24,35", "-q")  # fmt: skip


@pytest.fixture(scope="module")
def tagged_clip(tiny_clip: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny clip, copied by ffmpeg with a ``creation_time`` tag."""
    path = tmp_path_factory.mktemp("tagged") / "tagged.mkv"
    subprocess.run([executable(), "-hide_banner", "-loglevel", "error", "-i", str(tiny_clip),
                    "-c", "copy", "-metadata", f"creation_time={TAGGED}", str(path)],
                   check=True)  # fmt: skip
    return path


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def _seconds(timecode: str) -> float:
    hours, minutes, seconds = timecode.split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def _check_times_of_day(out: Path, origin: dt.datetime) -> None:
    """Every time of day of events.csv and objects.csv is ``origin`` + its time."""
    events, objects = _rows(out / "events.csv"), _rows(out / "objects.csv")
    assert events and objects
    for row, pairs in [(r, (("start", "start"), ("end", "end"))) for r in events] + [
        (r, (("first", "first"), ("last", "last"))) for r in objects
    ]:
        for of_day, relative in pairs:
            when = dt.datetime.fromisoformat(row[f"{of_day}_time_of_day"])
            assert when.utcoffset() == origin.utcoffset()
            assert when - origin == dt.timedelta(seconds=_seconds(row[f"{relative}_time"]))


def test_container_creation_time(run_cli, tagged_clip: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = run_cli("separate", tagged_clip, "-o", out, *OPTIONS)
    assert res.code == 0, res.err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["start_time"] == "2026-11-27T08:30:00.000+00:00"
    assert summary["start_time_source"] == "container"
    origin = dt.datetime.fromisoformat(summary["start_time"])
    _check_times_of_day(out, origin)
    row = summary["events"][0]
    assert dt.datetime.fromisoformat(row["start_time_of_day"]) == origin + dt.timedelta(
        seconds=_seconds(row["start_time"])
    )
    # bpvideo events finds the events again on the same clock.
    res = run_cli("events", out, "--min-event", "3")
    assert res.code == 0, res.err
    _check_times_of_day(out, origin)
    assert json.loads((out / "summary.json").read_text())["events"][0]["start_time_of_day"]


def test_start_time_option_wins_and_keeps_its_offset(
    run_cli, tagged_clip: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    given = "2026-11-27T09:00:00.250+01:00"
    res = run_cli("separate", tagged_clip, "-o", out, *OPTIONS, "--start-time", given)
    assert res.code == 0, res.err
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["start_time"], summary["start_time_source"]) == (given, "option")
    assert summary["settings"]["start_time"] == "2026-11-27T09:00:00.250000+01:00"
    _check_times_of_day(out, dt.datetime.fromisoformat(given))
    assert _rows(out / "events.csv")[0]["start_time_of_day"].endswith("+01:00")


def test_no_time_of_day_leaves_the_columns_empty(run_cli, tiny_clip: Path, tmp_path) -> None:
    out = tmp_path / "out"
    res = run_cli("separate", tiny_clip, "-o", out, *OPTIONS)
    assert res.code == 0, res.err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["start_time"] is None and summary["start_time_source"] is None
    for name, columns in (("events.csv", ("start", "end")), ("objects.csv", ("first", "last"))):
        rows = _rows(out / name)
        assert rows and all(r[f"{c}_time_of_day"] == "" for r in rows for c in columns)


@pytest.mark.parametrize("value", ["27/11/2026 08:00", "2026-11-27", "2026-11-31T08:00:00"])
def test_a_bad_start_time_is_one_line(run_cli, tiny_clip: Path, tmp_path, value) -> None:
    res = run_cli("separate", tiny_clip, "-o", tmp_path / "o", "--start-time", value)
    assert res.code == 2 and res.out == ""
    assert res.err.count("\n") == 1
    assert f"--start-time '{value}' must be an ISO 8601 date and time" in res.err
    assert "e.g. --start-time 2026-11-27T08:30:00+01:00" in res.err
    assert not (tmp_path / "o").exists()


def test_start_time_is_a_config_key(tiny_clip: Path, tmp_path: Path) -> None:
    config = tmp_path / "b.yaml"
    # Unquoted, YAML reads a timestamp: taken as the same time of day, offset kept.
    config.write_text(
        f"defaults:\n  start-time: 2026-11-27T08:30:00+01:00\n"
        f"jobs:\n  - input: {tiny_clip}\n  - input: {tiny_clip}\n"
        f"    output: {tmp_path / 'b'}\n    start_time: '2026-11-27 10:00Z'\n"
    )
    first, second = load_config(config).jobs
    assert first.settings["start_time"] == "2026-11-27T08:30:00+01:00"
    assert second.settings["start_time"] == "2026-11-27T10:00:00+00:00"
