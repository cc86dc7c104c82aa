"""Score binary foreground masks against per-frame ground truth.

The scoring follows the changedetection.net (CDnet 2014) convention: ground-truth label
255 is foreground (motion), 0 (static) and 50 (hard shadow) are background, 85 (outside
the region of interest) and 170 (unknown, e.g. object boundaries) are ignored, and pixels
outside ``ROI.bmp`` are ignored too. A mask pixel is foreground when it is non-zero. True and
false positives and negatives are counted per frame, summed over every scored frame, and
turned into the seven CDnet metrics (:func:`confusion_metrics`).

Two image-similarity scores reported by the best-pair RPCA paper are added, per frame and
averaged over frames: the mean structural similarity index (:func:`ssim`, Wang et al. 2004)
and the epsilon-proximity metric of Dutta, Hanzely and Richtárik (:func:`epsilon_proximity`).

Masks are matched to ground-truth frames by name (``bin000470.png`` is scored against
``gt000470.png``), see :mod:`bpvideo.evaluate.mapping`. The temporal region of interest
``(first, last)`` is in ground-truth frame numbers and is applied after the mapping: only
ground-truth frames with ``first <= g <= last`` are scored (a range reaching past the
frames present is clipped to them).

References
----------
.. [1] Y. Wang, P.-M. Jodoin, F. Porikli, J. Konrad, Y. Benezeth and P. Ishwar,
   "CDnet 2014: an expanded change detection benchmark dataset", CVPR Workshops, 2014.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from bpvideo.errors import (
    ArgumentTypeError,
    BpvideoError,
    InputError,
    WorkError,
    literal,
    path_argument,
    shown,
)
from bpvideo.evaluate.groundtruth import (
    IS_BACKGROUND,
    IS_FOREGROUND,
    GroundTruth,
    load_groundtruth,
    load_roi,
    nonzero,
    read_temporal_roi,
)
from bpvideo.evaluate.mapping import _list_masks, _resolve_masks, map_frames, mask_set
from bpvideo.evaluate.metrics import DEFAULT_EPSILON, confusion_metrics, epsilon_proximity, ssim
from bpvideo.sinks.guard import (
    Access,
    check_access,
    folder_reads,
    groundtruth_reads,
    logfile_access,
)
from bpvideo.sinks.outputs import atomic_write_bytes
from bpvideo.sources.headers import read_image

__all__ = ["Evaluation", "check_complete", "check_evaluation", "evaluate", "format_table"]


_COUNT_KEYS = ("TP", "FP", "TN", "FN")
_METRIC_KEYS = ("recall", "specificity", "fpr", "fnr", "pwc", "precision", "f_measure")
_CSV_COLUMNS = (
    "frame",
    "mask",
    "groundtruth",
    *_COUNT_KEYS,
    "f_measure",
    "ssim",
    "epsilon_proximity",
)


@dataclass
class Evaluation:
    """Scores of one set of masks against one ground truth.

    Attributes
    ----------
    summary : dict
        ``frames_scored``; summed counts ``TP``, ``FP``, ``TN``, ``FN``; the seven metrics
        of :func:`confusion_metrics` from the summed counts; ``ssim`` and
        ``epsilon_proximity``, the means of the per-frame values; ``epsilon``.
    per_frame : list of dict
        One dict per scored frame, in frame order: ``frame`` (ground-truth frame number),
        ``mask`` and ``groundtruth`` (file names), ``TP``, ``FP``, ``TN``, ``FN``,
        ``f_measure``, ``ssim``, ``epsilon_proximity``.
    info : dict
        How the scoring was set up: ``masks`` (folder), ``groundtruth`` (path),
        ``mapping`` (``"frame_numbers"``, ``"single_frame_index"`` or ``"same_count"``),
        ``temporal_roi`` (``[first, last]`` as given, or None), ``frames`` (first and last
        ground-truth frame numbers actually scored), ``roi`` (path, ``"array"`` or
        None) and ``unscored`` (ground-truth frame numbers inside the temporal ROI that
        no mask matched: they were not scored; ``bpvideo evaluate`` refuses such a
        result, see :func:`check_complete`).
    """

    summary: dict[str, Any]
    per_frame: list[dict[str, Any]]
    info: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able copy: ``{"summary": ..., "per_frame": [...], "info": ...}``.

        Returns
        -------
        dict
            Plain ints, floats, strings and lists only.
        """
        return {
            "summary": dict(self.summary),
            "per_frame": [dict(row) for row in self.per_frame],
            "info": dict(self.info),
        }

    def to_csv(self, path: str | Path) -> Path:
        """Write the per-frame scores as CSV (one header row, one row per frame), atomically.

        The file is written to a temporary name in the same folder and renamed into
        place, so ``path`` holds either the old content or the complete new one.

        Parameters
        ----------
        path : str or Path
            Output file; missing parent folders are created.

        Returns
        -------
        Path
            The file written.

        Raises
        ------
        WorkError
            The file cannot be written.
        """
        path = Path(path)
        handle = io.StringIO(newline="")
        writer = csv.DictWriter(handle, fieldnames=list(_CSV_COLUMNS))
        writer.writeheader()
        for row in self.per_frame:
            writer.writerow({key: row[key] for key in _CSV_COLUMNS})
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, handle.getvalue().encode("utf-8"))
        except OSError as exc:
            raise WorkError(
                f"cannot write per-frame scores to {path} ({exc.strerror}); choose a writable path"
            ) from None
        return path


