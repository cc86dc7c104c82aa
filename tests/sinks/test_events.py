"""The event outputs of separate: events.csv, frames.csv, summary's events, the overlay,
clips and regions, on a clip with two bursts of motion and idle stretches between."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo import separate_file
from bpvideo.sinks.writers import write_video
from bpvideo.sources.ffmpeg import probe
from bpvideo.sources.files import iter_frames
from tests.conftest import read_masks

FPS = 10.0
#: Frames (0-based) with the moving square: two bursts, idle before, between and after.
BURSTS = (range(8, 14), range(22, 27))
N, H, W = 34, 36, 48


def bursts() -> tuple[np.ndarray, np.ndarray]:
    """BGR frames of a textured static scene, a bright square moving in :data:`BURSTS`."""
    rng = np.random.default_rng(1)
    yy, xx = np.mgrid[0:H, 0:W]
    base = 60 + 40 * np.sin(xx / 5.0) + 30 * np.cos(yy / 4.0) + rng.normal(0, 5, (H, W))
    frames = np.empty((N, H, W, 3), np.uint8)
    active = np.zeros(N, dtype=bool)
    for t in range(N):
        img = base + rng.normal(0, 1.5, (H, W))
        if any(t in b for b in BURSTS):
            x0 = (3 * t) % (W - 8)
            img[10:18, x0 : x0 + 8] = 235
            active[t] = True
        frames[t] = np.clip(img, 0, 255).astype(np.uint8)[..., None]
    return frames, active


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bursts") / "bursts.mkv"
    write_video(path, bursts()[0], FPS, lossless=True)
    return path


EVENTS = {"event_threshold": 0.0, "min_event": 2, "event_gap": 2, "event_pad": 1}


@pytest.fixture(scope="module")
def result(clip: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("out") / "run"
    separate_file(clip, out, overlay=True, clips=True, **EVENTS)
    return out


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_events_csv_rows_are_summary_events(result: Path):
    rows = _csv(result / "events.csv")
    summary = json.loads((result / "summary.json").read_text())
    assert len(rows) == len(summary["events"]) == 2
    for row, event in zip(rows, summary["events"], strict=True):
        assert row == {k: str(v) for k, v in event.items()}
    assert summary["outputs"]["events"] == "events.csv"


def test_every_moving_frame_is_inside_an_event_and_times_follow_frames(result: Path):
    _, active = bursts()
    rows = _csv(result / "events.csv")
    inside = np.zeros(N, dtype=bool)
    for row in rows:
        first, last = int(row["start_frame"]), int(row["end_frame"])
        inside[first - 1 : last] = True  # mask numbers count from 1
        h, m, s = row["start_time"].split(":")
        assert float(h) * 3600 + float(m) * 60 + float(s) == pytest.approx((first - 1) / FPS)
        assert float(row["duration"]) == pytest.approx((last - first + 1) / FPS)
    assert inside[active].all()
    assert not inside[:5].any() and not inside[17:20].any() and not inside[30:].any()


def test_frames_csv_has_one_row_per_mask(result: Path):
    rows = _csv(result / "frames.csv")
    assert [int(r["frame"]) for r in rows] == list(range(1, N + 1))
    masks = read_masks(result / "masks") > 0
    shares = [float(r["share"]) for r in rows]
    np.testing.assert_allclose(shares, masks.mean(axis=(1, 2)), atol=1e-6)


def test_overlay_has_one_frame_per_input_frame(result: Path):
    info = probe(result / "overlay.mp4")
    assert info.frame_count == N
    assert (info.width, info.height) == (W, H)


def test_one_clip_per_event_with_its_frames(result: Path):
    rows = _csv(result / "events.csv")
    clips = sorted((result / "clips").iterdir())
    assert [c.name for c in clips] == [f"event_{i:04d}.mp4" for i in range(1, len(rows) + 1)]
    for row, path in zip(rows, clips, strict=True):
        frames = int(row["end_frame"]) - int(row["start_frame"]) + 1
        assert probe(path).frame_count == frames


def test_clips_of_a_folder_are_encoded_from_its_frames(tmp_path: Path):
    folder = tmp_path / "input"
    folder.mkdir()
    for i, frame in enumerate(bursts()[0], start=1):
        cv2.imwrite(str(folder / f"in{i:06d}.png"), frame)
    out = tmp_path / "out"
    separate_file(folder, out, no_video=True, clips=True, fps=FPS, **EVENTS)
    rows = _csv(out / "events.csv")
    assert len(rows) == 2
    for row in rows:
        path = out / "clips" / f"event_{int(row['event']):04d}.mp4"
        assert probe(path).frame_count == int(row["end_frame"]) - int(row["start_frame"]) + 1


def test_clips_of_stdin_are_cut_from_a_recording_of_it(tmp_path: Path):
    """stdin cannot be read twice: its frames are recorded as they pass, the clips cut from
    the recording hold the events' frames, and the recording is not left in the result."""
    frames = bursts()[0]
    raw = io.BytesIO(frames.tobytes())
    out = tmp_path / "out"
    separate_file("-", out, stdin=raw, size=f"{W}x{H}", pix_fmt="bgr24", fps=FPS,
                  no_video=True, clips=True, **EVENTS)  # fmt: skip
    rows = _csv(out / "events.csv")
    assert len(rows) == 2
    for row in rows:
        path = out / "clips" / f"event_{int(row['event']):04d}.mp4"
        got = np.stack([f for _, f in iter_frames(path)])
        first, last = int(row["start_frame"]) - 1, int(row["end_frame"])  # masks count from 1
        assert len(got) == last - first
        errors = np.abs(got.astype(int) - frames[first:last].astype(int)).mean()
        assert errors < 3  # H.264 at the default quality, the same frames
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == []


