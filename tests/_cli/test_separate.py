"""``bpvideo separate`` end to end: the output layout, stdout discipline, bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo.sources.video import read_video
from tests.conftest import output_files, read_masks, tiny_frames

LAYOUT = ["background.mp4", "background.png", "events.csv", "foreground.mp4", "frames.csv",
          "masks", "report.html", "summary.json"]  # fmt: skip


def test_separate_writes_layout(run_cli, tiny_clip: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = run_cli("separate", tiny_clip, "-o", out, "--rank", "1", "--sparsity", "0.3")
    assert res.code == 0, res.err
    assert res.out == f"{out}\n"  # stdout carries only the path
    files = output_files(out)
    assert [f for f in files if "/" not in f] == LAYOUT
    assert len([f for f in files if f.startswith("masks/")]) == 24
    summary = json.loads((out / "summary.json").read_text())
    assert summary["frames"] == 24 and summary["width"] == 48 and summary["height"] == 36
    assert summary["settings"]["rank"] == 1 and summary["settings"]["sparsity"] == 0.3
    assert set(summary["seconds"]) == {"read", "solve", "masks", "write", "total"}
    assert summary["solver"]["iterations"] >= 1
    # Videos decode to one frame per input frame.
    assert read_video(out / "background.mp4").n_frames == 24
    assert read_video(out / "foreground.mp4").n_frames == 24
    # The mask finds the moving square.
    _, gt = tiny_frames()
    masks = np.stack(
        [
            cv2.imread(str(out / "masks" / f"bin{i:06d}.png"), cv2.IMREAD_GRAYSCALE) > 0
            for i in range(1, 25)
        ]
    )
    tp = (masks & gt).sum()
    f1 = 2 * tp / (masks.sum() + gt.sum())
    assert f1 > 0.9


def test_separate_json_and_lossless(run_cli, tiny_folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"
    res = run_cli(
        "separate",
        tiny_folder,
        "-o",
        out,
        "--json",
        "--lossless",
        "-q",
        "--method",
        "ncf",
        "--rank",
        "1",
    )
    assert res.code == 0, res.err
    summary = res.json()
    assert summary == json.loads((out / "summary.json").read_text())
    assert summary["solver"]["method"] == "ncf"
    assert (out / "background.mkv").exists() and (out / "foreground.mkv").exists()
    assert res.err == ""  # -q: silence


def test_observe_and_default_output(
    run_cli, tiny_clip: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    res = run_cli("separate", tiny_clip, "--observe", "0.7", "--seed", "2", "--rank", "1")
    assert res.code == 0, res.err
    assert res.out.strip() == "tiny-bpvideo"
    summary = json.loads((tmp_path / "tiny-bpvideo" / "summary.json").read_text())
    assert 0.65 < summary["observed_fraction"] < 0.75


def test_verbose_iteration_table(run_cli, tiny_clip: Path, tmp_path: Path) -> None:
    res = run_cli("separate", tiny_clip, "-o", tmp_path / "v", "-v", "--rank", "1")
    assert res.code == 0
    assert "residual" in res.err and "change" in res.err


def test_help_has_examples(run_cli) -> None:
    res = run_cli("separate", "--help")
    assert res.code == 0
    for flag in (
        "--rank",
        "--sparsity",
        "--gamma",
        "--method",
        "--mask",
        "--observe",
        "--threshold",
        "--lossless",
        "--json",
        "Examples",
    ):
        assert flag in res.out


def _one_frame_folder(tmp: Path) -> Path:
    frames, _ = tiny_frames(n=1)
    folder = tmp / "one"
    folder.mkdir()
    cv2.imwrite(str(folder / "f1.png"), frames[0])
    return folder


@pytest.mark.parametrize(
    ("args", "code", "match"),
    [
        (["{tmp}/missing.mp4"], 2, "no such file"),
        (["{txt}"], 2, "cannot be decoded"),
        (["{empty}"], 2, "no image frames"),
        (["{one}"], 2, "1 frame"),
        (["{clip}", "--start", "500"], 2, "no frames selected"),
        (["{clip}", "--rank", "24"], 2, r"--rank 24 must be < number of frames \(24\)"),
        (["{clip}", "--rank", "0"], 2, r"--rank 0 must be >= 1"),
        (["{clip}", "--sparsity", "1"], 2, r"--sparsity 1.0 must be > 0 and < 1"),
        (["{clip}", "--sparsity", "0"], 2, "sparsity"),
        (["{clip}", "--sparsity", "-0.5"], 2, "sparsity"),
        (["{clip}", "--gamma", "2.5"], 2, r"--gamma 2.5 must be > 0 and <= 2"),
        (["{clip}", "--gamma", "0"], 2, "gamma"),
        (["{clip}", "--max-iter", "0"], 2, "max-iter"),
        (["{clip}", "--rank", "two"], 2, "'two' is not a valid integer"),
        (["{clip}", "--mask", "{small}"], 2, "mask is 10x10 but frames are 48x36"),
        (["{clip}", "-o", "{txt}"], 2, "is a file"),
        (["{clip}", "--method", "svd"], 2, "svd"),
    ],
)
def test_bad_input(
    run_cli, tiny_clip: Path, tmp_path: Path, args: list[str], code: int, match: str
) -> None:
    txt = tmp_path / "notes.mp4"
    txt.write_text("this is not a video\n" * 20)
    (tmp_path / "empty").mkdir()
    small = tmp_path / "small.png"
    cv2.imwrite(str(small), np.full((10, 10), 255, np.uint8))
    names = {
        "tmp": tmp_path,
        "txt": txt,
        "empty": tmp_path / "empty",
        "clip": tiny_clip,
        "one": _one_frame_folder(tmp_path),
        "small": small,
    }
    argv = [a.format(**names) for a in args]
    if "-o" not in argv:
        argv += ["-o", str(tmp_path / "out")]
    before = output_files(tmp_path)
    res = run_cli("separate", *argv)
    assert res.code == code, res.err
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bpvideo: error: "), res.err
    assert pytest.importorskip("re").search(match, lines[0]), lines[0]
    assert "Traceback" not in res.err and res.out == ""
    assert output_files(tmp_path) == before  # nothing written


def test_existing_outputs_need_overwrite(run_cli, tiny_clip: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"
    assert run_cli("separate", tiny_clip, "-o", out, "--rank", "1", "-q").code == 0
    stamp = (out / "summary.json").stat().st_mtime_ns
    res = run_cli("separate", tiny_clip, "-o", out, "--rank", "1")
    assert res.code == 2 and "--overwrite" in res.err
    assert (out / "summary.json").stat().st_mtime_ns == stamp
    res = run_cli("separate", tiny_clip, "-o", out, "--rank", "1", "--overwrite", "-q")
    assert res.code == 0
    assert [f for f in output_files(out) if "/" not in f] == LAYOUT  # no staging left


def test_debug_shows_traceback(run_cli, tmp_path: Path) -> None:
    with pytest.raises(Exception, match="no such file"):
        run_cli("separate", tmp_path / "nope.mp4", "--debug")


def test_color_writes_colour_outputs(run_cli, tiny_clip: Path, tmp_path: Path) -> None:
    out = tmp_path / "c"
    res = run_cli("separate", tiny_clip, "-o", out, "--color", "--lossless", "--rank", "1", "-q")
    assert res.code == 0, res.err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["channels"] == 3
    frames, gt = tiny_frames()
    bg = read_video(out / "background.mkv", gray=False).frames
    # The clip's red channel is the blue one + 10 grey levels: the background keeps it.
    diff = bg[..., 2].astype(int) - bg[..., 0].astype(int)
    assert 7 < np.median(diff) < 13
    still = cv2.imread(str(out / "background.png"), cv2.IMREAD_UNCHANGED)
    assert still.shape == (36, 48, 3)
    fg = read_video(out / "foreground.mkv", gray=False).frames
    masks = read_masks(out / "masks") > 0
    assert np.array_equal(fg[masks], frames[masks]) and not fg[~masks].any()
    assert (masks & gt).sum() / gt.sum() > 0.9


def test_gray_solve_of_colour_input_writes_colour_still(
    run_cli, tiny_clip: Path, tmp_path: Path
) -> None:
    out = tmp_path / "g"
    res = run_cli("separate", tiny_clip, "-o", out, "--no-video", "--rank", "1", "-q")
    assert res.code == 0, res.err
    assert json.loads((out / "summary.json").read_text())["settings"]["gray"] is True
    still = cv2.imread(str(out / "background.png"), cv2.IMREAD_UNCHANGED)
    assert still.shape == (36, 48, 3)
    # The true background: each pixel's median over the frames where the square is not.
    frames, gt = tiny_frames()
    hidden = np.where(gt[..., None], np.nan, frames.astype(float))
    truth = np.nanmedian(hidden, axis=0)
    assert np.abs(still - truth).mean() < 2.0
    # The clip's red channel is the blue one + 10 grey levels (the square's too).
    assert np.median(still[..., 2].astype(int) - still[..., 0]) == 10
    # Its grey level is the grey solve's background.
    masks = read_masks(out / "masks") > 0
    grey = cv2.cvtColor(still, cv2.COLOR_BGR2GRAY).astype(int)
    background_grey = np.median(
        np.where(
            masks, np.nan, np.array([cv2.cvtColor(f, cv2.COLOR_BGR2GRAY) for f in frames], float)
        ),
        axis=0,
    )
    ok = np.isfinite(background_grey)
    assert np.abs(grey[ok] - background_grey[ok]).mean() < 2.0


def test_many_inputs_one_failing(run_cli, tiny_clip: Path, tmp_path: Path) -> None:
    cams = tmp_path / "cams"
    cams.mkdir()
    shutil.copy(tiny_clip, cams / "a.mkv")
    shutil.copy(tiny_clip, cams / "b.mkv")
    (cams / "broken.mkv").write_text("not a video\n" * 40)
    template = str(tmp_path / "OUT" / "{stem}")
    res = run_cli("separate", str(cams / "*.mkv"), "-o", template, "--rank", "1", "-q")
    assert res.code == 1
    assert res.out.splitlines() == [str(tmp_path / "OUT" / s) for s in ("a", "b")]
    errors = [line for line in res.err.splitlines() if line.startswith("bpvideo: error:")]
    assert len(errors) == 1 and "broken.mkv" in errors[0] and "cannot be decoded" in errors[0]
    assert (tmp_path / "OUT" / "a" / "summary.json").exists()
    assert (tmp_path / "OUT" / "b" / "summary.json").exists()
    assert output_files(tmp_path / "OUT" / "broken") == []
    # JSON lines, and all succeeding: exit 0.
    res = run_cli("separate", cams / "a.mkv", cams / "b.mkv", "-o", template, "--rank", "1",
                  "-q", "--json", "--overwrite")  # fmt: skip
    assert res.code == 0, res.err
    lines = [json.loads(line) for line in res.out.splitlines()]
    assert [s["input"] for s in lines] == [str(cams / "a.mkv"), str(cams / "b.mkv")]
    # Two inputs, one output directory: refused before any work.
    res = run_cli("separate", cams / "a.mkv", cams / "b.mkv", "-o", tmp_path / "same")
    assert res.code == 2 and "would both write" in res.err and "{stem}" in res.err
    res = run_cli("separate", str(tmp_path / "nothing" / "*.mp4"), "-o", template)
    assert res.code == 2 and "nothing/*.mp4: the glob matches no file" in res.err


def test_masks_are_named_after_their_source_frames(run_cli, tiny_clip: Path, tmp_path: Path):
    """Videos and pipes number their frames from 1 (--start 5 gives bin000006.png first);
    image folders keep the number of each file (in000470.png -> bin000470.png)."""
    res = run_cli("separate", tiny_clip, "-o", tmp_path / "v", "--start", "5", "--step", "2",
                  "--rank", "1", "-q", "--json")  # fmt: skip
    assert res.code == 0, res.err
    summary = res.json()
    assert summary["frame_numbers"][:3] == [5, 7, 9] and summary["mask_numbers"][:3] == [6, 8, 10]
    names = sorted(p.name for p in (tmp_path / "v" / "masks").iterdir())
    assert names == [f"bin{n:06d}.png" for n in range(6, 25, 2)]
    frames, _ = tiny_frames(n=12)
    folder = tmp_path / "seq" / "input"
    folder.mkdir(parents=True)
    for i, frame in enumerate(frames, start=470):
        cv2.imwrite(str(folder / f"in{i:06d}.png"), frame)
    res = run_cli("separate", folder.parent, "-o", tmp_path / "f", "--rank", "1", "-q", "--json")
    assert res.code == 0, res.err
    assert res.json()["mask_numbers"] == res.json()["frame_numbers"] == list(range(470, 482))
    names = sorted(p.name for p in (tmp_path / "f" / "masks").iterdir())
    assert names == [f"bin{n:06d}.png" for n in range(470, 482)]


def test_learn_on_some_frames_and_apply_to_all(run_cli, tmp_path: Path) -> None:
    from bpvideo.sinks.writers import write_video
    from tests.conftest import f_measure, street_frames

    frames, truth = street_frames(n=120, seed=2)
    clip = tmp_path / "street.mkv"
    write_video(clip, frames, 25.0, lossless=True)
    res = run_cli("separate", clip, "-o", tmp_path / "l", "--learn", "0:50", "--json", "-q")
    assert res.code == 0, res.err
    summary = res.json()
    assert summary["frames"] == 120 and summary["learned"]["frames"] == "0:50"
    assert summary["learned"]["frame_count"] == 50 and summary["windows"]["count"] == 1
    masks = read_masks(tmp_path / "l" / "masks") > 0
    assert masks.shape == (120, 72, 96) and f_measure(masks, truth) > 0.75
    # the background learned on another clip of the same camera
    other = tmp_path / "earlier.mkv"
    write_video(other, street_frames(n=60, seed=3, street=2)[0], 25.0, lossless=True)
    res = run_cli("separate", clip, "-o", tmp_path / "o", "--learn-from", other, "--json", "-q")
    assert res.code == 0, res.err
    assert res.json()["learned"]["from"] == str(other)
    assert f_measure(read_masks(tmp_path / "o" / "masks") > 0, truth) > 0.75
    res = run_cli("separate", clip, "-o", tmp_path / "x", "--learn", "0:50", "--observe", "0.5")
    assert res.code == 2 and "--observe cannot be combined with --learn" in res.err