def check_evaluation(
    masks: str | Path,
    groundtruth: str | Path,
    roi: str | Path | None,
    temporal_roi: str | None,
    csv_path: str | Path | None,
    *,
    logfile: str | Path | None = None,
) -> None:
    """Refuse a CSV path (or ``--logfile``) that is one of the files scoring reads (a
    ground-truth frame, a mask, the ROI...), before any work.

    Raises
    ------
    InputError
        Naming the CSV, what it would replace, and ``--csv``.
    """
    if csv_path is None and logfile is None:
        return
    masks = Path(masks)
    reads = [
        Access(masks / "summary.json", "the summary"),
        Access(masks.parent / "summary.json", "the summary"),
    ]
    try:  # the masks scoring reads (not the earlier evaluation.csv beside them)
        folder, _ = _resolve_masks(masks)
        reads += folder_reads(folder, sorted(_list_masks(folder).values()), "the masks")
    except BpvideoError:
        pass  # reported by evaluate, with its message
    reads += groundtruth_reads(groundtruth)
    for path, what in ((roi, "the ROI"), (temporal_roi, "the temporal ROI")):
        if path is not None:
            reads.append(Access(Path(path), what))
    writes = logfile_access(logfile)
    if csv_path is not None:
        if Path(csv_path).is_dir():  # found now, not once the scores are made
            raise InputError(f"{csv_path}: --csv is a folder: give the path of a file "
                             "(--csv scores.csv)")  # fmt: skip
        writes.append(Access(Path(csv_path), "--csv", "--csv"))
    check_access(reads, writes)


def _read_mask(path: Path) -> np.ndarray:
    image = read_image(path, cv2.IMREAD_UNCHANGED)
    if image is None:
        raise InputError(
            f"mask {path} cannot be read as an image; re-run `bpvideo separate` to rewrite it"
        )
    return nonzero(image)


