"""Peak memory and time of the worst small inputs (each under 1 MB) against the memory
estimate bpvideo prints (issue 15).

Each case is a file (or a few) of under 1 MB made to cost as much as it can: frames of the
largest size the bounds allow, images or streams that announce more than they hold, YAML
that expands, option values at their bounds. Each runs as ``bpvideo separate`` (or
``batch``) in a child process; the peak resident memory of the whole process tree
(bpvideo and its ffmpeg children) is sampled every 20 ms and set against the estimate on
bpvideo's ``read`` line (``memory N MiB at most``), when there is one.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_hostile.py [--only NAME] [--keep DIR]

Prints a Markdown table: case, input bytes, exit code, seconds, peak MiB, estimate MiB,
and the last line on stderr. A run is bad when the peak exceeds the estimate, when it
takes more than a minute to fail, or when it ends with a traceback.

``--refusals`` runs the second round of bad inputs instead (issue 27: outputs onto
inputs through every option, lists of other files, damaged frames, divergence, the
environment): each must fail with one line and its documented exit status within a few
seconds (or, for the cases marked so, succeed), write nothing outside its output, and
leave nothing behind (no staging folder, no lock, nothing in TMPDIR, no child process)::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_hostile.py --refusals
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]

LIMIT_BYTES = 1 << 20
#: One 48x36 frame of a 4:2:0 y4m stream.
FRAME = bytes(48 * 36 * 3 // 2)
TIMEOUT = 300.0


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(width: int, height: int, *, pixels: bool = True) -> bytes:
    """A grey PNG of zeros (``pixels``: all of them, deflated; else none at all)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    if pixels:
        comp = zlib.compressobj(9)
        row = b"\0" * (width + 1)
        body = b"".join(comp.compress(row) for _ in range(height)) + comp.flush()
    else:
        body = zlib.compress(b"\0" * 64)
    return (
        b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", body) + _chunk(b"IEND", b"")
    )


def make_folder(folder: Path, width: int, height: int, n: int, pixels: bool = True) -> Path:
    folder.mkdir(parents=True)
    data = png(width, height, pixels=pixels)
    for i in range(1, n + 1):
        (folder / f"in{i:06d}.png").write_bytes(data)
    return folder


