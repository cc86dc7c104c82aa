"""The one guard (issue 27): every path a command writes is checked against what it
reads, whoever named it: a flag, a defaults file (``-c``), a batch config, ``--logfile``.

Each case tries to make bpvideo write onto something it reads; the run is refused with
one line naming the path and the option to change, exit 2, and every file is unchanged.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo.sinks.writers import write_video
from tests._cli.test_bad_inputs import assert_one_error_line
from tests._cli.test_hostile_inputs import digest
from tests.conftest import tiny_frames


@pytest.fixture
def clip(tmp_path: Path) -> Path:
    path = tmp_path / "cam.mkv"
    write_video(path, tiny_frames(n=12)[0], 10.0, lossless=True)
    return path


@pytest.fixture
def groundtruth(tmp_path: Path) -> Path:
    folder = tmp_path / "groundtruth"
    folder.mkdir()
    for i, truth in enumerate(tiny_frames(n=12)[1], start=1):
        cv2.imwrite(str(folder / f"gt{i:06d}.png"), truth.astype(np.uint8) * 255)
    return folder


def test_logfile_of_separate_is_guarded(run_cli, clip: Path, tmp_path: Path) -> None:
    mask = tmp_path / "mask.png"
    cv2.imwrite(str(mask), np.full((36, 48), 255, np.uint8))
    defaults = tmp_path / "site.yaml"
    defaults.write_text("rank: 1\n")
    before = digest(clip, mask, defaults)
    for target, what in ((clip, "the input"), (mask, "the mask"), (defaults, "the defaults")):
        res = run_cli("separate", clip, "-o", tmp_path / "out", "--mask", mask, "-c", defaults,
                      "--logfile", target)  # fmt: skip
        assert_one_error_line(res, 2, f"--logfile would replace {what}", "--logfile")
    res = run_cli("separate", clip, "-o", tmp_path / "out", "--logfile", tmp_path / "out")
    assert res.code == 2 and "--logfile" in res.err
    assert digest(clip, mask, defaults) == before and not (tmp_path / "out").exists()


def test_logfile_of_many_inputs_is_guarded(run_cli, clip: Path, tmp_path: Path) -> None:
    other = tmp_path / "b.mkv"
    other.write_bytes(clip.read_bytes())
    before = digest(clip, other)
    res = run_cli("separate", clip, other, "-o", tmp_path / "{stem}", "--logfile", other)
    assert_one_error_line(res, 2, r"b\.mkv: --logfile would replace the input", "--logfile")
    assert digest(clip, other) == before


def test_paths_of_a_defaults_file_are_guarded(run_cli, clip: Path, tmp_path: Path) -> None:
    """``masks-to:`` (or ``output:``) of ``-c FILE`` naming the file itself."""
    defaults = tmp_path / "site.yaml"
    for text in ("masks-to: site.yaml\n", "masks-to: cam.mkv\n"):
        defaults.write_text(text)
        before = digest(defaults, clip)
        res = run_cli("separate", clip, "-o", tmp_path / "out", "-c", defaults)
        assert_one_error_line(res, 2, "--masks-to would replace the (defaults file|input)",
                              "--masks-to")  # fmt: skip
        assert digest(defaults, clip) == before and not (tmp_path / "out").exists()


def test_logfile_of_batch_is_guarded(run_cli, clip: Path, tmp_path: Path) -> None:
    config = tmp_path / "night.yaml"
    config.write_text(f"jobs:\n  - input: {clip}\n    output: {tmp_path}/o\n")
    before = digest(config, clip)
    for target in (config, clip, tmp_path / "o" / "summary.json"):
        res = run_cli("batch", config, "--logfile", target)
        assert res.code == 2 and "--logfile" in res.err.splitlines()[-1], res.err
    assert digest(config, clip) == before and not (tmp_path / "o").exists()
    assert run_cli("batch", config).code == 0  # the config still works


def test_logfile_of_evaluate_is_guarded(
    run_cli, clip: Path, groundtruth: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    assert run_cli("separate", clip, "-o", out, "-q").code == 0
    for target in (groundtruth / "gt000003.png", out / "masks" / "bin000002.png"):
        before = digest(groundtruth, out / "masks")
        res = run_cli("evaluate", out, groundtruth, "--logfile", target)
        assert_one_error_line(res, 2, "--logfile would replace the (ground truth|masks)",
                              "--logfile")  # fmt: skip
        assert digest(groundtruth, out / "masks") == before


def test_evaluate_twice_and_after_groundtruth(
    run_cli, clip: Path, groundtruth: Path, tmp_path: Path
) -> None:
    """``evaluation.csv`` is evaluate's own output, not a mask: it may be replaced."""
    out = tmp_path / "out"
    assert run_cli("separate", clip, "-o", out, "-q", "--groundtruth", groundtruth).code == 0
    assert (out / "evaluation.csv").is_file()
    for _ in range(2):
        res = run_cli("evaluate", out, groundtruth, "-q")
        assert res.code == 0, res.err
        assert res.out.strip() == str(out / "evaluation.csv")
    masks_only = out / "masks"
    (masks_only / "evaluation.csv").write_text("not a mask\n")
    res = run_cli("evaluate", masks_only, groundtruth, "-q", "--csv", masks_only / "evaluation.csv")
    assert res.code == 0, res.err


def test_an_output_folder_that_is_a_folder_of_frames_read_is_refused(
    run_cli, groundtruth: Path, tmp_path: Path
) -> None:
    """``-o`` the frame folder of the input (a folder of images given as INPUT, or the
    ``input/`` folder of a changedetection.net-like one, or a link to it), of the masks or
    of the ground truth: its result files would lie among the frames (issue 42)."""
    from tests._cli.test_hostile_inputs import frames_folder

    flat = frames_folder(tmp_path / "flat")
    cdnet = tmp_path / "cdnet"
    frames_folder(cdnet / "input")
    (tmp_path / "link").symlink_to(flat)
    before = digest(flat, cdnet, groundtruth)
    cases = [(flat, flat), (flat, tmp_path / "link"), (cdnet, cdnet / "input"),
             (cdnet / "input", cdnet / "input"), (flat, groundtruth)]  # fmt: skip
    for source, out in cases:
        res = run_cli("separate", source, "-o", out, "--groundtruth", groundtruth, "--overwrite")
        assert_one_error_line(res, 2, rf"{out.name}: the output folder would put its files "
                              r"among those of the (input|ground truth) \(the folder ",
                              "choose another -o")  # fmt: skip
    config = tmp_path / "night.yaml"
    config.write_text(f"jobs:\n  - input: {flat}\n    output: {flat}\n")
    res = run_cli("batch", config)
    assert res.code == 2 and "would put its files among those of the input" in res.err, res.err
    assert digest(flat, cdnet, groundtruth) == before
    assert sorted(p.name for p in flat.iterdir()) == [f"in{i:06d}.png" for i in range(1, 13)]
    res = run_cli("separate", cdnet, "-o", cdnet / "result", "-q", "--no-video")
    assert res.code == 0, res.err  # a folder beside the frames is no frame folder
