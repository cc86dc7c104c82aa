"""Counting lines: which way a step of an object's centre crosses a segment, and the
crossings per line, direction and hour (no I/O; :mod:`bpvideo.events.objects` counts
its objects' steps with them)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from bpvideo.errors import InputError

__all__ = ["DIRECTIONS", "CountLine", "Counts", "check_line_meets", "parse_line"]

#: The two directions of a counting line.
DIRECTIONS = ("left_to_right", "right_to_left")


def parse_line(text: str, name: str = "count_line") -> tuple[float, float, float, float]:
    """``x1, y1, x2, y2`` of a counting line ``"x1,y1 x2,y2"`` (pixels of the input).

    Examples
    --------
    >>> parse_line("0,120 320,120")
    (0.0, 120.0, 320.0, 120.0)
    """
    try:
        points = [tuple(float(v) for v in p.split(",")) for p in str(text).split()]
        ok = len(points) == 2 and all(len(p) == 2 and all(map(math.isfinite, p)) for p in points)
    except ValueError:
        ok = False
    if not ok or points[0] == points[1]:
        raise InputError(
            f"{{{name}}}={text!r}: a counting line is two distinct points 'x1,y1 x2,y2' in "
            "pixels of the input",
            option=(name, text),
        )
    (x1, y1), (x2, y2) = points
    return x1, y1, x2, y2


def check_line_meets(text: str, line: tuple[float, float, float, float],
                     shape: tuple[int, int], scale: float = 1.0) -> None:  # fmt: skip
    """Refuse a counting line that misses the (H, W) frames (``line`` in their pixels,
    ``scale`` times the input's): no object could cross it.

    Raises
    ------
    InputError
        Naming the line, the frame and the corners inside it, as ``roi`` does.
    """
    (height, width), (x1, y1, x2, y2) = shape, line
    (dx, dy), low, high = (x2 - x1, y2 - y1), 0.0, 1.0  # Liang-Barsky: the part inside
    for p, q in ((-dx, x1 + 0.5), (dx, width - 0.5 - x1), (-dy, y1 + 0.5),
                 (dy, height - 0.5 - y1)):  # fmt: skip
        if p == 0:  # parallel to this side: inside it or not at all
            high = high if q >= 0 else -1.0
        elif p < 0:
            low = max(low, q / p)
        else:
            high = min(high, q / p)
    if low > high:
        w, h = round(width / scale), round(height / scale)
        raise InputError(
            f"{{count_line}}={text!r} misses the {w}x{h} frames (no object could cross it): "
            f"give points inside the frame (x 0..{w - 1}, y 0..{h - 1})",
            option=("count_line", text),
        )


@dataclass
class CountLine:
    """A counting line from ``a`` to ``b`` (pixels of the masks); :meth:`crossing` says
    whether a step of an object's centre crosses it, and which way: ``left_to_right`` is
    from the left of the line to its right as seen on screen looking from ``a`` to ``b``
    (a line drawn left to right counts objects moving down as ``left_to_right``)."""

    name: str
    a: tuple[float, float]
    b: tuple[float, float]

    def _side(self, p: tuple[float, float]) -> float:
        (ax, ay), (bx, by) = self.a, self.b
        return (bx - ax) * (p[1] - ay) - (by - ay) * (p[0] - ax)

    def crossing(self, p: tuple[float, float], q: tuple[float, float]) -> str | None:
        """The direction in which the step from ``p`` to ``q`` crosses the segment, or None
        (a step that ends on the line counts; one that starts on it does not)."""
        sp, sq = self._side(p), self._side(q)
        if sp == 0 or (sq != 0 and (sp > 0) == (sq > 0)):
            return None
        mover = CountLine("", p, q)
        sa, sb = mover._side(self.a), mover._side(self.b)
        if sa * sb > 0:
            return None  # the step crosses the line's extension, not the segment
        return "left_to_right" if sp < 0 else "right_to_left"


@dataclass
class Counts:
    """Crossings per line and direction, and per hour of the input's time."""

    lines: list[CountLine]
    total: dict[str, dict[str, int]] = field(default_factory=dict)
    hours: dict[str, dict[int, dict[str, int]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for line in self.lines:
            self.total[line.name] = dict.fromkeys(DIRECTIONS, 0)
            self.hours[line.name] = {}

    def add(self, line: str, direction: str, seconds: float) -> None:
        """One crossing of ``line`` at ``seconds``."""
        self.total[line][direction] += 1
        hour = self.hours[line].setdefault(int(seconds // 3600), dict.fromkeys(DIRECTIONS, 0))
        hour[direction] += 1

    def summary(self, seconds: float) -> dict[str, Any]:
        """summary.json's ``counts``: per line, per direction; per hour on inputs longer
        than an hour (``seconds``)."""
        out: dict[str, Any] = {}
        for name, total in self.total.items():
            out[name] = dict(total)
            if seconds > 3600:
                hours = sorted(self.hours[name].items())
                out[name]["per_hour"] = [{"hour": h, **v} for h, v in hours]
        return out
