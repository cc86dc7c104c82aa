"""``report.html``: one self-contained page (inline SVG, images and script; no network)
for the person on duty: what the run was (version, input, date), when things moved (the
plot, the events with their pictures and links), what moved (objects, counts), where
(the regions and lines drawn on the background, and a picker to draw new ones), and the
settings folded away.
"""

from __future__ import annotations

import html
from typing import Any

from bpvideo.events.regions import parse_region
from bpvideo.sinks.report.data import ReportData, clock, png_size
from bpvideo.sinks.report.picker import PICKER_SCRIPT, picker_panel
from bpvideo.sinks.report.svg import plot_svg, regions_svg
from bpvideo.sinks.report.tables import (
    counts_table,
    data_uri,
    events_table,
    objects_table,
    settings_details,
)

__all__ = ["render"]

STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1200px}
h1{font-size:1.4em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:1.6em}
#run{color:#444;margin:0 0 .6em}#tally{font-size:1.1em;font-weight:600}
table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ccc;padding:3px 6px;
text-align:right;vertical-align:middle}th{background:#f2f2f2;text-align:center}
#plot .event{fill:#f6c343;fill-opacity:.45}#plot .share{stroke:#c0392b;stroke-width:1.2}
#plot .axis,#plot .tick{stroke:#555}#plot .grid{stroke:#e5e5e5}
#plot .threshold{stroke:#2c7be5;stroke-dasharray:4 3}#plot text{font-size:12px;fill:#333}
#plot .axis-title{font-size:13px;fill:#222}
#events img{width:360px;display:block}.into{color:#777;font-size:.85em}
#stage{position:relative;width:min(100%,720px);cursor:crosshair;line-height:0}
#stage img{width:100%;display:block;image-rendering:pixelated}
#overlay{position:absolute;left:0;top:0;width:100%;height:100%}
#overlay .roi{fill:#2f9e44;fill-opacity:.15;stroke:#2f9e44}
#overlay .exclude{fill:url(#hatch);fill-opacity:.6;stroke:#e03131}
#overlay .count-line line{stroke:#1c7ed6}#overlay .count-line text{fill:#1c7ed6;font-weight:700}
#overlay polygon,#overlay polyline,#overlay line{stroke-width:3px;vector-effect:non-scaling-stroke}
#overlay .picked{fill:#ffd43b;fill-opacity:.25;stroke:#f08c00;stroke-dasharray:6 3}
#overlay .picked-point{fill:#f08c00}.legend span{margin-right:1.2em}
.settings td,.settings th{text-align:left}#picker textarea{font-family:monospace;width:100%}
dialog{padding:0;border:0;background:#000}dialog img{display:block;max-width:95vw;
max-height:90vh;min-width:min(95vw,640px);image-rendering:pixelated}
"""

#: Opens an event's picture whole in a dialog (the same image: nothing is held twice).
VIEWER_SCRIPT = r"""
(function () {
  var dialog = document.getElementById("viewer"), big = document.getElementById("viewer-img");
  document.querySelectorAll("a.thumb").forEach(function (a) {
    a.addEventListener("click", function (ev) {
      ev.preventDefault();
      big.src = a.querySelector("img").src;
      big.alt = a.querySelector("img").alt;
      dialog.showModal();
    });
  });
  dialog.addEventListener("click", function () { dialog.close(); });
})();
"""


def _shown(text: str) -> str:
    """``text`` as a page can show it: a file name's bytes that the file-system encoding
    could not decode (held as surrogates) decoded as UTF-8, or replaced where they are not
    UTF-8 either."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _header(data: ReportData) -> str:
    """Title, the run (version, input, date, size, rate, length) and the tally."""
    facts = data.facts
    seconds = float(data.series[0][-1]) if len(data.series[0]) else 0.0
    run = [f"bpvideo {html.escape(data.version)}",
           f"report written {data.run_date.strftime('%Y-%m-%d %H:%M %Z').strip()}",
           f"input <code>{html.escape(str(facts.get('input', data.title)))}</code>"]  # fmt: skip
    if data.start is not None:
        run.append(f"input starts {html.escape(data.start.isoformat(sep=' '))}")
    if "size" in facts:
        run.append(f"{html.escape(str(facts['size']).replace('x', ' × '))} px")
    if "fps" in facts:
        run.append(f"{facts['fps']:g} frames/s")
    if "frames" in facts:
        run.append(f'<span id="frame-count">{facts["frames"]}</span> frames '
                   f"({clock(seconds, None)} long)")  # fmt: skip
    tally = [f'<span id="event-count">{len(data.events)}</span> events']
    if data.tracked:
        count = data.object_count if data.object_count is not None else len(data.objects or ())
        tally.append(f'<span id="object-count">{count}</span> objects')
    for i, (name, line) in enumerate((data.counts or {}).items(), 1):
        tally.append(f"line {i} (<code>{html.escape(name)}</code>): "
                     f"{line['left_to_right'] + line['right_to_left']} crossings")  # fmt: skip
    return (f"<h1>bpvideo report: {html.escape(data.title)}</h1>"
            f'<p id="run">{" · ".join(run)}</p><p id="tally">{" · ".join(tally)}</p>')  # fmt: skip


def _still(data: ReportData) -> str:
    """The background with the regions and lines drawn, the picker beside it."""
    if not data.background_png:
        return "<h2>Background</h2><p>No background image.</p>"
    width, height = png_size(data.background_png)
    s = data.settings
    legend = []
    if s.get("roi"):
        legend.append('<span style="color:#2f9e44">■ --roi: reported inside</span>')
    if s.get("exclude"):
        legend.append('<span style="color:#e03131">▨ --exclude: never reported</span>')
    if s.get("count_line"):
        legend.append('<span style="color:#1c7ed6">— counting lines (numbered; the arrow: '
                      "left → right)</span>")  # fmt: skip
    images = [spec for k in ("roi", "exclude") for spec in s.get(k) or ()
              if isinstance(parse_region(spec, k), str)]  # fmt: skip
    if images:
        legend.append("mask images, not drawn: " + ", ".join(html.escape(i) for i in images))
    return (
        "<h2>Where: regions and counting lines on the background</h2>"
        f'<div id="stage" data-width="{width}" data-height="{height}" '
        f'data-scale="{data.scale:g}"><img id="background" alt="background" '
        f'src="{data_uri(data.background_png)}">{regions_svg(s, (width, height), data.counts)}'
        f'</div><p class="legend">{"".join(legend) or "No region or counting line."}</p>'
        f"<h2>Region picker</h2>{picker_panel()}"
    )


def render(data: ReportData) -> str:
    """The text of ``report.html`` for ``data``."""
    threshold = float(data.settings.get("event_threshold", 0.0) or 0.0)
    objects = ""
    if data.tracked:
        objects = "<h2>Objects</h2>" + objects_table(data.objects or [], data.object_count)
        if data.counts:
            objects += "<h2>Counting lines</h2>" + counts_table(data.counts, data.start)
    return _shown(
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>bpvideo report: {html.escape(data.title)}</title><style>{STYLE}</style></head>"
        f"<body>{_header(data)}"
        f"<h2>Foreground over time</h2>"
        f"{plot_svg(*data.series, data.events, threshold, data.of_what, data.start)}"
        f"<h2>Events</h2>{events_table(data)}{objects}{_still(data)}"
        f"<h2>Settings</h2>{settings_details(data.settings)}"
        '<dialog id="viewer"><img id="viewer-img" alt=""></dialog>'
        f"<script>{VIEWER_SCRIPT}{PICKER_SCRIPT}</script></body></html>\n"
    )


def report_html(**fields: Any) -> str:
    """The text of ``report.html``: :func:`render` of ``ReportData(**fields)``."""
    return render(ReportData(**fields))
