"""The region picker of ``report.html``: click points on the background still, get the
``--roi`` / ``--exclude`` / ``--count-line`` options to copy.

Points are in pixels of the input, whatever size the page shows the still at: a click in
the still's pixel ``j`` (its centre at ``j + 0.5`` in the SVG's coordinates) gives
``round(j / scale)`` (``--scale``: the still is at the masks' size), clamped to the
frame; the text is what :func:`bpvideo.events.regions.parse_region` and
:func:`bpvideo.events.objects.parse_line` read (``--roi "x1,y1 x2,y2 x3,y3"``).
A polygon needs three points or more, a line two (its second point ends it).
"""

from __future__ import annotations

__all__ = ["PICKER_SCRIPT", "picker_panel"]


def picker_panel() -> str:
    """The picker's controls (beside the still, which takes the clicks)."""
    modes = (("roi", "--roi: report only inside", True),
             ("exclude", "--exclude: never report inside", False),
             ("line", "--count-line: count crossings", False))  # fmt: skip
    radios = "".join(
        f'<label><input type="radio" name="picker-mode" value="{value}"'
        f"{' checked' if checked else ''}> {text}</label>"
        for value, text, checked in modes
    )
    return (
        '<div id="picker"><p>Click points on the picture: a polygon for a region (three '
        "points or more), two points for a counting line. The options below are in pixels "
        "of the input; add them to <code>bpvideo separate</code>.</p>"
        f'<fieldset id="picker-modes"><legend>What to draw</legend>{radios}</fieldset>'
        '<p><button type="button" id="picker-next">Finish this shape</button> '
        '<button type="button" id="picker-undo">Undo last point</button> '
        '<button type="button" id="picker-clear">Clear all</button> '
        '<button type="button" id="picker-copy">Copy</button></p>'
        '<textarea id="picker-text" readonly rows="3" cols="70" spellcheck="false" '
        'aria-label="options for bpvideo separate"></textarea></div>'
    )


#: The picker's script: no library, no network; the still is ``#stage`` (``data-width``,
#: ``data-height``: its pixels; ``data-scale``: ``--scale``), its SVG layer ``#overlay``.
PICKER_SCRIPT = r"""
(function () {
  var stage = document.getElementById("stage");
  if (!stage) return;
  var svg = document.getElementById("overlay"), group = document.getElementById("picked");
  var out = document.getElementById("picker-text");
  var W = +stage.dataset.width, H = +stage.dataset.height, scale = +stage.dataset.scale || 1;
  var maxX = Math.max(0, Math.round(W / scale) - 1), maxY = Math.max(0, Math.round(H / scale) - 1);
  var OPTION = {roi: "--roi", exclude: "--exclude", line: "--count-line"};
  var shapes = [], current = [], mode = "roi";
  var NS = "http://www.w3.org/2000/svg";

  function clamp(v, hi) { return Math.min(hi, Math.max(0, v)); }
  function pointOf(ev) {
    var r = svg.getBoundingClientRect();
    var x = ((ev.clientX - r.left) * W / r.width - 0.5) / scale;
    var y = ((ev.clientY - r.top) * H / r.height - 0.5) / scale;
    return [clamp(Math.round(x), maxX), clamp(Math.round(y), maxY)];
  }
  function complete(s) { return s.mode === "line" ? s.points.length === 2 : s.points.length >= 3; }
  function text() {
    return shapes.concat([{mode: mode, points: current}]).filter(complete).map(function (s) {
      return OPTION[s.mode] + ' "' + s.points.map(function (p) { return p[0] + "," + p[1]; })
        .join(" ") + '"';
    }).join(" ");
  }
  function element(name, attrs) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }
  function svgPoints(points) {
    return points.map(function (p) { return (p[0] * scale + 0.5) + "," + (p[1] * scale + 0.5); })
      .join(" ");
  }
  function draw() {
    while (group.firstChild) group.removeChild(group.firstChild);
    shapes.concat([{mode: mode, points: current, open: true}]).forEach(function (s) {
      if (!s.points.length) return;
      var closed = !s.open && s.mode !== "line";
      group.appendChild(element(closed ? "polygon" : "polyline",
        {points: svgPoints(s.points), "class": "picked " + s.mode}));
      s.points.forEach(function (p) {
        group.appendChild(element("circle", {cx: p[0] * scale + 0.5, cy: p[1] * scale + 0.5,
          r: Math.max(W, H) / 120, "class": "picked-point"}));
      });
    });
  }
  function update() { out.value = text(); draw(); }
  function finish() {
    if (complete({mode: mode, points: current})) shapes.push({mode: mode, points: current});
    current = [];
  }
  svg.addEventListener("click", function (ev) {
    current.push(pointOf(ev));
    if (mode === "line" && current.length === 2) finish();
    update();
  });
  document.querySelectorAll('input[name="picker-mode"]').forEach(function (radio) {
    radio.addEventListener("change", function () { finish(); mode = radio.value; update(); });
  });
  document.getElementById("picker-next").addEventListener("click", function () {
    finish(); update();
  });
  document.getElementById("picker-undo").addEventListener("click", function () {
    if (current.length) current.pop();
    else if (shapes.length) { var s = shapes.pop(); mode = s.mode; current = s.points.slice(0, -1);
      document.querySelector('input[name="picker-mode"][value="' + mode + '"]').checked = true; }
    update();
  });
  document.getElementById("picker-clear").addEventListener("click", function () {
    shapes = []; current = []; update();
  });
  document.getElementById("picker-copy").addEventListener("click", function () {
    out.select();
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(out.value);
    else document.execCommand("copy");
  });
  update();
})();
"""
