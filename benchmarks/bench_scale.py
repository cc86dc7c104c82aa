"""bpvideo against OpenCV's MOG2 (and GSOC) at 320x240, 640x480, 1280x720 and 1920x1080.

One synthetic street clip (:func:`bpvideo.synthetic.make_scene` at 480x270, looped when
``--frames`` is longer than 300) is encoded once per size (ffmpeg, bicubic, H.264 CRF 16);
then at every size each method does its whole job in its own child process, timed from
process start to exit, the methods taking turns (``--repeat`` rounds, medians reported), so
that the load of a shared machine weighs on all of them alike:

- ``bpvideo``: ``separate CLIP -o TMP`` at defaults (two H.264 videos, the PNG masks, the
  background still and the summary);
- ``mog2`` / ``gsoc``: decode with the same ffmpeg, ``apply`` every frame, one PNG mask
  per frame (GSOC by the Python given with ``--gsoc-python``: opencv-contrib).

Prints a Markdown table: seconds, frames per second, the ratios bpvideo / method (<= 1:
bpvideo as fast or faster), the CPU share (user + sys seconds over wall seconds, medians:
100 % is one core busy; of the child and of the ffmpeg processes it waited for, from
``RUSAGE_CHILDREN``) and peak RSS (``ru_maxrss`` of the child; ffmpeg's own processes not
included), then bpvideo's stages (``summary.json``) and its window plan. ``--profile``
runs bpvideo once per size under cProfile and prints the functions taking the most time.

Usage::

    python benchmarks/bench_scale.py --gsoc-python /work/venv-contrib/bin/python --repeat 3
    python benchmarks/bench_scale.py --sizes 1920x1080 --frames 3000 --only bpvideo
    python benchmarks/bench_scale.py --profile --only bpvideo --repeat 1
    python benchmarks/bench_scale.py --sizes 320x240,1280x720 --repeat 5 \
        --only bpvideo baseline --baseline-src /tmp/base    # against the code before a change

``--baseline-src`` runs another checkout's bpvideo as one more method (``baseline``),
taking turns with the others, so a change is timed against the code before it on the
same load.
"""

from __future__ import annotations

import argparse
import io
import json
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_end_to_end as e2e
import numpy as np

SIZES = "320x240,640x480,1280x720,1920x1080"
#: The clip is drawn at this size, then scaled to each size by ffmpeg.
SCENE_SIZE = (480, 270)
#: Frames drawn; longer clips loop them.
SCENE_FRAMES = 300


