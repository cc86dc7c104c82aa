"""The drawings of ``report.html``, as inline SVG: the foreground over time
(:func:`plot_svg`: axes with units and readable ticks, the events shaded, the threshold
dashed) and the regions and counting lines over the background still
(:func:`regions_svg`, in pixels of the still: the page scales it with the image).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from bpvideo.events import Event
from bpvideo.events.objects import parse_line
from bpvideo.events.regions import Polygon, parse_region
from bpvideo.sinks.report.data import clock, share_ticks, time_ticks

__all__ = ["line_arrow", "plot_svg", "regions_svg"]

#: The plot's size and margins (left, right, top, bottom), in CSS pixels.
WIDTH, HEIGHT = 960, 260
MARGIN = (64, 12, 10, 46)


def plot_svg(times: np.ndarray, shares: np.ndarray, events: Sequence[Event], threshold: float,
             of_what: str = "frame", start: datetime | None = None) -> str:  # fmt: skip
    """Inline SVG: the foreground share (in %) over time, events as shaded bands.

    Parameters
    ----------
    times, shares : (n,) float ndarray
        Seconds into the input and foreground shares (0..1) of the plotted points.
    events : sequence of Event
        Shaded, each with its number as a tooltip.
    threshold : float
        ``--event-threshold`` (a share), dashed.
    of_what : str
        What a share is of (``frame`` or ``region``), for the axis title.
    start : datetime, optional
        The input's start: the time axis shows clock times.
    """
    left, right, top, bottom = MARGIN
    x_end, y_end = WIDTH - right, HEIGHT - bottom
    n = len(times)
    t0 = float(times[0]) if n else 0.0
    t1 = max(float(times[-1]) if n else 1.0, max((e.end_seconds for e in events), default=0.0))
    t1 = max(t1, t0 + 1e-3)
    ticks_y = share_ticks(max(float(shares.max()) if n else 0.0, threshold) * 100)
    peak = ticks_y[-1]

    def x_of(t: float) -> float:
        return left + (t - t0) / (t1 - t0) * (x_end - left)

    def y_of(percent: float) -> float:
        return top + (1 - percent / peak) * (y_end - top)

    points = " ".join(f"{x_of(t):.1f},{y_of(100 * s):.1f}"
                      for t, s in zip(times, shares, strict=True))  # fmt: skip
    bands = "".join(
        f'<rect class="event" data-event="{e.event}" x="{x_of(e.start_seconds):.1f}" '
        f'y="{top}" width="{max(1.0, x_of(min(e.end_seconds, t1)) - x_of(e.start_seconds)):.1f}"'
        f' height="{y_end - top}"><title>event {e.event}: {e.start_time} to {e.end_time}'
        "</title></rect>"
        for e in events
    )
    ticks, step = time_ticks(t0, t1, start)
    x_ticks = "".join(
        f'<line class="tick" x1="{x_of(t):.1f}" y1="{y_end}" x2="{x_of(t):.1f}" y2="{y_end + 5}"/>'
        f'<text class="tick-x" x="{x_of(t):.1f}" y="{y_end + 18}" text-anchor="middle">'
        f"{clock(t, start, step)}</text>"
        for t in ticks
    )
    y_ticks = "".join(
        f'<line class="grid" x1="{left}" y1="{y_of(p):.1f}" x2="{x_end}" y2="{y_of(p):.1f}"/>'
        f'<text class="tick-y" x="{left - 6}" y="{y_of(p) + 4:.1f}" text-anchor="end">{p:g}</text>'
        for p in ticks_y
    )
    x_title = "Time of day" if start is not None else "Time into the input (m:ss)"
    return (
        f'<svg id="plot" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="foreground over time">'
        f"{y_ticks}{bands}"
        f'<line class="axis" x1="{left}" y1="{y_end}" x2="{x_end}" y2="{y_end}"/>'
        f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{y_end}"/>{x_ticks}'
        f'<line class="threshold" x1="{left}" y1="{y_of(100 * threshold):.1f}" x2="{x_end}" '
        f'y2="{y_of(100 * threshold):.1f}"><title>event threshold {100 * threshold:g} %'
        "</title></line>"
        f'<polyline class="share" fill="none" points="{points}"/>'
        f'<text class="axis-title" x="{(left + x_end) / 2:.0f}" y="{HEIGHT - 6}" '
        f'text-anchor="middle">{x_title}</text>'
        f'<text class="axis-title" transform="translate(14 {(top + y_end) / 2:.0f}) rotate(-90)" '
        f'text-anchor="middle">Foreground (% of {of_what})</text>'
        "</svg>"
    )


def line_arrow(a: tuple[float, float], b: tuple[float, float], length: float
               ) -> tuple[tuple[float, float], tuple[float, float]]:  # fmt: skip
    """From the middle of the line ``a``-``b``, ``length`` along its normal towards the side
    that ``left_to_right`` crossings go to (the right of the line, looking from ``a`` to
    ``b`` on screen, y down): the arrow that says which way is counted as ``left_to_right``.

    Examples
    --------
    >>> line_arrow((0, 10), (20, 10), 4)  # drawn left to right: objects moving down
    ((10.0, 10.0), (10.0, 14.0))
    """
    (ax, ay), (bx, by) = a, b
    mx, my = (ax + bx) / 2, (ay + by) / 2
    nx, ny = -(by - ay), bx - ax
    norm = max((nx * nx + ny * ny) ** 0.5, 1e-9)
    return (mx, my), (mx + nx / norm * length, my + ny / norm * length)


def _points(points: Any, scale: float) -> str:
    """SVG points of corners in pixels of the input: pixel centres at ``+0.5``."""
    return " ".join(f"{x * scale + 0.5:.2f},{y * scale + 0.5:.2f}" for x, y in points)


def regions_svg(settings: dict[str, Any], size: tuple[int, int],
                counts: dict[str, Any] | None = None) -> str:  # fmt: skip
    """The SVG layer over the background still: the ``--roi`` regions (green), the
    ``--exclude`` regions (red, hatched), the counting lines (blue, an arrow towards their
    ``left_to_right`` side, their number) and an empty group that the region picker draws
    in. ``size``: the still's (W, H), the SVG's coordinates (corners of the input are
    multiplied by ``--scale``)."""
    width, height = size
    scale = float(settings.get("scale") or 1.0)
    parts = []
    for kind in ("roi", "exclude"):
        for i, spec in enumerate(settings.get(kind) or (), 1):
            region = parse_region(spec, kind)
            if isinstance(region, Polygon):
                parts.append(
                    f'<polygon class="{kind}" data-spec="{html.escape(spec)}" '
                    f'points="{_points(region.points, scale)}"><title>--{kind} {i}: '
                    f"{html.escape(spec)}</title></polygon>"
                )
    unit = max(width, height) / 40  # the arrow and label size, in pixels of the still
    for i, spec in enumerate(settings.get("count_line") or (), 1):
        x1, y1, x2, y2 = parse_line(spec)
        a, b = (x1 * scale + 0.5, y1 * scale + 0.5), (x2 * scale + 0.5, y2 * scale + 0.5)
        (mx, my), (ex, ey) = line_arrow(a, b, 2.5 * unit)
        parts.append(
            f'<g class="count-line" data-spec="{html.escape(spec)}">'
            f'<line x1="{a[0]:.2f}" y1="{a[1]:.2f}" x2="{b[0]:.2f}" y2="{b[1]:.2f}"/>'
            f'<line class="arrow" x1="{mx:.2f}" y1="{my:.2f}" x2="{ex:.2f}" y2="{ey:.2f}" '
            'marker-end="url(#arrowhead)"/>'
            f'<text x="{min(max(a[0], 0.5 * unit), width - 1.5 * unit):.2f}" '
            f'y="{min(max(a[1], 1.8 * unit), height - 0.5 * unit):.2f}" '
            f'font-size="{1.6 * unit:.2f}">{i}</text>'
            f"<title>line {i}: {html.escape(spec)}{_crossings(counts, spec)}</title></g>"
        )
    return (
        f'<svg id="overlay" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'preserveAspectRatio="none"><defs><pattern id="hatch" width="{unit:.2f}" '
        f'height="{unit:.2f}" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
        f'<rect width="{unit / 3:.2f}" height="{unit:.2f}" fill="#e03131"/></pattern>'
        '<marker id="arrowhead" viewBox="0 0 10 10" refX="5" refY="5" '
        'markerWidth="4" markerHeight="4" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" '
        f'fill="#1c7ed6"/></marker></defs>{"".join(parts)}<g id="picked"></g></svg>'
    )


def _crossings(counts: dict[str, Any] | None, spec: str) -> str:
    """``: 3 left to right, 1 right to left`` of a line, where counted."""
    line = (counts or {}).get(" ".join(str(spec).split()))
    if not line:
        return ""
    return f": {line['left_to_right']} left to right, {line['right_to_left']} right to left"