def test_no_foreground_outside_the_regions(clip: Path, tmp_path: Path):
    out = tmp_path / "roi"
    exclude = np.zeros((H, W), np.uint8)
    exclude[:, 30:] = 255
    cv2.imwrite(str(tmp_path / "exclude.png"), exclude)
    separate_file(clip, out, no_video=True, roi="0,0 39,0 39,35 0,35",
                  exclude=[str(tmp_path / "exclude.png")], **EVENTS)  # fmt: skip
    masks = read_masks(out / "masks") > 0
    assert masks[:, :, :30].any()  # the square is seen where it is reported
    assert not masks[:, :, 30:].any()
    for row in _csv(out / "events.csv"):
        assert int(row["x"]) + int(row["w"]) <= 30


def test_thumbnails_keep_the_largest_runs_up_to_their_limit():
    from bpvideo.events import FrameTable
    from bpvideo.events.detect import Event
    from bpvideo.sinks.event_stream import Thumbnails

    share = np.array([0, 0.2, 0.3, 0, 0.1, 0, 0.5, 0.4, 0], dtype=float)
    n = len(share)
    rows = FrameTable(np.arange(1, n + 1), np.arange(n) / 10, share, (share > 0).astype(int),
                      np.zeros((n, 4), int))  # fmt: skip
    frames = np.zeros((n, 8, 8, 3), np.uint8)
    thumbs = Thumbnails(0.0, limit=2)
    thumbs.offer(rows, frames, np.zeros((n, 8, 8), bool))
    thumbs.end_run()
    assert sorted((s, r) for s, r, _ in thumbs.kept) == [(0.3, 2), (0.5, 6)]  # not 0.1
    events = [Event(i, 0, 0, "", "", 0, 0, 0, 0, 0, 0, first=a, last=b)
              for i, (a, b) in enumerate([(1, 2), (4, 4), (6, 7)], 1)]  # fmt: skip
    got = thumbs.of(events)
    assert sorted(got) == [1, 3]
    assert all(cv2.imdecode(np.frombuffer(v, np.uint8), cv2.IMREAD_COLOR) is not None
               for v in got.values())  # fmt: skip


