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

Frame mapping
-------------
``bpvideo separate`` writes the mask of the ``i``-th input frame (in input order, counting
from 1) as ``masks/bin%06d.png``. A ground-truth frame is matched to a mask by the first rule
that applies:

1. **Frame numbers known** (the ``frame_numbers`` argument, or the ``"frame_numbers"`` list
   of ``summary.json`` beside ``masks/``): ``frame_numbers[i]`` is the original number of
   the ``i``-th input frame, so ground-truth frame ``g`` is scored against
   ``bin%06d.png % (i + 1)`` where ``frame_numbers[i] == g``. Ground-truth frames whose
   number is not listed are skipped (the video did not cover them). For a video input
   ``separate`` records 0-based decode indices, and a changedetection.net ground-truth
   folder numbers a video's frames from 1, so there decode index ``i`` is frame ``i + 1``
   (see the ``video`` argument of :func:`evaluate`).
2. **One ground-truth frame** (Wallflower convention): its number is a 0-based index into
   the input, so ``hand_segmented_00247.BMP`` is the 248th frame, ``bin000248.png``.
3. **As many ground-truth frames as masks**: the ``i``-th ground-truth file (sorted by frame
   number) is scored against the ``i``-th mask (sorted by mask number).

Anything else is an :class:`~bpvideo.errors.InputError` that asks for the frame numbers.
The temporal region of interest ``(first, last)`` is in ground-truth frame numbers and is
applied after the mapping: only ground-truth frames with ``first <= g <= last`` are scored
(a range reaching past the frames present is clipped to them).

References
----------
.. [1] Y. Wang, P.-M. Jodoin, F. Porikli, J. Konrad, Y. Benezeth and P. Ishwar,
   "CDnet 2014: an expanded change detection benchmark dataset", CVPR Workshops, 2014.
.. [2] Z. Wang, A. C. Bovik, H. R. Sheikh and E. P. Simoncelli, "Image quality assessment:
   from error visibility to structural similarity", IEEE Trans. Image Processing 13(4),
   2004.
.. [3] A. Dutta, F. Hanzely and P. Richtárik, "A nonconvex projection method for robust
   PCA", AAAI 2019 (arXiv:1805.07962).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from bpvideo.errors import InputError, WorkError
from bpvideo.writer import atomic_write_bytes

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

LABEL_STATIC = 0
"""CDnet label: static background."""
LABEL_SHADOW = 50
"""CDnet label: hard shadow (scored as background)."""
LABEL_OUTSIDE_ROI = 85
"""CDnet label: outside the region of interest (ignored)."""
LABEL_UNKNOWN = 170
"""CDnet label: unknown motion, e.g. object boundaries (ignored)."""
LABEL_MOTION = 255
"""CDnet label: motion (foreground)."""

_CDNET_LABELS = (LABEL_STATIC, LABEL_SHADOW, LABEL_OUTSIDE_ROI, LABEL_UNKNOWN, LABEL_MOTION)
_ALLOWED = np.zeros(256, dtype=bool)
_ALLOWED[list(_CDNET_LABELS)] = True
_FOREGROUND = np.zeros(256, dtype=bool)
_FOREGROUND[LABEL_MOTION] = True
_BACKGROUND = np.zeros(256, dtype=bool)
_BACKGROUND[[LABEL_STATIC, LABEL_SHADOW]] = True

_TRAILING_DIGITS = re.compile(r"(\d+)$")
_MASK_NAME = re.compile(r"^bin(\d+)\.png$", re.IGNORECASE)
_IMAGE_SUFFIXES = {".png", ".bmp", ".jpg", ".jpeg", ".tif", ".tiff", ".pgm", ".ppm"}

DEFAULT_EPSILON = 0.5
"""Default tolerance of :func:`epsilon_proximity`: half the 0/1 step of a binary mask."""


