"""Hostile files and outputs of session 50 (the file side: separate, events, evaluate,
batch): each case failed with an internal error, a wrong exit status or a line that did
not name the input before its fix. Tiny inputs (48x36, a few frames)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import cv2
import imageio_ffmpeg
import pytest

from bpvideo.sinks.writers import write_video
from tests._cli.test_bad_inputs import assert_one_error_line
from tests.conftest import output_files, tiny_frames


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("clip") / "clip.mkv"
    write_video(path, tiny_frames(n=12)[0], 10.0, lossless=True)
    return path


@pytest.fixture(scope="module")
def result(clip: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An output directory of ``separate`` (read-only for the tests: copy to change it)."""
    from bpvideo.job import separate_file

    out = tmp_path_factory.mktemp("result") / "out"
    separate_file(clip, out, no_video=True)
    return out


def _folder(folder: Path, names: list[str]) -> Path:
    folder.mkdir()
    for name, frame in zip(names, tiny_frames(n=len(names))[0], strict=True):
        cv2.imwrite(str(folder / name), frame)
    return folder


@pytest.mark.parametrize("number", [2**60, 10**30], ids=["past-2**53", "past-int64"])
def test_frames_named_with_huge_numbers_are_numbered_in_order(
    run_cli, tmp_path: Path, number: int
) -> None:
    """Numbers no float holds exactly (the frames' seconds) were an OverflowError or a
    ZeroDivisionError of the report: such names are numbered in their order."""
    frames = _folder(tmp_path / "frames", [f"cam{number + i}.png" for i in range(6)])
    res = run_cli("separate", frames, "-o", tmp_path / "out", "--no-video", "-q")
    assert res.code == 0, res.err
    assert len(list((tmp_path / "out" / "masks").iterdir())) == 6
    assert not [p for p in output_files(tmp_path / "out") if ".bpvideo" in p]


def test_events_of_frames_named_by_their_time_in_milliseconds(run_cli, tmp_path: Path) -> None:
    """Masks named after frames numbered past 2**31 (epoch milliseconds) are a run's own:
    ``events`` took them for a damaged summary."""
    names = [f"cam_{1700000000000 + 40 * i}.png" for i in range(6)]
    frames = _folder(tmp_path / "frames", names)
    out = tmp_path / "out"
    assert run_cli("separate", frames, "-o", out, "--no-video", "-q").code == 0
    assert (out / "masks" / "bin1700000000000.png").is_file()
    res = run_cli("events", out, "-q")
    assert res.code == 0, res.err


def test_a_start_time_near_the_end_of_year_9999(run_cli, clip: Path, tmp_path: Path) -> None:
    """Times of day past what a datetime holds are unknown (blank), not an OverflowError
    (the same from a container's creation_time or an edited summary)."""
    out = tmp_path / "out"
    res = run_cli("separate", clip, "-o", out, "--no-video", "-q",
                  "--start-time", "9999-12-31T23:59:59")  # fmt: skip
    assert res.code == 0, res.err
    rows = (out / "events.csv").read_text().splitlines()
    assert rows[1].split(",")[-2] == "9999-12-31T23:59:59.000"  # the start, then blank
    assert rows[1].split(",")[-1] == ""
    assert run_cli("events", out, "-q").code == 0


@pytest.mark.parametrize(
    ("settings", "names"),
    [
        ({"rank": -5}, r"rank=-5 must be >= 1"),
        ({"min_event": "xyz"}, r"min_event='xyz'"),
        ({"roi": ["1,1 2,2"]}, r"roi='1,1 2,2' needs three corners"),
        ("not a mapping", r'"settings" is \'not a mapping\''),
    ],
    ids=["rank", "min-event", "roi", "not-a-mapping"],
)
def test_events_names_the_damaged_settings_of_the_summary(
    run_cli, result: Path, tmp_path: Path, settings, names: str
) -> None:
    """An edited summary.json named an option the user never gave (``--rank -5 must be
    >= 1``), or failed with an AttributeError."""
    out = tmp_path / "out"
    subprocess.run(["cp", "-r", str(result), str(out)], check=True)
    summary = json.loads((out / "summary.json").read_text())
    summary["settings"] = settings if isinstance(settings, str) else {**summary["settings"],
                                                                       **settings}  # fmt: skip
    (out / "summary.json").write_text(json.dumps(summary))
    before = output_files(out)
    res = run_cli("events", out)
    line = assert_one_error_line(res, 2, names, "damaged; run bpvideo separate again")
    assert "summary.json" in line and output_files(out) == before


