"""What a person looks at: frames with the foreground drawn (the overlay, thumbnails) and
``report.html``, one self-contained page (inline SVG and images, no script, no network).
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from bpvideo.events import EVENT_COLUMNS, Event, timecode
from bpvideo.events.table import blob_boxes

__all__ = ["THUMB_WIDTH", "draw_foreground", "report_html", "thumbnail"]

#: Width of an event's thumbnail in the report, in pixels (smaller frames are kept).
THUMB_WIDTH = 320
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
        scale = max(0.35, out.shape[1] / 900)
        thick = max(1, round(scale * 2))
        (tw, th), base = cv2.getTextSize(label, cv2.FONT_HERSHEY_SIMPLEX, scale, thick)
        cv2.rectangle(out, (0, 0), (tw + 8, th + base + 8), (0, 0, 0), -1)
        cv2.putText(out, label, (4, th + 4), cv2.FONT_HERSHEY_SIMPLEX, scale, (255, 255, 255),
                    thick, cv2.LINE_AA)  # fmt: skip
    return out


def thumbnail(frame: np.ndarray, mask: np.ndarray, label: str | None = None) -> bytes:
    """JPEG bytes of :func:`draw_foreground`, at most :data:`THUMB_WIDTH` wide (about 10 kB
    at 320x240: a PNG of it took 60-100 kB)."""
    image = draw_foreground(frame, mask, label)
    if image.shape[1] > THUMB_WIDTH:
        h = max(1, round(image.shape[0] * THUMB_WIDTH / image.shape[1]))
        image = cv2.resize(image, (THUMB_WIDTH, h), interpolation=cv2.INTER_AREA)
    ok, buf = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 88])
    assert ok
    return buf.tobytes()


def _data_uri(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64," + base64.b64encode(data).decode("ascii")


def _plot(times: np.ndarray, shares: np.ndarray, events: Sequence[Event], threshold: float) -> str:
    """Inline SVG: the foreground share over time, events as shaded bands."""
    width, height, left, bottom = 960, 220, 48, 24
    n = len(times)
    t0 = float(times[0]) if n else 0.0
    t1 = float(times[-1]) if n else 1.0
    span = max(t1 - t0, 1e-9)
    peak = max(float(shares.max()) if n else 0.0, threshold, 1e-4)
    x_of = lambda t: left + (t - t0) / span * (width - left - 8)  # noqa: E731
    y_of = lambda s: 8 + (1 - s / peak) * (height - bottom - 8)  # noqa: E731
    points = " ".join(f"{x_of(t):.1f},{y_of(s):.1f}" for t, s in zip(times, shares, strict=True))
    bands = "".join(
        f'<rect class="event" data-event="{e.event}" x="{x_of(e.start_seconds):.1f}" y="8" '
        f'width="{max(1.0, x_of(min(e.end_seconds, t1)) - x_of(e.start_seconds)):.1f}" '
        f'height="{height - bottom - 8}"><title>event {e.event}: {e.start_time} to '
        f"{e.end_time}</title></rect>"
        for e in events
    )
    return (
        f'<svg id="plot" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="foreground share over time">'
        f"{bands}"
        f'<line class="axis" x1="{left}" y1="{height - bottom}" x2="{width - 8}" '
        f'y2="{height - bottom}"/><line class="axis" x1="{left}" y1="8" x2="{left}" '
        f'y2="{height - bottom}"/>'
        f'<line class="threshold" x1="{left}" y1="{y_of(threshold):.1f}" x2="{width - 8}" '
        f'y2="{y_of(threshold):.1f}"><title>event threshold {threshold:g}</title></line>'
        f'<polyline class="share" fill="none" points="{points}"/>'
        f'<text x="{left - 4}" y="14" text-anchor="end">{peak:.3g}</text>'
        f'<text x="{left - 4}" y="{height - bottom}" text-anchor="end">0</text>'
        f'<text x="{left}" y="{height - 6}">{timecode(t0)}</text>'
        f'<text x="{width - 8}" y="{height - 6}" text-anchor="end">{timecode(t1)}</text>'
        "</svg>"
    )


_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1000px}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ccc;padding:3px 6px;
text-align:right;vertical-align:middle}th{background:#f2f2f2}
#plot .event{fill:#f6c343;fill-opacity:.45}#plot .share{stroke:#c0392b;stroke-width:1.2}
#plot .axis{stroke:#555}#plot .threshold{stroke:#2c7be5;stroke-dasharray:4 3}
#background{width:480px;max-width:100%}#plot text{font-size:11px;fill:#444}
img{image-rendering:auto;max-width:100%}.settings td{text-align:left}
"""


def _events_table(events: Sequence[Event], thumbs: dict[int, bytes]) -> str:
    head = "".join(f"<th>{name}</th>" for name in EVENT_COLUMNS) + "<th>frame</th>"
    rows = []
    for e in events:
        row = e.row()
        cells = "".join(f'<td class="{k}">{html.escape(str(v))}</td>' for k, v in row.items())
        thumb = thumbs.get(e.event)
        img = f'<img alt="event {e.event}" src="{_data_uri(thumb, "image/jpeg")}">' if thumb else ""
        rows.append(f'<tr data-event="{e.event}">{cells}<td>{img}</td></tr>')
    body = "".join(rows) or f'<tr><td colspan="{len(EVENT_COLUMNS) + 1}">no event</td></tr>'
    return f'<table id="events"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _shown(text: str) -> str:
    """``text`` as a page can show it: a file name's bytes that the file-system encoding
    could not decode (held as surrogates) decoded as UTF-8, or replaced where they are not
    UTF-8 either."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def report_html(
    *,
    title: str,
    series: tuple[np.ndarray, np.ndarray],
    events: Sequence[Event],
    thumbs: dict[int, bytes],
    background_png: bytes | None,
    settings: dict[str, Any],
    facts: dict[str, Any],
) -> str:
    """The text of ``report.html``.

    Parameters
    ----------
    title : str
        The input's name.
    series : ((n,) float ndarray, (n,) float ndarray)
        Times and foreground shares to plot (see :class:`~bpvideo.sinks.event_stream.Series`).
    events : sequence of Event
        The events.
    thumbs : dict of int to bytes
        JPEG thumbnail of each event, by event number (events without one show none).
    background_png : bytes or None
        ``background.png``.
    settings : dict
        The run's settings (shown as a table).
    facts : dict
        Frames, size, rate and the like (shown above the plot).
    """
    threshold = float(settings.get("event_threshold", 0.0) or 0.0)
    fact_rows = "".join(f'<tr><th>{html.escape(k)}</th><td class="{html.escape(k)}">'
                        f"{html.escape(str(v))}</td></tr>" for k, v in facts.items())  # fmt: skip
    setting_rows = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(json.dumps(v))}</td></tr>"
        for k, v in settings.items()
    )
    background = (f'<img id="background" alt="background" src="{_data_uri(background_png)}">'
                  if background_png else "<p>no background image</p>")  # fmt: skip
    return _shown(
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>bpvideo report: {html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><h1>bpvideo report: {html.escape(title)}</h1>"
        f'<table id="facts">{fact_rows}<tr><th>events</th><td id="event-count">{len(events)}'
        "</td></tr></table>"
        f"<h2>Foreground over time</h2>{_plot(*series, events, threshold)}"
        f"<h2>Events</h2>{_events_table(events, thumbs)}"
        f"<h2>Background</h2>{background}"
        f'<h2>Settings</h2><table class="settings">{setting_rows}</table>'
        "</body></html>\n"
    )