# --------------------------------------------------------------------------------------
# Ground truth, ROI and temporal ROI
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroundTruth:
    """Per-frame ground truth: frame numbers and files; label arrays load lazily.

    Attributes
    ----------
    path : Path
        What was given to :func:`load_groundtruth` (a folder or one file).
    frames : list of (int, Path)
        ``(frame_number, file)`` sorted by frame number; the number is parsed from the
        trailing digits of the file name (``gt000470.png`` -> 470).
    kind : {"cdnet", "binary"}
        ``"cdnet"``: 8-bit label images (0/50/85/170/255), gray or palette PNG.
        ``"binary"``: Wallflower-style image (e.g. RGB 0/255), thresholded at > 127 to
        labels 0/255.
    sequence_dir : Path
        Folder where ``temporalROI.txt`` and ``ROI.bmp`` are looked for: the parent of a
        ``groundtruth/`` folder, or the folder holding a single ground-truth file.
    """

    path: Path
    frames: list[tuple[int, Path]]
    kind: str
    sequence_dir: Path

    def __len__(self) -> int:
        return len(self.frames)

    @property
    def frame_numbers(self) -> list[int]:
        """Frame numbers, in order."""
        return [number for number, _ in self.frames]

    def load(self, index: int) -> np.ndarray:
        """Read the labels of the ``index``-th frame (position in :attr:`frames`).

        Parameters
        ----------
        index : int
            Position in :attr:`frames`, not the frame number.

        Returns
        -------
        (H, W) uint8 ndarray
            CDnet labels (0/50/85/170/255); a ``"binary"`` frame gives 0/255 only.

        Raises
        ------
        InputError
            The file is unreadable, not 8-bit, colour-coded, or holds values that are not
            CDnet labels.
        """
        return _read_labels(self.frames[index][1], self.kind)


def _frame_number(path: Path) -> int | None:
    match = _TRAILING_DIGITS.search(path.stem)
    return int(match.group(1)) if match else None


def _numbered(files: Sequence[Path]) -> list[tuple[int, Path]]:
    out: list[tuple[int, Path]] = []
    seen: dict[int, Path] = {}
    for file in files:
        number = _frame_number(file)
        if number is None:
            continue
        if number in seen:
            raise InputError(
                f"ground truth {file} and {seen[number]} both have frame number {number}; "
                "keep one file per frame number"
            )
        seen[number] = file
        out.append((number, file))
    out.sort(key=lambda item: item[0])
    return out


