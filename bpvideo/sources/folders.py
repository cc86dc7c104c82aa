"""Which files of a folder are its frames, in which order, and which are damaged: one
rule, written down in docs/usage.md ("Folders of frames").

1. The frames are in ``FOLDER/input/`` when it holds image files (changedetection.net's
   layout), else in ``FOLDER`` itself (an empty ``input/`` changes nothing).
2. Skipped, and said so: hidden files (``.*``: macOS's AppleDouble ``._*`` twins,
   ``.DS_Store``), sub-folders, files that are not images (by extension:
   :data:`IMAGE_EXTENSIONS`).
3. The images are grouped by the pattern of their name, every run of digits standing
   for a number (``in000470.jpg`` and ``in000471.jpg`` are ``in#.jpg``; a time stamp
   ``2024-05-01_12-30-00.123.jpg`` is ``#-#-#_#-#-#.#.jpg``). The largest group is the
   frames; other images are skipped (a ground-truth frame kept beside Wallflower's
   input). Two largest groups of one size are refused: no directory order decides.
4. The frames are in the order of the numbers in their names, all of them, compared as
   numbers (so time stamps sort in time, and ``in9`` comes before ``in10``).
5. Every frame is read as 8-bit BGR, whatever its file holds: grey is repeated, a
   palette expanded, alpha dropped, 16 bits scaled, and a PGM/PPM whose white level is
   not 255 or 65535 (``maxval`` 1023) scaled by its own white.
6. A frame that cannot be decoded, or whose file ends before its image does (a JPEG
   without its end marker, a PNG without its last chunk), is damaged: the run is
   refused naming it, or with ``--allow-partial`` the frame is skipped and listed.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from bpvideo.errors import InputError, literal

__all__ = ["IMAGE_EXTENSIONS", "FolderScan", "damage", "frame_order", "scan_folder"]

IMAGE_EXTENSIONS = {".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp", ".pgm", ".ppm"}
_DIGITS = re.compile(r"\d+")


@dataclass
class FolderScan:
    """The frames of a folder and what was skipped.

    Attributes
    ----------
    folder : Path
        Where the frames are (``input/`` or the folder given).
    files : list of Path
        The frame files, in frame order.
    pattern : str
        Their name pattern (``in#.jpg``).
    skipped : list of (str, str)
        ``(name, why)`` of every other entry of the folder.
    """

    folder: Path
    files: list[Path]
    pattern: str = ""
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def summary(self) -> str:
        """``2 hidden (._in000001.jpg, ...), 1 not an image (notes.txt)`` (empty: none)."""
        by_why: dict[str, list[str]] = {}
        for name, why in self.skipped:
            by_why.setdefault(why, []).append(name)
        parts = []
        for why, names in by_why.items():
            shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
            parts.append(f"{len(names)} {why} ({shown})")
        return "; ".join(parts)


def name_pattern(path: Path) -> str:
    """``in000470.jpg`` -> ``in#.jpg`` (digits replaced, extension in lower case)."""
    return _DIGITS.sub("#", path.stem) + path.suffix.lower()


def frame_order(path: Path) -> tuple[tuple[int, ...], str]:
    """Sort key: every number of the name, as numbers; then the name."""
    return tuple(int(d) for d in _DIGITS.findall(path.stem)), path.name


def _images(folder: Path, skipped: list[tuple[str, str]]) -> list[Path]:
    images = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            skipped.append((entry.name, "hidden"))
        elif entry.is_dir():
            if entry.name != "input":
                skipped.append((entry.name, "a folder"))
        elif entry.suffix.lower() not in IMAGE_EXTENSIONS or not entry.is_file():
            skipped.append((entry.name, "not an image"))
        else:
            images.append(entry)
    return images


def scan_folder(folder: Path) -> FolderScan:
    """The frames of ``folder`` by the rule of this module.

    Raises
    ------
    InputError
        Two largest groups of image names of one size.
    OSError
        The folder cannot be listed.
    """
    skipped: list[tuple[str, str]] = []
    inner = folder / "input"
    if inner.is_dir():
        images = _images(inner, skipped)
        if images:
            folder = inner
        else:
            skipped = [(f"input/{name}", why) for name, why in skipped]
    if folder != inner:
        images = _images(folder, skipped)
    if not images:
        return FolderScan(folder, [], "", skipped)
    groups = Counter(name_pattern(p) for p in images)
    ranked = sorted(groups.items(), key=lambda item: (-item[1], item[0]))
    pattern, count = ranked[0]
    if len(ranked) > 1 and ranked[1][1] == count and count > 1:
        raise InputError(
            f"{literal(folder)}: two groups of {count} frames with differently made names "
            f"({literal(pattern)}, {literal(ranked[1][0])}): keep one group in the folder"
        )
    files = sorted((p for p in images if name_pattern(p) == pattern), key=frame_order)
    skipped += [(p.name, f"named otherwise than {pattern}") for p in images
                if name_pattern(p) != pattern]  # fmt: skip
    return FolderScan(folder, files, pattern, skipped)


def damage(data: np.ndarray, suffix: str) -> str | None:
    """Why the bytes of an image file are damaged (None: whole, as far as can be told):
    a JPEG must end with its end-of-image marker, a PNG with its IEND chunk."""
    raw = data.tobytes() if data.size < 64 else data[-64:].tobytes()
    suffix = suffix.lower()
    if suffix in (".jpg", ".jpeg") and not raw.rstrip(b"\0").endswith(b"\xff\xd9"):
        return "a JPEG cut short (no end marker)"
    if suffix == ".png" and b"IEND" not in raw:
        return "a PNG cut short (no IEND chunk)"
    return None


def decode_frame(path: Path) -> tuple[np.ndarray | None, str | None]:
    """A frame file decoded from its bytes (BGR), or None and why it is damaged."""
    try:
        data = np.fromfile(os.fspath(path), np.uint8)
    except (OSError, ValueError) as exc:
        return None, f"cannot be read ({getattr(exc, 'strerror', None) or exc})"
    why = damage(data, path.suffix)
    if why is not None:
        return None, why
    white = pnm_white(data)
    if white is not None and white not in (255, 65535):
        image = _scaled_pnm(data, white)
    else:
        image = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
    return image, None if image is not None else "cannot be decoded as an image"


_PNM = re.compile(rb"^P[2356]\s*(?:#[^\n]*\s*)*\d+\s+(?:#[^\n]*\s*)*\d+\s+(?:#[^\n]*\s*)*(\d+)\s")


def pnm_white(data: np.ndarray) -> int | None:
    """The white level (``maxval``) a PGM or PPM file's header gives (None: not one)."""
    match = _PNM.match(data[:256].tobytes())
    return int(match.group(1)) if match else None


def _scaled_pnm(data: np.ndarray, white: int) -> np.ndarray | None:
    """A PGM/PPM whose white is not 255 or 65535 (a 10-bit camera's 1023, say), as BGR
    uint8 on the 8-bit scale: OpenCV gives its samples as they are (1023 as 3 once cut
    to 8 bits, 100 as 100 where 255 was meant)."""
    image = cv2.imdecode(data, cv2.IMREAD_UNCHANGED)
    if image is None or not 0 < white < 65536:
        return None
    scaled = np.clip(np.rint(image.astype(np.float32) * np.float32(255 / white)), 0, 255)
    scaled = scaled.astype(np.uint8)
    return cv2.cvtColor(scaled, cv2.COLOR_GRAY2BGR) if scaled.ndim == 2 else scaled