@pytest.mark.parametrize("fail", ["read-only", "disk-full"])
def test_events_into_a_folder_it_cannot_write(
    run_cli, result: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail: str
) -> None:
    """A read-only OUTDIR was an internal error (OSError), a full disk a line that named
    no folder."""
    import errno
    import shutil

    import bpvideo.sinks.rederive as rederive

    out = tmp_path / "out"
    shutil.copytree(result, out)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    if fail == "read-only":

        def refuse(*args, **kwargs):
            raise OSError(errno.EROFS, "Read-only file system", str(out / ".staged"))

        monkeypatch.setattr(rederive.tempfile, "mkdtemp", refuse)
        code, names, fix = 2, r"out: cannot write in it \(Read-only", "copy the folder"
    else:

        def full(*args, **kwargs):
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(rederive, "atomic_write_bytes", full)
        code, names, fix = 1, r"out: writing the events failed: disk full", "earlier events"
    assert_one_error_line(run_cli("events", out), code, names, fix)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("groundtruth", ["/dev/null", "fifo"])
def test_evaluate_ground_truth_neither_file_nor_folder(
    run_cli, result: Path, tmp_path: Path, groundtruth: str
) -> None:
    if groundtruth == "fifo":
        groundtruth = str(tmp_path / "gt.fifo")
        __import__("os").mkfifo(groundtruth)
    res = run_cli("evaluate", result, groundtruth, "--csv", tmp_path / "s.csv")
    assert_one_error_line(res, 2, r"neither a file nor a folder", "pass a changedetection")


def test_evaluate_csv_that_is_a_folder_is_refused_first(run_cli, result: Path, tmp_path: Path):
    gt = tmp_path / "groundtruth"
    gt.mkdir()
    for i in range(1, 13):
        cv2.imwrite(str(gt / f"gt{i:06d}.png"), tiny_frames(n=1)[1][0].astype("uint8") * 255)
    res = run_cli("evaluate", result, gt, "--csv", tmp_path)
    assert_one_error_line(res, 2, rf"{tmp_path}: --csv is a folder", "give the path of a file")


def test_batch_refuses_two_jobs_writing_masks_to_stdout(run_cli, clip: Path, tmp_path: Path):
    """Their raw frames were mixed on stdout, with nothing to tell them apart."""
    config = tmp_path / "b.yaml"
    config.write_text(f"jobs:\n  - input: {clip}\n    output: a\n    masks-to: '-'\n"
                      f"  - input: {clip}\n    output: b\n    masks-to: '-'\n")  # fmt: skip
    res = run_cli("batch", config)
    assert res.code == 2 and res.out == "", res.err
    assert "b.yaml:7: jobs[1].masks-to: '-' would write the masks of clip.mkv of jobs[1]" in (
        res.err
    )
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_batch_config_that_is_a_list_says_so(run_cli, tmp_path: Path) -> None:
    config = tmp_path / "b.yaml"
    config.write_text("- input: clip.mkv\n")
    res = run_cli("batch", config)
    assert res.code == 2 and "got a list" in res.err and "LineList" not in res.err


def test_batch_resume_runs_a_job_whose_input_changed(run_cli, clip: Path, tmp_path: Path):
    """A new recording under the same name was skipped as complete, its stale result
    kept (exit 0)."""
    import os
    import shutil

    shutil.copy(clip, tmp_path / "cam.mkv")
    config = tmp_path / "b.yaml"
    config.write_text("jobs:\n  - input: cam.mkv\n    output: out\n    no-video: true\n")
    assert run_cli("batch", config, "-q").code == 0
    assert run_cli("batch", config, "--resume", "--dry-run").out == ""  # complete
    later = (tmp_path / "out" / "summary.json").stat().st_mtime_ns + 10**9
    os.utime(tmp_path / "cam.mkv", ns=(later, later))  # a new recording
    res = run_cli("batch", config, "--resume", "--dry-run")
    assert res.out == f"{tmp_path / 'cam.mkv'}\t{tmp_path / 'out'}\n"
    assert "cam.mkv: changed since its result" in res.err