def evaluate(
    masks: str | Path,
    groundtruth: str | Path | GroundTruth,
    *,
    roi: str | Path | np.ndarray | None = None,
    temporal_roi: tuple[int, int] | None = None,
    frame_numbers: Sequence[int] | None = None,
    video: bool | None = None,
    epsilon: float = DEFAULT_EPSILON,
) -> Evaluation:
    """Score foreground masks against ground truth, changedetection.net style.

    Parameters
    ----------
    masks : str or Path
        A folder of ``bin%06d.png`` masks, or an output directory of ``bpvideo separate``
        holding ``masks/`` and ``summary.json``. A folder named ``masks`` also picks up
        ``summary.json`` from its parent. Non-zero mask pixels are foreground.
    groundtruth : str, Path or GroundTruth
        See :func:`~bpvideo.evaluate.groundtruth.load_groundtruth`.
    roi : str, Path or (H, W) ndarray, optional
        Spatial region of interest (non-zero inside); pixels outside are ignored. When
        None, ``ROI.bmp`` in the ground truth's sequence folder is used if present.
    temporal_roi : (int, int), optional
        ``(first, last)`` ground-truth frame numbers to score, inclusive. When None,
        ``temporalROI.txt`` in the sequence folder is used if present; otherwise every
        ground-truth frame is scored.
    frame_numbers : sequence of int, optional
        Source number of the frame of each mask, in mask order, for masks not named
        after their frames (other tools, older bpvideo results). Overrides
        ``summary.json``.
    video : bool, optional
        Whether the masks are of a video (named, or with ``frame_numbers`` numbered, by
        0-based decode index; see :mod:`bpvideo.evaluate.mapping`). None (default): as
        ``summary.json``'s ``"input"`` says, else False.
    epsilon : float, optional
        Tolerance of :func:`~bpvideo.evaluate.metrics.epsilon_proximity`.

    Returns
    -------
    Evaluation
        Summed counts, the seven metrics, mean SSIM and mean epsilon-proximity, and the
        per-frame scores.

    Raises
    ------
    InputError
        Missing or unreadable inputs, frames that cannot be matched (see
        :mod:`bpvideo.evaluate.mapping`), no ground-truth frame inside the temporal ROI,
        or a mask or ROI whose size differs from the ground truth.

    Notes
    -----
    Per pixel: ground truth 255 is foreground, 0 and 50 background, 85 and 170 and pixels
    outside the ROI are not counted. SSIM is computed on the whole frame between the mask
    and the binary ground truth as 0/1 images (ignored labels and pixels outside the ROI
    set to background), with data range 1. Epsilon-proximity counts the same pixels as
    the confusion counts. Metrics with a zero denominator are 0.0.
    """
    _check_arguments(roi, temporal_roi, frame_numbers, epsilon)
    found = mask_set(Path(path_argument("masks", masks)), frame_numbers, video)
    gt = groundtruth if isinstance(groundtruth, GroundTruth) else load_groundtruth(groundtruth)
    pairs, rule = map_frames(gt, found)
    pairs, temporal_roi = _in_temporal_roi(gt, pairs, temporal_roi)
    roi_mask, roi_source = _region(gt, roi)
    per_frame = [
        _score_frame(gt, index, mask_path, roi_mask, roi_source, epsilon)
        for index, mask_path in pairs
    ]
    info = {
        "masks": str(found.folder),
        "groundtruth": str(gt.path),
        "mapping": rule,
        "temporal_roi": list(temporal_roi) if temporal_roi is not None else None,
        "frames": [per_frame[0]["frame"], per_frame[-1]["frame"]],
        "roi": roi_source,
        "unscored": _unscored(gt, pairs, temporal_roi),
    }
    return Evaluation(summary=_summary(per_frame, epsilon), per_frame=per_frame, info=info)


def _unscored(
    gt: GroundTruth, pairs: list[tuple[int, Path]], temporal_roi: tuple[int, int] | None
) -> list[int]:
    """Ground-truth frame numbers inside the temporal ROI that no mask was matched to."""
    first, last = temporal_roi if temporal_roi is not None else (-math.inf, math.inf)
    scored = {gt.frames[i][0] for i, _ in pairs}
    return [n for n in gt.frame_numbers if first <= n <= last and n not in scored]


def check_complete(result: Evaluation) -> None:
    """Refuse scores that leave ground-truth frames out (fewer masks than ground-truth
    frames): a score of part of a sequence read as the whole one's.

    Raises
    ------
    InputError
        ``"out/masks: 30 of the 54 ground-truth frames to score have no mask (the first:
        25; the masks cover 1-24): separate the frames that cover them, or pass
        --allow-partial to score only the frames that have a mask"``.
    """
    missing = result.info.get("unscored") or []
    if not missing:
        return
    scored = result.info["frames"]
    total = len(missing) + result.summary["frames_scored"]
    raise InputError(
        f"{literal(result.info['masks'])}: {len(missing)} of the {total} ground-truth frames "
        f"to score have no mask (the first: {missing[0]}; the masks cover "
        f"{scored[0]}-{scored[-1]}): separate the frames that cover them, or pass "
        "--allow-partial to score only the frames that have a mask"
    )


