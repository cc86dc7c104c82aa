"""Times as well as frame numbers: ``--start 00:01:30``, ``--duration 10s``, ``--end 1500``
(issue 16), converted with the input's frame rate, on the CLI, in YAML and in the library."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import bpvideo
from bpvideo.batch.config import ConfigError, load_config
from bpvideo.errors import InputError
from bpvideo.settings import SeparateSettings, Time, parse_time
from bpvideo.sources.stream import resolve_selection
from tests.conftest import tiny_frames


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (1500, Time(frames=1500)),
        ("1500", Time(frames=1500)),
        ("90s", Time(seconds=90.0)),
        ("2.5S", Time(seconds=2.5)),
        (".5s", Time(seconds=0.5)),
        ("00:01:30", Time(seconds=90.0)),
        ("01:02:03.250", Time(seconds=3723.25)),
        (" 0:00:07 ", Time(seconds=7.0)),
    ],
)
def test_parse_time_forms(text: object, expected: Time) -> None:
    assert parse_time(text) == expected


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("1:30", "00:01:30"),  # minutes and seconds: the fix spelled out
        ("1.5", "1.5s"),
        (1.5, "1.5s"),
        ("90 sec", "HH:MM:SS"),
        ("00:61:00", "HH:MM:SS"),
        ("-3s", "HH:MM:SS"),
        ("²", "HH:MM:SS"),  # a Unicode digit is not a frame number
        (True, "HH:MM:SS"),
    ],
)
def test_parse_time_refuses_other_forms_with_the_fix(text: object, hint: str) -> None:
    with pytest.raises(InputError, match="must be a frame number") as info:
        parse_time(text, "start")
    assert hint in str(info.value) and info.value.option == ("start", text)


def test_times_convert_at_the_rate_to_the_nearest_frame() -> None:
    assert parse_time("00:01:30").to_frames(25) == 2250
    assert parse_time("1s").to_frames(29.97) == 30
    assert parse_time("0.02s").to_frames(25) == 1  # 0.5 frame: halves round up
    # --duration and --end count source frames; the selection counts every step-th one
    assert resolve_selection("00:01:30", None, None, "10s", 2, 25.0) == (2250, 125)
    assert resolve_selection(100, None, 1500, None, 1, 30.0) == (100, 1400)
    assert resolve_selection("1s", None, "3s", None, 3, 10.0) == (10, 7)
    assert resolve_selection(5, 7, None, None, 1, 10.0) == (5, 7)  # --frames as before
    with pytest.raises(InputError, match=r"end='1s' is frame 10 at 10 frames/s, not after"):
        resolve_selection(12, None, "1s", None, 1, 10.0)
    with pytest.raises(InputError, match="less than one frame at 10 frames/s"):
        resolve_selection(0, None, None, "0.01s", 1, 10.0)


def test_settings_take_one_stop_and_an_end_after_the_start() -> None:
    with pytest.raises(InputError, match="frames and duration both say where to stop"):
        SeparateSettings.from_mapping({"frames": 10, "duration": "2s"})
    with pytest.raises(InputError, match="end and duration both say"):
        SeparateSettings.from_mapping({"end": 10, "duration": "2s"})
    with pytest.raises(InputError, match=r"end='00:00:05' must come after start \(10s\)"):
        SeparateSettings.from_mapping({"start": "10s", "end": "00:00:05"})
    with pytest.raises(InputError, match="duration=0 must be > 0"):
        SeparateSettings.from_mapping({"duration": 0})
    with pytest.raises(InputError, match=r"^start=-1 must be >= 0$"):
        SeparateSettings.from_mapping({"start": "-1"})
    settings = SeparateSettings.from_mapping({"start": "90", "end": "00:02:00"})
    assert (settings.start, settings.end) == (90, "00:02:00")  # frames as int, times as text


def _frames_of(out: Path) -> list[int]:
    return json.loads((out / "summary.json").read_text())["frame_numbers"]


@pytest.mark.parametrize(
    ("args", "first", "count"),
    [
        (["--start", "1s", "--duration", "1s"], 10, 10),  # tiny_clip runs at 10 frames/s
        (["--start", "00:00:00.5", "--end", "2s"], 5, 15),
        (["--start", "2", "--end", "12"], 2, 10),  # plain integers are frames
        (["--start", "3", "--frames", "8"], 3, 8),  # --frames N still works
        (["--duration", "00:00:01.2", "--step", "2"], 0, 6),
    ],
)
def test_cli_times_on_a_video(
    run_cli, tiny_clip: Path, tmp_path: Path, args: list[str], first: int, count: int
) -> None:
    out = tmp_path / "out"
    res = run_cli("separate", tiny_clip, "-o", out, "--rank", "1", "--no-video", "-q", *args)
    assert res.code == 0, res.err
    numbers = _frames_of(out)
    assert numbers[0] == first and len(numbers) == count


def test_cli_time_errors_are_one_line_with_the_fix(run_cli, tiny_clip: Path, tmp_path: Path):
    res = run_cli("separate", tiny_clip, "-o", tmp_path / "o", "--start", "1:30")
    assert res.code == 2 and res.err.count("\n") == 1
    assert "--start '1:30' must be a frame number (1500), seconds (90s, 2.5s) or" in res.err
    assert "(minutes and seconds: 00:01:30)" in res.err
    res = run_cli("separate", tiny_clip, "-o", tmp_path / "o", "--start", "00:00:05")
    assert res.code == 2 and "--start '00:00:05' (frame 50)" in res.err  # past the end
    res = run_cli("separate", tiny_clip, "-o", tmp_path / "o", "--frames", "5", "--end", "2s")
    assert res.code == 2 and "--frames and --end both say where to stop reading" in res.err
    assert not (tmp_path / "o").exists()


def test_folder_times_use_fps(run_cli, tiny_folder: Path, tmp_path: Path) -> None:
    """A folder of frames has no rate of its own: --fps gives it (else 25)."""
    out = tmp_path / "out"
    res = run_cli("separate", tiny_folder, "-o", out, "--rank", "1", "--no-video", "-q",
                  "--fps", "8", "--start", "1s", "--end", "2.5s")  # fmt: skip
    assert res.code == 0, res.err
    assert _frames_of(out) == list(range(9, 21))  # indices 8..19, named in000009 ...
    assert sorted(p.name for p in (out / "masks").iterdir())[0] == "bin000009.png"


def test_library_and_yaml_take_times(tmp_path: Path, tiny_clip: Path) -> None:
    frames, _ = tiny_frames()
    result = bpvideo.separate(frames, start="0.5s", duration="1s", fps=10, rank=1)
    assert result.report.frame_numbers == list(range(5, 15))
    config = tmp_path / "times.yaml"
    config.write_text(
        "defaults:\n  start: 00:00:00.5\n  end: 00:00:02\njobs:\n"
        f"  - input: {tiny_clip}\n"
        f"  - input: {tiny_clip}\n    output: other\n    duration: 10s\n    end: null\n"
    )
    jobs = load_config(config).jobs
    assert jobs[0].settings["start"] == "00:00:00.5"  # text, not YAML 1.1's 0.5 (base 60)
    assert jobs[0].settings["end"] == "00:00:02" and jobs[1].settings["duration"] == "10s"
    config.write_text(f"defaults:\n  start: 1:30\njobs:\n  - input: {tiny_clip}\n")
    with pytest.raises(ConfigError, match=r"times.yaml:2: defaults.start: must be a frame"):
        load_config(config)


def test_arrays_convert_times_with_their_fps() -> None:
    frames = np.zeros((40, 8, 8), np.uint8)
    source = bpvideo.api.open_arrays(frames, SeparateSettings(start="1s", end="3s", fps=10))
    assert source.start == 10 and source.frame_count == 20
