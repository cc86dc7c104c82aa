"""What a person looks at in a frame: the foreground drawn (the overlay's frames) and the
events' pictures of the report (:func:`thumbnail`). The page itself is built by
:mod:`bpvideo.sinks.report`.
"""

from __future__ import annotations

import cv2
import numpy as np

from bpvideo.events.table import blob_boxes

__all__ = ["PICTURE_WIDTHS", "burn_label", "draw_foreground", "thumbnail", "warm_font"]

#: Narrowest and widest picture of an event, in pixels: a smaller frame is enlarged (whole
#: pixels repeated) so that its burnt-in time can be read, a larger one reduced (a night of
#: events at 1080p would otherwise make a page of hundreds of MB).
PICTURE_WIDTHS = (480, 960)
#: Height of the burnt-in time, as a share of the picture's width: 16 px when the report
#: shows the picture 360 px wide.
LABEL_SHARE = 0.045
_TINT = np.array([0, 0, 255], dtype=np.float32)  # red, BGR
_BOX = (0, 255, 255)  # yellow


def draw_foreground(frame: np.ndarray, mask: np.ndarray, label: str | None = None) -> np.ndarray:
    """A copy of a BGR frame with the foreground tinted red, each blob boxed and a label.

    Parameters
    ----------
    frame : (H, W, 3) or (H, W) uint8 ndarray
        The input frame.
    mask : (H, W) bool ndarray
        Its foreground.
    label : str, optional
        Text burnt in the top-left corner (the time).

    Returns
    -------
    (H, W, 3) uint8 ndarray
    """
    out = frame.copy() if frame.ndim == 3 else cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR)
    if mask.any():
        m = np.ascontiguousarray(mask)
        tinted = (out[m].astype(np.float32) * 0.5 + _TINT * 0.5).astype(np.uint8)
        out[m] = tinted
        thick = max(1, out.shape[1] // 400)
        for x, y, w, h in blob_boxes(m):
            cv2.rectangle(out, (int(x), int(y)), (int(x + w - 1), int(y + h - 1)), _BOX, thick)
    if label:
        burn_label(out, label, max(0.35, out.shape[1] / 900))
    return out


def warm_font() -> None:
    """Load OpenCV's font in the calling thread: the first text a thread writes or
    measures costs ~30 ms of CPU (OpenCV 4.x keeps the font's tables per thread)."""
    cv2.getTextSize("0", cv2.FONT_HERSHEY_SIMPLEX, 1.0, 1)


def burn_label(image: np.ndarray, label: str, scale: float) -> None:
    """Write ``label`` white on black in the top-left corner of a BGR image, in place
    (``scale``: OpenCV's font scale, about 22 px of text height per unit)."""
    thick = max(1, round(scale * 2))
    (tw, th), base = cv2.getTextSize(label, cv2.FONT_HERSHEY_SIMPLEX, scale, thick)
    pad = max(4, round(th / 4))
    cv2.rectangle(image, (0, 0), (tw + 2 * pad, th + base + 2 * pad), (0, 0, 0), -1)
    cv2.putText(image, label, (pad, th + pad), cv2.FONT_HERSHEY_SIMPLEX, scale, (255, 255, 255),
                thick, cv2.LINE_AA)  # fmt: skip


def thumbnail(frame: np.ndarray, mask: np.ndarray, label: str | None = None) -> bytes:
    """JPEG bytes of an event's picture: :func:`draw_foreground` of the frame, brought within
    :data:`PICTURE_WIDTHS`, then the time burnt in at :data:`LABEL_SHARE` of its width (so
    that it reads at the report's thumbnail size; the page opens the picture whole on a
    click). About 30 kB at 480x360, 60-90 kB at 960x540.

    Parameters
    ----------
    frame : (H, W, 3) or (H, W) uint8 ndarray
        The input frame.
    mask : (H, W) bool ndarray
        Its foreground.
    label : str, optional
        The time to burn in.

    Returns
    -------
    bytes
    """
    image = draw_foreground(frame, mask)
    narrow, wide = PICTURE_WIDTHS
    width = image.shape[1]
    if width < narrow:  # whole pixels repeated: the mask's edges stay sharp
        k = -(-narrow // width)
        image = cv2.resize(image, (width * k, image.shape[0] * k), interpolation=cv2.INTER_NEAREST)
    elif width > wide:
        h = max(1, round(image.shape[0] * wide / width))
        image = cv2.resize(image, (wide, h), interpolation=cv2.INTER_AREA)
    if label:
        burn_label(image, label, LABEL_SHARE * image.shape[1] / 22)
    ok, buf = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 85])
    assert ok
    return buf.tobytes()