def load_groundtruth(path: str | Path) -> GroundTruth:
    """Find the ground-truth frames of a sequence.

    Parameters
    ----------
    path : str or Path
        One of:

        - a changedetection.net ``groundtruth/`` folder of ``gt%06d.png`` label images
          (0 static, 50 shadow, 85 outside ROI, 170 unknown, 255 motion; gray or palette);
        - a sequence folder holding such a ``groundtruth/`` folder;
        - a folder of Wallflower-style ``hand_segmented_%05d.*`` images;
        - a single ground-truth image. ``gt*.png`` is read as CDnet labels; any other
          name (e.g. ``hand_segmented_00247.BMP``, RGB 0/255) is thresholded: gray > 127
          is foreground (255), the rest background (0).

    Returns
    -------
    GroundTruth
        Frame numbers (trailing digits of each file name) and files; labels load lazily
        with :meth:`GroundTruth.load`.

    Raises
    ------
    InputError
        The path does not exist or holds no numbered ground-truth image.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(
            f"ground truth {path} does not exist; pass a changedetection.net groundtruth/ "
            "folder (gt%06d.png) or one ground-truth image"
        )
    if path.is_file():
        number = _frame_number(path)
        if number is None:
            raise InputError(
                f"ground truth {path.name} has no frame number at the end of its name; "
                "rename it like hand_segmented_00247.bmp or gt000247.png"
            )
        kind = "cdnet" if _is_cdnet_name(path) else "binary"
        return GroundTruth(path, [(number, path)], kind, path.parent)

    folder = path
    cdnet = sorted(p for p in folder.glob("gt*.png") if p.is_file())
    if not cdnet and (folder / "groundtruth").is_dir():
        folder = folder / "groundtruth"
        cdnet = sorted(p for p in folder.glob("gt*.png") if p.is_file())
    if cdnet:
        frames = _numbered(cdnet)
        if frames:
            return GroundTruth(path, frames, "cdnet", folder.parent)
    wallflower = sorted(
        p
        for p in folder.iterdir()
        if p.is_file()
        and p.name.lower().startswith("hand_segmented")
        and p.suffix.lower() in _IMAGE_SUFFIXES
    )
    frames = _numbered(wallflower)
    if frames:
        return GroundTruth(path, frames, "binary", folder)
    raise InputError(
        f"ground truth folder {path} holds no gt%06d.png or hand_segmented_* images; "
        "pass the sequence's groundtruth/ folder or one ground-truth image"
    )


def _is_cdnet_name(path: Path) -> bool:
    return path.name.lower().startswith("gt") and path.suffix.lower() == ".png"


def _read_labels(path: Path, kind: str) -> np.ndarray:
    if kind == "binary":
        image = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)
        if image is None:
            raise InputError(
                f"ground truth {path} cannot be read as an image; check the file "
                "(Wallflower ground truth is a 0/255 BMP)"
            )
        return np.where(image > 127, LABEL_MOTION, LABEL_STATIC).astype(np.uint8)

    # IMREAD_UNCHANGED keeps 8-bit gray as is and expands palette PNGs to BGR through the
    # palette, so palette indices become the real label values. A CDnet palette is gray
    # (R = G = B), which is checked rather than assumed.
    image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if image is None:
        raise InputError(
            f"ground truth {path} cannot be read as an image; check the file "
            "(CDnet ground truth is an 8-bit gray or palette PNG)"
        )
    if image.dtype != np.uint8:
        raise InputError(
            f"ground truth {path} is {image.dtype}, not 8-bit; save it as an 8-bit gray "
            "PNG with labels 0/50/85/170/255"
        )
    if image.ndim == 3:
        color = image[:, :, :3]
        if not (
            np.array_equal(color[:, :, 0], color[:, :, 1])
            and np.array_equal(color[:, :, 0], color[:, :, 2])
        ):
            raise InputError(
                f"ground truth {path} is a colour image, not gray labels; save it as an "
                "8-bit gray PNG with labels 0/50/85/170/255"
            )
        image = np.ascontiguousarray(color[:, :, 0])
    bad = ~_ALLOWED[image]
    if bad.any():
        values = np.unique(image[bad])[:8].tolist()
        raise InputError(
            f"ground truth {path} holds values {values} that are not CDnet labels "
            "0/50/85/170/255; pass CDnet label images, or a single 0/255 image named "
            "other than gt*.png to threshold it"
        )
    return image


def read_temporal_roi(path: str | Path) -> tuple[int, int]:
    """Read a changedetection.net ``temporalROI.txt``.

    Parameters
    ----------
    path : str or Path
        Text file with two integers, the first and last ground-truth frame numbers to
        score (inclusive), e.g. ``470 1700``.

    Returns
    -------
    (int, int)
        ``(first, last)``.

    Raises
    ------
    InputError
        The file is missing, does not hold two integers, or ``first > last``.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(
            f"temporal ROI {path} cannot be read ({exc.strerror}); pass an existing "
            "temporalROI.txt holding 'first last'"
        ) from None
    parts = text.split()
    try:
        if len(parts) != 2:
            raise ValueError
        first, last = int(parts[0]), int(parts[1])
    except ValueError:
        raise InputError(
            f"temporal ROI {path} must hold two integers 'first last', found {text.strip()!r}; "
            "fix the file"
        ) from None
    if first > last:
        raise InputError(
            f"temporal ROI {path} has first ({first}) > last ({last}); swap the numbers"
        )
    return first, last


