"""What the x264 preset of ``bpvideo separate`` costs, and what it saves: CPU, size, quality.

``bpvideo separate CLIP --lossless`` makes the two videos of a result once (FFV1: the
exact frames). Each ``--preset`` then encodes both as ``separate`` does (the ffmpeg that
bpvideo runs, ``-c:v libx264 -pix_fmt yuv420p -crf 18 -preset P``; ``veryfast+``: with the
options ``separate`` adds to its default, ``TUNED_X264``), ``--repeat`` times;
the table gives the median CPU seconds of the encoders (user + system of the ffmpeg
children, less what decoding the FFV1 input costs: on a shared machine CPU time is the
steady measure, and it is what the encoders take from the solve running beside them),
the megabytes of the two videos, and their PSNR against the exact frames (grey levels,
over every frame) for the background and the foreground video.

Clips: ``../shared/data/videos/highway.avi`` (320x240) and, with ``--hd``, the same clip
upscaled to 1280x720 by ffmpeg (bicubic, FFV1), ``--frames`` frames of each.

Usage::

    python benchmarks/bench_presets.py --repeat 3 --hd
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bpvideo.sinks.writers import TUNED_X264  # noqa: E402
from bpvideo.sources.ffmpeg import executable  # noqa: E402
from bpvideo.sources.files import open_source  # noqa: E402

CLIP = ROOT.parent / "shared" / "data" / "videos" / "highway.avi"
#: The presets measured; ``NAME+`` is the preset with the options a result's videos add
#: to it (:data:`~bpvideo.sinks.writers.TUNED_X264`: what ``separate`` writes at NAME).
PRESETS = ("ultrafast", "superfast", "veryfast", "veryfast+", "faster", "fast", "medium")
VIDEOS = ("background", "foreground")


def cpu_of(command: list[str]) -> float:
    """CPU seconds (user + system) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def encode(source: Path, out: Path, preset: str) -> list[str]:
    """The ffmpeg command of :class:`bpvideo.sinks.writers.VideoStream`, from a file
    (``NAME+``: with the options of ``TUNED_X264[NAME]``)."""
    name = preset.rstrip("+")
    tuned = ["-x264-params", TUNED_X264[name]] if preset.endswith("+") else []
    return [executable(), "-hide_banner", "-loglevel", "error", "-y", "-i", str(source), "-an",
            "-c:v", "libx264", "-pix_fmt", "yuv420p", "-crf", "18", "-preset", name, *tuned,
            "-movflags", "+faststart", str(out)]  # fmt: skip


def grey_psnr(video: Path, reference: Path) -> float:
    """PSNR (dB) of the grey levels of ``video`` against ``reference``, over all frames."""
    a, b = open_source(video), open_source(reference)
    weights = np.array([0.114, 0.587, 0.299])
    se, count = 0.0, 0
    try:
        for (_, x), (_, y) in zip(a.frames, b.frames, strict=True):
            gx, gy = x.astype(np.float64) @ weights, y.astype(np.float64) @ weights
            se += float(np.square(gx - gy).sum())
            count += gy.size
    finally:
        a.close()
        b.close()
    return float(10 * np.log10(255.0**2 / max(se / count, 1e-12)))


def reference(clip: Path, frames: int, folder: Path) -> Path:
    """The lossless videos of ``bpvideo separate`` on ``clip`` (``folder/background.mkv``)."""
    subprocess.run(
        [sys.executable, "-m", "bpvideo", "separate", str(clip), "-o", str(folder), "-q",
         "--frames", str(frames), "--lossless", "--overwrite"],
        check=True, cwd=ROOT, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"),
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    return folder


def upscale(clip: Path, folder: Path, frames: int) -> Path:
    """``clip`` at 1280x720 (bicubic), FFV1."""
    out = folder / "highway-720p.mkv"
    subprocess.run(
        [executable(), "-loglevel", "error", "-y", "-i", str(clip), "-frames:v", str(frames),
         "-vf", "scale=1280:720:flags=bicubic", "-c:v", "ffv1", str(out)],
        check=True,
    )  # fmt: skip
    return out


def bench(clip: Path, frames: int, repeat: int, folder: Path) -> None:
    ref = reference(clip, frames, folder / f"{clip.stem}-lossless")
    decode = {name: statistics.median(
        cpu_of([executable(), "-loglevel", "error", "-i", str(ref / f"{name}.mkv"), "-f",
                "null", "-"]) for _ in range(repeat)) for name in VIDEOS}  # fmt: skip
    print(f"\n{clip.name}, {frames} frames: the two videos of `separate`\n")
    print("| `--preset` | encoders' CPU s | MB | PSNR (dB) background / foreground |")
    print("|---|---|---|---|")
    for preset in PRESETS:
        cpu, size, psnr = 0.0, 0, []
        for name in VIDEOS:
            out = folder / f"{name}-{preset}.mp4"
            command = encode(ref / f"{name}.mkv", out, preset)
            cpu += statistics.median(cpu_of(command) for _ in range(repeat)) - decode[name]
            size += out.stat().st_size
            psnr.append(grey_psnr(out, ref / f"{name}.mkv"))
        print(f"| {preset} | {cpu:.2f} | {size / 1e6:.2f} | {psnr[0]:.1f} / {psnr[1]:.1f} |")
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