def _summary(per_frame: list[dict[str, Any]], epsilon: float) -> dict[str, Any]:
    """Summed counts, the seven metrics, mean SSIM and epsilon-proximity of scored frames."""
    totals = {key: sum(row[key] for row in per_frame) for key in _COUNT_KEYS}
    summary: dict[str, Any] = {"frames_scored": len(per_frame), **totals}
    summary.update(confusion_metrics(totals["TP"], totals["FP"], totals["TN"], totals["FN"]))
    summary["ssim"] = float(np.mean([row["ssim"] for row in per_frame]))
    summary["epsilon_proximity"] = float(np.mean([row["epsilon_proximity"] for row in per_frame]))
    summary["epsilon"] = float(epsilon)
    return summary


def _in_temporal_roi(
    gt: GroundTruth, pairs: list[tuple[int, Path]], temporal_roi: tuple[int, int] | None
) -> tuple[list[tuple[int, Path]], tuple[int, int] | None]:
    """The pairs whose ground-truth frame lies in the temporal ROI (given, or the
    sequence's ``temporalROI.txt``)."""
    if temporal_roi is None:
        roi_file = gt.sequence_dir / "temporalROI.txt"
        if roi_file.is_file():
            temporal_roi = read_temporal_roi(roi_file)
    if temporal_roi is None:
        return pairs, None
    first, last = int(temporal_roi[0]), int(temporal_roi[1])
    if first > last:
        raise InputError(f"temporal ROI ({first}, {last}) has first > last; pass (first, last)")
    pairs = [(i, m) for i, m in pairs if first <= gt.frames[i][0] <= last]
    if not pairs:
        raise InputError(
            f"no matched ground-truth frame of {gt.path} lies in the temporal ROI "
            f"{first}-{last}; pass a temporal ROI that overlaps the separated frames"
        )
    return pairs, (first, last)


def _check_arguments(roi: Any, temporal_roi: Any, frame_numbers: Any, epsilon: Any) -> None:
    """Refuse arguments of :func:`evaluate` of the wrong kind by name, before any file is
    read (they failed inside it with IndexError, or int()'s and pathlib's own messages)."""
    if roi is not None and not isinstance(roi, np.ndarray):
        path_argument("roi", roi)
    if temporal_roi is not None and not _integers(temporal_roi, 2):
        raise ArgumentTypeError(
            f"temporal_roi={literal(shown(temporal_roi))} must be two frame numbers "
            "(first, last): e.g. (470, 1700)"
        )
    if frame_numbers is not None and not _integers(frame_numbers):
        raise ArgumentTypeError(
            f"frame_numbers={literal(shown(frame_numbers))} must be a sequence of integers: "
            "the source number of each mask's frame, in mask order"
        )
    if isinstance(epsilon, (bool, str)) or not isinstance(epsilon, (int, float, np.number)):
        raise ArgumentTypeError(f"epsilon={literal(shown(epsilon))} must be a number: e.g. 0.5")
    if not epsilon >= 0 or not math.isfinite(epsilon):
        raise InputError(f"epsilon ({epsilon}) must be a finite number >= 0; pass e.g. 0.5")