def load_roi(path: str | Path) -> np.ndarray:
    """Read a spatial region of interest image (``ROI.bmp``).

    Parameters
    ----------
    path : str or Path
        Image; any non-zero pixel (in any channel) is inside the region.

    Returns
    -------
    (H, W) bool ndarray
        True inside the region of interest.

    Raises
    ------
    InputError
        The file is missing or unreadable.
    """
    path = Path(path)
    image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED) if path.is_file() else None
    if image is None:
        raise InputError(
            f"ROI {path} cannot be read as an image; pass an existing ROI.bmp "
            "(non-zero inside the region)"
        )
    return _nonzero(image)


def _nonzero(image: np.ndarray) -> np.ndarray:
    if image.ndim == 3:
        return np.any(image[:, :, :3] != 0, axis=2)
    return image != 0


# --------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------


def _ratio(num: float, den: float) -> float:
    return float(num) / float(den) if den else 0.0


def confusion_metrics(tp: int, fp: int, tn: int, fn: int) -> dict[str, float]:
    """The seven changedetection.net metrics from pixel counts.

    Parameters
    ----------
    tp, fp, tn, fn : int
        True positives, false positives, true negatives, false negatives.

    Returns
    -------
    dict of str to float
        ``recall`` = TP/(TP+FN), ``specificity`` = TN/(TN+FP), ``fpr`` = FP/(FP+TN),
        ``fnr`` = FN/(TP+FN), ``pwc`` = 100 (FN+FP)/(TP+FN+FP+TN) (percentage of wrong
        classifications), ``precision`` = TP/(TP+FP) and ``f_measure`` =
        2 precision recall / (precision + recall).

    Notes
    -----
    A ratio whose denominator is 0 is defined as 0.0 (for example precision of a mask with
    no foreground pixel, recall of a frame without ground-truth foreground), so every value
    is finite and JSON-able. F-measure is computed from precision and recall after that
    rule, and is 0.0 when both are 0.
    """
    recall = _ratio(tp, tp + fn)
    precision = _ratio(tp, tp + fp)
    return {
        "recall": recall,
        "specificity": _ratio(tn, tn + fp),
        "fpr": _ratio(fp, fp + tn),
        "fnr": _ratio(fn, tp + fn),
        "pwc": 100.0 * _ratio(fn + fp, tp + fn + fp + tn),
        "precision": precision,
        "f_measure": _ratio(2.0 * precision * recall, precision + recall),
    }


def ssim(
    x: np.ndarray,
    y: np.ndarray,
    *,
    data_range: float = 1.0,
    sigma: float = 1.5,
    k1: float = 0.01,
    k2: float = 0.03,
) -> float:
    """Mean structural similarity index of two images (Wang et al. 2004).

    Local means, variances and covariance are Gaussian-weighted (standard deviation
    ``sigma``, truncated at 3.5 sigma: an 11x11 window for sigma 1.5, reflected at the
    borders) and use population (not sample) statistics, as in the paper and
    ``skimage.metrics.structural_similarity(..., gaussian_weights=True, sigma=1.5,
    use_sample_covariance=False)``. The SSIM map is averaged after cropping the half
    window at each border; an image smaller than the window is averaged whole.

    Parameters
    ----------
    x, y : (H, W) array_like
        Images of the same shape, e.g. binary masks as 0/1.
    data_range : float, optional
        Dynamic range of the values (1 for 0/1 masks).
    sigma : float, optional
        Standard deviation of the Gaussian window.
    k1, k2 : float, optional
        Stabilising constants; ``C1 = (k1 L)^2``, ``C2 = (k2 L)^2`` with ``L = data_range``.

    Returns
    -------
    float
        Mean SSIM, in [-1, 1]; 1 for identical images.

    Raises
    ------
    ValueError
        The shapes differ or the images are not 2-D.
    """
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"ssim needs two 2-D images of one shape, got {a.shape} and {b.shape}")
    truncate = 3.5
    half = int(truncate * sigma + 0.5)

    from scipy import ndimage  # here: importing scipy.ndimage takes ~0.4 s

    def smooth(image: np.ndarray) -> np.ndarray:
        return ndimage.gaussian_filter(image, sigma=sigma, truncate=truncate, mode="reflect")

    mu_a, mu_b = smooth(a), smooth(b)
    var_a = smooth(a * a) - mu_a * mu_a
    var_b = smooth(b * b) - mu_b * mu_b
    cov = smooth(a * b) - mu_a * mu_b
    c1 = (k1 * data_range) ** 2
    c2 = (k2 * data_range) ** 2
    num = (2.0 * mu_a * mu_b + c1) * (2.0 * cov + c2)
    den = (mu_a * mu_a + mu_b * mu_b + c1) * (var_a + var_b + c2)
    index = num / den
    if min(a.shape) > 2 * half:
        index = index[half:-half, half:-half]
    return float(index.mean())


