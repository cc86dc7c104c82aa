"""Tests of bpvideo.evaluate: CDnet scoring, frame mapping, SSIM, errors."""

from __future__ import annotations

import csv
import json
import shutil
import struct
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo.errors import InputError
from bpvideo.evaluate import (
    Evaluation,
    confusion_metrics,
    epsilon_proximity,
    evaluate,
    format_table,
    load_groundtruth,
    load_roi,
    read_temporal_roi,
    ssim,
)
from tests.conftest import SHARED_DATA

# --------------------------------------------------------------------------------------
# A hand-counted 4x5 case: three ground-truth frames 10, 11, 12; temporal ROI 11-12;
# ROI = columns 0-3 (column 4 is outside). Labels use all of 0/50/85/170/255.
# --------------------------------------------------------------------------------------

GT = {
    10: [
        [0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0],
    ],
    11: [
        [0, 0, 50, 255, 255],
        [0, 85, 170, 255, 255],
        [50, 50, 0, 255, 0],
        [0, 0, 0, 0, 255],
    ],
    12: [
        [255, 255, 0, 0, 0],
        [255, 170, 0, 0, 0],
        [0, 0, 0, 85, 255],
        [0, 0, 50, 50, 0],
    ],
}
MASKS = {
    # Frame 10 lies outside the temporal ROI: all-foreground would add 16 FP if counted.
    10: [[255] * 5] * 4,
    11: [
        [0, 255, 255, 255, 0],
        [0, 255, 255, 0, 255],
        [0, 0, 0, 255, 0],
        [255, 0, 0, 0, 255],
    ],
    12: [
        [255, 0, 0, 0, 255],
        [255, 255, 0, 255, 0],
        [0, 0, 0, 255, 0],
        [0, 0, 255, 0, 0],
    ],
}
ROI = np.array([[255, 255, 255, 255, 0]] * 4, dtype=np.uint8)

# Hand count inside the ROI (columns 0-3), label -> mask:
# frame 11  row0: 0->0 TN, 0->1 FP, 50->1 FP, 255->1 TP
#           row1: 0->0 TN, 85 ign, 170 ign, 255->0 FN
#           row2: 50->0 TN, 50->0 TN, 0->0 TN, 255->1 TP
#           row3: 0->1 FP, 0->0 TN, 0->0 TN, 0->0 TN
#           => TP 2, FP 3, TN 8, FN 1 (14 counted, 2 ignored)
# frame 12  row0: 255->1 TP, 255->0 FN, 0->0 TN, 0->0 TN
#           row1: 255->1 TP, 170 ign, 0->0 TN, 0->1 FP
#           row2: 0->0 TN, 0->0 TN, 0->0 TN, 85 ign
#           row3: 0->0 TN, 0->0 TN, 50->1 FP, 50->0 TN
#           => TP 2, FP 2, TN 9, FN 1 (14 counted, 2 ignored)
HAND = {11: (2, 3, 8, 1), 12: (2, 2, 9, 1)}
TP, FP, TN, FN = 4, 5, 17, 2


def _write(path: Path, array: list | np.ndarray) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(path), np.asarray(array, dtype=np.uint8))
    return path


