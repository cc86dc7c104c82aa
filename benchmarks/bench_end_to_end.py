"""End-to-end speed of ``bpvideo separate`` against OpenCV's subtractors, and its quality.

Speed (default): every method does the same job on the same clip in its own child process,
timed from process start to exit (imports included):

- ``bpvideo``: ``python -m bpvideo separate CLIP --frames N -o TMP --overwrite -q`` at
  default settings (it also writes two videos, a background still and a summary);
- ``mog2``, ``knn``: decode the clip with the same ffmpeg binary bpvideo uses (a raw BGR
  pipe), ``cv2.createBackgroundSubtractorMOG2/KNN().apply`` each frame, and write one PNG
  mask per frame with ``cv2.imwrite``;
- ``gsoc``: the same with ``cv2.bgsegm.createBackgroundSubtractorGSOC`` (opencv-contrib),
  run by a second Python given with ``--gsoc-python`` (the contrib and headless wheels
  conflict in one environment); skipped when not given.

Each is run ``--repeat`` times; the table gives the median frames per second, the ratio
``bpvideo time / method time`` (<= 1 means bpvideo is as fast or faster), and the child's
peak resident memory (``ru_maxrss``; for bpvideo also as a multiple of the bytes of the
float32 pixels x frames matrix).

Quality (``--quality``): ``bpvideo separate`` at defaults on the five sequences of
``../shared/data``, scored by :func:`bpvideo.evaluate.evaluate`; prints the F-measure per
sequence. ``--extra-args`` passes options to ``separate`` (e.g. ``--init median``).

Usage::

    python benchmarks/bench_end_to_end.py --gsoc-python /work/venv-contrib/bin/python
    python benchmarks/bench_end_to_end.py --quality
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
DEFAULT_CLIP = SHARED / "videos" / "highway.avi"

#: name -> (input, ground truth) relative to ../shared/data
SEQUENCES = {
    "cdnet_highway": ("cdnet_highway", "cdnet_highway/groundtruth"),
    "wallflower_WavingTrees": (
        "wallflower_WavingTrees",
        "wallflower_WavingTrees/hand_segmented_00247.BMP",
    ),
    "sbi_HighwayI": ("sbi_HighwayI", "sbi_HighwayI/groundtruth"),
    "sbi_CaVignal": ("sbi_CaVignal", "sbi_CaVignal/groundtruth"),
    "sbi_IBMtest2": ("sbi_IBMtest2", "sbi_IBMtest2/groundtruth"),
}


# --- children ----------------------------------------------------------------------------


def opencv_child(method: str, clip: str, frames: int, outdir: str, ffmpeg: str) -> dict:
    """Decode, subtract and write PNG masks with an OpenCV subtractor (no bpvideo import)."""
    import cv2
    import numpy as np

    probe = subprocess.run(
        [ffmpeg, "-hide_banner", "-i", clip], capture_output=True, text=True, check=False
    ).stderr
    import re

    w, h = (int(v) for v in re.search(r", (\d{2,5})x(\d{2,5})", probe).groups())
    if method == "mog2":
        sub = cv2.createBackgroundSubtractorMOG2()
    elif method == "knn":
        sub = cv2.createBackgroundSubtractorKNN()
    else:
        sub = cv2.bgsegm.createBackgroundSubtractorGSOC()
    cmd = [
        ffmpeg,
        "-v",
        "error",
        "-i",
        clip,
        "-frames:v",
        str(frames),
        "-f",
        "rawvideo",
        "-pix_fmt",
        "bgr24",
        "-",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    size = w * h * 3
    count = 0
    os.makedirs(outdir, exist_ok=True)
    while True:
        buf = proc.stdout.read(size)
        if len(buf) < size:
            break
        frame = np.frombuffer(buf, np.uint8).reshape(h, w, 3)
        fg = sub.apply(frame)
        count += 1
        cv2.imwrite(os.path.join(outdir, f"bin{count:06d}.png"), fg)
    proc.wait()
    return {"frames": count, "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def bpvideo_child(args: list[str]) -> dict:
    """Run ``bpvideo separate ARGS`` in this process as the console script does (its
    process set-up included); report its peak memory."""
    from bpvideo._cli import main

    sys.argv = ["bpvideo", "separate", *args, "--json", "-q"]
    code = main()
    if code:
        raise SystemExit(code)
    return {"peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


#: Starts the child from a fresh small process, and times it there: Linux carries the
#: resident size of the process that forks into the child's peak (``ru_maxrss`` survives
#: ``exec``), and this benchmark's process may hold a clip's frames.
#: It also prints the CPU seconds (user + sys) of the child and of every process it waited
#: for (ffmpeg's decoders and encoders included: ``RUSAGE_CHILDREN``).
_LAUNCH = (
    "import resource, subprocess, sys, time; t = time.perf_counter(); "
    "code = subprocess.call(sys.argv[1:]); "
    "print(f'child seconds {time.perf_counter() - t!r}', file=sys.stderr); "
    "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
    "print(f'child cpu {u.ru_utime + u.ru_stime!r}', file=sys.stderr); sys.exit(code)"
)


def _run_child(python: str, argv: list[str], env: dict) -> tuple[float, dict]:
    out = subprocess.run(
        [sys.executable, "-c", _LAUNCH, python, __file__, *argv],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    timed = [ln for ln in out.stderr.splitlines() if ln.startswith("child seconds ")]
    wall = float(timed[-1].split()[-1]) if timed else float("nan")
    if out.returncode:
        raise RuntimeError(f"child {argv} failed: {out.stderr.strip()[-2000:]}")
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{") and '"peak_rss"' in ln]
    info = json.loads(lines[-1])
    cpu = [ln for ln in out.stderr.splitlines() if ln.startswith("child cpu ")]
    info["cpu"] = float(cpu[-1].split()[-1]) if cpu else float("nan")
    return wall, info


def _env(root: Path = ROOT) -> dict:
    """The children's environment: ``root``'s bpvideo first on the path, its modules
    compiled as an installed package's are (pip compiles them at install; a source tree
    run with PYTHONDONTWRITEBYTECODE would compile ~0.15 s of modules in every run)."""
    compileall.compile_dir(str(root / "bpvideo"), quiet=1)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    return env


# --- speed -------------------------------------------------------------------------------


def speed(args: argparse.Namespace) -> None:
    import imageio_ffmpeg

    ffmpeg = imageio_ffmpeg.get_ffmpeg_exe()
    env = _env()
    methods: list[tuple[str, str]] = [("bpvideo", sys.executable)]
    if args.baseline_src:
        methods.append(("baseline", sys.executable))
    methods += [("mog2", sys.executable), ("knn", sys.executable)]
    if args.gsoc_python:
        methods.append(("gsoc", args.gsoc_python))
    extra = shlex.split(args.extra_args)
    walls: dict[str, list[float]] = {name: [] for name, _ in methods}
    peaks: dict[str, int] = {}
    frames_done: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeat):
            for name, python in methods:
                # a fresh folder per run: removing the previous run's outputs is not the job
                out = str(Path(tmp) / f"{name}-{rep}")
                if name in ("bpvideo", "baseline"):
                    argv = [
                        "--child-bpvideo",
                        args.clip,
                        "--frames",
                        str(args.frames),
                        "-o",
                        out,
                        "--overwrite",
                        *extra,
                    ]
                else:
                    argv = ["--child-opencv", name, args.clip, str(args.frames), out, ffmpeg]
                print(f"run {rep + 1}/{args.repeat}: {name} ...", file=sys.stderr)
                child_env = _env(Path(args.baseline_src)) if name == "baseline" else env
                wall, info = _run_child(python, argv, child_env)
                walls[name].append(wall)
                peaks[name] = max(peaks.get(name, 0), info["peak_rss"])
                if name == "bpvideo":
                    summary = json.loads((Path(out) / "summary.json").read_text())
                    frames_done[name] = summary["frames"]
                    data_bytes = summary["width"] * summary["height"] * summary["frames"] * 4
                    stages = summary["seconds"]
                    iters = summary["solver"]["iterations"]
                elif name == "baseline":
                    done = json.loads((Path(out) / "summary.json").read_text())
                    frames_done[name] = done["frames"]
                else:
                    frames_done[name] = info["frames"]
    ref = statistics.median(walls["bpvideo"])
    print(f"clip: {args.clip}, {frames_done['bpvideo']} frames, median of {args.repeat} runs")
    print(f"{'method':>8} {'seconds':>8} {'fps':>7} {'bpvideo/method':>14} {'peak MiB':>8}")
    for name, _ in methods:
        med = statistics.median(walls[name])
        print(
            f"{name:>8} {med:8.2f} {frames_done[name] / med:7.1f} {ref / med:14.2f} "
            f"{peaks[name] / 2**20:8.0f}"
        )
    print(
        f"bpvideo: peak RSS {peaks['bpvideo'] / 2**20:.0f} MiB = "
        f"{peaks['bpvideo'] / data_bytes:.2f} x the float32 data matrix "
        f"({data_bytes / 2**20:.0f} MiB); {iters} iterations; last run's stages (s): "
        + ", ".join(f"{k} {v:.2f}" for k, v in stages.items())
    )


# --- quality -----------------------------------------------------------------------------


def quality(args: argparse.Namespace) -> None:
    env = _env()
    extra = shlex.split(args.extra_args)
    rows = []
    shared = Path(args.data)
    with tempfile.TemporaryDirectory() as tmp:
        for name, (inp, gt) in SEQUENCES.items():
            if not (shared / inp).exists():
                print(f"skip {name}: {shared / inp} absent", file=sys.stderr)
                continue
            out = str(Path(tmp) / name)
            print(f"{name} ...", file=sys.stderr)
            argv = ["--child-bpvideo", str(shared / inp), "-o", out, "--overwrite", *extra]
            wall, info = _run_child(sys.executable, argv, env)
            from bpvideo.evaluate import evaluate

            ev = evaluate(out, shared / gt)
            summary = json.loads((Path(out) / "summary.json").read_text())
            rows.append((name, summary, ev.summary, wall, info["peak_rss"]))
    print(f"extra options: {args.extra_args or '(defaults)'}")
    print(
        f"{'sequence':>24} {'frames':>6} {'size':>8} {'iters':>5} {'seconds':>7} "
        f"{'F-measure':>9} {'precision':>9} {'recall':>7}"
    )
    for name, s, ev, wall, _ in rows:
        print(
            f"{name:>24} {s['frames']:>6} {s['width']}x{s['height']:<4} "
            f"{s['solver']['iterations']:>5} {wall:7.1f} {ev['f_measure']:9.4f} "
            f"{ev['precision']:9.4f} {ev['recall']:7.4f}"
        )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child-opencv":
        method, clip, frames, outdir, ffmpeg = argv[1:6]
        print(json.dumps(opencv_child(method, clip, int(frames), outdir, ffmpeg)))
        return 0
    if argv and argv[0] == "--child-bpvideo":
        print(json.dumps(bpvideo_child(argv[1:])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip", default=str(DEFAULT_CLIP))
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--gsoc-python", help="a Python with opencv-contrib (runs GSOC)")
    parser.add_argument("--extra-args", default="", help="options added to bpvideo separate")
    parser.add_argument(
        "--baseline-src",
        help="a checkout of another bpvideo version, run as one more method ('baseline'), "
        "e.g. `git worktree add /tmp/base v0.3`",
    )
    parser.add_argument("--quality", action="store_true", help="F-measure on ../shared/data")
    parser.add_argument("--data", default=str(SHARED), help="the shared data folder")
    args = parser.parse_args(argv)
    if args.quality:
        quality(args)
    else:
        speed(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