def test_thumbnails_are_drawn_by_their_own_thread_as_the_caller_would(monkeypatch):
    """The pictures are drawn off the caller's thread (which writes the blocks in the
    masks phase), by one thread that loaded the font first; the bytes are those drawn on
    the caller's thread."""
    import threading

    from bpvideo.events import FrameTable, timecode
    from bpvideo.events.detect import Event
    from bpvideo.sinks import event_stream
    from bpvideo.sinks.event_report import thumbnail

    drawn_by = []

    def drawing(*args):
        drawn_by.append(threading.current_thread().name)
        return thumbnail(*args)

    monkeypatch.setattr(event_stream, "thumbnail", drawing)
    rng = np.random.default_rng(7)
    share = np.array([0.0, 0.4, 0.6, 0.0, 0.3, 0.0])
    n = len(share)
    rows = FrameTable(np.arange(1, n + 1), np.arange(n) / 10, share, (share > 0).astype(int),
                      np.zeros((n, 4), int))  # fmt: skip
    frames = rng.integers(0, 256, (n, 36, 48, 3), dtype=np.uint8)
    masks = rng.random((n, 36, 48)) < share[:, None, None]
    thumbs = event_stream.Thumbnails(0.0)
    thumbs.offer(rows, frames, masks)
    events = [Event(i, 0, 0, "", "", 0, 0, 0, 0, 0, 0, first=a, last=b)
              for i, (a, b) in enumerate([(1, 2), (4, 4)], 1)]  # fmt: skip
    got = thumbs.of(events)
    assert len(drawn_by) == 2 and all(n.startswith("bpvideo-thumbnails") for n in drawn_by)
    assert got == {1: thumbnail(frames[2], masks[2], timecode(0.2)),
                   2: thumbnail(frames[4], masks[4], timecode(0.4))}  # fmt: skip
    assert thumbs._drawer is None  # the thread ended with the pictures


def test_the_plot_series_keeps_each_buckets_largest_share_within_its_limit():
    from bpvideo.sinks.event_stream import Series

    series = Series(limit=10)
    shares = np.random.default_rng(0).random(1000)
    times = np.arange(1000) / 25
    for lo in range(0, 1000, 37):
        series.add(times[lo : lo + 37], shares[lo : lo + 37])
    t, s = series.arrays()
    assert len(t) <= 10 and series.bucket == 128
    for i, start in enumerate(t):  # each point: the largest share of its bucket of frames
        first = round(start * 25)
        assert first == i * series.bucket
        assert s[i] == shares[first : first + series.bucket].max()


def test_a_region_image_of_another_size_is_refused_before_any_output(clip: Path, tmp_path: Path):
    from bpvideo.errors import InputError

    cv2.imwrite(str(tmp_path / "small.png"), np.full((10, 10), 255, np.uint8))
    message = r"small.png: the roi image is 10x10 but the frames are 48x36: give an image"
    with pytest.raises(InputError, match=message):
        separate_file(clip, tmp_path / "out", roi=str(tmp_path / "small.png"))
    assert not (tmp_path / "out").exists()


def test_times_of_a_variable_frame_rate_come_from_the_input(tmp_path: Path) -> None:
    """A clip with a 2 s gap in its timestamps: frames.csv and the events give each frame
    its own time (as summary.json's ``times``), not its number over the rate."""
    import subprocess

    from bpvideo.sources.ffmpeg import executable

    clip = tmp_path / "vfr.mkv"
    cmd = [executable(), "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
           "testsrc=s=48x36:r=10", "-frames:v", "40", "-vf",
           "setpts='if(gte(N,20),PTS+20,PTS)'", "-fps_mode", "passthrough", "-c:v", "ffv1",
           str(clip)]  # fmt: skip
    subprocess.run(cmd, check=True, timeout=60)
    separate_file(clip, tmp_path / "o", no_video=True, rank=1)
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    with open(tmp_path / "o" / "frames.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 40 == len(summary["times"])
    assert [float(r["seconds"]) for r in rows] == pytest.approx(summary["times"], abs=1e-3)
    assert float(rows[20]["seconds"]) - float(rows[19]["seconds"]) == pytest.approx(2.1, abs=1e-3)