def epsilon_proximity(
    x: np.ndarray,
    y: np.ndarray,
    *,
    epsilon: float = DEFAULT_EPSILON,
    valid: np.ndarray | None = None,
) -> float:
    """Epsilon-proximity ``d_eps(X, Y)`` of Dutta, Hanzely and Richtárik.

    The share of entries where the two images agree up to ``epsilon``::

        d_eps(X, Y) = #{(i, j) : |X_ij - Y_ij| <= eps} / #{(i, j)}

    The best-pair RPCA paper reports it (with SSIM) for the recovered foreground against
    the ground truth, citing its definition in Dutta, Hanzely & Richtárik (2019); 1 means
    every pixel agrees. For 0/1 masks and any ``0 < epsilon < 1`` it is the fraction of
    pixels classified correctly, i.e. ``(TP + TN) / (TP + FP + TN + FN)`` when ``valid``
    excludes the ignored pixels, which is ``1 - PWC / 100``.

    Parameters
    ----------
    x, y : array_like
        Arrays of the same shape, e.g. a mask and the ground truth as 0/1.
    epsilon : float, optional
        Tolerance, >= 0.
    valid : array_like of bool, optional
        Entries to count (True); all when None.

    Returns
    -------
    float
        In [0, 1]; 0.0 when no entry is counted.

    Raises
    ------
    ValueError
        Shapes differ or ``epsilon`` is negative.
    """
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"epsilon_proximity needs one shape, got {a.shape} and {b.shape}")
    if not epsilon >= 0:
        raise ValueError(f"epsilon ({epsilon}) must be >= 0")
    close = np.abs(a - b) <= epsilon
    if valid is None:
        return _ratio(int(close.sum()), close.size)
    keep = np.asarray(valid, dtype=bool)
    if keep.shape != a.shape:
        raise ValueError(f"valid has shape {keep.shape}, images {a.shape}")
    return _ratio(int(np.count_nonzero(close & keep)), int(np.count_nonzero(keep)))


# --------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------

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
        ground-truth frame numbers actually scored) and ``roi`` (path, ``"array"`` or
        None).
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


