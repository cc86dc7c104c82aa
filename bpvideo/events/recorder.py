"""Events recorded block by block, as the masks of a long video are formed."""

from __future__ import annotations

import numpy as np

from bpvideo.events.detect import Event, detect_events
from bpvideo.events.table import FrameTable, check_fps, frame_rows

__all__ = ["EventRecorder"]


class EventRecorder:
    """The frame table and events of masks handed over block by block.

    Only the table is kept (a few numbers per frame), never the masks.

    Parameters
    ----------
    fps : float
        The input's rate.
    region : (H, W) bool ndarray, optional
        The reported region (foreground outside is not counted).
    threshold : float
        Share above which a frame is active.
    min_event, gap, pad : int or str
        Frames or times (see :func:`~bpvideo.events.detect.detect_events`).

    Examples
    --------
    >>> rec = EventRecorder(25.0, threshold=0.0, min_event=1, gap=0, pad=0)
    >>> masks = np.zeros((4, 8, 8), bool)
    >>> masks[1:3, 2:4, 2:4] = True
    >>> rows = rec.add([1, 2, 3, 4], [0.0, 0.04, 0.08, 0.12], masks)
    >>> table, events = rec.finish()
    >>> [(e.start_frame, e.end_frame, e.start_time, e.end_time) for e in events]
    [(2, 3, '00:00:00.040', '00:00:00.120')]
    """

    def __init__(
        self,
        fps: float,
        region: np.ndarray | None = None,
        *,
        threshold: float,
        min_event: int | str,
        gap: int | str,
        pad: int | str,
    ) -> None:
        self.fps = check_fps(fps)
        self.region = region
        self.options = {"threshold": float(threshold), "min_event": min_event, "gap": gap,
                        "pad": pad}  # fmt: skip
        self.parts: list[FrameTable] = []

    def add(self, numbers: object, times: object, masks: np.ndarray) -> FrameTable:
        """Count the next masks: (k,) mask numbers, (k,) seconds, (k, H, W) bool masks.

        Returns
        -------
        FrameTable
            Their rows.
        """
        rows = frame_rows(masks, np.asarray(numbers), np.asarray(times), self.region)
        self.parts.append(rows)
        return rows

    def table(self) -> FrameTable:
        """The rows so far."""
        if len(self.parts) > 1:
            self.parts = [FrameTable.concat(self.parts)]
        return self.parts[0] if self.parts else FrameTable.empty()

    def finish(self) -> tuple[FrameTable, list[Event]]:
        """The frame table and the events."""
        table = self.table()
        return table, detect_events(table, fps=self.fps, **self.options)  # type: ignore[arg-type]