def _integers(value: Any, count: int | None = None) -> bool:
    """Whether ``value`` is a sequence (of ``count`` items) of whole numbers."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        return False
    items = list(np.ravel(value)) if isinstance(value, np.ndarray) else list(value)
    return (count is None or len(items) == count) and all(
        isinstance(v, (int, float, np.integer, np.floating))
        and not isinstance(v, bool)
        and float(v).is_integer()
        for v in items
    )


def _region(
    gt: GroundTruth, roi: str | Path | np.ndarray | None
) -> tuple[np.ndarray | None, str | None]:
    """The spatial ROI (given, or the sequence's ``ROI.bmp``) and where it came from."""
    if roi is None:
        roi_file = gt.sequence_dir / "ROI.bmp"
        if roi_file.is_file():
            return load_roi(roi_file), str(roi_file)
        return None, None
    if isinstance(roi, np.ndarray):
        return nonzero(roi), "array"
    return load_roi(roi), str(roi)


def _score_frame(
    gt: GroundTruth,
    index: int,
    mask_path: Path,
    roi_mask: np.ndarray | None,
    roi_source: str | None,
    epsilon: float,
) -> dict[str, Any]:
    """The scores of one mask against the ``index``-th ground-truth frame."""
    number, gt_path = gt.frames[index]
    labels = gt.load(index)
    pred = _read_mask(mask_path)
    if pred.shape != labels.shape:
        raise InputError(
            f"mask {mask_path} is {pred.shape[1]}x{pred.shape[0]} but ground truth "
            f"{gt_path} is {labels.shape[1]}x{labels.shape[0]}; separate at the "
            "ground truth's resolution (no resizing) or pass the matching ground truth"
        )
    positive, negative = IS_FOREGROUND[labels], IS_BACKGROUND[labels]
    if roi_mask is not None:
        if roi_mask.shape != labels.shape:
            raise InputError(
                f"ROI {roi_source} is {roi_mask.shape[1]}x{roi_mask.shape[0]} but ground "
                f"truth {gt_path} is {labels.shape[1]}x{labels.shape[0]}; pass the ROI "
                "of this sequence"
            )
        positive &= roi_mask
        negative &= roi_mask
    counts = {
        "TP": int(np.count_nonzero(pred & positive)),
        "FP": int(np.count_nonzero(pred & negative)),
        "TN": int(np.count_nonzero(~pred & negative)),
        "FN": int(np.count_nonzero(~pred & positive)),
    }
    pred01 = pred.astype(np.float64)
    truth01 = positive.astype(np.float64)
    return {
        "frame": number,
        "mask": mask_path.name,
        "groundtruth": gt_path.name,
        **counts,
        "f_measure": confusion_metrics(counts["TP"], counts["FP"], counts["TN"], counts["FN"])[
            "f_measure"
        ],
        "ssim": ssim(pred01, truth01, data_range=1.0),
        "epsilon_proximity": epsilon_proximity(
            pred01, truth01, epsilon=epsilon, valid=positive | negative
        ),
    }


def format_table(evaluation: Evaluation) -> str:
    """Human-readable summary of an evaluation (for stderr).

    Parameters
    ----------
    evaluation : Evaluation
        Result of :func:`evaluate`.

    Returns
    -------
    str
        A few aligned lines, without a trailing newline.
    """
    s = evaluation.summary
    info = evaluation.info
    troi = info.get("temporal_roi")
    head = f"frames scored  {s['frames_scored']}"
    if info.get("mapping"):
        head += f"  (mapping: {info['mapping']}"
        head += f", temporal ROI {troi[0]}-{troi[1]})" if troi else ")"
    rows = [
        ("TP / FP / TN / FN", f"{s['TP']} / {s['FP']} / {s['TN']} / {s['FN']}"),
        ("recall", f"{s['recall']:.4f}"),
        ("specificity", f"{s['specificity']:.4f}"),
        ("FPR", f"{s['fpr']:.4f}"),
        ("FNR", f"{s['fnr']:.4f}"),
        ("PWC (%)", f"{s['pwc']:.4f}"),
        ("precision", f"{s['precision']:.4f}"),
        ("F-measure", f"{s['f_measure']:.4f}"),
        ("SSIM (mean)", f"{s['ssim']:.4f}"),
        (
            f"d_eps (mean, eps={s.get('epsilon', DEFAULT_EPSILON):g})",
            f"{s['epsilon_proximity']:.4f}",
        ),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join([head, *(f"{name.ljust(width)}  {value}" for name, value in rows)])
