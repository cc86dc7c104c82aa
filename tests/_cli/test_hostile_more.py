"""Hostile inputs, second round (issue 27): data loss, crashes, silent wrong results,
through the real CLI (in-process and as child processes).

Every refusal is one line on stderr naming the input and the fix, with the documented
exit status, and leaves nothing behind: no file outside the output, no staging folder,
no lock file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import cv2
import pytest

from bpvideo.sinks.writers import write_video
from tests._cli.test_bad_inputs import assert_one_error_line
from tests.conftest import REPO, CliResult, output_files, tiny_frames


@pytest.fixture
def clip(tmp_path: Path) -> Path:
    path = tmp_path / "clip.mkv"
    write_video(path, tiny_frames(n=12)[0], 10.0, lossless=True)
    return path


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), OPENBLAS_NUM_THREADS="1", **extra)
    env.pop("BPVIDEO_DEBUG", None)
    return env


def start(*args: str | os.PathLike, **env: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bpvideo", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_env(**env))  # fmt: skip


def finish(proc: subprocess.Popen, timeout: float = 120) -> CliResult:
    out, err = proc.communicate(timeout=timeout)
    return CliResult(proc.returncode, out, err)


# --- data loss ---------------------------------------------------------------------------


def test_two_runs_into_one_outdir(clip: Path, tmp_path: Path) -> None:
    """Started together, neither with --overwrite: one result, the other run refused
    with one line (busy, or already holding the first one's result)."""
    out = tmp_path / "out"
    runs = [start("separate", clip, "-o", out, "-q") for _ in range(2)]
    results = sorted((finish(p) for p in runs), key=lambda r: r.code)
    assert [r.code for r in results] == [0, 2], [r.err for r in results]
    assert_one_error_line(results[1], 2, "out", "(another bpvideo run|already holds)")
    assert "summary.json" in output_files(out)
    assert not [f for f in output_files(out) if f.startswith(".bpvideo")]


# --- security: inputs that name other inputs ---------------------------------------------


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("cam.m3u8", "#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\n{clip}\n#EXT-X-ENDLIST\n"),
        ("cam.mp4", "ffconcat version 1.0\nfile {clip.name}\n"),
        ("cam.avi", "ffconcat version 1.0\nfile '{clip}'\nfile '/etc/hostname'\n"),
    ],
    ids=["hls", "ffconcat-as-mp4", "ffconcat-outside"],
)
def test_lists_of_files_are_refused(
    run_cli, clip: Path, tmp_path: Path, name: str, text: str
) -> None:
    listed = tmp_path / name
    listed.write_text(text.format(clip=clip))
    res = run_cli("separate", listed, "-o", tmp_path / "out")
    assert_one_error_line(res, 2, rf"{name}: is a playlist or a list of other files",
                          "--allow-references")  # fmt: skip
    assert not (tmp_path / "out").exists()
    for option in ("--mask", "--learn-from"):  # the same rule for every input
        res = run_cli("separate", clip, "-o", tmp_path / "out", option, listed)
        assert res.code == 2 and "list of other files" in res.err, res.err
    res = run_cli("separate", listed, "-o", tmp_path / "out", "--allow-references", "-q")
    if name == "cam.mp4":  # (the others announce another length, or name no video)
        assert res.code == 0, res.err


# --- crashes: names OpenCV cannot take ---------------------------------------------------


