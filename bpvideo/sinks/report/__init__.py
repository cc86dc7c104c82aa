"""``report.html``, the page a person on duty reads. Where each piece is:

- :mod:`~bpvideo.sinks.report.data`: what the page shows (:class:`ReportData`, the links
  to clips and the overlay, times and axis ticks in words);
- :mod:`~bpvideo.sinks.report.svg`: the plot over time and the regions over the still;
- :mod:`~bpvideo.sinks.report.tables`: events, objects, counts and settings tables;
- :mod:`~bpvideo.sinks.report.picker`: the region picker (its script and controls);
- :mod:`~bpvideo.sinks.report.page`: the page put together (:func:`report_html`).

The events' pictures are drawn by :mod:`bpvideo.sinks.event_report`.
"""

from bpvideo.sinks.report.data import Links, ReportData, read_objects, wall_clock
from bpvideo.sinks.report.page import render, report_html

__all__ = ["Links", "ReportData", "read_objects", "render", "report_html", "wall_clock"]
