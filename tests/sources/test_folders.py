"""Folders of frames (issue 27): one rule for which files are frames, in which order,
what is skipped and why, and damaged frames named (bpvideo/sources/folders.py)."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo.errors import InputError
from bpvideo.sources.files import open_source
from bpvideo.sources.folders import scan_folder
from tests._cli.test_bad_inputs import assert_one_error_line
from tests.conftest import tiny_frames


def write(folder: Path, names: list[str], ext: str = ".jpg") -> np.ndarray:
    """Frames of :func:`tiny_frames` under ``names`` (in that order); the frames."""
    folder.mkdir(parents=True, exist_ok=True)
    frames = tiny_frames(n=len(names))[0]
    for name, frame in zip(names, frames, strict=True):
        (folder / f"{name}{ext}").write_bytes(cv2.imencode(ext, frame)[1].tobytes())
    return frames


def test_hidden_junk_and_other_names_are_skipped_and_said(tmp_path: Path) -> None:
    folder = tmp_path / "cam"
    write(folder, [f"in{i:06d}" for i in range(1, 9)])
    for i in range(1, 9):  # macOS's AppleDouble twins: as many, not images
        (folder / f"._in{i:06d}.jpg").write_bytes(b"\x00\x05\x16\x07" + bytes(200))
    (folder / ".DS_Store").write_bytes(bytes(50))
    (folder / "notes.txt").write_text("cam 3\n")
    (folder / "gt000004.png").write_bytes((folder / "in000004.jpg").read_bytes())
    (folder / "old").mkdir()
    scan = scan_folder(folder)
    assert [f.name for f in scan.files] == [f"in{i:06d}.jpg" for i in range(1, 9)]
    why = dict(scan.skipped)
    assert why["._in000001.jpg"] == why[".DS_Store"] == "hidden"
    assert why["notes.txt"] == "not an image" and why["old"] == "a folder"
    assert why["gt000004.png"].startswith("named otherwise")


def test_an_empty_input_folder_changes_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "cam"
    write(folder, [f"in{i:06d}" for i in range(1, 6)])
    (folder / "input").mkdir()
    assert len(scan_folder(folder).files) == 5
    (folder / "input" / "readme.txt").write_text("empty\n")
    assert len(scan_folder(folder).files) == 5


def test_time_stamp_names_are_one_group_in_time_order(tmp_path: Path) -> None:
    """Names that are times: across a day, an hour, and with milliseconds."""
    names = [
        "2024-05-01_23-59-58.900", "2024-05-01_23-59-59.100", "2024-05-02_00-00-00.050",
        "2024-05-02_00-00-01.000", "2024-05-02_09-00-00.000", "2024-05-02_10-00-00.000",
    ]  # fmt: skip
    frames = write(tmp_path / "cam", names[::-1])  # written in reverse: order by name
    scan = scan_folder(tmp_path / "cam")
    assert [f.stem for f in scan.files] == names and scan.skipped == []
    source = open_source(tmp_path / "cam")
    got = [frame for _, frame in source.frames]
    assert len(got) == 6
    assert np.abs(got[0].astype(int) - frames[-1]).mean() < 3  # the earliest frame first


def test_two_groups_of_one_size_are_refused(tmp_path: Path) -> None:
    write(tmp_path / "cam", [f"a{i}" for i in range(4)] + [f"b{i}" for i in range(4)])
    with pytest.raises(InputError, match=r"two groups of 4 frames .*a#\.jpg, b#\.jpg"):
        scan_folder(tmp_path / "cam")


@pytest.mark.parametrize(
    ("ext", "cut", "why"),
    [
        (".jpg", lambda b: b[: len(b) * 2 // 3], "JPEG cut short"),
        (".png", lambda b: b[: len(b) - 30], "PNG cut short"),
        (".jpg", lambda b: b"not a picture at all" * 20, "cannot be read as an image"),
        (".png", lambda b: b"\x89PNG\r\n\x1a\n" + bytes(300) + b"IEND" + bytes(8), "cannot be"),
    ],
    ids=["jpeg", "png", "junk-as-jpeg", "png-garbage"],
)
def test_damaged_frames_are_named_or_skipped(run_cli, tmp_path: Path, ext, cut, why) -> None:
    folder = tmp_path / "cam"
    write(folder, [f"in{i:06d}" for i in range(1, 13)], ext)
    bad = folder / f"in000007{ext}"
    bad.write_bytes(cut(bad.read_bytes()))
    res = run_cli("separate", folder, "-o", tmp_path / "out", "--no-video")
    assert_one_error_line(res, 2, rf"in000007\{ext}: .*{why}", "--allow-partial")
    assert not (tmp_path / "out").exists()
    res = run_cli("separate", folder, "-o", tmp_path / "out", "--no-video", "--allow-partial")
    assert res.code == 0, res.err
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["frames"] == 11 and 7 not in summary["frame_numbers"]
    assert summary["skipped"] == [{"file": bad.name, "why": summary["skipped"][0]["why"]}]
    assert why in summary["skipped"][0]["why"] and "in000007" in res.err


def test_the_summary_says_what_was_skipped(run_cli, tmp_path: Path) -> None:
    folder = tmp_path / "cam"
    write(folder, [f"in{i:06d}" for i in range(1, 9)])
    (folder / "._in000001.jpg").write_bytes(bytes(100))
    (folder / "Thumbs.db").write_bytes(bytes(100))
    res = run_cli("separate", folder, "-o", tmp_path / "out", "--no-video", "--json")
    assert res.code == 0, res.err
    skipped = {s["file"]: s["why"] for s in res.json()["skipped"]}
    assert skipped == {"._in000001.jpg": "hidden", "Thumbs.db": "not an image"}
    assert "skipped 1 hidden (._in000001.jpg); 1 not an image (Thumbs.db)" in res.err


@pytest.mark.parametrize(("magic", "white"), [(b"P5", 1023), (b"P6", 4095), (b"P5", 100)])
def test_pnm_frames_of_any_white_level_read_on_the_8_bit_scale(
    tmp_path: Path, magic: bytes, white: int
) -> None:
    """PGM/PPM frames whose white is not 255 or 65535 (a 10-bit camera's 1023; 100) give
    the frames their 8-bit twins give (1023 was cut to 0..3, 100 read as 100 of 255)."""
    frames = tiny_frames(n=6)[0]
    if magic == b"P5":
        frames = np.stack([cv2.cvtColor(f, cv2.COLOR_BGR2GRAY) for f in frames])
    deep, twin = tmp_path / "deep", tmp_path / "twin"
    deep.mkdir(), twin.mkdir()
    ext = ".pgm" if magic == b"P5" else ".ppm"
    for i, frame in enumerate(frames):
        rgb = frame[..., ::-1] if frame.ndim == 3 else frame
        samples = np.rint(rgb.astype(float) * white / 255).astype(">u2" if white > 255 else "u1")
        header = magic + f"\n48 36\n{white}\n".encode()
        (deep / f"in{i:03d}{ext}").write_bytes(header + samples.tobytes())
        (twin / f"in{i:03d}{ext}").write_bytes(cv2.imencode(ext, frame)[1].tobytes())
    got = np.stack([f for _, f in open_source(deep).frames]).astype(int)
    want = np.stack([f for _, f in open_source(twin).frames]).astype(int)
    assert got.shape == want.shape == (6, 36, 48, 3)
    assert np.abs(got - want).max() <= 1
