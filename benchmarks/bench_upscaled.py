"""The same masks at every size: F of dev sequences at their own size and upscaled.

Each sequence of ``../shared/data`` (changedetection.net layout) is upscaled to
``--size`` (default 1920x1080; the frames by ``cv2.INTER_CUBIC``, as a camera of more
pixels would see the scene, written as PNG; the ground truth, ``ROI.bmp`` included, by
nearest neighbour), then ``bpvideo separate`` (``--no-video``, ``--groundtruth``) runs at
its defaults on the native frames and on the upscaled ones, each in its own child
process; F comes from each run's ``summary.json``. Prints a Markdown table: native F,
upscaled F, their difference, and the seconds of both runs (the issue's target: upscaled
within 0.03 of native; peak memory: ``bench_scale.py``).

Usage::

    python benchmarks/bench_upscaled.py --sequences cdnet_canoe_stride3 cdnet_highway \\
        --frames 300
    python benchmarks/bench_upscaled.py --bpvideo /old/venv/bin/bpvideo   # other code

The upscaled frames go to a temporary folder (about 3 MB a frame at 1080p), removed at
the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cv2
from _sequences import DATA, per_frame_truth

REPO = Path(__file__).resolve().parents[1]
DEFAULT = ["cdnet_canoe_stride3", "sbi_IBMtest2", "cdnet_highway"]


def upscale_sequence(src: Path, dst: Path, size: tuple[int, int], frames: int | None) -> None:
    """Write ``src`` (input/, groundtruth/, ROI.bmp, temporalROI.txt) upscaled to ``dst``:
    the first ``frames`` input frames, the ground truth frames of the same numbers."""
    (dst / "input").mkdir(parents=True)
    (dst / "groundtruth").mkdir()
    names = sorted(p for p in (src / "input").iterdir() if p.suffix.lower() in (".jpg", ".png"))
    names = names[:frames] if frames else names
    png = [cv2.IMWRITE_PNG_COMPRESSION, 1]
    for path in names:
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        big = cv2.resize(image, size, interpolation=cv2.INTER_CUBIC)
        cv2.imwrite(str(dst / "input" / (path.stem + ".png")), big, png)
    for path in sorted((src / "groundtruth").iterdir()):
        truth = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
        if truth is None:
            continue
        big = cv2.resize(truth, size, interpolation=cv2.INTER_NEAREST)
        cv2.imwrite(str(dst / "groundtruth" / (path.stem + ".png")), big, png)
    for name in ("temporalROI.txt", "SUBSET.txt"):
        if (src / name).exists():
            shutil.copy(src / name, dst / name)
    if (src / "ROI.bmp").exists():
        roi = cv2.imread(str(src / "ROI.bmp"), cv2.IMREAD_UNCHANGED)
        cv2.imwrite(str(dst / "ROI.bmp"), cv2.resize(roi, size, interpolation=cv2.INTER_NEAREST))


def run(bpvideo: list[str], seq: Path, out: Path, frames: int | None, extra: list[str]) -> dict:
    """``bpvideo separate`` of a sequence folder, scored; F and seconds."""
    cmd = [*bpvideo, "separate", str(seq / "input"), "-o", str(out), "--no-video",
           "--groundtruth", str(seq / "groundtruth"), *extra]  # fmt: skip
    if frames:
        cmd += ["--frames", str(frames)]
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - t
    summary = json.loads((out / "summary.json").read_text())
    f = summary["evaluation"]["summary"]["f_measure"]
    return {"f": f, "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequences", nargs="+", default=DEFAULT)
    parser.add_argument("--size", default="1920x1080", help="WxH (default 1920x1080)")
    parser.add_argument("--frames", type=int, default=300, help="first N frames (0: all)")
    parser.add_argument("--bpvideo", help="a bpvideo executable (default: this checkout's)")
    parser.add_argument("--extra-args", default="", help="options added to both runs")
    args = parser.parse_args()
    size = tuple(int(v) for v in args.size.split("x"))
    if args.bpvideo:
        bpvideo = [args.bpvideo]
    else:
        os.environ["PYTHONPATH"] = str(REPO)
        bpvideo = [sys.executable, "-m", "bpvideo"]
    extra = args.extra_args.split()
    rows = []
    for name in args.sequences:
        if not per_frame_truth(name):
            print(f"{name}: no per-frame ground truth, skipped", file=sys.stderr)
            continue
        with tempfile.TemporaryDirectory(prefix="bpvideo-upscaled-") as tmp:
            big = Path(tmp) / name
            upscale_sequence(DATA / name, big, size, args.frames)
            native = run(bpvideo, DATA / name, Path(tmp) / "native", args.frames, extra)
            up = run(bpvideo, big, Path(tmp) / "up", args.frames, extra)
        rows.append((name, native, up))
        print(f"{name}: native F {native['f']:.4f}, {args.size} F {up['f']:.4f}",
              file=sys.stderr)  # fmt: skip
    print(f"| sequence | native F | {args.size} F | difference | native s | {args.size} s |")
    print("|---|---|---|---|---|---|")
    for name, native, up in rows:
        cells = [f"{native['f']:.4f}", f"{up['f']:.4f}", f"{up['f'] - native['f']:+.4f}",
                 f"{native['seconds']:.1f}", f"{up['seconds']:.1f}"]  # fmt: skip
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