def test_names_in_an_ascii_locale_and_not_utf8(clip: Path, tmp_path: Path) -> None:
    """Accented names with an ASCII file-system encoding, and names whose bytes are not
    UTF-8: a video, a folder of frames, an output; never a crash in OpenCV."""
    root = os.fsencode(str(tmp_path))
    video = root + "/caméra.mkv".encode()
    os.link(clip, video)
    raw = root + b"/cl\xffip.mkv"
    os.link(clip, raw)
    folder = root + b"/fr\xe9mes"
    os.mkdir(folder)
    for i, frame in enumerate(tiny_frames(n=12)[0], start=1):
        (Path(os.fsdecode(folder)) / f"in{i:06d}.png").write_bytes(
            cv2.imencode(".png", frame)[1].tobytes()
        )
    ascii_env = {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    for k, name in enumerate((video, raw, folder)):
        out = root + f"/sortié{k}".encode()
        for env in (ascii_env, {}):
            proc = subprocess.run([sys.executable, "-m", "bpvideo", "separate", name, "-o", out,
                                   "-q", "--overwrite"], capture_output=True,
                                  env=child_env(**env), timeout=120, check=False)  # fmt: skip
            assert proc.returncode == 0, (name, env, proc.stderr)
            assert os.path.exists(out + b"/summary.json")
            again = subprocess.run([sys.executable, "-m", "bpvideo", "events", out, "-q"],
                                   capture_output=True, env=child_env(**env), timeout=120,
                                   check=False)  # fmt: skip
            assert again.returncode == 0, (out, env, again.stderr)  # masks read by bytes


# --- silent wrong results: variable frame rate -------------------------------------------


def test_variable_frame_rate_gives_one_mask_per_frame(run_cli, tmp_path: Path) -> None:
    """40 frames, a 2 s gap after the 20th: 40 masks (no copies), their times in
    summary.json, exit 0."""
    from bpvideo.sources.ffmpeg import executable

    vfr = tmp_path / "vfr.mkv"
    subprocess.run([executable(), "-loglevel", "error", "-f", "lavfi", "-i",
                    "testsrc=s=48x36:r=10", "-frames:v", "40", "-vf",
                    "setpts='if(gte(N,20),PTS+20,PTS)'", "-fps_mode", "passthrough", "-c:v",
                    "ffv1", str(vfr)], check=True, timeout=60)  # fmt: skip
    res = run_cli("separate", vfr, "-o", tmp_path / "out", "--json", "-q", "--rank", "1")
    assert res.code == 0, res.err
    summary = res.json()
    assert summary["frames"] == 40 and len(output_files(tmp_path / "out" / "masks")) == 40
    assert summary["times"][20] - summary["times"][19] == pytest.approx(2.1)


# --- the solver's edges ------------------------------------------------------------------


def test_a_diverging_solve_fails_with_what_to_lower(run_cli, clip: Path, tmp_path: Path) -> None:
    """--gamma 1.9 with the default inertia diverges (Algorithm 1 itself does): exit 1,
    one line naming the input and the options to lower, nothing kept."""
    out = tmp_path / "out"
    res = run_cli("separate", clip, "-o", out, "--gamma", "1.9", "--max-iter", "400", "--tol",
                  "1e-9", "-q")  # fmt: skip
    assert_one_error_line(res, 1, r"clip\.mkv: bestpair diverged at iteration \d+",
                          r"lower --gamma .*--inertia-a.*nothing was kept")  # fmt: skip
    assert not out.exists()


# --- batch: collisions name the config's line --------------------------------------------


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (
            "report: out/summary.json\njobs:\n  - input: {clip}\n    output: out\n",
            r"the output of jobs\[0\] \(b\.yaml:3\) is also the report",
        ),
        (
            "jobs:\n  - input: {clip}\n    output: a\n    masks-to: b/summary.json\n"
            "  - input: {clip}\n    output: b\n",
            r"the output of jobs\[1\] \(b\.yaml:5\) is also the masks-to of "
            r"jobs\[0\] \(b\.yaml:2\)",
        ),
        (
            "jobs:\n  - input: {clip}\n    output: a\n  - input: a/background.mp4\n    output: c\n",
            r"the output of jobs\[0\] \(b\.yaml:2\) would replace the input of jobs\[1\]",
        ),
    ],
    ids=["report", "masks-to", "input"],
)
def test_batch_collisions_name_the_job(run_cli, clip: Path, tmp_path: Path, text, where) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "background.mp4").write_bytes(clip.read_bytes())
    config = tmp_path / "b.yaml"
    config.write_text(text.format(clip=clip))
    res = run_cli("batch", config, "--dry-run")
    line = assert_one_error_line(res, 2, where, r"choose another '(output|masks-to):' of jobs")
    assert " -o" not in line


# --- wrong message: the environment ------------------------------------------------------


@pytest.mark.parametrize("args", [["{clip}"], ["../clip.mkv", "-o", "{tmp}/out"]],
                         ids=["default-output", "relative-input"])  # fmt: skip
def test_a_removed_working_folder(clip: Path, tmp_path: Path, args: list[str]) -> None:
    """The shell's folder was removed: one line saying so (not "internal error"), exit 2."""
    (tmp_path / "gone").mkdir()
    argv = " ".join(f"'{a.format(clip=clip, tmp=tmp_path)}'" for a in args)
    script = f"cd gone && rmdir ../gone && exec '{sys.executable}' -m bpvideo separate {argv} -q"
    proc = subprocess.run(["sh", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          env=child_env(), timeout=120, check=False)  # fmt: skip
    res = CliResult(proc.returncode, proc.stdout, proc.stderr)
    assert_one_error_line(res, 2, "the current folder no longer exists", "cd to a folder")
    assert not (tmp_path / "out").exists()
