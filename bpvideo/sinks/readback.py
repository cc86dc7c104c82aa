"""A result folder of ``bpvideo separate`` read back (``bpvideo events OUTDIR``): its
``summary.json`` checked, the times and clock of its frames, its masks and still."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from bpvideo.errors import InputError, literal, shown
from bpvideo.limits import FPS_RANGE, MAX_NAME_NUMBER, MAX_PIXELS, MAX_SIDE
from bpvideo.settings import SeparateSettings, option_name
from bpvideo.sinks.event_stream import frame_times
from bpvideo.sinks.objects import count_lines
from bpvideo.sinks.outputs import SUMMARY
from bpvideo.sources.headers import decode_image, read_image, read_text
from bpvideo.times import WallClock, parse_time_of_day

__all__ = [
    "backdrop",
    "check_summary",
    "frame_seconds",
    "mask_files",
    "read_mask",
    "read_summary",
    "run_options",
    "summary_clock",
]


def read_summary(outdir: Path) -> dict[str, Any]:
    """``outdir``'s summary.json, checked (:func:`check_summary`).

    Raises
    ------
    InputError
        No summary.json, one that is not a summary, or one no run writes.
    """
    path = outdir / SUMMARY
    if not path.is_file():
        raise InputError(f"{literal(str(outdir))}: no {SUMMARY}: give an output directory of "
                         "bpvideo separate (a complete one)")  # fmt: skip
    try:
        summary = json.loads(read_text(path, "the summary"))
        summary["mask_numbers"], summary["fps"], summary["width"], summary["height"]
    except (ValueError, KeyError, TypeError):
        raise InputError(f"{literal(str(path))}: not a summary of bpvideo separate: give an "
                         "output directory of bpvideo separate") from None  # fmt: skip
    check_summary(path, summary)
    return summary


def check_summary(path: Path, summary: dict[str, Any]) -> None:
    """Refuse a summary whose size, rate or mask numbers no run of bpvideo writes (a
    damaged or edited OUTDIR), naming the field, before any mask is read.

    Raises
    ------
    InputError
        ``"out/summary.json: "fps" is 0, which no run writes (...): the output directory
        is damaged; run bpvideo separate again"``.
    """

    def damaged(field: str, rule: str) -> InputError:
        return InputError(f"{literal(str(path))}: {json.dumps(field)} is "
                          f"{literal(shown(summary[field]))}, which no run writes ({rule}): the "
                          "output directory is damaged; run bpvideo separate again")  # fmt: skip

    for side in ("width", "height"):
        value = summary[side]
        if type(value) is not int or not 1 <= value <= MAX_SIDE:
            raise damaged(side, f"a whole number of pixels from 1 to {MAX_SIDE}")
    if summary["width"] * summary["height"] > MAX_PIXELS:
        raise damaged("width", f"width x height at most {MAX_PIXELS} pixels")
    fps, (low, high) = summary["fps"], FPS_RANGE
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not low <= fps <= high:
        raise damaged("fps", f"frames per second from {low:g} to {high:g}")
    numbers = summary["mask_numbers"]
    if not isinstance(numbers, list) or not all(
        type(n) is int and 0 <= n <= MAX_NAME_NUMBER for n in numbers
    ):
        raise damaged("mask_numbers", "a list of whole frame numbers >= 0")
    run = summary.get("settings", {})
    if not isinstance(run, dict):
        raise damaged("settings", "a mapping of the run's options")
    try:  # the run's own values, before any option given now is merged with them
        own = SeparateSettings.from_mapping(run_options(summary))
        count_lines(own.count_line, own.scale, (summary["height"], summary["width"]))
    except InputError as exc:
        raise InputError(f"{literal(str(path))}: \"settings\" hold a value no run writes "
                         f"({literal(exc.message)}): the output directory is damaged; run "
                         "bpvideo separate again") from None  # fmt: skip


def run_options(summary: dict[str, Any]) -> dict[str, Any]:
    """The options of the run (summary.json's ``settings``), by their option names."""
    return {k: v for k, v in summary.get("settings", {}).items() if option_name(k) is not None}


def frame_seconds(outdir: Path, numbers: list[int], fps: float) -> np.ndarray:
    """The seconds of ``frames.csv`` when it lists these frames, else from the rate."""
    try:
        with open(outdir / "frames.csv", newline="") as handle:
            reader = csv.reader(handle)
            header = next(reader)
            at, col = header.index("frame"), header.index("seconds")
            listed, seconds = [], []
            for row in reader:
                listed.append(int(row[at]))
                seconds.append(float(row[col]))
        if listed == numbers:
            return np.array(seconds)
    except (OSError, ValueError, IndexError, StopIteration):
        pass
    return frame_times(numbers, fps)


def summary_clock(summary: dict[str, Any]) -> WallClock:
    """The clock of the run's seconds (summary.json's ``start_time``), unknown without."""
    try:
        origin = parse_time_of_day(summary["start_time"])
    except (KeyError, InputError):  # an earlier version's summary, or none known
        return WallClock()
    return WallClock(origin, summary.get("start_time_source"))


def read_mask(path: Path, shape: tuple[int, int]) -> np.ndarray:
    """One mask of OUTDIR, of the size its summary says (``shape``: height, width)."""
    image = decode_image(path, cv2.IMREAD_GRAYSCALE)  # from its bytes: any name
    if image is None:
        raise InputError(f"{literal(str(path))}: mask missing or unreadable: run bpvideo "
                         "separate again")  # fmt: skip
    if image.shape != shape:
        raise InputError(f"{literal(str(path))}: mask is {image.shape[1]}x{image.shape[0]} but "
                         f"{SUMMARY} says the frames are {shape[1]}x{shape[0]}: the output "
                         "directory is damaged; run bpvideo separate again")  # fmt: skip
    return image > 127


def mask_files(outdir: Path, numbers: list[int]) -> list[Path]:
    """The mask files of ``outdir``, in the order of ``numbers``."""
    return [outdir / "masks" / f"bin{n:06d}.png" for n in numbers]


def backdrop(outdir: Path, shape: tuple[int, int]) -> tuple[np.ndarray, bytes | None]:
    """What the thumbnails are drawn on: OUTDIR's ``background.png`` (H, W, 3), or black
    when it is missing or of another size; and the PNG itself for the report (None then)."""
    path = outdir / "background.png"
    still = read_image(path, cv2.IMREAD_COLOR)
    if still is None or still.shape[:2] != shape:
        return np.zeros((*shape, 3), np.uint8), None
    return still, path.read_bytes()
