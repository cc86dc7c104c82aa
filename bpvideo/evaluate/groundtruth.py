"""Ground truth: changedetection.net label images, Wallflower frames, and the regions of
interest (``ROI.bmp``, ``temporalROI.txt``) that say what is scored.

Labels follow CDnet 2014: 255 is foreground (motion), 0 (static) and 50 (hard shadow)
are background, 85 (outside the region of interest) and 170 (unknown, e.g. object
boundaries) are ignored. A Wallflower frame (an RGB 0/255 image) is thresholded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from bpvideo.errors import InputError, literal, path_argument
from bpvideo.sources.headers import read_image, read_text

__all__ = [
    "IS_BACKGROUND",
    "IS_FOREGROUND",
    "LABEL_MOTION",
    "LABEL_OUTSIDE_ROI",
    "LABEL_SHADOW",
    "LABEL_STATIC",
    "LABEL_UNKNOWN",
    "GroundTruth",
    "check_groundtruth",
    "load_groundtruth",
    "load_roi",
    "nonzero",
    "parse_temporal_roi",
    "read_temporal_roi",
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
IS_FOREGROUND = np.zeros(256, dtype=bool)
IS_FOREGROUND[LABEL_MOTION] = True
IS_BACKGROUND = np.zeros(256, dtype=bool)
IS_BACKGROUND[[LABEL_STATIC, LABEL_SHADOW]] = True

_TRAILING_DIGITS = re.compile(r"(\d+)$")
_IMAGE_SUFFIXES = {".png", ".bmp", ".jpg", ".jpeg", ".tif", ".tiff", ".pgm", ".ppm"}


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
        The path does not exist or holds no numbered ground-truth image; it is not a path
        (also a :class:`TypeError`).
    """
    path = Path(path_argument("groundtruth", path))
    if not path.exists():
        raise InputError(
            f"ground truth {path} does not exist; pass a changedetection.net groundtruth/ "
            "folder (gt%06d.png) or one ground-truth image"
        )
    if not path.is_file() and not path.is_dir():  # a device, a pipe: nothing to list
        raise InputError(
            f"ground truth {path} is neither a file nor a folder; pass a changedetection.net "
            "groundtruth/ folder (gt%06d.png) or one ground-truth image"
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
        image = read_image(path, cv2.IMREAD_GRAYSCALE)
        if image is None:
            raise InputError(
                f"ground truth {path} cannot be read as an image; check the file "
                "(Wallflower ground truth is a 0/255 BMP)"
            )
        return np.where(image > 127, LABEL_MOTION, LABEL_STATIC).astype(np.uint8)

    # IMREAD_UNCHANGED keeps 8-bit gray as is and expands palette PNGs to BGR through the
    # palette, so palette indices become the real label values. A CDnet palette is gray
    # (R = G = B), which is checked rather than assumed.
    image = read_image(path, cv2.IMREAD_UNCHANGED)
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
        text = read_text(path, "a temporal ROI file", limit=4096)
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
    image = read_image(path, cv2.IMREAD_UNCHANGED) if path.is_file() else None
    if image is None:
        raise InputError(
            f"ROI {path} cannot be read as an image; pass an existing ROI.bmp "
            "(non-zero inside the region)"
        )
    return nonzero(image)


def nonzero(image: np.ndarray) -> np.ndarray:
    if image.ndim == 3:
        return np.any(image[:, :, :3] != 0, axis=2)
    return image != 0


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
            f"ground truth {literal(gt.frames[0][1])} is {labels.shape[1]}x{labels.shape[0]} "
            f"but the masks will be {width}x{height}; drop {{scale}} (or pass ground truth of "
            "that size) to score with {groundtruth}",
            option=("groundtruth", str(path)),
        )
    return gt
