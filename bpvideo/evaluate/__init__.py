"""Scoring masks against ground truth, changedetection.net style (``bpvideo evaluate``).

- :mod:`~bpvideo.evaluate.groundtruth`: CDnet label images, Wallflower frames, ROIs;
- :mod:`~bpvideo.evaluate.mapping`: which mask is scored against which frame (by name);
- :mod:`~bpvideo.evaluate.metrics`: the seven CDnet metrics, SSIM, epsilon-proximity;
- :mod:`~bpvideo.evaluate.scoring`: :func:`evaluate`, the per-frame table and its CSV.
"""

from __future__ import annotations

from bpvideo.evaluate.groundtruth import (
    LABEL_MOTION,
    LABEL_OUTSIDE_ROI,
    LABEL_SHADOW,
    LABEL_STATIC,
    LABEL_UNKNOWN,
    GroundTruth,
    check_groundtruth,
    load_groundtruth,
    load_roi,
    parse_temporal_roi,
    read_temporal_roi,
)
from bpvideo.evaluate.mapping import input_is_video
from bpvideo.evaluate.metrics import confusion_metrics, epsilon_proximity, ssim
from bpvideo.evaluate.scoring import Evaluation, evaluate, format_table

__all__ = [
    "LABEL_MOTION",
    "LABEL_OUTSIDE_ROI",
    "LABEL_SHADOW",
    "LABEL_STATIC",
    "LABEL_UNKNOWN",
    "Evaluation",
    "GroundTruth",
    "check_groundtruth",
    "confusion_metrics",
    "epsilon_proximity",
    "evaluate",
    "format_table",
    "input_is_video",
    "load_groundtruth",
    "load_roi",
    "parse_temporal_roi",
    "read_temporal_roi",
    "ssim",
]
