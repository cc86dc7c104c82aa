"""Mask quality of ``bpvideo separate`` at its defaults against OpenCV's background subtractors.

For every sequence in ``../shared/data`` (changedetection.net layout, see its README) this
runs ``bpvideo separate`` with the default settings (through the library, exactly as the
CLI would: ``SeparateSettings()`` plus ``--groundtruth``), OpenCV's MOG2 and KNN
subtractors at their default settings and, when ``--gsoc-python`` names a Python with
``opencv-contrib-python(-headless)``, GSOC (``cv2.bgsegm``) at its defaults, then scores
every method's masks with :func:`bpvideo.evaluate.evaluate` (changedetection.net rules:
50 = shadow counts as background, 85 and 170 ignored, ROI.bmp and temporalROI.txt where
present; Wallflower: the single ground-truth frame ``hand_segmented_00247.BMP`` is the 248th
frame). OpenCV's subtractors see every frame in order, in colour; their shadow label (127)
counts as background.

Usage::

    python benchmarks/quality.py                       # ours, MOG2, KNN
    python benchmarks/quality.py --gsoc-python /work/venv-contrib/bin/python
    python benchmarks/quality.py --set threshold_k=5 --set color=true --only ours

Prints the F-measure table (one row per method, one column per sequence, and the mean)
as Markdown on stdout; progress on stderr. ``--json PATH`` also saves every score.
``--set NAME=VALUE`` overrides a setting of ``separate`` (for exploring; the table in the
README is made without it).
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import yaml

from bpvideo.api import separate_file
from bpvideo.evaluate import evaluate
from bpvideo.io.video import read_video
from bpvideo.io.writers import write_masks

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SEQUENCES = (
    "cdnet_highway",
    "wallflower_WavingTrees",
    "sbi_HighwayI",
    "sbi_CaVignal",
    "sbi_IBMtest2",
)
#: The issue's measurements of OpenCV's subtractors (F-measure), for reference.
ISSUE_TABLE = {
    "MOG2": (0.59, 0.70, 0.35, 0.40, 0.72),
    "KNN": (0.51, 0.68, 0.49, 0.35, 0.49),
    "GSOC": (0.87, 0.85, 0.52, 0.49, 0.69),
}

GSOC_SCRIPT = """
import sys, numpy as np, cv2
frames = np.load(sys.argv[1])
sub = cv2.bgsegm.createBackgroundSubtractorGSOC()
masks = np.stack([sub.apply(f) for f in frames])
np.save(sys.argv[2], masks == 255)
"""

log = logging.getLogger("quality")


def sequence_input(root: Path) -> Path:
    """The frames of a sequence: ``input/`` when present, else the folder itself."""
    return root / "input" if (root / "input").is_dir() else root


def groundtruth(root: Path) -> Path:
    """``groundtruth/`` or the single Wallflower frame."""
    if (root / "groundtruth").is_dir():
        return root / "groundtruth"
    single = sorted(root.glob("hand_segmented_*"))
    if len(single) != 1:
        raise SystemExit(f"{root}: no groundtruth/ folder and no hand_segmented_* frame")
    return single[0]


def score_masks(masks: np.ndarray, numbers: list[int], gt: Path, workdir: Path) -> dict[str, Any]:
    """Write masks as bin%06d.png named after their frames, score them; return the
    evaluation summary."""
    folder = workdir / "masks"
    write_masks(folder, masks, numbers=numbers)
    result = evaluate(folder, gt)
    for f in folder.iterdir():
        f.unlink()
    folder.rmdir()
    return result.summary


def run_ours(root: Path, workdir: Path, overrides: dict[str, Any]) -> dict[str, Any]:
    """``separate`` at the defaults (plus ``overrides``) with ``--groundtruth``."""
    options = {"overwrite": True, "groundtruth": str(groundtruth(root)), **overrides}
    t = time.perf_counter()
    summary = separate_file(sequence_input(root), workdir / "ours", **options)
    out = dict(summary["evaluation"]["summary"])
    out["seconds"] = time.perf_counter() - t
    return out


def run_opencv(name: str, root: Path, workdir: Path) -> dict[str, Any]:
    """MOG2 or KNN at OpenCV's defaults, fed every frame in colour, in order."""
    video = read_video(sequence_input(root), gray=False)
    make = {
        "MOG2": cv2.createBackgroundSubtractorMOG2,
        "KNN": cv2.createBackgroundSubtractorKNN,
    }[name]
    sub = make()
    t = time.perf_counter()
    masks = np.stack([sub.apply(frame) == 255 for frame in video.frames])
    seconds = time.perf_counter() - t
    out = score_masks(masks, video.frame_numbers, groundtruth(root), workdir)
    out["seconds"] = seconds
    return out