def test_a_full_disk_under_masks_to_names_that_file(
    run_cli, clip: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--masks-to on another disk that fills: the line named OUTDIR and told to choose
    another -o (a full disk's error names no file)."""
    import errno
    import io

    import bpvideo.sinks.raw as raw

    class Full(io.RawIOBase):
        def writable(self) -> bool:
            return True

        def write(self, data: bytes) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    real = raw._open_raw
    monkeypatch.setattr(raw, "_open_raw", lambda target: (real(target).close(), Full())[1])
    (tmp_path / "disk").mkdir()
    res = run_cli("separate", clip, "-o", tmp_path / "out", "--no-video", "-q",
                  "--masks-to", tmp_path / "disk" / "m.raw")  # fmt: skip
    assert_one_error_line(res, 1, r"disk/m\.raw: writing it failed: disk full",
                          "free some space or write it elsewhere; nothing was kept")  # fmt: skip
    assert output_files(tmp_path) == ["disk"]


@pytest.mark.parametrize("output", ["loop", "loop/{stem}"])
def test_an_output_that_is_a_loop_of_links(run_cli, clip: Path, tmp_path: Path, output: str):
    """``-o`` a link to a link to it: an internal error (RuntimeError of Path.resolve)."""
    (tmp_path / "loop").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop")
    res = run_cli("separate", clip, "-o", f"{tmp_path}/{output}")
    assert_one_error_line(res, 2, r"loop.*cannot be used \(Too many levels of symbolic links",
                          "choose another -o")  # fmt: skip


def test_an_output_that_is_a_dangling_link(run_cli, clip: Path, tmp_path: Path) -> None:
    """Failed after the work (exit 1) with ``cannot create the output directory (File
    exists)``."""
    (tmp_path / "out").symlink_to(tmp_path / "gone")
    res = run_cli("separate", clip, "-o", tmp_path / "out", "--no-video")
    assert_one_error_line(res, 2, r"out: is a link to .*gone, which does not exist",
                          "create that folder or choose another -o")  # fmt: skip
    assert not (tmp_path / "gone").exists()


@pytest.mark.parametrize(
    ("line", "code"),
    [("100,100 200,200", 2), ("-10,-10 -1,-1", 2), ("48,0 48,35", 2), ("-5,40 60,-10", 0)],
)
def test_a_counting_line_that_misses_the_frame(
    run_cli, clip: Path, tmp_path: Path, line: str, code: int
) -> None:
    """Counted nothing, silently (a --roi outside the frame is refused); a line that
    crosses the frame from outside it counts."""
    out = tmp_path / "out"
    res = run_cli("separate", clip, "-o", out, "--no-video", "-q", "--count-line", line)
    if code:
        assert_one_error_line(res, 2, rf"--count-line='{line}' misses the 48x36 frames",
                              r"give points inside the frame \(x 0\.\.47, y 0\.\.35\)")  # fmt: skip
        assert not out.exists()
    else:
        assert res.code == 0, res.err


@pytest.mark.parametrize("args", [["--frames", "1"], ["--step", "100"], ["--start", "11"]])
def test_a_selection_of_one_frame_says_to_select_more(
    run_cli, clip: Path, tmp_path: Path, args: list[str]
) -> None:
    """It said ``the input has 1 frame(s) ... give a longer clip`` of a 12-frame clip."""
    res = run_cli("separate", clip, "-o", tmp_path / "out", *args)
    names = r"clip\.mkv: 1 frame\(s\) selected; robust PCA needs at least 2"
    assert_one_error_line(res, 2, names, r"select more frames \(lower --start or --step")


def _late_clip(path: Path, frames: int) -> Path:
    """A Matroska clip whose clock starts at 1000 s, as ``ffmpeg -copyts`` records one: its
    Duration (the end of its last frame) announces 10000 frames more than it holds."""
    cmd = [imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-y", "-f", "lavfi", "-i",
           "testsrc=s=48x36:r=10", "-frames:v", str(frames), "-c:v", "ffv1",
           "-output_ts_offset", "1000", str(path)]  # fmt: skip
    subprocess.run(cmd, check=True)
    return path


def test_a_matroska_clock_that_starts_late_is_no_truncation(run_cli, tmp_path: Path) -> None:
    """Refused (exit 1) as "only 12 of the 10012 frames" before; a cut one still is,
    counted from its start."""
    whole = _late_clip(tmp_path / "late.mkv", 12)
    res = run_cli("separate", whole, "-o", tmp_path / "out", "--no-video", "-q")
    assert res.code == 0, res.err
    data = whole.read_bytes()
    cut = tmp_path / "cut.mkv"
    _late_clip(tmp_path / "late40.mkv", 40)
    cut.write_bytes((tmp_path / "late40.mkv").read_bytes()[: len(data)])
    res = run_cli("separate", cut, "-o", tmp_path / "out2", "--no-video")
    assert_one_error_line(res, 1, r"cut\.mkv: only \d+ of the 40 frames", "--allow-partial")
