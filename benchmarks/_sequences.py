"""The real sequences of ``../shared/data`` for the quality benchmarks: finding them,
reading them, scoring masks against their ground truth, and OpenCV's subtractors.

Shared by ``quality.py`` (the table against MOG2, KNN and GSOC) and ``select_defaults.py``
(leave-one-sequence-out selection of defaults).
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from bpvideo import evaluate
from bpvideo.io.video import read_video
from bpvideo.io.writers import write_masks

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

GSOC_SCRIPT = """
import sys, numpy as np, cv2
frames = np.load(sys.argv[1])
sub = cv2.bgsegm.createBackgroundSubtractorGSOC()
masks = np.stack([sub.apply(f) for f in frames])
np.save(sys.argv[2], masks == 255)
"""


def discover(data: Path = DATA) -> list[str]:
    """Every sequence folder with ground truth (``groundtruth/`` or one Wallflower frame)."""
    if not data.is_dir():
        return []
    return sorted(
        p.name
        for p in data.iterdir()
        if p.is_dir() and ((p / "groundtruth").is_dir() or any(p.glob("hand_segmented_*")))
    )


def per_frame_truth(name: str, data: Path = DATA) -> bool:
    """Whether a sequence has ground truth for every frame (not one Wallflower frame)."""
    return (data / name / "groundtruth").is_dir()


@dataclass
class Sequence:
    """One sequence, read once: its frames and where its ground truth is."""

    name: str
    frames: np.ndarray
    numbers: list[int]
    groundtruth: Path

    @classmethod
    def load(cls, name: str, data: Path = DATA) -> Sequence:
        root = data / name
        source = root / "input" if (root / "input").is_dir() else root
        video = read_video(source, gray=False)
        if (root / "groundtruth").is_dir():
            truth = root / "groundtruth"
        else:
            single = sorted(root.glob("hand_segmented_*"))
            if len(single) != 1:
                raise SystemExit(f"{root}: no groundtruth/ folder and no hand_segmented_* frame")
            truth = single[0]
        return cls(name, video.frames, list(video.frame_numbers), truth)

    def score(self, masks: np.ndarray) -> dict[str, Any]:
        """changedetection.net scores of ``masks`` (one per frame, in order):
        :func:`bpvideo.evaluate` on the masks written as ``binNNNNNN.png`` after their
        frames."""
        with tempfile.TemporaryDirectory(prefix="bpvideo-score-") as tmp:
            folder = Path(tmp) / "masks"
            write_masks(folder, masks, numbers=self.numbers)
            return evaluate(folder, self.groundtruth).summary


def run_bpvideo(seq: Sequence, options: dict[str, Any]) -> dict[str, Any]:
    """``bpvideo.separate`` on the frames (in colour, as read) with ``options``; scores."""
    from bpvideo import separate

    t = time.perf_counter()
    result = separate(seq.frames, **options)
    seconds = time.perf_counter() - t
    return dict(seq.score(result.masks), seconds=seconds)


def run_opencv(seq: Sequence, method: str) -> dict[str, Any]:
    """MOG2 or KNN at OpenCV's defaults, fed every frame in colour, in order; shadows (127)
    count as background."""
    make = {"MOG2": cv2.createBackgroundSubtractorMOG2, "KNN": cv2.createBackgroundSubtractorKNN}
    sub = make[method]()
    t = time.perf_counter()
    masks = np.stack([sub.apply(frame) == 255 for frame in seq.frames])
    return dict(seq.score(masks), seconds=time.perf_counter() - t)


def run_gsoc(seq: Sequence, python: str) -> dict[str, Any]:
    """GSOC (opencv-contrib) at its defaults, in a Python that has it."""
    with tempfile.TemporaryDirectory(prefix="bpvideo-gsoc-") as tmp:
        frames_file, masks_file = Path(tmp) / "frames.npy", Path(tmp) / "gsoc.npy"
        np.save(frames_file, seq.frames)
        t = time.perf_counter()
        subprocess.run([python, "-c", GSOC_SCRIPT, str(frames_file), str(masks_file)], check=True)
        seconds = time.perf_counter() - t
        masks = np.load(masks_file)
    return dict(seq.score(masks), seconds=seconds)
