"""``bpvideo separate -c FILE``: a defaults file with the keys of a batch config's
``defaults:``; precedence flag > file > built-in default (issue 16)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bpvideo.batch.config import ConfigError, load_defaults
from bpvideo.settings import default

FILE = """\
# site defaults
rank: 1
sparsity: 0.3
min-area: 10          # a flag's spelling works too
end: 00:00:02
output: results/{stem}
groundtruth: gt
"""


def test_flag_over_file_over_default(run_cli, tiny_clip: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "defaults.yaml").write_text(FILE.replace("groundtruth: gt\n", ""))
    res = run_cli("separate", tiny_clip, "-c", site / "defaults.yaml", "--rank", "2",
                  "--no-video", "-q", "--json")  # fmt: skip
    assert res.code == 0, res.err
    summary = res.json()
    settings = summary["settings"]
    assert settings["rank"] == 2  # the flag
    assert (settings["sparsity"], settings["min_area"], settings["end"]) == (0.3, 10, "00:00:02")
    assert settings["threshold_k"] == default("threshold_k")  # built-in defaults
    assert settings["tol"] == default("tol")
    assert summary["frames"] == 20  # end 2 s at 10 frames/s
    assert summary["output"] == str(site / "results" / "tiny")  # relative to the file
    # -o and --frames over the file's output and end (--frames drops the file's end)
    res = run_cli("separate", tiny_clip, "--config", site / "defaults.yaml", "-o",
                  tmp_path / "o", "--frames", "5", "--no-video", "-q", "--json")  # fmt: skip
    assert res.code == 0, res.err
    assert res.json()["output"] == str(tmp_path / "o") and res.json()["frames"] == 5
    assert res.json()["settings"]["end"] is None


def test_paths_in_the_file_are_relative_to_it(tmp_path: Path) -> None:
    (tmp_path / "defaults.yaml").write_text(FILE + "masks-to: '-'\nmask: roi.png\n")
    options = load_defaults(tmp_path / "defaults.yaml")
    assert options["groundtruth"] == str(tmp_path / "gt")
    assert options["mask"] == str(tmp_path / "roi.png")
    assert options["masks_to"] == "-" and options["output"] == str(tmp_path / "results/{stem}")
    (tmp_path / "empty.yaml").write_text("# nothing yet\n")
    assert load_defaults(tmp_path / "empty.yaml") == {}


def test_every_problem_listed_with_file_and_line(run_cli, tiny_clip: Path, tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("rnak: 2\nrank: two\nfoo: 1\njobs: []\ninput: a.mp4\nmax-iter: 5\nmax_iter: 6\n")
    res = run_cli("separate", tiny_clip, "-c", bad, "-o", tmp_path / "o")
    assert res.code == 2
    assert res.err.splitlines() == [
        f"bpvideo: error: {bad}:1: rnak: unknown key (did you mean 'rank'?): not an option of "
        "separate",
        f"bpvideo: error: {bad}:2: rank: must be an integer, got 'two'",
        f"bpvideo: error: {bad}:3: foo: unknown key: not an option of separate",
        f"bpvideo: error: {bad}:4: jobs: unknown key (a batch config's key: this file holds "
        "what goes under 'defaults:'): not an option of separate",
        f"bpvideo: error: {bad}:5: input: give the input on the command line",
        f"bpvideo: error: {bad}:7: max_iter: same option as 'max-iter': give it once",
        f"bpvideo: error: {bad}: 6 problems, nothing was run: fix them and run again",
    ]
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "no such config file: check the path"),
        ("- rank: 2\n", "must be a mapping of options (rank: 3), got a list"),
        ("rank: [2\n", "invalid YAML"),
    ],
)
def test_unusable_files(tmp_path: Path, text: str | None, message: str) -> None:
    path = tmp_path / "d.yaml"
    if text is not None:
        path.write_text(text)
    with pytest.raises(
        (ConfigError, ValueError), match=message.replace("(", r"\(").replace(")", r"\)")
    ):
        load_defaults(path)


def test_summary_records_the_merged_settings(run_cli, tiny_folder: Path, tmp_path: Path):
    (tmp_path / "d.yaml").write_text("crf: 30\npreset: ultrafast\nrank: 1\n")
    res = run_cli("separate", tiny_folder, "-c", tmp_path / "d.yaml", "-o", tmp_path / "o", "-q")
    assert res.code == 0, res.err
    settings = json.loads((tmp_path / "o" / "summary.json").read_text())["settings"]
    assert (settings["crf"], settings["preset"], settings["rank"]) == (30, "ultrafast", 1)
    res = run_cli("separate", tiny_folder, "-c", tmp_path / "d.yaml", "-o", tmp_path / "p",
                  "--lossless", "-q")  # fmt: skip
    assert res.code == 0, res.err  # the flag wins over the file's encoder options
    settings = json.loads((tmp_path / "p" / "summary.json").read_text())["settings"]
    assert settings["lossless"] and settings["crf"] == default("crf") and settings["rank"] == 1
    res = run_cli("separate", tiny_folder, "-o", tmp_path / "q", "--crf", "30", "--lossless")
    assert res.code == 2 and "--crf 30 sets the H.264 encoder, but --lossless" in res.err


@pytest.mark.parametrize(
    ("in_file", "flags", "setting"),
    [
        ("crf: 28\npreset: slow\n", ["--no-video"], ("no_video", True)),
        ("crf: 28\n", ["--lossless"], ("lossless", True)),
        ("lossless: true\n", ["--crf", "23"], ("crf", 23)),
        ("no-video: true\n", ["--preset", "fast"], ("preset", "fast")),
        ("lossless: true\n", ["--no-video"], ("no_video", True)),
    ],
    ids=["crf+preset/no-video", "crf/lossless", "lossless/crf", "no-video/preset", "ffv1/none"],
)
def test_a_flag_wins_over_what_it_cannot_go_with(
    run_cli, tiny_clip: Path, tmp_path: Path, in_file: str, flags: list[str], setting: tuple
) -> None:
    """The file's encoder options against a flag that writes another video (or none)."""
    (tmp_path / "site.yaml").write_text(in_file)
    res = run_cli("separate", tiny_clip, "-c", tmp_path / "site.yaml", *flags, "-o",
                  tmp_path / "o", "-q", "--json")  # fmt: skip
    assert res.code == 0, res.err
    assert res.json()["settings"][setting[0]] == setting[1]


def test_a_job_wins_over_its_defaults(tmp_path: Path, tiny_clip: Path) -> None:
    from bpvideo.batch.config import load_config

    (tmp_path / "b.yaml").write_text(
        f"defaults:\n  crf: 28\n  preset: slow\njobs:\n  - input: {tiny_clip}\n"
        f"    output: {tmp_path}/o\n    no-video: true\n"
    )
    settings = load_config(tmp_path / "b.yaml").jobs[0].make_settings()
    assert settings.no_video and settings.crf == default("crf")
