"""What is written: the ``Output`` section of the option table.

Each field is one option of ``bpvideo separate`` (see :mod:`bpvideo.settings`).
"""

from __future__ import annotations

from dataclasses import dataclass

from bpvideo.settings.spec import option

__all__ = ["X264_PRESETS", "OutputSettings"]

#: x264's presets, fastest first.
X264_PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow",
                "slower", "veryslow", "placebo")  # fmt: skip


@dataclass
class OutputSettings:
    """What is written (the ``Output`` section of ``--help``)."""

    overwrite: bool = option(False, "bool", "Replace the outputs of an earlier run.", arrays=False)
    resume: bool = option(
        False,
        "bool",
        "Finish a run of the same input and settings that a signal or a crash stopped, from "
        "the windows it kept (the result is the one an uninterrupted run writes).",
        arrays=False,
    )
    lossless: bool = option(
        False, "bool", "Write FFV1 .mkv videos instead of H.264 .mp4.", arrays=False
    )
    crf: int = option(
        18,
        "int",
        "H.264 quality: constant rate factor, 0 (lossless) to 51 (worst); 18 looks "
        "transparent, +6 halves the size.",
        low=0,
        high=51,
    )
    preset: str = option(
        "veryfast",
        "str",
        "x264 preset, ultrafast (fastest, largest) to veryslow: speed against size at the "
        "same quality (see docs/performance.md).",
        choices=X264_PRESETS,
        metavar="NAME",
    )
    no_video: bool = option(
        False,
        "bool",
        "Write no videos (masks, background.png and summary.json only): starts no encoder, "
        "so folders of frames need no ffmpeg.",
    )
    preview: bool = option(
        False,
        "bool",
        "Also write preview.png: input, background, foreground, mask of a few frames.",
        arrays=False,
    )
    masks_to: str | None = option(
        None,
        "path",
        "Also write the masks as raw gray frames (0/255, WxH bytes each) to this file, or to "
        "stdout with '-' (stdout then carries only those bytes).",
        optional=True,
        metavar="PATH|-",
        arrays=False,
    )
    groundtruth: str | None = option(
        None,
        "path",
        "Score the masks against this ground truth (changedetection.net groundtruth/ folder or "
        "one Wallflower frame); scores go to summary.json and evaluation.csv.",
        optional=True,
        metavar="DIR",
        arrays=False,
    )