def make_video(path: Path, width: int, height: int, n: int) -> Path:
    """A still, black clip (H.264 makes a huge frame of one colour a few hundred bytes)."""
    import imageio_ffmpeg

    cmd = [imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-f", "lavfi", "-i",
           f"color=black:s={width}x{height}:r=25", "-frames:v", str(n), "-c:v", "libx264",
           "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(path)]  # fmt: skip
    subprocess.run(cmd, check=True)
    return path


def yaml_bomb(path: Path) -> Path:
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    path.write_text("\n".join(lines) + "\njobs:\n  - input: x\n    rank: *a8\n")
    return path


def cases(tmp: Path) -> dict[str, Callable[[], list[str]]]:
    """Name -> a function making the input(s) and returning bpvideo's arguments."""
    out = str(tmp / "out")

    def sep(*args: object) -> list[str]:
        return ["separate", *map(str, args), "-o", out]

    def piped(path: Path) -> list[str]:  # the file on stdin
        return ["separate", "-", "-o", out, "<", str(path)]

    def y4m(header: bytes, body: bytes = b"FRAME\n") -> Path:
        path = tmp / "in.y4m"
        path.write_bytes(b"YUV4MPEG2 " + header + body)
        return path

    return {
        # frames of the largest size the bounds allow (2**27 pixels), decoded for real
        "png-max-pixels-x3": lambda: sep(make_folder(tmp / "f1", 16384, 8192, 3)),
        "png-max-pixels-x3-color": lambda: sep(make_folder(tmp / "f2", 16384, 8192, 3), "--color"),
        # images that announce more than the bounds, or more than they hold
        "png-over-bounds-x3": lambda: sep(make_folder(tmp / "f3", 20000, 20000, 3, False)),
        "png-announce-no-pixels": lambda: sep(make_folder(tmp / "f4", 8000, 8000, 3, False)),
        # a small, long clip of large frames
        "h264-4096x2160x300": lambda: sep(make_video(tmp / "v1.mp4", 4096, 2160, 300)),
        "h264-4096x2160x300-r50": lambda: sep(
            make_video(tmp / "v2.mp4", 4096, 2160, 300),
            "--open-radius",
            50,
            "--close-radius",
            50,
            "--solve-scale",
            1,
            "--frames",
            10,
        ),
        # a valid small clip that runs: its peak against its estimate
        "h264-1920x1080x100": lambda: sep(make_video(tmp / "v5.mp4", 1920, 1080, 100)),
        # raw streams whose header claims the world
        "y4m-max-pixels-short": lambda: piped(y4m(b"W16384 H8192 F25:1 C420jpeg\n")),
        "y4m-no-newline": lambda: piped(y4m(b"W48 H36 " + b"X" * (LIMIT_BYTES - 100), b"")),
        "y4m-rate-1e300": lambda: piped(y4m(b"W48 H36 F1e300:1\n", (b"FRAME\n" + FRAME) * 20)),
        # options at (and past) their bounds
        "scale-1e-6": lambda: sep(make_video(tmp / "v3.mp4", 64, 48, 10), "--scale", "1e-6"),
        "open-radius-20000": lambda: sep(
            make_video(tmp / "v4.mp4", 64, 48, 10), "--open-radius", 20000
        ),
        # configs
        "yaml-alias-bomb": lambda: ["batch", str(yaml_bomb(tmp / "bomb.yaml"))],
        "yaml-deep": lambda: [
            "batch",
            str(_write(tmp / "deep.yaml", "jobs: " + "[" * 200_000 + "]" * 200_000)),
        ],
    }


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def run_case(args: list[str], cwd: Path) -> dict:
    """Run bpvideo with ``args`` (``<`` FILE: as stdin), sampling the tree's memory."""
    stdin = None
    if "<" in args:
        i = args.index("<")
        stdin = open(args[i + 1], "rb")
        args = args[:i]
    env = dict(os.environ, PYTHONPATH=str(REPO), OPENBLAS_NUM_THREADS="1")
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bpvideo", *args],
        stdin=stdin or subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
    )
    err_chunks: list[bytes] = []
    import threading

    reader = threading.Thread(target=lambda: err_chunks.append(proc.stderr.read()), daemon=True)
    reader.start()
    peak = 0
    root = psutil.Process(proc.pid)
    while proc.poll() is None:
        total = 0
        try:
            for p in [root, *root.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
        except psutil.Error:
            pass
        peak = max(peak, total)
        if time.monotonic() - t0 > TIMEOUT:
            proc.kill()
        time.sleep(0.02)
    seconds = time.monotonic() - t0
    reader.join(5)
    if stdin is not None:
        stdin.close()
    err = b"".join(err_chunks).decode("utf-8", "replace")
    found = re.search(r"memory ([0-9.]+) (MiB|GiB) at most", err)
    estimate = None
    if found:
        estimate = float(found.group(1)) * (1024 if found.group(2) == "GiB" else 1)
    last = err.strip().splitlines()[-1] if err.strip() else ""
    return {
        "code": proc.returncode,
        "seconds": seconds,
        "peak": peak / 2**20,
        "estimate": estimate,
        "last": last,
        "traceback": "Traceback" in err,
    }


def input_bytes(tmp: Path) -> int:
    return sum(p.stat().st_size for p in tmp.rglob("*") if p.is_file() and "out" not in p.parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="run only the cases whose name holds this")
    parser.add_argument("--keep", type=Path, help="make the inputs here (kept)")
    parser.add_argument("--refusals", action="store_true", help="the refusals of issue 27")
    args = parser.parse_args()
    if args.refusals:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from hostile_refusals import run_refusals

        return run_refusals(args.only)
    print("| case | input bytes | exit | seconds | peak MiB | estimate MiB | last line |")
    print("|---|---|---|---|---|---|---|")
    bad = 0
    names = list(cases(Path("/nonexistent")))
    for name in names:
        if args.only and args.only not in name:
            continue
        tmp = (args.keep / name) if args.keep else Path(tempfile.mkdtemp(prefix="bph-"))
        tmp.mkdir(parents=True, exist_ok=True)
        try:
            argv = cases(tmp)[name]()
            size = input_bytes(tmp)
            res = run_case(argv, tmp)
        finally:
            if not args.keep:
                shutil.rmtree(tmp, ignore_errors=True)
        over = res["estimate"] is not None and res["peak"] > res["estimate"]
        slow = res["code"] != 0 and res["seconds"] > 60
        flag = " **over**" if over else ""
        flag += " **slow**" if slow else ""
        flag += " **traceback**" if res["traceback"] else ""
        flag += " **input over 1 MB**" if size >= LIMIT_BYTES else ""
        bad += bool(flag)
        estimate = "" if res["estimate"] is None else f"{res['estimate']:.0f}"
        last = res["last"].replace("|", "/")[:160]
        print(f"| {name} | {size} | {res['code']} | {res['seconds']:.1f} | {res['peak']:.0f} | "
              f"{estimate} | {last}{flag} |", flush=True)  # fmt: skip
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