def make_clip(path: Path, size: tuple[int, int], frames: int, ffmpeg: str) -> None:
    """Encode the synthetic scene, ``frames`` long, at ``size`` (w, h) to ``path``."""
    from bpvideo.synthetic import make_scene

    scene = make_scene(*SCENE_SIZE, min(frames, SCENE_FRAMES), seed=0)
    raw = np.ascontiguousarray(scene.frames).tobytes()
    cmd = [
        ffmpeg, "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "bgr24",
        "-s", f"{SCENE_SIZE[0]}x{SCENE_SIZE[1]}", "-r", "25", "-i", "-",
        "-vf", f"scale={size[0]}:{size[1]}:flags=bicubic", "-c:v", "libx264",
        "-preset", "ultrafast", "-crf", "16", "-pix_fmt", "yuv420p", str(path),
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE)
    assert proc.stdin is not None
    left = frames
    while left > 0:
        take = min(left, len(scene.frames))
        proc.stdin.write(raw[: take * len(raw) // len(scene.frames)])
        left -= take
    proc.stdin.close()
    if proc.wait():
        raise SystemExit(f"ffmpeg could not write {path}")


def profile(clip: Path, frames: int, out: Path, extra: list[str], top: int) -> str:
    """cProfile of one ``bpvideo separate`` run: the ``top`` functions by own time."""
    stats = out.with_suffix(".prof")
    cmd = [sys.executable, "-m", "cProfile", "-o", str(stats), "-m", "bpvideo", "separate",
           str(clip), "--frames", str(frames), "-o", str(out), "--overwrite", "-q",
           *extra]  # fmt: skip
    subprocess.run(cmd, env=e2e._env(), check=True, capture_output=True)
    text = io.StringIO()
    pstats.Stats(str(stats), stream=text).sort_stats("tottime").print_stats(top)
    return text.getvalue()


def run(args: argparse.Namespace) -> None:
    import imageio_ffmpeg

    ffmpeg = imageio_ffmpeg.get_ffmpeg_exe()
    env = e2e._env()
    methods = [("bpvideo", sys.executable), ("mog2", sys.executable)]
    if args.baseline_src:
        methods.insert(1, ("baseline", sys.executable))
    if args.gsoc_python:
        methods.append(("gsoc", args.gsoc_python))
    methods = [m for m in methods if not args.only or m[0] in args.only]
    extra = args.extra_args.split()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.sizes.split(","):
            w, h = (int(v) for v in spec.split("x"))
            clip = Path(tmp) / f"scene-{w}x{h}.mp4"
            print(f"{spec}: encoding the clip ...", file=sys.stderr)
            make_clip(clip, (w, h), args.frames, ffmpeg)
            if args.profile:
                top = profile(clip, args.frames, Path(tmp) / "prof", extra, 25)
                print(f"## {spec}\n\n```\n{top}```")
            walls: dict[str, list[float]] = {name: [] for name, _ in methods}
            peaks: dict[str, int] = {}
            shares: dict[str, list[float]] = {name: [] for name, _ in methods}
            summary: dict = {}
            for rep in range(args.repeat):
                for name, python in methods:
                    out = str(Path(tmp) / f"{name}-{spec}-{rep}")
                    if name in ("bpvideo", "baseline"):
                        argv = ["--child-bpvideo", str(clip), "-o", out, "--overwrite", *extra]
                    else:
                        argv = ["--child-opencv", name, str(clip), str(args.frames), out, ffmpeg]
                    print(f"{spec} run {rep + 1}/{args.repeat}: {name} ...", file=sys.stderr)
                    child_env = e2e._env(Path(args.baseline_src)) if name == "baseline" else env
                    wall, info = e2e._run_child(python, argv, child_env)
                    walls[name].append(wall)
                    shares[name].append(info["cpu"] / wall)
                    peaks[name] = max(peaks.get(name, 0), info["peak_rss"])
                    if name == "bpvideo":
                        summary = json.loads((Path(out) / "summary.json").read_text())
                    subprocess.run(["rm", "-rf", out], check=False)
            med = {n: statistics.median(v) for n, v in walls.items()}
            cpu = {n: statistics.median(v) for n, v in shares.items()}
            rows.append((spec, med, peaks, summary, cpu))
            print(f"{spec}: " + ", ".join(f"{n} {v:.2f}s" for n, v in med.items()), file=sys.stderr)
    print_table(rows, methods, args)


def print_table(rows: list, methods: list[tuple[str, str]], args: argparse.Namespace) -> None:
    """The Markdown table of :func:`run`, then bpvideo's stages and plans."""
    names = [n for n, _ in methods]
    head = [f"{n} s" for n in names] + ["bpvideo fps"]
    head += [f"bpvideo/{n}" for n in names if n != "bpvideo" and "bpvideo" in names]
    head += [f"{n} CPU %" for n in names]
    head += [f"{n} peak MiB" for n in names]
    print(f"\n{args.frames} frames, median of {args.repeat} runs, {time.strftime('%Y-%m-%d')}\n")
    print("| size | " + " | ".join(head) + " |")
    print("|---|" + "---|" * len(head))
    for spec, med, peaks, _, cpu in rows:
        cells = [f"{med[n]:.2f}" for n in names]
        if "bpvideo" in names:
            cells.append(f"{args.frames / med['bpvideo']:.0f}")
            cells += [f"{med['bpvideo'] / med[n]:.2f}" for n in names if n != "bpvideo"]
        cells += [f"{100 * cpu[n]:.0f}" for n in names]
        cells += [f"{peaks[n] / 2**20:.0f}" for n in names]
        print(f"| {spec} | " + " | ".join(cells) + " |")
    for spec, _, _, summary, _ in rows:
        if summary:
            stages = ", ".join(f"{k} {v:.2f}" for k, v in summary["seconds"].items())
            solver = summary["solver"]
            plan = {k: v for k, v in summary["windows"].items() if k != "list"}
            print(f"\n- {spec}: stages (s, last run) {stages}; solve scale "
                  f"{solver['solve_scale']:.3f}, {solver['iterations']} iterations; "
                  f"plan {json.dumps(plan)}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=SIZES, help=f"WxH,... (default {SIZES})")
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--gsoc-python", help="a Python with opencv-contrib (runs GSOC)")
    parser.add_argument("--only", nargs="+", choices=("bpvideo", "baseline", "mog2", "gsoc"))
    parser.add_argument(
        "--baseline-src",
        help="a checkout of another bpvideo version, run as one more method ('baseline') "
        "in the same run, e.g. `git worktree add /tmp/base HEAD~1`",
    )
    parser.add_argument("--extra-args", default="", help="options added to bpvideo separate")
    parser.add_argument("--profile", action="store_true", help="cProfile bpvideo at each size")
    run(parser.parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
