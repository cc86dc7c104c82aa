"""``bpvideo events OUTDIR``: the events of a result again, from its masks."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from bpvideo import separate_file
from bpvideo.sinks.writers import write_video
from tests.sinks.test_events import EVENTS, FPS, bursts
from tests.sinks.test_objects import LINE, SQUARES, read, write_squares


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("events-cli")
    write_video(root / "bursts.mkv", bursts()[0], FPS, lossless=True)
    separate_file(root / "bursts.mkv", root / "out", no_video=True, **EVENTS)
    return root / "out"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Squares crossing a still scene (tests/sinks/test_objects.py)."""
    return write_squares(tmp_path_factory.mktemp("squares"))


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


def _same_result(out: Path, other: Path) -> None:
    """The events, frames and objects of ``out`` are those of ``other``, byte for byte."""
    for name in ("events.csv", "frames.csv", "objects.csv", "tracks.csv"):
        assert (out / name).read_bytes() == (other / name).read_bytes(), name
    mine, theirs = (json.loads((d / "summary.json").read_text()) for d in (out, other))
    for key in ("events", "objects", "counts", "outputs"):
        assert mine.get(key) == theirs.get(key), key
    assert {k: mine["settings"][k] for k in ("events", "count_line", "roi")} == {
        k: theirs["settings"][k] for k in ("events", "count_line", "roi")
    }


def test_events_tracks_the_objects_of_a_run_that_did_not(folder: Path, tmp_path: Path, run_cli):
    """``--events objects --count-line`` on a run without objects: the objects, counts
    and object events of a run made with them."""
    plain, tracked = tmp_path / "plain", tmp_path / "tracked"
    separate_file(folder, plain, no_video=True)
    separate_file(folder, tracked, no_video=True, count_line=[LINE], events="objects")
    assert not (plain / "objects.csv").exists()
    result = run_cli("events", plain, "--events", "objects", "--count-line", LINE)
    assert result.code == 0, result.err
    _same_result(plain, tracked)
    assert len(read(plain / "objects.csv")) == len(SQUARES)
    assert f"{len(SQUARES)} object(s)" in result.err


def test_a_region_tracks_the_objects_again(folder: Path, tmp_path: Path, run_cli):
    """A narrower region on a run with objects: the objects of a run made with that
    region (the square on the right is gone), not the run's nor none."""
    out, narrow = tmp_path / "out", tmp_path / "narrow"
    left = "0,0 48,0 48,72 0,72"
    separate_file(folder, out, no_video=True, count_line=[LINE], events="objects")
    separate_file(folder, narrow, no_video=True, count_line=[LINE], events="objects",
                  roi=[left])  # fmt: skip
    result = run_cli("events", out, "--roi", left)
    assert result.code == 0, result.err
    _same_result(out, narrow)
    assert len(read(out / "objects.csv")) == len(SQUARES) - 1
    # and the events of the objects stay when only the activity's options change
    again = run_cli("events", out, "--min-event", "2s")
    assert again.code == 0, again.err
    _same_result(out, narrow)


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
        (["--count-line", "500,500 600,600"], "misses the 48x36 frames"),
        (["--count-line", "0,10"], "a counting line is two distinct points"),
        (["--events", "cars"], "'cars' is not one of 'activity', 'objects'"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(run: Path, tmp_path: Path, run_cli, args, message):
    out = _copy(run, tmp_path)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    result = run_cli("events", out, *args)
    assert result.code == 2
    assert result.err.count("\n") == 1 and message in result.err
    assert "Traceback" not in result.err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no staging left


def _damage_summary(settings: dict | None = None, **fields):
    """Edit summary.json's top-level ``fields`` and the run's ``settings``."""

    def damage(out: Path) -> None:
        summary = json.loads((out / "summary.json").read_text())
        summary.update(fields)
        summary["settings"].update(settings or {})
        (out / "summary.json").write_text(json.dumps(summary))

    return damage


def _mask_of_another_size(out: Path) -> None:
    import cv2
    import numpy as np

    cv2.imwrite(str(out / "masks" / "bin000005.png"), np.zeros((10, 10), np.uint8))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (
            _mask_of_another_size,
            r"masks/bin000005\.png: mask is 10x10 but summary\.json says "
            r"the frames are \d+x\d+",
        ),
        (_damage_summary(width=10**12, height=10**12), r'summary\.json: "width" is 1000000000000'),
        (_damage_summary(width=-3), r'summary\.json: "width" is -3'),
        (_damage_summary(mask_numbers=[1.5, 2.7, 3]), r'"mask_numbers" is \[1\.5, 2\.7, 3\]'),
        (_damage_summary(mask_numbers=["a", None]), r'"mask_numbers" is \[\'a\', None\]'),
        (_damage_summary(fps=0), r'summary\.json: "fps" is 0, which no run writes'),
        (  # no run writes a line it refused: the summary is named, not an option
            _damage_summary(settings={"count_line": ["500,500 600,600"]}),
            r'summary\.json: "settings" hold a value no run writes \(count_line=\'500,500 '
            r"600,600\' misses the 48x36 frames",
        ),
    ],
    ids=[
        "mask-size",
        "huge-size",
        "negative-size",
        "fractional-numbers",
        "text-numbers",
        "fps-0",
        "line-off-frame",
    ],
)
def test_a_damaged_output_directory_is_one_line_naming_the_file(
    run: Path, tmp_path: Path, run_cli, damage, message
):
    """Four kinds of damaged OUTDIR (issue 42) were internal errors (exit 1), or events of
    nothing (fractional mask numbers, exit 0): now usage errors naming the file."""
    out = _copy(run, tmp_path)
    damage(out)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    result = run_cli("events", out)
    assert result.code == 2, result.err
    assert result.err.count("\n") == 1 and "Traceback" not in result.err
    assert re.search(message, result.err), result.err
    assert result.err.rstrip().endswith("the output directory is damaged; run bpvideo "
                                        "separate again")  # fmt: skip
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


@pytest.mark.parametrize(
    ("target", "says"),
    [("summary.json", "--logfile is also the output"),
     ("masks/bin000001.png", "--logfile would replace the mask")],
    ids=["summary", "mask"],
)  # fmt: skip
def test_a_logfile_that_is_a_file_of_outdir_is_refused(run: Path, tmp_path: Path, run_cli,
                                                       target: str, says: str):  # fmt: skip
    """--logfile passes the one guard: it was appended to a mask (events read it back
    damaged next time) or lost when summary.json was replaced."""
    out = _copy(run, tmp_path)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    result = run_cli("events", out, "--logfile", out / target)
    assert result.code == 2 and result.err.count("\n") == 1, result.err
    assert says in result.err and "choose another --logfile" in result.err
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_a_folder_that_is_no_result_is_refused(tmp_path: Path, run_cli, monkeypatch):
    result = run_cli("events", tmp_path)
    assert result.code == 2
    assert "no summary.json" in result.err
    monkeypatch.chdir(tmp_path)  # an empty OUTDIR is named as typed (it said ".")
    result = run_cli("events", "")
    assert result.code == 2 and result.err.count("\n") == 1
    assert "OUTDIR is an empty name: give the output directory" in result.err


def test_separate_refuses_a_bad_roi_before_any_work(tmp_path: Path, run_cli):
    write_video(tmp_path / "c.mkv", bursts()[0][:4], FPS, lossless=True)
    result = run_cli("separate", tmp_path / "c.mkv", "-o", tmp_path / "o", "--roi", "5,5")
    assert result.code == 2
    assert result.err.count("\n") == 1 and "--roi" in result.err
    assert not (tmp_path / "o").exists()
