"""Hostile and careless inputs (issue 15), class by class, through the real CLI.

Every refusal is one line on stderr naming the input and the fix, exit 2, before any
work, and leaves every input as it was (its bytes compared before and after).
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import subprocess
import sys
import wave
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo.errors import InputError
from bpvideo.sinks.writers import write_video
from tests._cli.test_bad_inputs import assert_one_error_line, run_process
from tests.conftest import REPO, output_files, tiny_frames


@pytest.fixture
def clip(tmp_path: Path) -> Path:
    path = tmp_path / "clip.mkv"
    frames, _ = tiny_frames(n=12)
    write_video(path, frames, 10.0, lossless=True)
    return path


def digest(*paths: Path) -> list[str]:
    """Bytes of files (and of every file under folders), hashed: inputs must not change."""
    files = []
    for path in paths:
        files += sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    return [hashlib.sha256(f.read_bytes()).hexdigest() for f in files]


def frames_folder(folder: Path, n: int = 12) -> Path:
    folder.mkdir(parents=True)
    for i, frame in enumerate(tiny_frames(n=n)[0], start=1):
        cv2.imwrite(str(folder / f"in{i:06d}.png"), frame)
    return folder


# --- outputs that would destroy inputs ---------------------------------------------------


def test_masks_to_the_input_is_refused(run_cli, clip: Path, tmp_path: Path) -> None:
    before = digest(clip)
    res = run_cli("separate", clip, "-o", tmp_path / "out", "--masks-to", clip)
    assert_one_error_line(res, 2, r"clip\.mkv: --masks-to would replace the input", "another")
    assert digest(clip) == before and not (tmp_path / "out").exists()


def test_masks_to_through_a_link_to_the_input(run_cli, clip: Path, tmp_path: Path) -> None:
    link = tmp_path / "masks.raw"
    link.symlink_to(clip)
    before = digest(clip)
    res = run_cli("separate", clip, "-o", tmp_path / "out", "--masks-to", link)
    assert_one_error_line(res, 2, r"masks\.raw: --masks-to would replace the input", "--masks-to")
    assert digest(clip) == before


def test_an_input_named_like_an_output_is_kept(run_cli, clip: Path, tmp_path: Path) -> None:
    """An input ``OUTDIR/background.mp4`` under --overwrite (and a frames folder
    ``OUTDIR/masks``) would be replaced by the result: refused, even without --overwrite
    (whose advice would destroy it)."""
    out = tmp_path / "out"
    out.mkdir()
    video = out / "background.mp4"
    video.write_bytes(clip.read_bytes())
    folder = frames_folder(out / "masks")
    before = digest(video, folder)
    for argv in ([video, "-o", out, "--overwrite"], [video, "-o", out], [folder, "-o", out]):
        res = run_cli("separate", *argv, "--overwrite")
        assert_one_error_line(res, 2, r"out/(background\.mp4|masks)", r"choose another -o")
    assert digest(video, folder) == before and sorted(os.listdir(out)) == [
        "background.mp4",
        "masks",
    ]


def test_outputs_of_one_input_read_by_another(run_cli, clip: Path, tmp_path: Path) -> None:
    """Many inputs: one input's result may not replace another input (checked before any
    of them runs)."""
    other = tmp_path / "res" / "clip" / "background.mp4"
    other.parent.mkdir(parents=True)
    other.write_bytes(clip.read_bytes())
    before = digest(other)
    res = run_cli("separate", clip, other, "-o", tmp_path / "res/{stem}", "--overwrite")
    assert_one_error_line(res, 2, r"the output would replace the input", "choose another -o")
    assert digest(other) == before and output_files(tmp_path / "res") == sorted(
        ["clip", "clip/background.mp4"]
    )


def test_the_empty_scene_is_an_input(run_cli, clip: Path, tmp_path: Path) -> None:
    """A picture given as --background-from is read: no output may replace it, and one of
    a size no frame has is refused from its header (nothing decoded)."""
    scene = tmp_path / "out" / "background.png"
    scene.parent.mkdir()
    cv2.imwrite(str(scene), tiny_frames(n=1)[0][0])
    before = digest(scene)
    res = run_cli("separate", clip, "-o", tmp_path / "out", "--background-from", scene,
                  "--overwrite")  # fmt: skip
    assert_one_error_line(res, 2, r"the output would replace the empty scene", "another -o")
    res = run_cli("separate", clip, "-o", tmp_path / "o", "--background-from", scene,
                  "--masks-to", scene)  # fmt: skip
    assert_one_error_line(res, 2, r"would replace the empty scene", "--masks-to")
    assert digest(scene) == before
    huge = tmp_path / "huge.png"
    huge.write_bytes(_png_header(30000, 30000))
    res = run_cli("separate", clip, "-o", tmp_path / "o", "--background-from", huge, "-q")
    assert_one_error_line(res, 2, r"huge\.png: the empty scene is 30000x30000 but", "frame size")
    assert not (tmp_path / "o").exists()


def test_batch_report_onto_the_config_or_an_input(run_cli, clip: Path, tmp_path: Path) -> None:
    config = tmp_path / "night.yaml"
    config.write_text(f"jobs:\n  - input: {clip}\n    output: {tmp_path}/o\n")
    before = digest(config, clip)
    for target in (config, clip):
        res = run_cli("batch", config, "--report", target)
        assert_one_error_line(res, 2, r"the report would replace the (config|input)", "--report")
    config.write_text(f"report: {clip}\njobs:\n  - input: {clip}\n    output: {tmp_path}/o\n")
    before = digest(config, clip)
    res = run_cli("batch", config)
    assert_one_error_line(res, 2, r"the report would replace the input", "--report")
    assert digest(config, clip) == before and not (tmp_path / "o").exists()


def test_batch_job_reading_another_jobs_output(run_cli, clip: Path, tmp_path: Path) -> None:
    config = tmp_path / "night.yaml"
    config.write_text(
        f"jobs:\n  - input: {clip}\n    output: {tmp_path}/o\n"
        f"  - input: {tmp_path}/o/background.mp4\n    output: {tmp_path}/p\n"
    )
    (tmp_path / "o").mkdir()
    (tmp_path / "o/background.mp4").write_bytes(clip.read_bytes())
    res = run_cli("batch", config)
    assert_one_error_line(res, 2, r"o/background\.mp4: the output of jobs\[0\] \(night\.yaml:2\) "
                          r"would replace the input of jobs\[1\]", "'output:' of jobs")  # fmt: skip
    assert not (tmp_path / "night.report.json").exists()


def test_evaluate_csv_onto_ground_truth_or_masks(run_cli, tmp_path: Path) -> None:
    gt = tmp_path / "groundtruth"
    gt.mkdir()
    masks = tmp_path / "masks"
    masks.mkdir()
    for i in (1, 2):
        cv2.imwrite(str(gt / f"gt{i:06d}.png"), np.zeros((8, 8), np.uint8))
        cv2.imwrite(str(masks / f"bin{i:06d}.png"), np.zeros((8, 8), np.uint8))
    before = digest(gt, masks)
    for target in (gt / "gt000001.png", masks / "bin000002.png"):
        res = run_cli("evaluate", masks, gt, "--csv", target)
        assert_one_error_line(res, 2, r"--csv would replace the (ground truth|masks)", "--csv")
    assert digest(gt, masks) == before


# --- file names are data -----------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["concat:clip.mkv|clip.mkv", "a\nStream #0:0: Video: rawvideo, 999x999\nb.mkv", "-i.mkv"],
    ids=["protocol", "log-lines", "option"],
)
def test_a_name_only_names_its_file(tmp_path: Path, clip: Path, name: str) -> None:
    """Names shaped like an ffmpeg protocol, ffmpeg's log or an option read that very file:
    its 48x36 frames, its 12 frames (a real process, so ffmpeg is the real one)."""
    hostile = tmp_path / name
    write_video(hostile, tiny_frames(n=9, seed=4)[0], 10.0, lossless=True)
    out = tmp_path / "out"
    res = run_process("separate", hostile, "-o", out, "--rank", "1", "--json", "-q")
    assert res.code == 0, res.err
    summary = json.loads(res.out)
    assert (summary["frames"], summary["width"], summary["height"]) == (9, 48, 36)


def test_names_with_newlines_stay_one_line(run_cli, tmp_path: Path) -> None:
    res = run_cli("separate", tmp_path / "no\nsuch\rfile.mp4", "-o", tmp_path / "out")
    line = assert_one_error_line(res, 2, r"no\\nsuch\\rfile\.mp4: no such file", "check the path")
    assert "\r" not in line


@pytest.mark.parametrize("argv", [[""], ["{clip}", "-o", ""], ["{clip}", "--mask", ""]])
def test_empty_names_are_refused(run_cli, clip: Path, tmp_path: Path, argv: list[str]) -> None:
    res = run_cli("separate", *[a.format(clip=clip) for a in argv])
    assert_one_error_line(
        res, 2, r"INPUT is an empty name|-o '' is an empty|--mask ''", "give|path"
    )
    assert output_files(tmp_path) == ["clip.mkv"]


# --- templates stay inside their folder --------------------------------------------------


def test_a_stem_of_dotdot_cannot_leave_the_template(run_cli, tmp_path: Path) -> None:
    frames_folder(tmp_path / "frames")
    (tmp_path / "frames" / "sub").mkdir()
    other = tmp_path / "b.mkv"
    write_video(other, tiny_frames(n=12)[0], 10.0, lossless=True)
    res = run_cli("separate", tmp_path / "frames/sub/..", other, "-o", tmp_path / "res/{stem}")
    assert_one_error_line(res, 2, r"gives '.*res/\.\.' .* not inside '.*res'", "plain names")
    assert not (tmp_path / "res").exists()


def test_batch_values_are_never_expanded(run_cli, clip: Path, tmp_path: Path) -> None:
    """A file named ``~`` fills ``out/{stem}`` as ``out/~`` (not $HOME); a template value
    ``../../x`` cannot leave ``out``."""
    tilde = tmp_path / "cams" / "~"
    tilde.parent.mkdir()
    tilde.write_bytes(clip.read_bytes())
    config = tmp_path / "night.yaml"
    config.write_text("defaults:\n  output: out/{stem}\n  rank: 1\njobs:\n  - input: cams/*\n")
    res = run_cli("batch", config, "--dry-run")
    assert res.code == 0, res.err
    assert res.out == f"{tilde}\t{tmp_path / 'out' / '~'}\n"
    config.write_text(
        "defaults:\n  output: out/{camera}/{stem}\njobs:\n"
        f"  - input: {clip}\n    camera: ../../escaped\n"
    )
    res = run_cli("batch", config, "--dry-run")
    assert res.code == 2 and "not inside 'out'" in res.err, res.err


# --- small inputs, bounded costs ---------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--open-radius", "20000"], r"--open-radius 20000 must be <= 50"),
        (["--close-radius", "51"], r"--close-radius 51 must be <= 50"),
        (["--fps", "1e-300"], r"--fps 1e-300 must be >= 0.001 and <= 1000"),
        (["--fps", "1e300"], r"--fps 1e\+300 must be >= 0.001"),
        (["--scale", "1e-6"], r"--scale 1e-06 makes frames of 1x1 pixels out of 48x36"),
        (["--rank", "100000"], r"--rank 100000 must be <= 1000"),
        (["--max-iter", "1000000000000"], r"--max-iter 1000000000000 must be <= 1e\+06"),
        (["--absorb", "1e300"], r"--absorb 1e\+300 must be >= 0 and <= 1e\+07"),
        (["--start", str(2**40)], r"--start 1099511627776 must be <="),
        (["--learn", "0:99999999999"], r"--learn '0:99999999999' must have START and END <="),
    ],
)
def test_options_have_bounds(run_cli, clip: Path, tmp_path: Path, argv, message) -> None:
    res = run_cli("separate", clip, "-o", tmp_path / "out", *argv)
    assert_one_error_line(res, 2, message, r"must|raise")
    assert not (tmp_path / "out").exists()


def _png_header(width: int, height: int) -> bytes:
    """A PNG that announces ``width`` x ``height`` (and holds no pixel)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64))


