"""What the x264 preset costs ``bpvideo separate``, and what it saves: time, size, quality.

For each clip, ``python -m bpvideo separate CLIP -o TMP -q`` runs in a child process with
``--no-video`` (no encoder: the baseline), ``--lossless`` (the reference frames) and each
``--preset`` at ``--crf 18`` (the default), ``--repeat`` times; the table gives the median
seconds, the encoders' share (seconds - the ``--no-video`` seconds), the bytes of the two
videos, and their PSNR against the lossless ones (luma, over every frame).

Clips: ``../shared/data/videos/highway.avi`` (320x240) and, with ``--hd``, the same clip
upscaled to 1280x720 by ffmpeg (bicubic, stored as FFV1), ``--frames`` frames of each.

Usage::

    python benchmarks/bench_presets.py --repeat 3 --hd
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CLIP = ROOT.parent / "shared" / "data" / "videos" / "highway.avi"
PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium")


def run(clip: Path, out: Path, frames: int, *args: str) -> float:
    """Seconds of one ``bpvideo separate`` child, from start to exit."""
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "bpvideo", "separate", str(clip), "-o", str(out), "--overwrite",
         "-q", "--frames", str(frames), *args],
        check=True, cwd=ROOT, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"),
    )  # fmt: skip
    return time.perf_counter() - t


def luma_psnr(video: Path, reference: Path) -> float:
    """PSNR (dB) of the grey levels of ``video`` against ``reference``, over all frames."""
    from bpvideo.io.sources import open_source

    a, b = open_source(video), open_source(reference)
    se, count = 0.0, 0
    try:
        for (_, x), (_, y) in zip(a.frames, b.frames, strict=True):
            h, w = y.shape[:2]
            gx = x[:h, :w].astype(np.float64) @ [0.114, 0.587, 0.299]
            gy = y.astype(np.float64) @ [0.114, 0.587, 0.299]
            se += float(np.square(gx - gy).sum())
            count += gy.size
    finally:
        a.close()
        b.close()
    return 10 * np.log10(255.0**2 / max(se / count, 1e-12))


def upscale(clip: Path, folder: Path, frames: int) -> Path:
    """``clip`` at 1280x720 (bicubic), FFV1."""
    from bpvideo.io._ffmpeg import executable

    out = folder / "highway-720p.mkv"
    subprocess.run(
        [executable(), "-loglevel", "error", "-y", "-i", str(clip), "-frames:v", str(frames),
         "-vf", "scale=1280:720:flags=bicubic", "-c:v", "ffv1", str(out)],
        check=True,
    )  # fmt: skip
    return out


def bench(clip: Path, frames: int, repeat: int, folder: Path) -> None:
    label = f"{clip.name} ({frames} frames)"
    print(f"\n{label}\n")
    print("| videos | seconds | encoders (s) | MB of the two videos | PSNR (dB) bg / fg |")
    print("|---|---|---|---|---|")
    reference = folder / "lossless"
    run(clip, reference, frames, "--lossless")
    base = statistics.median(
        run(clip, folder / "none", frames, "--no-video") for _ in range(repeat)
    )
    print(f"| none (`--no-video`) | {base:.2f} | 0 | 0 | |")
    for preset in PRESETS:
        out = folder / preset
        seconds = statistics.median(
            run(clip, out, frames, "--preset", preset) for _ in range(repeat)
        )
        size = sum((out / f"{n}.mp4").stat().st_size for n in ("background", "foreground"))
        psnr = [luma_psnr(out / f"{n}.mp4", reference / f"{n}.mkv")
                for n in ("background", "foreground")]  # fmt: skip
        print(f"| `--preset {preset}` | {seconds:.2f} | {seconds - base:.2f} | "
              f"{size / 1e6:.2f} | {psnr[0]:.1f} / {psnr[1]:.1f} |")  # fmt: skip
        sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clip", type=Path, default=CLIP)
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--hd", action="store_true", help="also the clip upscaled to 720p")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        bench(args.clip, args.frames, args.repeat, folder)
        if args.hd:
            bench(upscale(args.clip, folder, args.frames), args.frames, args.repeat, folder)


if __name__ == "__main__":
    main()
