"""The tables of ``report.html``: events, objects, counting lines and settings, headed in
words with units. Each cell of a CSV column carries ``data-col`` (the column's name in
``events.csv`` or ``objects.csv``) and ``data-value`` (its value there), so that what the
page shows can be checked against the files.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bpvideo.events import Event
from bpvideo.sinks.report.data import Links, ReportData, clock

__all__ = ["counts_table", "data_uri", "events_table", "objects_table", "settings_details"]


def data_uri(data: bytes, mime: str = "image/png") -> str:
    """``data:`` URI of an image (the page holds its pictures)."""
    return f"data:{mime};base64," + base64.b64encode(data).decode("ascii")


def _cell(text: Any, **columns: Any) -> str:
    """A cell showing ``text``; ``columns``: the CSV values it shows (``data-col``/``-value``,
    several joined by ``;``)."""
    if not columns:
        return f"<td>{text}</td>"
    names = ";".join(columns)
    values = ";".join(html.escape(str(v)) for v in columns.values())
    return f'<td data-col="{names}" data-value="{values}">{text}</td>'


def _box(x: Any, y: Any, w: Any, h: Any) -> str:
    return f"{x}, {y}, {w} × {h}"


def _when(time: str, seconds: float, start: datetime | None) -> str:
    """An event's time: ``HH:MM:SS.mmm`` into the input, and the clock time when known."""
    if start is None:
        return html.escape(time)
    return f'{clock(seconds, start)}<br><span class="into">{html.escape(time)}</span>'


def _watch(e: Event, links: Links) -> str:
    """Links to the event's clip and to the overlay at its start."""
    out = []
    if e.event in links.clips:
        out.append(f'<a class="clip" href="{html.escape(links.clips[e.event])}">clip</a>')
    if links.overlay:
        at = clock(e.start_seconds, None)
        out.append(f'<a class="overlay" href="{html.escape(links.overlay)}#t='
                   f'{e.start_seconds:.3f}">overlay at {at}</a>')  # fmt: skip
    return " ".join(out) or '<span title="run with --clips or --overlay">—</span>'


