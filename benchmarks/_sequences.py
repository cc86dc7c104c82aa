"""The real sequences of ``../shared/data`` for the quality benchmarks: finding them,
reading them, scoring masks against their ground truth, OpenCV's subtractors and
BGSLibrary's (``pybgs``), and synthetic scenes of the hard classes scored the same way.

Shared by ``quality.py`` (the table against MOG2, KNN, GSOC and BGSLibrary) and
``select_defaults.py`` (leave-one-sequence-out selection of defaults).
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
from bpvideo.evaluate import load_groundtruth
from bpvideo.sinks.writers import write_masks
from bpvideo.sources.video import read_video
from bpvideo.synthetic.adverse import ADVERSE_CLASSES
from bpvideo.synthetic.hard import HARD_CLASSES

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

GSOC_SCRIPT = """
import sys, numpy as np, cv2
frames = np.load(sys.argv[1])
sub = cv2.bgsegm.createBackgroundSubtractorGSOC()
masks = np.stack([sub.apply(f) for f in frames])
np.save(sys.argv[2], masks == 255)
"""

# BGSLibrary reads and writes ./config/<Method>.xml (and fails without the folder) and
# prints to stdout: the child runs in a temporary folder with its stdout discarded.
PYBGS_SCRIPT = """
import os, sys, numpy as np, pybgs
os.makedirs("config", exist_ok=True)
frames = np.load(sys.argv[1])
sub = getattr(pybgs, sys.argv[3])()
masks = np.stack([np.asarray(sub.apply(f)) for f in frames])
if masks.ndim == 4:
    masks = masks.max(axis=3)
np.save(sys.argv[2], masks > 127)
"""

#: The synthetic classes the benchmarks add as sequences ``synthetic_<class>``: issue 26's
#: (:mod:`bpvideo.synthetic.hard`) and issue 40's (:mod:`bpvideo.synthetic.adverse`).
SYNTHETIC_CLASSES = HARD_CLASSES + ADVERSE_CLASSES

#: BGSLibrary methods run by ``--pybgs-python`` (class names of ``pybgs``).
PYBGS_METHODS = ("LOBSTER", "SuBSENSE", "PAWCS", "ViBe")


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
    truth: np.ndarray | None = None  # (T, H, W) bool, for synthetic scenes (no files)

    @classmethod
    def synthetic(cls, name: str) -> Sequence:
        """A scene of :mod:`bpvideo.synthetic.hard` or :mod:`bpvideo.synthetic.adverse`
        (``name``: ``synthetic_<class>``)."""
        from bpvideo.synthetic.adverse import ADVERSE_CLASSES, make_adverse_scene
        from bpvideo.synthetic.hard import make_hard_scene

        kind = name.removeprefix("synthetic_")
        scene = (make_adverse_scene if kind in ADVERSE_CLASSES else make_hard_scene)(kind)
        return cls(name, scene.frames, list(range(1, len(scene.frames) + 1)), Path(), scene.masks)

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

    def labels(self) -> np.ndarray:
        """(T, H, W) uint8 changedetection.net labels of every frame, in order (per-frame
        ground truth only: :func:`per_frame_truth`)."""
        truth = load_groundtruth(self.groundtruth)
        position = {n: i for i, n in enumerate(truth.frame_numbers)}
        return np.stack([truth.load(position[n]) for n in self.numbers])

    def score(self, masks: np.ndarray) -> dict[str, Any]:
        """changedetection.net scores of ``masks`` (one per frame, in order):
        :func:`bpvideo.evaluate` on the masks written as ``binNNNNNN.png`` after their
        frames; a synthetic scene against its known masks, every frame)."""
        if self.truth is not None:
            return synthetic_scores(masks, self.truth)
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


def synthetic_scores(masks: np.ndarray, truth: np.ndarray) -> dict[str, Any]:
    """Recall, precision and F-measure of ``masks`` against ``truth``, (T, H, W) bool,
    counted over every pixel of every frame (as :func:`bpvideo.evaluate` sums them)."""
    tp = int(np.count_nonzero(masks & truth))
    fp = int(np.count_nonzero(masks & ~truth))
    fn = int(np.count_nonzero(~masks & truth))
    recall = tp / (tp + fn) if tp + fn else 0.0
    precision = tp / (tp + fp) if tp + fp else 0.0
    f = 2 * recall * precision / (recall + precision) if recall + precision else 0.0
    return {"recall": recall, "precision": precision, "f_measure": f}


def run_pybgs(seq: Sequence, python: str, method: str) -> dict[str, Any]:
    """A BGSLibrary method (``pybgs.<method>``, its defaults) in a Python that has pybgs,
    fed every frame in colour, in order; its 0/255 mask, 255 = foreground."""
    with tempfile.TemporaryDirectory(prefix="bpvideo-pybgs-") as tmp:
        frames_file, masks_file = Path(tmp) / "frames.npy", Path(tmp) / "masks.npy"
        np.save(frames_file, seq.frames)
        t = time.perf_counter()
        subprocess.run(
            [python, "-c", PYBGS_SCRIPT, str(frames_file), str(masks_file), method],
            check=True, cwd=tmp, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        seconds = time.perf_counter() - t
        masks = np.load(masks_file)
    return dict(seq.score(masks), seconds=seconds)