def test_huge_images_are_refused_before_decoding(run_cli, tmp_path: Path) -> None:
    folder = tmp_path / "huge"
    folder.mkdir()
    for i in (1, 2, 3):
        (folder / f"in{i:06d}.png").write_bytes(_png_header(20000, 20000))
    res = run_cli("separate", folder, "-o", tmp_path / "out")
    assert_one_error_line(
        res, 2, r"in000001\.png: frames of 20000x20000 pixels are outside", "bounds"
    )
    # One frame of another size among small ones: refused from its header, not decoded.
    small = frames_folder(tmp_path / "small", n=6)
    (small / "in000004.png").write_bytes(_png_header(11000, 11000))
    res = run_cli("separate", small, "-o", tmp_path / "out", "--rank", "1")
    assert_one_error_line(res, 2, r"in000004\.png: frame is 11000x11000 but", "one size")


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (b"YUV4MPEG2 W0 H36 F10:1 C420jpeg\n", r"y4m frames of 0x36 pixels are outside"),
        (b"YUV4MPEG2 W-48 H36 F10:1\n", r"y4m frames of -48x36 pixels"),
        (b"YUV4MPEG2 W100000 H100000 F10:1\n", r"100000x100000 pixels are outside"),
        (b"YUV4MPEG2 W48 H36 F-25:1 C420jpeg\n", r"frame rate of -25 frames/s"),
        (b"YUV4MPEG2 W48 H36 Fnan:1 C420jpeg\n", r"frame rate of nan"),
        (b"YUV4MPEG2 W48 H36 " + b"X" * 2_000_000, r"y4m header is longer than 4096 bytes"),
    ],
    ids=["W0", "negative", "huge", "negative-rate", "nan-rate", "no-newline"],
)
def test_y4m_headers_are_checked_first(tmp_path: Path, header: bytes, message: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO), OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, "-m", "bpvideo", "separate", "-", "-o", str(tmp_path / "o")],
        input=header + b"FRAME\n" + bytes(48 * 36 * 3 // 2),
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    err = proc.stderr.decode()
    assert proc.returncode == 2 and len(err.splitlines()) == 1, err
    assert __import__("re").search(message, err), err
    assert output_files(tmp_path) == []


def test_raw_size_is_bounded(run_cli, tmp_path: Path) -> None:
    res = run_cli("separate", "-", "--size", "100000x100000", "-o", tmp_path / "o")
    assert_one_error_line(res, 2, r"--size '100000x100000' must be at most 32768", "pixels")


def test_yaml_bombs_are_refused_at_once(run_cli, tmp_path: Path) -> None:
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\njobs:\n  - input: x\n    rank: *a8\n")
    assert bomb.stat().st_size < 1000
    deep = tmp_path / "deep.yaml"
    deep.write_text("jobs: " + "[" * 5000 + "]" * 5000 + "\n")
    loop = tmp_path / "loop.yaml"
    loop.write_text("a: &a [*a]\njobs: []\n")
    for path, message in (
        (bomb, r"its aliases expand to more than 200000 values"),
        (deep, r"nested deeper than 64 levels"),
        (loop, r"an alias refers to a node that holds it"),
    ):
        res = run_cli("batch", path)
        assert_one_error_line(res, 2, rf"{path.name}:1: invalid YAML: {message}", "fix")


def test_glob_over_a_loop_of_links_ends(run_cli, clip: Path, tmp_path: Path) -> None:
    cams = tmp_path / "cams"
    (cams / "a").mkdir(parents=True)
    (cams / "a" / "clip.mkv").write_bytes(clip.read_bytes())
    for name in ("up", "up2", "up3"):  # links to ancestors: a naive '**' never ends
        (cams / "a" / name).symlink_to(cams)
    config = tmp_path / "night.yaml"
    config.write_text("defaults:\n  output: out/{stem}\njobs:\n  - input: cams/**/*.mkv\n")
    res = run_cli("batch", config, "--dry-run")
    assert res.code == 0, res.err
    assert res.out.splitlines() == [f"{cams / 'a/clip.mkv'}\t{tmp_path / 'out/clip'}"]
    res = run_cli("separate", f"{cams}/**/*.mkv", "-o", tmp_path / "o/{stem}", "-q")
    assert res.code == 0 and res.out == f"{tmp_path / 'o/clip'}\n", res.err


# --- stale and partial files -------------------------------------------------------------


def test_overwrite_leaves_no_file_of_the_earlier_result(
    run_cli, clip: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    args = ("separate", clip, "-o", out, "--rank", "1", "-q")
    assert run_cli(*args, "--lossless", "--preview", "--clips", "--overlay").code == 0
    assert (out / "clips").is_dir() and (out / "overlay.mp4").is_file()
    assert run_cli(*args, "--overwrite").code == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "background.mp4",
        "background.png",
        "events.csv",
        "foreground.mp4",
        "frames.csv",
        "masks",
        "report.html",
        "summary.json",
    ]


def test_masks_to_appears_only_with_a_result(
    run_cli, clip: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed run leaves a --masks-to file as it was (absent, or its old bytes): it is
    written beside its place and renamed with the other outputs."""
    import errno

    target = tmp_path / "masks.raw"
    target.write_bytes(b"earlier masks")
    real_write_bytes = Path.write_bytes

    def full_disk(self: Path, data: bytes) -> int:
        if self.name == "bin000005.png":
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real_write_bytes(self, data)

    monkeypatch.setattr(Path, "write_bytes", full_disk)
    res = run_cli(
        "separate", clip, "-o", tmp_path / "out", "--masks-to", target, "--rank", "1", "-q"
    )
    assert_one_error_line(res, 1, r"writing the outputs failed", r"nothing was kept")
    assert target.read_bytes() == b"earlier masks"
    assert sorted(os.listdir(tmp_path)) == ["clip.mkv", "masks.raw"]
    monkeypatch.setattr(Path, "write_bytes", real_write_bytes)
    assert run_cli("separate", clip, "-o", tmp_path / "o2", "--masks-to", target, "-q").code == 0
    assert target.stat().st_size == 12 * 48 * 36


def test_closed_standard_streams(clip: Path, tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO), OPENBLAS_NUM_THREADS="1")
    base = [sys.executable, "-m", "bpvideo", "separate"]
    out = tmp_path / "out"
    done = subprocess.run(
        [*base, str(clip), "-o", str(out), "--rank", "1"], stderr=subprocess.DEVNULL,
        stdout=subprocess.PIPE, env=env, timeout=120, check=False,
        preexec_fn=lambda: os.close(2),
    )  # fmt: skip
    assert done.returncode == 0 and (out / "summary.json").is_file()
    for argv, closed, message in (
        (["-", "-o", str(tmp_path / "o2")], 0, b"stdin is closed"),
        ([str(clip), "-o", str(tmp_path / "o3"), "--masks-to", "-"], 1, b"stdout is closed"),
        ([str(clip), "-o", str(tmp_path / "o4"), "--events-to", "-"], 1, b"stdout is closed"),
        ([str(clip), "-o", str(tmp_path / "o5"), "--json"], 1, b"--json but stdout is closed"),
    ):
        done = subprocess.run(
            [*base, *argv], stderr=subprocess.PIPE, env=env, timeout=120, check=False,
            preexec_fn=lambda fd=closed: os.close(fd),
        )  # fmt: skip
        assert done.returncode == 2 and message in done.stderr, done.stderr
        assert not (tmp_path / argv[2]).exists()  # refused before any work
    for command in (["events", str(out), "--json"], ["evaluate", str(out), str(out), "--json"]):
        done = subprocess.run(
            [sys.executable, "-m", "bpvideo", *command], stderr=subprocess.PIPE, env=env,
            timeout=120, check=False, preexec_fn=lambda: os.close(1),
        )  # fmt: skip
        assert done.returncode == 2 and b"--json but stdout is closed" in done.stderr, command


# --- errors that name the real cause -----------------------------------------------------


def test_a_name_too_long(run_cli, tmp_path: Path) -> None:
    long = tmp_path / ("x" * 300 + ".mp4")
    res = run_cli("separate", long, "-o", tmp_path / "out")
    assert_one_error_line(res, 2, r"xxx\.mp4: .*cannot be (opened|used) \(File name too long", r"")
    res = run_cli("separate", long, "-o", tmp_path / ("o" * 300))
    assert res.code == 2 and "File name too long" in res.err and "internal" not in res.err


def test_audio_only_file(run_cli, tmp_path: Path) -> None:
    path = tmp_path / "talk.mp4"
    with wave.open(str(tmp_path / "talk.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(bytes(16000))
    (tmp_path / "talk.wav").rename(path)
    res = run_cli("separate", path, "-o", tmp_path / "out")
    assert_one_error_line(res, 2, r"talk\.mp4: cannot be decoded as a video \(it has no video", "")


def test_unwritable_report_is_refused_before_any_job(run_cli, clip: Path, tmp_path: Path) -> None:
    config = tmp_path / "night.yaml"
    config.write_text(f"jobs:\n  - input: {clip}\n    output: {tmp_path}/o\n")
    (tmp_path / "a_file").write_text("x")
    res = run_cli("batch", config, "--report", tmp_path / "a_file" / "r.json")
    assert_one_error_line(res, 2, r"r\.json: cannot write the report", "give another --report")
    assert not (tmp_path / "o").exists()


def test_a_clip_shorter_than_the_smallest_window_is_planned_whole() -> None:
    """Three frames of the largest size: the memory of three frames decides, not that of
    the smallest window (22 frames at rank 10), which would refuse a clip that fits."""
    from bpvideo.pipeline import memory
    from bpvideo.pipeline.plan import MEMORY_FRACTION, plan_window
    from bpvideo.settings import SeparateSettings

    settings = SeparateSettings(rank=10).validate()
    per_frame = memory.settings_frame_bytes(settings, 16384, 8192)
    fixed = memory.size_bytes(settings, 16384, 8192)
    room = int((5 * per_frame + fixed) / MEMORY_FRACTION)  # five frames fit
    _, whole_max = plan_window(settings, 16384, 8192, 3, name="x", available=room)
    assert whole_max >= 3  # read whole
    with pytest.raises(InputError, match="even 22 frames of 16384x8192 need about"):
        plan_window(settings, 16384, 8192, None, name="x", available=room)
