"""The refusals of issue 27, for ``bench_hostile.py --refusals``: each case makes its
inputs in a fresh folder and runs ``bpvideo`` in a child process (``TMPDIR`` a folder of
its own); the run must end with one error line and the documented exit status within a
few seconds (or succeed, for the cases marked 0), change no file outside ``out/``, and
leave nothing behind: no ``.bpvideo-*`` file or folder anywhere, nothing in TMPDIR, no
process of its own still running.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import psutil

REPO = Path(__file__).resolve().parents[1]
#: Seconds a refusal may take ("a few").
QUICK = 10.0


def _ffmpeg() -> str:
    import imageio_ffmpeg

    return imageio_ffmpeg.get_ffmpeg_exe()


def _clip(path: Path, *args: str, pattern: str = "testsrc=s=48x36:r=10") -> Path:
    cmd = [_ffmpeg(), "-v", "error", "-y", "-f", "lavfi", "-i", pattern, *args]
    subprocess.run([*cmd, str(path)], check=True)
    return path


def _frames(folder: Path, n: int = 12, ext: str = ".jpg", name: str = "in{:06d}") -> Path:
    import cv2

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(1, n + 1):
        image = rng.integers(0, 255, (36, 48, 3), dtype=np.uint8)
        (folder / f"{name.format(i)}{ext}").write_bytes(cv2.imencode(ext, image)[1].tobytes())
    return folder


def cases(tmp: Path) -> dict[str, tuple[int, Callable[[], list[str]]]]:
    """Name -> (expected exit status, a function making the inputs and returning argv)."""
    out = str(tmp / "out")

    def clip() -> Path:
        return _clip(tmp / "cam.mkv", "-frames:v", "12", "-c:v", "ffv1")

    def write(name: str, text: str) -> Path:
        (tmp / name).write_text(text)
        return tmp / name

    def truncated() -> list[str]:
        folder = _frames(tmp / "frames")
        bad = folder / "in000006.jpg"
        bad.write_bytes(bad.read_bytes()[:300])
        return ["separate", str(folder), "-o", out, "--no-video"]

    def locked() -> list[str]:
        (tmp / "out").mkdir()
        fd = os.open(tmp / "out" / ".bpvideo-lock", os.O_RDWR | os.O_CREAT)
        fcntl.flock(fd, fcntl.LOCK_EX)  # another run writing OUTDIR (released at exit)
        return ["separate", str(clip()), "-o", out]

    def fifo() -> list[str]:
        os.mkfifo(tmp / "masks.fifo")
        return ["separate", str(clip()), "-o", out, "--masks-to", str(tmp / "masks.fifo")]

    def not_utf8() -> list[str]:
        name = os.fsencode(str(tmp)) + b"/cl\xffip.mkv"
        shutil.copy(clip(), name)
        return ["separate", os.fsdecode(name), "-o", out, "-q"]

    def result() -> Path:  # an output of separate, made before the case runs
        env = dict(os.environ, PYTHONPATH=str(REPO), OPENBLAS_NUM_THREADS="1")
        subprocess.run([sys.executable, "-m", "bpvideo", "separate", str(clip()), "-o",
                        str(tmp / "res"), "--no-video", "-q"], check=True, env=env,
                       stdout=subprocess.DEVNULL)  # fmt: skip
        return tmp / "res"

    def damaged_settings() -> list[str]:
        summary = result() / "summary.json"
        summary.write_text(summary.read_text().replace('"rank": 2', '"rank": -5'))
        return ["events", str(tmp / "res")]

    return {
        "events-summary-settings-edited": (2, damaged_settings),
        "evaluate-groundtruth-dev-null": (2, lambda: ["evaluate", str(result()), "/dev/null"]),
        "frame-names-past-int64 (ok)": (
            0,
            lambda: [
                "separate",
                str(_frames(tmp / "big", 6, ".png", "in{}" + "0" * 25)),
                "-o",
                out,
                "-q",
                "--no-video",
            ],
        ),
        "start-time-year-9999 (ok)": (
            0,
            lambda: [
                "separate",
                str(clip()),
                "-o",
                out,
                "-q",
                "--start-time",
                "9999-12-31T23:59:59",
            ],
        ),
        "matroska-clock-starts-late (ok)": (
            0,
            lambda: [
                "separate",
                str(
                    _clip(
                        tmp / "late.mkv",
                        "-frames:v",
                        "12",
                        "-c:v",
                        "ffv1",
                        "-output_ts_offset",
                        "1000",
                    )
                ),
                "-o",
                out,
                "-q",
            ],
        ),
        "logfile-onto-input": (
            2,
            lambda: ["separate", str(clip()), "-o", out, "--logfile", str(tmp / "cam.mkv")],
        ),
        "logfile-onto-batch-config": (
            2,
            lambda: [
                "batch",
                str(write("b.yaml", f"jobs:\n  - input: {clip()}\n    output: out\n")),
                "--logfile",
                str(tmp / "b.yaml"),
            ],
        ),
        "defaults-masks-to-itself": (
            2,
            lambda: [
                "separate",
                str(clip()),
                "-o",
                out,
                "-c",
                str(write("d.yaml", "masks-to: d.yaml\n")),
            ],
        ),
        "outdir-locked-by-another-run": (2, locked),
        "batch-report-onto-an-output": (
            2,
            lambda: [
                "batch",
                str(
                    write(
                        "c.yaml",
                        f"report: out/summary.json\njobs:\n  - input: {clip()}\n    output: out\n",
                    )
                ),
            ],
        ),
        "hls-playlist": (
            2,
            lambda: [
                "separate",
                str(
                    write(
                        "cam.m3u8",
                        f"#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\n{clip().name}\n"
                        "#EXT-X-ENDLIST\n",
                    )
                ),
                "-o",
                out,
            ],
        ),
        "ffconcat-as-mp4": (
            2,
            lambda: [
                "separate",
                str(
                    write(
                        "list.mp4",
                        f"ffconcat version 1.0\nfile {clip().name}\nfile /etc/hostname\n",
                    )
                ),
                "-o",
                out,
            ],
        ),
        "truncated-jpeg-in-folder": (2, truncated),
        "folder-of-two-groups": (
            2,
            lambda: [
                "separate",
                str(_frames(_frames(tmp / "two", 6, name="a{}"), 6, name="b{}")),
                "-o",
                out,
            ],
        ),
        "masks-to-fifo-no-reader": (2, fifo),
        "diverging-gamma": (
            1,
            lambda: [
                "separate",
                str(clip()),
                "-o",
                out,
                "--gamma",
                "1.9",
                "--max-iter",
                "400",
                "--tol",
                "1e-9",
            ],
        ),
        "stdout-full": (1, lambda: ["separate", str(clip()), "-o", out, ">", "/dev/full"]),
        "name-not-utf8 (ok)": (0, not_utf8),
        "vfr-40-frames (ok)": (
            0,
            lambda: [
                "separate",
                str(
                    _clip(
                        tmp / "vfr.mkv",
                        "-frames:v",
                        "40",
                        "-vf",
                        "setpts='if(gte(N,20),PTS+20,PTS)'",
                        "-fps_mode",
                        "passthrough",
                        "-c:v",
                        "ffv1",
                    )
                ),
                "-o",
                out,
                "-q",
            ],
        ),
    }


def _files(root: Path) -> dict[str, int]:
    """Every file under ``root`` but ``out/`` and TMPDIR, with its mtime."""
    found = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if rel.parts[0] in ("out", "tmpdir") or not path.is_file():
            continue
        found[str(rel)] = path.stat().st_mtime_ns
    return found


def run_case(argv: list[str], tmp: Path, expected: int) -> dict:
    """Run one case; what it did and what it left."""
    stdout = subprocess.DEVNULL
    if ">" in argv:
        i = argv.index(">")
        stdout = open(argv[i + 1], "w")  # closed below
        argv = argv[:i]
    (tmp / "tmpdir").mkdir(exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(REPO), OPENBLAS_NUM_THREADS="1",
               TMPDIR=str(tmp / "tmpdir"))  # fmt: skip
    before = _files(tmp)
    earlier = {str(p.relative_to(tmp)) for p in tmp.rglob(".bpvideo-*")}  # the harness's
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "bpvideo", *argv], stdout=stdout,
                            stderr=subprocess.PIPE, cwd=tmp, env=env)  # fmt: skip
    children = []
    with __import__("contextlib").suppress(psutil.Error):
        children = psutil.Process(proc.pid).children(recursive=True)
    _, err = proc.communicate(timeout=300)
    seconds = time.monotonic() - t0
    if stdout is not subprocess.DEVNULL:
        stdout.close()
    lines = err.decode("utf-8", "replace").strip().splitlines()
    errors = [line for line in lines if line.startswith("bpvideo: error")]
    left = [str(p.relative_to(tmp)) for p in tmp.rglob(".bpvideo-*")
            if str(p.relative_to(tmp)) not in earlier]  # fmt: skip
    left += [f"tmpdir/{p.name}" for p in (tmp / "tmpdir").iterdir()]
    alive = [c.pid for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    changed = sorted(k for k, v in _files(tmp).items() if before.get(k) != v)
    return {
        "code": proc.returncode,
        "seconds": seconds,
        "one_line": len(errors) == 1 and lines[-1] == errors[0] if expected else not errors,
        "last": lines[-1] if lines else "",
        "traceback": any("Traceback" in line for line in lines),
        "outside": changed,
        "left": left + [f"pid {p}" for p in alive],
    }


def run_refusals(only: str | None = None) -> int:
    """Print the table of the refusals; 1 when one of them is bad."""
    print("| case | exit (wanted) | seconds | one line | written outside | left | last line |")
    print("|---|---|---|---|---|---|---|")
    bad = 0
    for name in cases(Path("/nonexistent")):
        if only and only not in name:
            continue
        tmp = Path(tempfile.mkdtemp(prefix="bph27-"))
        try:
            expected, make = cases(tmp)[name]
            res = run_case(make(), tmp, expected)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        wrong = (res["code"] != expected or not res["one_line"] or res["traceback"]
                 or res["outside"] or res["left"]
                 or (expected and res["seconds"] > QUICK))  # fmt: skip
        bad += bool(wrong)
        flag = " **bad**" if wrong else ""
        last = res["last"].replace("|", "/")[:150]
        print(f"| {name} | {res['code']} ({expected}) | {res['seconds']:.1f} | "
              f"{'yes' if res['one_line'] else 'no'} | {', '.join(res['outside']) or '-'} | "
              f"{', '.join(res['left']) or '-'} | {last}{flag} |", flush=True)  # fmt: skip
    return 1 if bad else 0