def run_gsoc(python: str, root: Path, workdir: Path) -> dict[str, Any]:
    """GSOC (opencv-contrib) at its defaults, in the Python that has it."""
    video = read_video(sequence_input(root), gray=False)
    frames_file, masks_file = workdir / "frames.npy", workdir / "gsoc.npy"
    np.save(frames_file, video.frames)
    t = time.perf_counter()
    subprocess.run([python, "-c", GSOC_SCRIPT, str(frames_file), str(masks_file)], check=True)
    seconds = time.perf_counter() - t
    masks = np.load(masks_file)
    frames_file.unlink()
    masks_file.unlink()
    out = score_masks(masks, video.frame_numbers, groundtruth(root), workdir)
    out["seconds"] = seconds
    return out


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``NAME=VALUE`` pairs; values parsed as YAML scalars (``5``, ``true``, ``auto``)."""
    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set {item!r}: expected NAME=VALUE")
        out[name.strip().replace("-", "_")] = yaml.safe_load(value)
    if "color" in out:
        out["gray"] = not out.pop("color")
    return out


def markdown_table(scores: dict[str, dict[str, dict[str, Any]]], sequences: list[str]) -> str:
    """F-measure table: methods as rows, sequences as columns, plus the mean."""
    head = "| method | " + " | ".join(sequences) + " | mean |"
    rule = "|---|" + "---|" * (len(sequences) + 1)
    rows = [head, rule]
    for method, per_seq in scores.items():
        values = [per_seq[s]["f_measure"] for s in sequences if s in per_seq]
        cells = [f"{per_seq[s]['f_measure']:.3f}" if s in per_seq else "-" for s in sequences]
        mean = f"{np.mean(values):.3f}" if len(values) == len(sequences) else "-"
        rows.append(f"| {method} | " + " | ".join(cells) + f" | {mean} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder of sequences")
    parser.add_argument("--sequences", nargs="+", default=list(SEQUENCES))
    parser.add_argument("--gsoc-python", help="a Python with opencv-contrib (for GSOC)")
    parser.add_argument(
        "--only", nargs="+", choices=("ours", "MOG2", "KNN", "GSOC"), help="methods to run"
    )
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--json", type=Path, help="save every score as JSON here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s", stream=sys.stderr)
    if not args.data.is_dir():
        raise SystemExit(f"{args.data}: no such folder (pass --data)")
    overrides = parse_overrides(args.set)
    methods = ["ours", "MOG2", "KNN"] + (["GSOC"] if args.gsoc_python else [])
    if args.only:
        methods = [m for m in methods if m in args.only]
    scores: dict[str, dict[str, dict[str, Any]]] = {m: {} for m in methods}
    with tempfile.TemporaryDirectory(prefix="bpvideo-quality-") as tmp:
        for seq in args.sequences:
            root = args.data / seq
            workdir = Path(tmp) / seq
            workdir.mkdir()
            for method in methods:
                if method == "ours":
                    result = run_ours(root, workdir, overrides)
                elif method == "GSOC":
                    result = run_gsoc(args.gsoc_python, root, workdir)
                else:
                    result = run_opencv(method, root, workdir)
                scores[method][seq] = result
                log.info(
                    "%s %s: F %.3f (recall %.3f, precision %.3f) in %.1fs",
                    seq,
                    method,
                    result["f_measure"],
                    result["recall"],
                    result["precision"],
                    result["seconds"],
                )
    label = "bpvideo (defaults)" if not overrides else f"bpvideo ({', '.join(args.set)})"
    table = {label if m == "ours" else m: v for m, v in scores.items()}
    print(markdown_table(table, args.sequences))
    if args.json:
        args.json.write_text(json.dumps({"settings": overrides, "scores": table}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
