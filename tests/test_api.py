"""The library: separate arrays and generators, separate files, errors as ValueErrors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import bpvideo
from bpvideo.errors import InputError
from tests.conftest import f_measure, street_frames, tiny_frames


@pytest.fixture(scope="module")
def street() -> tuple[np.ndarray, np.ndarray]:
    return street_frames(n=80, seed=1)


def test_public_names() -> None:
    assert set(bpvideo.__all__) >= {
        "separate", "separate_file", "BackgroundModel", "Separation", "Report", "evaluate",
        "best_pair", "InputError", "BpvideoError", "ConvergenceWarning", "__version__",
    }  # fmt: skip
    assert all(hasattr(bpvideo, name) for name in bpvideo.__all__)


def test_separate_an_array(street) -> None:
    frames, truth = street
    result = bpvideo.separate(frames)
    assert result.masks.shape == (80, 72, 96) and result.masks.dtype == bool
    assert result.background.shape == (80, 72, 96) and result.background.dtype == np.uint8
    assert result.foreground.shape == frames.shape  # BGR in, BGR out
    assert result.background_image.shape == (72, 96)
    assert f_measure(result.masks, truth) > 0.85
    fg = result.foreground[result.masks]
    assert np.array_equal(fg, frames[result.masks]) and not result.foreground[~result.masks].any()
    report = result.report.to_dict()
    assert report["frames"] == 80 and report["frame_numbers"] == list(range(80))
    assert report["settings"]["rank"] == 2 and report["output"] is None
    assert result.report["solver"]["method"] == "bestpair"  # also readable as a mapping


def test_a_generator_gives_the_same_result_window_by_window(street) -> None:
    frames, _ = street
    whole = bpvideo.separate(frames, window=40, overlap=10)
    streamed = bpvideo.separate((frame for frame in frames), window=40, overlap=10)
    np.testing.assert_array_equal(streamed.masks, whole.masks)
    np.testing.assert_array_equal(streamed.background, whole.background)
    assert streamed.report["windows"]["count"] == 3
    windows = list(bpvideo.iter_separate(iter(frames), window=40, overlap=10))
    assert [w.numbers[0] for w in windows] == [0, 40, 70]
    np.testing.assert_array_equal(np.concatenate([w.masks for w in windows]), whole.masks)


def test_grey_and_float_frames(street) -> None:
    frames, _ = street
    grey = frames[..., 1]
    result = bpvideo.separate(grey, rank=1)
    assert result.foreground.shape == grey.shape  # grey in, grey out
    again = bpvideo.separate(grey.astype(np.float64), rank=1)  # grey levels 0..255
    np.testing.assert_array_equal(again.masks, result.masks)
    colour = bpvideo.separate(frames, gray=False, rank=1)
    assert colour.background.shape == frames.shape and colour.report["channels"] == 3


def test_options_are_the_cli_options(street) -> None:
    frames, _ = street
    result = bpvideo.separate(frames, start=10, frames=30, step=2, max_iter=5, inertia_a=0.4)
    assert result.masks.shape[0] == 30 and result.report["frame_numbers"][:2] == [10, 12]
    assert result.report["settings"]["a"] == 0.4 and result.report["settings"]["max_iter"] == 5


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"rank": 0}, "rank=0 must be >= 1"),
        ({"sparsity": 1.5}, "sparsity=1.5 must be > 0 and < 1"),
        ({"method": "svd"}, "method='svd' must be one of"),
        ({"rnak": 2}, "unknown option.*rnak.*did you mean 'rank'"),
        ({"lossless": True}, "lossless applies to files: use bpvideo.separate_file"),
        ({"rank": 30}, "rank=30 must be < number of frames"),
        ({"callback": 5}, "callback=5 is not callable"),  # before the work, not inside it
        ({"progress": "bar"}, "progress='bar' is not callable"),
    ],
)
def test_errors_are_value_errors_in_library_words(options, message: str) -> None:
    frames, _ = tiny_frames(n=24)
    with pytest.raises(ValueError, match=message) as info:
        bpvideo.separate(frames, **options)
    assert isinstance(info.value, InputError) and isinstance(info.value, bpvideo.BpvideoError)
    assert "--" not in str(info.value)  # no command-line flags in the library's messages
    if "progress" not in options and options != {"rank": 30}:  # that one: at its window
        with pytest.raises(ValueError, match=message):  # when called, not when iterated
            bpvideo.iter_separate(frames, **options)


def test_not_frames() -> None:
    with pytest.raises(InputError, match="separate_file"):
        bpvideo.separate("clip.mp4")
    with pytest.raises(InputError, match="shape"):
        bpvideo.separate(np.zeros((4, 5)))
    with pytest.raises(InputError, match="no frame"):
        bpvideo.separate(iter([]))
    frames, _ = tiny_frames(n=6)
    with pytest.raises(InputError, match="frame 3 is 20x10 but frame 0 is 48x36"):
        bpvideo.separate([*frames[:3], frames[3][:10, :20], *frames[4:]])
    # 12-bit frames are refused with the divisor, not clipped to white (all background).
    with pytest.raises(InputError, match=r"uint16 with .*divide by 16 \(its values take 12"):
        bpvideo.separate(frames.astype(np.uint16) * 16)
    # Signed or centred frames are refused with the shift, not clipped to black; a
    # filter's undershoot on a few pixels is clipped.
    with pytest.raises(InputError, match=r"int16 with \d+% of its values below 0 .*add 128"):
        bpvideo.separate(frames.astype(np.int16) - 128)
    undershoot = frames.astype(np.float32)
    undershoot[:, 0, :5] = -40  # 5 pixels of 1728 in each frame
    assert bpvideo.separate(undershoot, rank=1).masks.shape == (len(frames), 36, 48)
    with pytest.raises(TypeError, match=r"^input=5 is not a path: give a str or pathlib\.Path$"):
        bpvideo.separate_file(5, "out")


def test_separate_file_is_what_the_cli_does(tiny_clip: Path, tmp_path: Path, run_cli) -> None:
    report = bpvideo.separate_file(tiny_clip, tmp_path / "lib", rank=1, sparsity=0.3)
    assert isinstance(report, bpvideo.Report) and report.frames == 24
    summary = json.loads((tmp_path / "lib" / "summary.json").read_text())
    assert summary == report.to_dict()
    res = run_cli("separate", tiny_clip, "-o", tmp_path / "cli", "--rank", "1", "--sparsity",
                  "0.3", "--json", "-q")  # fmt: skip
    cli = res.json()
    for key in ("frames", "frame_numbers", "mask_numbers", "settings", "masks", "windows"):
        assert cli[key] == summary[key], key
    assert sorted(p.name for p in (tmp_path / "lib" / "masks").iterdir()) == sorted(
        p.name for p in (tmp_path / "cli" / "masks").iterdir()
    )


def test_objects_and_counts_when_tracked(street, tmp_path: Path) -> None:
    import csv

    from bpvideo.sinks.writers import write_video

    frames, _ = street
    line = "48,0 48,71"
    result = bpvideo.separate(frames, count_line=line)
    assert result.objects and result.tracks
    assert result.report["objects"] == len(result.objects)
    assert result.counts == result.report["counts"] and sum(result.counts[line].values()) >= 2
    assert {t["object"] for t in result.tracks} == {o["object"] for o in result.objects}
    # The rows of objects.csv that separate_file writes for a lossless clip of the frames.
    write_video(tmp_path / "street.mkv", frames, 25.0, lossless=True)
    bpvideo.separate_file(tmp_path / "street.mkv", tmp_path / "o", count_line=line,
                          no_video=True)  # fmt: skip
    with open(tmp_path / "o" / "objects.csv", newline="") as handle:
        written = list(csv.DictReader(handle))
    kept = [{k: "" if v is None else str(v) for k, v in o.items()} for o in result.objects]
    assert kept == written
    # events="objects": each object is an event; untracked, no objects.
    as_events = bpvideo.separate(frames, events="objects")
    spans = sorted((o["first_frame"], o["last_frame"]) for o in result.objects)
    assert [(e.start_frame, e.end_frame) for e in as_events.events] == spans
    plain = bpvideo.separate(frames)
    assert plain.objects is None and plain.counts is None and "objects" not in plain.report
