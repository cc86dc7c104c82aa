"""objects.csv and tracks.csv of separate: squares crossing a clip, read back against
summary.json (objects, counts) and, with --events objects, events.csv."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo import separate_file
from bpvideo.errors import InputError

H, W, SIDE, FRAMES = 72, 96, 10, 60
#: Squares: (first frame, frames, x, y, dx, dy): two move down across y = 36, one up.
SQUARES = ((2, 22, 10, 4, 0, 3), (30, 22, 10, 4, 0, 3), (16, 22, 70, 62 - SIDE, 0, -2))
LINE = "0,36 96,36"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_squares(tmp_path_factory.mktemp("squares"))


def write_squares(root: Path) -> Path:
    """``root``, filled with PNG frames: a textured still scene and the squares of
    :data:`SQUARES`."""
    rng = np.random.default_rng(3)
    yy, xx = np.mgrid[0:H, 0:W]
    base = 70 + 30 * np.sin(xx / 6.0) + 25 * np.cos(yy / 5.0)
    for t in range(FRAMES):
        img = base + rng.normal(0, 1.0, (H, W))
        for first, n, x, y, dx, dy in SQUARES:
            if first <= t < first + n:
                x0, y0 = x + dx * (t - first), y + dy * (t - first)
                img[y0 : y0 + SIDE, x0 : x0 + SIDE] = 240
        frame = np.clip(img, 0, 255).astype(np.uint8)
        cv2.imwrite(str(root / f"in{t + 1:06d}.png"), np.repeat(frame[..., None], 3, axis=2))
    return root


def read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def result(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("objects") / "out"
    separate_file(folder, out, no_video=True, count_line=[LINE], events="objects")
    return out


def test_objects_csv_and_tracks_csv_agree_with_summary(result: Path):
    summary = json.loads((result / "summary.json").read_text())
    objects, tracks = read(result / "objects.csv"), read(result / "tracks.csv")
    assert summary["objects"] == len(objects) == len(SQUARES)
    assert summary["outputs"]["objects"] == "objects.csv"
    for row in objects:
        mine = [t for t in tracks if t["object"] == row["object"]]
        frames = [int(t["frame"]) for t in mine]
        assert frames == list(range(int(row["first_frame"]), int(row["last_frame"]) + 1))
        assert (mine[0]["time"], mine[-1]["frame"]) == (row["first_time"], row["last_frame"])
        largest = max(mine, key=lambda t: int(t["w"]) * int(t["h"]))
        assert (int(row["w"]), int(row["h"])) == (int(largest["w"]), int(largest["h"]))
    spans = sorted((int(r["first_frame"]), int(r["last_frame"])) for r in objects)
    assert spans == sorted((f + 1, f + n) for f, n, *_ in SQUARES)  # folder numbers: in000001


def test_counts_per_direction_in_summary(result: Path):
    counts = json.loads((result / "summary.json").read_text())["counts"]
    assert counts == {LINE: {"left_to_right": 2, "right_to_left": 1}}


def test_events_are_the_objects(result: Path):
    summary = json.loads((result / "summary.json").read_text())
    spans = sorted((e["start_frame"], e["end_frame"]) for e in summary["events"])
    objects = read(result / "objects.csv")
    assert spans == sorted((int(r["first_frame"]), int(r["last_frame"])) for r in objects)
    assert len(read(result / "events.csv")) == len(SQUARES)


def test_a_bad_counting_line_is_refused_before_any_output(folder: Path, tmp_path: Path):
    with pytest.raises(InputError, match="counting line"):
        separate_file(folder, tmp_path / "o", count_line=["1,2"])
    assert not (tmp_path / "o").exists()


def test_events_to_writes_the_folder_s_objects_tracked_once(folder, tmp_path, monkeypatch):
    import bpvideo.sinks.objects as sink_module

    made = []

    class Counted(sink_module.ObjectTracker):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(sink_module, "ObjectTracker", Counted)
    # the squares as a live stream on stdin: y4m, grey (Y the frame, U and V neutral)
    y4m = b"YUV4MPEG2 W%d H%d F25:1 Ip A1:1 C444\n" % (W, H)
    chroma = np.full((2, H, W), 128, np.uint8).tobytes()
    for f in sorted(folder.glob("in*.png")):
        y4m += b"FRAME\n" + cv2.imread(str(f), cv2.IMREAD_GRAYSCALE).tobytes() + chroma
    lines = tmp_path / "lines.jsonl"
    out = tmp_path / "out"
    separate_file("-", out, stdin=io.BytesIO(y4m), live=True, learn="0:40", no_video=True,
                  count_line=[LINE], events="objects", events_to=str(lines))  # fmt: skip
    assert len(made) == 1  # the folder's tracker gives --events-to's lines too
    written = [json.loads(line) for line in lines.read_text().splitlines()]
    objects = [w for w in written if "object" in w]
    assert [{k: str(v) for k, v in o.items()} for o in objects] == read(out / "objects.csv")
    assert len(objects) == len(SQUARES) and not [w for w in written if "event" in w]
    counts = [w["counts"] for w in written if "counts" in w]
    assert counts[-1] == json.loads((out / "summary.json").read_text())["counts"]