def _write_palette_png(path: Path, indices: np.ndarray, palette: list[tuple[int, int, int]]):
    """An 8-bit palette PNG (colour type 3), written by hand."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    h, w = indices.shape
    raw = b"".join(b"\x00" + indices[row].astype(np.uint8).tobytes() for row in range(h))
    png = b"\x89PNG\r\n\x1a\n"
    png += chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 3, 0, 0, 0))
    png += chunk(b"PLTE", b"".join(bytes(c) for c in palette))
    png += chunk(b"IDAT", zlib.compress(raw))
    png += chunk(b"IEND", b"")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png)


@pytest.fixture
def sequence(tmp_path: Path) -> Path:
    """CDnet-style sequence folder: groundtruth/, ROI.bmp, temporalROI.txt."""
    seq = tmp_path / "seq"
    for number, labels in GT.items():
        _write(seq / "groundtruth" / f"gt{number:06d}.png", labels)
    _write(seq / "ROI.bmp", ROI)
    (seq / "temporalROI.txt").write_text("11 12\n")
    return seq


@pytest.fixture
def masks(tmp_path: Path) -> Path:
    """Masks bin000001..3 of input frames 10, 11, 12 (same count as the ground truth)."""
    folder = tmp_path / "out" / "masks"
    for position, number in enumerate(sorted(MASKS), start=1):
        _write(folder / f"bin{position:06d}.png", MASKS[number])
    return folder


def test_hand_counted_case(sequence: Path, masks: Path) -> None:
    ev = evaluate(masks, sequence / "groundtruth")
    assert ev.info["mapping"] == "same_count"
    assert ev.info["temporal_roi"] == [11, 12]
    assert ev.info["roi"].endswith("ROI.bmp")
    assert [row["frame"] for row in ev.per_frame] == [11, 12]
    for row in ev.per_frame:
        assert (row["TP"], row["FP"], row["TN"], row["FN"]) == HAND[row["frame"]]
    assert ev.per_frame[0]["mask"] == "bin000002.png"
    assert ev.per_frame[0]["groundtruth"] == "gt000011.png"

    s = ev.summary
    assert s["frames_scored"] == 2
    assert (s["TP"], s["FP"], s["TN"], s["FN"]) == (TP, FP, TN, FN)
    assert s["recall"] == 4 / 6
    assert s["specificity"] == 17 / 22
    assert s["fpr"] == 5 / 22
    assert s["fnr"] == 2 / 6
    assert s["pwc"] == 25.0  # 100 * (2 + 5) / 28
    assert s["precision"] == 4 / 9
    assert s["f_measure"] == pytest.approx(8 / 15, abs=1e-15)  # 2TP / (2TP + FP + FN)
    # Per-frame F-measure: 2TP / (2TP + FP + FN).
    assert ev.per_frame[0]["f_measure"] == pytest.approx(4 / 8, abs=1e-15)
    assert ev.per_frame[1]["f_measure"] == pytest.approx(4 / 7, abs=1e-15)
    # Epsilon-proximity on binary masks: correct share of the counted pixels.
    assert ev.per_frame[0]["epsilon_proximity"] == pytest.approx(10 / 14)
    assert ev.per_frame[1]["epsilon_proximity"] == pytest.approx(11 / 14)
    assert s["epsilon_proximity"] == pytest.approx((10 / 14 + 11 / 14) / 2)
    assert -1.0 <= s["ssim"] <= 1.0


def test_explicit_roi_and_temporal_roi_match_sidecar_files(
    sequence: Path, masks: Path, tmp_path: Path
) -> None:
    (sequence / "temporalROI.txt").unlink()
    (sequence / "ROI.bmp").unlink()
    everything = evaluate(masks, sequence / "groundtruth")
    assert everything.info["temporal_roi"] is None and everything.info["roi"] is None
    assert everything.summary["frames_scored"] == 3

    ev = evaluate(masks, sequence / "groundtruth", roi=ROI, temporal_roi=(11, 50))
    assert ev.info["frames"] == [11, 12]  # 50 is clipped to the frames present
    assert (ev.summary["TP"], ev.summary["FP"], ev.summary["TN"], ev.summary["FN"]) == (
        TP,
        FP,
        TN,
        FN,
    )
    roi_file = _write(tmp_path / "roi.png", ROI)
    again = evaluate(masks, sequence, roi=roi_file, temporal_roi=(11, 12))
    assert again.summary == ev.summary


def test_confusion_metrics_zero_denominators() -> None:
    assert confusion_metrics(0, 0, 0, 0) == dict.fromkeys(
        ["recall", "specificity", "fpr", "fnr", "pwc", "precision", "f_measure"], 0.0
    )
    m = confusion_metrics(0, 0, 10, 0)  # empty ground truth, empty mask
    assert m["specificity"] == 1.0 and m["precision"] == 0.0 and m["f_measure"] == 0.0


# --------------------------------------------------------------------------------------
# Frame mapping
# --------------------------------------------------------------------------------------


def _output_dir(tmp_path: Path, order: list[int], summary: dict | None) -> Path:
    out = tmp_path / "run"
    for position, number in enumerate(order, start=1):
        _write(out / "masks" / f"bin{position:06d}.png", MASKS[number])
    if summary is not None:
        (out / "summary.json").write_text(json.dumps(summary))
    return out


def test_mapping_from_summary_frame_numbers(sequence: Path, tmp_path: Path) -> None:
    # Input order 12, 11 (frame 10 was not separated): bin000001 is frame 12.
    out = _output_dir(tmp_path, [12, 11], {"frame_numbers": [12, 11], "rank": 2})
    ev = evaluate(out, sequence / "groundtruth")
    assert ev.info["mapping"] == "frame_numbers"
    assert [(r["frame"], r["mask"]) for r in ev.per_frame] == [
        (11, "bin000002.png"),
        (12, "bin000001.png"),
    ]
    assert (ev.summary["TP"], ev.summary["FP"], ev.summary["TN"], ev.summary["FN"]) == (
        TP,
        FP,
        TN,
        FN,
    )
    # The masks/ folder itself finds summary.json in its parent.
    assert evaluate(out / "masks", sequence / "groundtruth").summary == ev.summary


def test_frame_numbers_argument_overrides_summary(sequence: Path, tmp_path: Path) -> None:
    out = _output_dir(tmp_path, [12, 11], {"frame_numbers": [1, 2]})
    ev = evaluate(out, sequence / "groundtruth", frame_numbers=[12, 11])
    assert [(r["frame"], r["mask"]) for r in ev.per_frame] == [
        (11, "bin000002.png"),
        (12, "bin000001.png"),
    ]
    with pytest.raises(InputError, match="none of the ground-truth frames"):
        evaluate(out, sequence / "groundtruth")  # summary says frames 1, 2


def test_count_mismatch_without_frame_numbers_is_an_error(sequence: Path, tmp_path: Path) -> None:
    out = _output_dir(tmp_path, [11, 12], None)
    with pytest.raises(InputError, match="frame_numbers"):
        evaluate(out, sequence / "groundtruth")
    with pytest.raises(InputError, match="3 frame numbers given for 2 masks"):
        evaluate(out, sequence / "groundtruth", frame_numbers=[10, 11, 12])


def test_wallflower_single_frame_is_matched_by_name(tmp_path: Path) -> None:
    """Masks of a Wallflower folder (b00000.bmp ...) are named after their frames:
    hand_segmented_00003 is scored against bin000003.png. Masks of a video are numbered
    from 1, and a Wallflower frame from 0: there, frame 3 is bin000004.png."""
    truth = np.zeros((6, 8, 3), dtype=np.uint8)
    truth[1:4, 2:6] = 255
    truth[4, 4] = (200, 200, 200)  # anti-aliased: > 127 is foreground
    truth[5, 5] = (100, 100, 100)  # <= 127 is background
    gt_file = _write(tmp_path / "wt" / "hand_segmented_00003.BMP", truth)
    expected = np.where(cv2.cvtColor(truth, cv2.COLOR_BGR2GRAY) > 127, 255, 0)
    out = tmp_path / "out" / "masks"
    for number in range(5):  # frames b00000 .. b00004; frame 3 is bin000003.png
        _write(out / f"bin{number:06d}.png", expected if number == 3 else 255 - expected)

    gt = load_groundtruth(gt_file)
    assert gt.kind == "binary" and gt.frame_numbers == [3]
    ev = evaluate(out, gt_file)
    assert ev.info["mapping"] == "names"
    assert [(r["frame"], r["mask"]) for r in ev.per_frame] == [(3, "bin000003.png")]
    assert ev.summary["f_measure"] == 1.0
    assert ev.summary["TP"] == 13 and ev.summary["FP"] == ev.summary["FN"] == 0
    assert ev.summary["ssim"] == pytest.approx(1.0)

    # The same masks of a video (its summary.json says so): frames 0..4 are bin000001..5.
    video = tmp_path / "video"
    for number in range(1, 6):
        _write(video / "masks" / f"bin{number:06d}.png", expected if number == 4 else 0 * expected)
    summary = {
        "input": "clip.mp4",
        "frame_numbers": [0, 1, 2, 3, 4],
        "mask_numbers": [1, 2, 3, 4, 5],
    }
    (video / "summary.json").write_text(json.dumps(summary))
    ev = evaluate(video, gt_file)
    assert ev.info["mapping"] == "single_frame_index"
    assert [(r["frame"], r["mask"]) for r in ev.per_frame] == [(3, "bin000004.png")]
    assert ev.summary["f_measure"] == 1.0

    # Only frames 0-1 separated: frame 3 has no mask.
    shutil.rmtree(out)
    for number in (0, 1):
        _write(out / f"bin{number:06d}.png", expected)
    with pytest.raises(InputError, match=r"bin000003\.png"):
        evaluate(out, gt_file)


def test_cdnet_masks_named_after_their_frames(sequence: Path, tmp_path: Path) -> None:
    """bin000011.png is scored against gt000011.png, whatever other masks there are."""
    out = tmp_path / "named"
    for number in (11, 12, 13):  # frame 10 was not separated, 13 has no ground truth
        _write(out / "masks" / f"bin{number:06d}.png", MASKS.get(number, MASKS[12]))
    summary = {"input": str(sequence / "input"), "frame_numbers": [11, 12, 13],
               "mask_numbers": [11, 12, 13]}  # fmt: skip
    (out / "summary.json").write_text(json.dumps(summary))
    ev = evaluate(out, sequence / "groundtruth")
    assert ev.info["mapping"] == "names"
    assert [(r["frame"], r["mask"]) for r in ev.per_frame] == [
        (11, "bin000011.png"),
        (12, "bin000012.png"),
    ]
    assert (ev.summary["TP"], ev.summary["FP"], ev.summary["TN"], ev.summary["FN"]) == (
        TP,
        FP,
        TN,
        FN,
    )
    assert evaluate(out / "masks", sequence / "groundtruth").summary == ev.summary


# --------------------------------------------------------------------------------------
# Reading ground truth, ROI, temporal ROI
# --------------------------------------------------------------------------------------


def test_palette_png_maps_indices_to_label_values(tmp_path: Path) -> None:
    indices = np.array([[0, 1, 2, 3, 4], [4, 3, 2, 1, 0]], dtype=np.uint8)
    gray = [(0, 0, 0), (50, 50, 50), (85, 85, 85), (170, 170, 170), (255, 255, 255)]
    _write_palette_png(tmp_path / "groundtruth" / "gt000001.png", indices, gray)
    gt = load_groundtruth(tmp_path / "groundtruth")
    assert gt.kind == "cdnet" and gt.frame_numbers == [1]
    np.testing.assert_array_equal(gt.load(0), np.array([0, 50, 85, 170, 255])[indices])

    coloured = [(0, 0, 0), (50, 0, 0), (85, 85, 85), (170, 170, 170), (255, 255, 255)]
    _write_palette_png(tmp_path / "bad" / "gt000001.png", indices, coloured)
    with pytest.raises(InputError, match="colour"):
        load_groundtruth(tmp_path / "bad").load(0)


def test_non_label_values_are_an_error(tmp_path: Path) -> None:
    _write(tmp_path / "gt" / "gt000001.png", [[0, 128], [255, 0]])
    with pytest.raises(InputError, match=r"\[128\]"):
        load_groundtruth(tmp_path / "gt").load(0)


def test_read_temporal_roi_and_roi(tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text("470 1700\n")
    assert read_temporal_roi(tmp_path / "t.txt") == (470, 1700)
    (tmp_path / "bad.txt").write_text("470\n")
    with pytest.raises(InputError, match="two integers"):
        read_temporal_roi(tmp_path / "bad.txt")
    (tmp_path / "rev.txt").write_text("9 3")
    with pytest.raises(InputError, match="first"):
        read_temporal_roi(tmp_path / "rev.txt")
    with pytest.raises(InputError, match="temporalROI"):
        read_temporal_roi(tmp_path / "missing.txt")
    roi = load_roi(_write(tmp_path / "ROI.bmp", ROI))
    assert roi.dtype == bool and roi.sum() == 16 and not roi[:, 4].any()


# --------------------------------------------------------------------------------------
# SSIM and epsilon-proximity
# --------------------------------------------------------------------------------------


def test_ssim_identical_is_one_and_complement_is_low() -> None:
    rng = np.random.default_rng(0)
    mask = (rng.random((24, 32)) > 0.7).astype(float)
    assert ssim(mask, mask) == pytest.approx(1.0)
    assert ssim(np.zeros((24, 32)), np.zeros((24, 32))) == pytest.approx(1.0)
    assert ssim(mask, 1.0 - mask) < 0.0
    blob = np.zeros((24, 32))
    blob[8:16, 10:20] = 1.0
    assert ssim(blob, 1.0 - blob) < 0.1
    tiny = (rng.random((4, 5)) > 0.5).astype(float)  # smaller than the 11x11 window
    assert ssim(tiny, tiny) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        ssim(mask, mask[:-1])


def test_epsilon_proximity() -> None:
    x = np.array([[0.0, 1.0], [0.2, 1.0]])
    y = np.array([[0.0, 0.0], [0.0, 0.95]])
    assert epsilon_proximity(x, y, epsilon=0.1) == 0.5
    assert epsilon_proximity(x, y, epsilon=0.5) == 0.75
    assert epsilon_proximity(x, y, epsilon=0.1, valid=[[True, False], [False, False]]) == 1.0
    assert epsilon_proximity(x, y, valid=np.zeros((2, 2), bool)) == 0.0


# --------------------------------------------------------------------------------------
# Errors and output
# --------------------------------------------------------------------------------------


def test_missing_inputs_are_input_errors(sequence: Path, masks: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist") as info:
        evaluate(masks, tmp_path / "nowhere")
    assert info.value.exit_code == 2 and "\n" not in str(info.value)
    with pytest.raises(InputError, match="masks folder"):
        evaluate(tmp_path / "no_masks", sequence / "groundtruth")
    with pytest.raises(InputError, match=r"bin000001\.png is not a folder; pass the output"):
        evaluate(masks / "bin000001.png", sequence / "groundtruth")  # it said "does not exist"
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"bin%06d\.png"):
        evaluate(tmp_path / "empty", sequence / "groundtruth")
    with pytest.raises(InputError, match=r"no gt%06d\.png"):
        evaluate(masks, tmp_path / "empty")
    for args, name in (((None, sequence), "masks=None"), ((masks, 5), "groundtruth=5")):
        with pytest.raises(TypeError, match=f"^{name} is not a path: give a str or"):
            evaluate(*args)  # not pathlib's message, which names no argument


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"temporal_roi": (12,)}, r"^temporal_roi=\(12,\) must be two frame numbers"),
        ({"temporal_roi": "11:12"}, r"^temporal_roi='11:12' must be two frame numbers"),
        ({"frame_numbers": 5}, "^frame_numbers=5 must be a sequence of integers"),
        ({"frame_numbers": ["a", "b"]}, "^frame_numbers=.* must be a sequence of integers"),
        ({"epsilon": None}, "^epsilon=None must be a number"),
        ({"roi": 5}, "^roi=5 is not a path"),
    ],
)
def test_arguments_of_the_wrong_kind_are_named(sequence, masks, kwargs, message) -> None:
    # Before the fix: IndexError, int()'s or pathlib's messages, from inside the scoring.
    with pytest.raises(TypeError, match=message) as info:
        evaluate(masks, sequence / "groundtruth", **kwargs)
    assert isinstance(info.value, InputError)


def test_mask_size_mismatch_names_the_file(sequence: Path, masks: Path) -> None:
    _write(masks / "bin000003.png", np.zeros((6, 5), dtype=np.uint8))
    with pytest.raises(InputError, match=r"bin000003\.png is 5x6 but ground truth .* is 5x4"):
        evaluate(masks, sequence / "groundtruth")


def test_roi_size_mismatch(sequence: Path, masks: Path) -> None:
    with pytest.raises(InputError, match="ROI"):
        evaluate(masks, sequence / "groundtruth", roi=np.ones((3, 3), np.uint8))


def test_outputs(sequence: Path, masks: Path, tmp_path: Path) -> None:
    ev = evaluate(masks, sequence / "groundtruth")
    data = json.loads(json.dumps(ev.to_dict()))
    assert data["summary"]["TP"] == TP and len(data["per_frame"]) == 2
    assert isinstance(Evaluation(**data), Evaluation)
    path = ev.to_csv(tmp_path / "scores" / "per_frame.csv")
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [int(r["frame"]) for r in rows] == [11, 12]
    assert rows[0]["mask"] == "bin000002.png" and int(rows[1]["FP"]) == 2
    assert {"TP", "FP", "TN", "FN", "f_measure", "ssim"} <= set(rows[0])
    table = format_table(ev)
    assert "F-measure" in table and "0.5333" in table and "PWC" in table


# --------------------------------------------------------------------------------------
# Real ground truth (../shared/data), scored against itself
# --------------------------------------------------------------------------------------

shared = pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"{SHARED_DATA} is absent")


def _self_masks(tmp_path: Path, groundtruth: Path, numbers: list[int]) -> Path:
    """Ground-truth frames written as masks: label 255 -> 255, everything else 0."""
    out = tmp_path / "self"
    for position, number in enumerate(numbers, start=1):
        labels = cv2.imread(str(groundtruth / f"gt{number:06d}.png"), cv2.IMREAD_GRAYSCALE)
        _write(out / "masks" / f"bin{position:06d}.png", np.where(labels == 255, 255, 0))
    (out / "summary.json").write_text(json.dumps({"frame_numbers": numbers}))
    return out


@pytest.mark.shared_data
@shared
@pytest.mark.parametrize(
    ("name", "numbers"),
    [("cdnet_highway", [800, 820, 1000]), ("sbi_IBMtest2", [40, 45, 60])],
)
def test_groundtruth_against_itself(tmp_path: Path, name: str, numbers: list[int]) -> None:
    groundtruth = SHARED_DATA / name / "groundtruth"
    ev = evaluate(_self_masks(tmp_path, groundtruth, numbers), groundtruth)
    assert ev.summary["frames_scored"] == 3
    assert ev.summary["TP"] > 0
    assert ev.summary["f_measure"] == 1.0
    assert ev.summary["pwc"] == 0.0
    assert ev.summary["epsilon_proximity"] == 1.0
    assert ev.info["roi"] is not None and ev.info["temporal_roi"] is not None


@pytest.mark.shared_data
@shared
def test_real_palette_groundtruth_has_label_values() -> None:
    gt = load_groundtruth(SHARED_DATA / "cdnet_highway" / "groundtruth")
    assert len(gt) == 700 and gt.frame_numbers[0] == 470
    labels = gt.load(gt.frame_numbers.index(820))
    assert set(np.unique(labels).tolist()) == {0, 50, 170, 255}


@pytest.mark.shared_data
@shared
def test_wallflower_groundtruth_against_itself(tmp_path: Path) -> None:
    gt_file = SHARED_DATA / "wallflower_WavingTrees" / "hand_segmented_00247.BMP"
    gray = cv2.imread(str(gt_file), cv2.IMREAD_GRAYSCALE)
    _write(tmp_path / "masks" / "bin000001.png", np.where(gray > 127, 255, 0))
    ev = evaluate(tmp_path / "masks", gt_file, frame_numbers=[247])
    assert ev.per_frame[0]["frame"] == 247 and ev.summary["f_measure"] == 1.0


def test_ssim_equals_scikit_image_on_masks() -> None:
    """Our SSIM is scikit-image's structural_similarity with the paper's Gaussian window."""
    metrics = pytest.importorskip("skimage.metrics")
    rng = np.random.default_rng(5)
    truth = np.zeros((36, 48))
    truth[8:20, 10:30] = 1
    pairs = [
        (truth, np.roll(truth, 3, axis=1)),  # a shifted mask
        (truth, np.clip(truth + (rng.random(truth.shape) < 0.05), 0, 1)),  # speckle
        ((rng.random((120, 160)) < 0.2) * 1.0, (rng.random((120, 160)) < 0.2) * 1.0),
        (truth[:12], 1.0 - truth[:12]),  # a strip just wider than the 11x11 window
        (truth, truth),
    ]
    for a, b in pairs:
        reference = metrics.structural_similarity(
            a, b, data_range=1.0, gaussian_weights=True, sigma=1.5, use_sample_covariance=False
        )
        assert ssim(a, b, data_range=1.0) == pytest.approx(reference, abs=1e-12)