def _resolve_masks(path: Path) -> tuple[Path, Path | None]:
    """Masks folder and the ``summary.json`` that may list frame numbers."""
    if not path.is_dir():
        raise InputError(
            f"masks folder {path} does not exist; pass the output directory of "
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


def _read_frame_numbers(summary: Path) -> list[int] | None:
    try:
        data = json.loads(summary.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(
            f"summary {summary} is not readable JSON ({exc}); fix or delete it, or pass "
            "frame_numbers explicitly"
        ) from None
    if not isinstance(data, dict) or data.get("frame_numbers") is None:
        return None
    numbers = data["frame_numbers"]
    if not isinstance(numbers, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) for n in numbers
    ):
        raise InputError(
            f"summary {summary} has 'frame_numbers' that is not a list of integers; fix "
            "it or pass frame_numbers explicitly"
        )
    return numbers


def _input_is_video(summary: Path) -> bool:
    """Whether the ``summary.json`` of ``separate`` describes a video (not an image folder)."""
    try:
        data = json.loads(summary.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    source = data.get("input") if isinstance(data, dict) else None
    return isinstance(source, str) and input_is_video(source)


def input_is_video(source: str | Path) -> bool:
    """Whether ``separate`` numbers the frames of ``source`` by their 0-based decode index.

    True for a video file or a pipe (``-``), False for a folder of numbered images (whose
    frame numbers come from the file names). A path that no longer exists counts as a
    video when its name has a suffix (``clip.mp4``).
    """
    path = Path(source)
    if str(source) == "-":
        return True
    if path.exists():
        return not path.is_dir()
    return path.suffix != ""


def _map_frames(
    gt: GroundTruth,
    masks: dict[int, Path],
    frame_numbers: Sequence[int] | None,
    mask_dir: Path,
) -> tuple[list[tuple[int, Path]], str]:
    """Pairs ``(ground-truth position, mask file)`` and the name of the rule used."""
    if frame_numbers is not None:
        numbers = [int(n) for n in frame_numbers]
        if len(numbers) != len(masks):
            raise InputError(
                f"{len(numbers)} frame numbers given for {len(masks)} masks in {mask_dir}; "
                "pass one frame number per mask, in input order"
            )
        position: dict[int, int] = {}
        for i, number in enumerate(numbers):
            if number in position:
                raise InputError(
                    f"frame number {number} appears twice in the frame numbers of "
                    f"{mask_dir}; pass each input frame's original number once"
                )
            position[number] = i
        pairs = []
        for index, (number, _) in enumerate(gt.frames):
            if number not in position:
                continue
            mask_number = position[number] + 1
            if mask_number not in masks:
                raise InputError(
                    f"mask bin{mask_number:06d}.png for frame {number} is missing from "
                    f"{mask_dir}; re-run `bpvideo separate` or fix the frame numbers"
                )
            pairs.append((index, masks[mask_number]))
        if not pairs:
            raise InputError(
                f"none of the ground-truth frames of {gt.path} "
                f"({_span(gt.frame_numbers)}) is among the masks' frame numbers "
                f"({_span(numbers)}); pass the ground truth of the video that was separated"
            )
        return pairs, "frame_numbers"

    if len(gt) == 1:
        number = gt.frames[0][0]
        mask_number = number + 1
        if mask_number not in masks:
            raise InputError(
                f"ground truth {gt.frames[0][1].name} is frame index {number} (0-based), so "
                f"it needs bin{mask_number:06d}.png, which is not in {mask_dir}; separate a "
                "video that covers that frame, or pass frame_numbers"
            )
        return [(0, masks[mask_number])], "single_frame_index"

    if len(gt) == len(masks):
        return list(zip(range(len(gt)), masks.values(), strict=True)), "same_count"

    raise InputError(
        f"cannot match {len(gt)} ground-truth frames in {gt.path} to {len(masks)} masks in "
        f"{mask_dir}: frame numbers unknown; pass frame_numbers (the original number of each "
        "input frame) or keep summary.json with 'frame_numbers' beside masks/"
    )


def _span(numbers: Sequence[int]) -> str:
    if not numbers:
        return "none"
    return f"{min(numbers)}-{max(numbers)}" if len(numbers) > 1 else str(numbers[0])


def _read_mask(path: Path) -> np.ndarray:
    image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if image is None:
        raise InputError(
            f"mask {path} cannot be read as an image; re-run `bpvideo separate` to rewrite it"
        )
    return _nonzero(image)


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
        A folder of ``bin%06d.png`` masks (numbered from 1 in input order), or an output
        directory of ``bpvideo separate`` holding ``masks/`` and possibly ``summary.json``
        (whose ``"frame_numbers"`` list maps masks to frames). A folder named ``masks``
        also picks up ``summary.json`` from its parent. Non-zero mask pixels are
        foreground.
    groundtruth : str, Path or GroundTruth
        See :func:`load_groundtruth`.
    roi : str, Path or (H, W) ndarray, optional
        Spatial region of interest (non-zero inside); pixels outside are ignored. When
        None, ``ROI.bmp`` in the ground truth's sequence folder is used if present.
    temporal_roi : (int, int), optional
        ``(first, last)`` ground-truth frame numbers to score, inclusive. When None,
        ``temporalROI.txt`` in the sequence folder is used if present; otherwise every
        ground-truth frame is scored.
    frame_numbers : sequence of int, optional
        Original frame number of each input frame, in input order (one per mask).
        Overrides ``summary.json``.
    video : bool, optional
        Whether ``frame_numbers`` are 0-based decode indices of a video (as ``separate``
        records for video input) rather than numbers from image file names. A
        changedetection.net ground-truth folder numbers a video's frames from 1
        (``gt000001.png`` is the first frame), so with ``video=True`` and more than one
        ground-truth frame, index ``i`` is matched to ground-truth frame ``i + 1``; a single
        Wallflower-style frame keeps its 0-based index. None (default): True when the
        numbers come from a ``summary.json`` whose ``"input"`` is a video file, else False.
    epsilon : float, optional
        Tolerance of :func:`epsilon_proximity`.

    Returns
    -------
    Evaluation
        Summed counts, the seven metrics, mean SSIM and mean epsilon-proximity, and the
        per-frame scores.

    Raises
    ------
    InputError
        Missing or unreadable inputs, frames that cannot be matched (see the module
        docstring for the rule), no ground-truth frame inside the temporal ROI, or a mask
        or ROI whose size differs from the ground truth.

    Notes
    -----
    Per pixel: ground truth 255 is foreground, 0 and 50 background, 85 and 170 and pixels
    outside the ROI are not counted. SSIM is computed on the whole frame between the mask
    and the binary ground truth as 0/1 images (ignored labels and pixels outside the ROI
    set to background), with data range 1. Epsilon-proximity counts the same pixels as
    the confusion counts. Metrics with a zero denominator are 0.0.
    """
    mask_dir, summary_path = _resolve_masks(Path(masks))
    mask_files = _list_masks(mask_dir)
    gt = groundtruth if isinstance(groundtruth, GroundTruth) else load_groundtruth(groundtruth)
    if frame_numbers is None and summary_path is not None:
        frame_numbers = _read_frame_numbers(summary_path)
        if video is None:
            video = _input_is_video(summary_path)
    if frame_numbers is not None and video and len(gt) > 1:
        frame_numbers = [int(n) + 1 for n in frame_numbers]
    if not epsilon >= 0 or not math.isfinite(epsilon):
        raise InputError(f"epsilon ({epsilon}) must be a finite number >= 0; pass e.g. 0.5")

    pairs, rule = _map_frames(gt, mask_files, frame_numbers, mask_dir)

    if temporal_roi is None:
        roi_file = gt.sequence_dir / "temporalROI.txt"
        if roi_file.is_file():
            temporal_roi = read_temporal_roi(roi_file)
    if temporal_roi is not None:
        first, last = int(temporal_roi[0]), int(temporal_roi[1])
        if first > last:
            raise InputError(f"temporal ROI ({first}, {last}) has first > last; pass (first, last)")
        temporal_roi = (first, last)
        pairs = [(i, m) for i, m in pairs if first <= gt.frames[i][0] <= last]
        if not pairs:
            raise InputError(
                f"no matched ground-truth frame of {gt.path} lies in the temporal ROI "
                f"{first}-{last}; pass a temporal ROI that overlaps the separated frames"
            )

    roi_source: str | None = None
    roi_mask: np.ndarray | None = None
    if roi is None:
        roi_file = gt.sequence_dir / "ROI.bmp"
        if roi_file.is_file():
            roi_mask, roi_source = load_roi(roi_file), str(roi_file)
    elif isinstance(roi, np.ndarray):
        roi_mask, roi_source = _nonzero(roi), "array"
    else:
        roi_mask, roi_source = load_roi(roi), str(roi)

    per_frame: list[dict[str, Any]] = []
    totals = dict.fromkeys(_COUNT_KEYS, 0)
    for index, mask_path in pairs:
        number, gt_path = gt.frames[index]
        labels = gt.load(index)
        pred = _read_mask(mask_path)
        if pred.shape != labels.shape:
            raise InputError(
                f"mask {mask_path} is {pred.shape[1]}x{pred.shape[0]} but ground truth "
                f"{gt_path} is {labels.shape[1]}x{labels.shape[0]}; separate at the "
                "ground truth's resolution (no resizing) or pass the matching ground truth"
            )
        positive, negative = _FOREGROUND[labels], _BACKGROUND[labels]
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
        for key in _COUNT_KEYS:
            totals[key] += counts[key]
        pred01 = pred.astype(np.float64)
        truth01 = positive.astype(np.float64)
        per_frame.append(
            {
                "frame": number,
                "mask": mask_path.name,
                "groundtruth": gt_path.name,
                **counts,
                "f_measure": confusion_metrics(
                    counts["TP"], counts["FP"], counts["TN"], counts["FN"]
                )["f_measure"],
                "ssim": ssim(pred01, truth01, data_range=1.0),
                "epsilon_proximity": epsilon_proximity(
                    pred01, truth01, epsilon=epsilon, valid=positive | negative
                ),
            }
        )

    summary: dict[str, Any] = {"frames_scored": len(per_frame), **totals}
    summary.update(confusion_metrics(totals["TP"], totals["FP"], totals["TN"], totals["FN"]))
    summary["ssim"] = float(np.mean([row["ssim"] for row in per_frame]))
    summary["epsilon_proximity"] = float(np.mean([row["epsilon_proximity"] for row in per_frame]))
    summary["epsilon"] = float(epsilon)
    info = {
        "masks": str(mask_dir),
        "groundtruth": str(gt.path),
        "mapping": rule,
        "temporal_roi": list(temporal_roi) if temporal_roi is not None else None,
        "frames": [per_frame[0]["frame"], per_frame[-1]["frame"]],
        "roi": roi_source,
    }
    return Evaluation(summary=summary, per_frame=per_frame, info=info)


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


def parse_temporal_roi(value: str) -> tuple[int, int]:
    """A temporal ROI from the command line: a ``temporalROI.txt`` file or ``FIRST:LAST``.

    Parameters
    ----------
    value : str
        Path of a file holding ``first last``, or two integers joined by ``:``.

    Returns
    -------
    (int, int)
        ``(first, last)``, inclusive ground-truth frame numbers.

    Raises
    ------
    InputError
        Neither an existing file nor ``FIRST:LAST`` with ``FIRST <= LAST``.
    """
    match = re.fullmatch(r"\s*(\d+)\s*:\s*(\d+)\s*", value)
    if match and not Path(value).exists():
        first, last = int(match.group(1)), int(match.group(2))
        if first > last:
            raise InputError(
                f"temporal ROI {value} has first ({first}) > last ({last}); swap the numbers"
            )
        return first, last
    return read_temporal_roi(value)


def check_groundtruth(path: str | Path, width: int, height: int) -> GroundTruth:
    """Check, before any work, that ground truth can score masks of ``width`` x ``height``.

    Parameters
    ----------
    path : str or Path
        See :func:`load_groundtruth`.
    width, height : int
        Size of the masks that will be scored.

    Returns
    -------
    GroundTruth

    Raises
    ------
    InputError
        The ground truth is missing, unreadable, or of another size.
    """
    gt = load_groundtruth(path)
    labels = gt.load(0)
    if labels.shape != (height, width):
        raise InputError(
            f"ground truth {gt.frames[0][1]} is {labels.shape[1]}x{labels.shape[0]} but the "
            f"masks will be {width}x{height}; drop --scale (or pass ground truth of that "
            "size) to score with --groundtruth"
        )
    return gt