def events_table(data: ReportData) -> str:
    """The events: picture (opens the frame whole), times, duration, largest area, box,
    frames, links."""
    heads = ["Picture (click: whole frame)", "Event",
             "Start" + (" (clock; into the input)" if data.start else " (into the input)"),
             "End", "Duration (s)", f"Largest area (% of {data.of_what})",
             "Box (x, y, width × height, px)", "Frames", "Watch"]  # fmt: skip
    rows = []
    for e in data.events:
        thumb = data.thumbs.get(e.event)
        picture = (f'<a class="thumb" href="#event-{e.event}"><img alt="event {e.event} at '
                   f'{e.start_time}" src="{data_uri(thumb, "image/jpeg")}"></a>'
                   if thumb else "")  # fmt: skip
        cells = [
            _cell(picture),
            _cell(e.event, event=e.event),
            _cell(
                _when(e.start_time, e.start_seconds, data.start),
                start_time=e.start_time,
                start_time_of_day=e.start_time_of_day,
            ),
            _cell(
                _when(e.end_time, e.end_seconds, data.start),
                end_time=e.end_time,
                end_time_of_day=e.end_time_of_day,
            ),
            _cell(f"{e.duration:.2f}", duration=e.duration),
            _cell(f"{100 * e.peak_area:.2f}", peak_area=e.peak_area),
            _cell(_box(e.x, e.y, e.w, e.h), x=e.x, y=e.y, w=e.w, h=e.h),
            _cell(
                f"{e.start_frame}–{e.end_frame}", start_frame=e.start_frame, end_frame=e.end_frame
            ),
            _cell(_watch(e, data.links)),
        ]
        rows.append(f'<tr id="event-{e.event}" data-event="{e.event}">{"".join(cells)}</tr>')
    body = "".join(rows) or f'<tr><td colspan="{len(heads)}">no event</td></tr>'
    head = "".join(f"<th>{h}</th>" for h in heads)
    return f'<table id="events"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def objects_table(rows: Sequence[dict[str, str]], total: int | None) -> str:
    """The objects of ``objects.csv`` (the first rows by id; ``total``: how many there are)."""
    heads = ["Object", "First seen (into the input)", "Last seen", "Duration (s)", "Frames",
             "Box at its largest (x, y, width × height, px)", "Largest area (px)",
             "Mean speed (px/s)", "Regions entered (--roi number)"]  # fmt: skip
    out = []
    for r in rows:
        cells = [
            _cell(html.escape(r["object"]), object=r["object"]),
            _cell(
                html.escape(r["first_time"]),
                first_time=r["first_time"],
                first_time_of_day=r.get("first_time_of_day", ""),
            ),
            _cell(
                html.escape(r["last_time"]),
                last_time=r["last_time"],
                last_time_of_day=r.get("last_time_of_day", ""),
            ),
            _cell(html.escape(r["duration"]), duration=r["duration"]),
            _cell(
                f"{html.escape(r['first_frame'])}–{html.escape(r['last_frame'])}",
                first_frame=r["first_frame"],
                last_frame=r["last_frame"],
            ),
            _cell(
                html.escape(_box(r["x"], r["y"], r["w"], r["h"])),
                x=r["x"],
                y=r["y"],
                w=r["w"],
                h=r["h"],
            ),
            _cell(html.escape(r["area"]), area=r["area"]),
            _cell(html.escape(r["speed"]), speed=r["speed"]),
            _cell(html.escape(r["regions"]) or "—", regions=r["regions"]),
        ]
        out.append(f'<tr data-object="{html.escape(r["object"])}">{"".join(cells)}</tr>')
    note = ""
    if total is not None and total > len(rows):
        note = f"<p>The first {len(rows)} of {total} objects; all are in objects.csv.</p>"
    body = "".join(out) or f'<tr><td colspan="{len(heads)}">no object</td></tr>'
    head = "".join(f"<th>{h}</th>" for h in heads)
    return f'{note}<table id="objects"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def counts_table(counts: dict[str, Any], start: datetime | None) -> str:
    """Crossings of each counting line per direction (and per hour on long inputs)."""
    rows, hours = [], []
    for i, (name, line) in enumerate(counts.items(), 1):
        ltr, rtl = int(line["left_to_right"]), int(line["right_to_left"])
        rows.append(f'<tr data-line="{html.escape(name)}"><td>{i}</td><td><code>'
                    f"{html.escape(name)}</code></td><td>{ltr}</td><td>{rtl}</td>"
                    f"<td>{ltr + rtl}</td></tr>")  # fmt: skip
        for h in line.get("per_hour") or ():
            when = clock(3600 * h["hour"], start, 3600)
            ways = f"<td>{h['left_to_right']}</td><td>{h['right_to_left']}</td>"
            hours.append(f"<tr><td>{i}</td><td>{html.escape(when)}</td>{ways}</tr>")
    table = ('<table id="counts"><thead><tr><th>Line</th><th>Drawn from → to (px of the '
             "input)</th><th>Crossings left → right</th><th>Crossings right → left</th>"
             f"<th>Crossings in all</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
             "<p>Left and right as seen looking along the line from its first point to its "
             "second; the arrow on the picture points the left → right way.</p>")  # fmt: skip
    if hours:
        table += ('<table id="counts-per-hour"><thead><tr><th>Line</th><th>Hour from</th>'
                  "<th>Left → right</th><th>Right → left</th></tr></thead><tbody>"
                  f"{''.join(hours)}</tbody></table>")  # fmt: skip
    return table


def settings_details(settings: dict[str, Any]) -> str:
    """Every setting of the run, folded away."""
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(json.dumps(v))}</td></tr>"
                   for k, v in settings.items())  # fmt: skip
    return (f'<details id="settings"><summary>All {len(settings)} settings of the run'
            f'</summary><table class="settings">{rows}</table></details>')  # fmt: skip
