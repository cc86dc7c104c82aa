"""Which mask is scored against which ground-truth frame.

``bpvideo separate`` names each mask after its source frame, as changedetection.net
result files are: ``in000470.jpg`` gives ``bin000470.png`` (image folders keep the number
of the file name; Wallflower's ``b00247.bmp`` gives ``bin000247.png``), and videos and
pipes number their frames from 1 (decode index + 1). A ground-truth frame is matched to a
mask by the first rule that applies:

1. **Frame numbers given** (the ``frame_numbers`` argument of
   :func:`~bpvideo.evaluate.scoring.evaluate`, or the ``"frame_numbers"`` of a
   ``summary.json`` written by bpvideo before masks were named after their frames, which
   has no ``"mask_numbers"``): ``frame_numbers[i]`` is the source number of the frame of
   the ``i``-th mask (sorted by number), so ground-truth frame ``g`` is scored against the
   ``i``-th mask where ``frame_numbers[i] == g`` (``"frame_numbers"``). For a video,
   whose numbers are 0-based decode indices, index ``i`` is ground-truth frame ``i + 1``
   (changedetection.net numbers a video's frames from 1).
2. **By name**: ground-truth frame ``g`` (``gt000470.png``, ``hand_segmented_00247.BMP``)
   is scored against ``bin%06d.png % g`` (``"names"``); ground-truth frames without a mask
   are skipped. A single Wallflower frame numbers the frames from 0, so with the masks of
   a video it is scored against ``bin%06d.png % (g + 1)`` (``"single_frame_index"``).
3. **As many ground-truth frames as masks**: the ``i``-th ground-truth file (sorted by
   frame number) is scored against the ``i``-th mask (``"same_count"``).

Anything else is an :class:`~bpvideo.errors.InputError` that says what is missing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bpvideo.errors import InputError, literal
from bpvideo.evaluate.groundtruth import GroundTruth
from bpvideo.sources.headers import read_text

__all__ = ["MaskSet", "input_is_video", "map_frames", "mask_set"]

_MASK_NAME = re.compile(r"^bin(\d+)\.png$", re.IGNORECASE)


@dataclass
class MaskSet:
    """The masks to score and what their ``summary.json`` says about them.

    Attributes
    ----------
    folder : Path
        The ``bin%06d.png`` files' folder.
    files : dict of int to Path
        Mask number -> file, sorted by number.
    frame_numbers : list of int or None
        Source number of the frame of each mask, in mask order, when the masks are not
        named after their frames (an older ``summary.json``, or given explicitly).
    video : bool
        The masks are of a video or pipe (numbered from 1) rather than of image files.
    """

    folder: Path
    files: dict[int, Path]
    frame_numbers: list[int] | None
    video: bool


def mask_set(
    masks: Path, frame_numbers: Sequence[int] | None = None, video: bool | None = None
) -> MaskSet:
    """Find the masks of ``masks`` (an output directory or its ``masks/`` folder).

    ``frame_numbers`` and ``video`` override what ``summary.json`` says (see
    :func:`~bpvideo.evaluate.scoring.evaluate`).
    """
    folder, summary_path = _resolve_masks(masks)
    files = _list_masks(folder)
    summary = _read_summary(summary_path) if summary_path is not None else {}
    if video is None and frame_numbers is not None:
        video = False  # numbers given: as they are, unless told they are decode indices
    if frame_numbers is None and "mask_numbers" not in summary:
        frame_numbers = _frame_numbers(summary, summary_path)
    if video is None:
        source = summary.get("input")
        video = isinstance(source, str) and input_is_video(source)
    numbers = None if frame_numbers is None else [int(n) for n in frame_numbers]
    return MaskSet(folder, files, numbers, bool(video))


def input_is_video(source: str | Path) -> bool:
    """Whether ``separate`` numbers the frames of ``source`` by their decode index.

    True for a video file or a pipe (``-``, ``stdin``), False for a folder of numbered
    images (whose frame numbers come from the file names). A path that no longer exists
    counts as a video when its name has a suffix (``clip.mp4``).
    """
    path = Path(source)
    if str(source) in ("-", "stdin"):
        return True
    if path.exists():
        return not path.is_dir()
    return path.suffix != ""


def map_frames(gt: GroundTruth, masks: MaskSet) -> tuple[list[tuple[int, Path]], str]:
    """Pairs ``(ground-truth position, mask file)`` and the name of the rule used."""
    if masks.frame_numbers is not None:
        return _by_frame_numbers(gt, masks), "frame_numbers"
    offset = 1 if masks.video and len(gt) == 1 and gt.kind == "binary" else 0
    pairs = [
        (index, masks.files[number + offset])
        for index, (number, _) in enumerate(gt.frames)
        if number + offset in masks.files
    ]
    if pairs:
        return pairs, "single_frame_index" if offset else "names"
    if len(gt) == 1:
        number = gt.frames[0][0] + offset
        raise InputError(
            f"ground truth {gt.frames[0][1].name} is frame {number - offset}, so it needs "
            f"bin{number:06d}.png, which is not in {masks.folder}; separate frames that cover "
            "it, or pass frame_numbers"
        )
    if len(gt) == len(masks.files):
        return list(zip(range(len(gt)), masks.files.values(), strict=True)), "same_count"
    raise InputError(
        f"cannot match {len(gt)} ground-truth frames in {gt.path} ({_span(gt.frame_numbers)}) "
        f"to {len(masks.files)} masks in {masks.folder} ({_span(list(masks.files))}): no "
        "mask is named after a ground-truth frame; pass frame_numbers (the source number of "
        "each mask's frame) or keep summary.json beside masks/"
    )


def _by_frame_numbers(gt: GroundTruth, masks: MaskSet) -> list[tuple[int, Path]]:
    """Rule 1: the ``i``-th mask is frame ``frame_numbers[i]`` (+ 1 for a video's CDnet
    ground truth)."""
    numbers = list(masks.frame_numbers or [])
    if masks.video and len(gt) > 1:
        numbers = [n + 1 for n in numbers]
    if len(numbers) != len(masks.files):
        raise InputError(
            f"{len(numbers)} frame numbers given for {len(masks.files)} masks in "
            f"{masks.folder}; pass one frame number per mask, in mask order"
        )
    position: dict[int, int] = {}
    for i, number in enumerate(numbers):
        if number in position:
            raise InputError(
                f"frame number {number} appears twice in the frame numbers of "
                f"{masks.folder}; pass each frame's source number once"
            )
        position[number] = i
    files = list(masks.files.values())
    pairs = [
        (index, files[position[number]])
        for index, (number, _) in enumerate(gt.frames)
        if number in position
    ]
    if not pairs:
        raise InputError(
            f"none of the ground-truth frames of {gt.path} ({_span(gt.frame_numbers)}) is "
            f"among the masks' frame numbers ({_span(numbers)}); pass the ground truth of "
            "the video that was separated"
        )
    return pairs


def _span(numbers: Sequence[int]) -> str:
    if not numbers:
        return "none"
    return f"{min(numbers)}-{max(numbers)}" if len(numbers) > 1 else str(numbers[0])


def _resolve_masks(path: Path) -> tuple[Path, Path | None]:
    """Masks folder and the ``summary.json`` that may describe them."""
    if not path.is_dir():
        what = "is not a folder" if path.exists() else "does not exist"
        raise InputError(
            f"masks folder {literal(path)} {what}; pass the output directory of "
            "`bpvideo separate` or its masks/ folder of bin%06d.png files"
        )
    if (path / "masks").is_dir():
        folder = path / "masks"
        summary = path / "summary.json"
    else:
        folder = path
        summary = path / "summary.json"
        if not summary.is_file() and path.name == "masks":
            summary = path.parent / "summary.json"
    return folder, summary if summary.is_file() else None


def _list_masks(folder: Path) -> dict[int, Path]:
    masks: dict[int, Path] = {}
    for file in folder.iterdir():
        match = _MASK_NAME.match(file.name)
        if match and file.is_file():
            masks[int(match.group(1))] = file
    if not masks:
        raise InputError(
            f"masks folder {folder} holds no bin%06d.png files; pass the output directory "
            "of `bpvideo separate` (with masks/) or its masks/ folder"
        )
    return dict(sorted(masks.items()))


def _read_summary(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_text(path, "a summary.json"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise InputError(
            f"summary {path} is not readable JSON ({exc}); fix or delete it, or pass "
            "frame_numbers explicitly"
        ) from None
    return data if isinstance(data, dict) else {}


def _frame_numbers(summary: dict[str, Any], path: Path | None) -> list[int] | None:
    """The ``"frame_numbers"`` of an older ``summary.json`` (masks numbered from 1)."""
    numbers = summary.get("frame_numbers")
    if numbers is None:
        return None
    if not isinstance(numbers, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) for n in numbers
    ):
        raise InputError(
            f"summary {path} has 'frame_numbers' that is not a list of integers; fix "
            "it or pass frame_numbers explicitly"
        )
    return numbers
