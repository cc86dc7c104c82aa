"""Blocks gathered into arrays: the result of :func:`bpvideo.separate` (:class:`ArraysSink`)
and the windows of :func:`bpvideo.iter_separate` (:func:`gather_windows`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bpvideo.records import Block, Report, WindowReport, masked_frames
from bpvideo.still import Still

__all__ = ["ArraysSink", "Separation", "Window", "gather_windows"]


@dataclass
class Separation:
    """What :func:`bpvideo.separate` returns.

    Attributes
    ----------
    background : (T, H, W) or (T, H, W, 3) uint8 ndarray
        The background of every frame (grey, or BGR with ``gray=False``).
    foreground : (T, H, W) or (T, H, W, 3) uint8 ndarray
        The frames where the mask is set, black elsewhere (grey for grey frames).
    masks : (T, H, W) bool ndarray
        Foreground masks.
    background_image : (H, W) or (H, W, 3) uint8 ndarray
        One still: the per-pixel median of the background.
    report : Report
        What ``summary.json`` would hold (``report.to_dict()``).
    events : list of Event
        Stretches of frames with foreground (the rows of ``events.csv``).
    frames : FrameTable or None
        One row per frame: foreground share, blobs, bounding box (``frames.csv``).
    objects, tracks : list of dict or None
        When objects are tracked (``events="objects"`` or ``count_line``): the rows of
        ``objects.csv`` (one per object) and of ``tracks.csv`` (object, frame, box); None
        otherwise.
    counts : dict or None
        The crossings of each ``count_line`` per direction (summary.json's ``counts``).
    """

    background: np.ndarray
    foreground: np.ndarray
    masks: np.ndarray
    background_image: np.ndarray
    report: Report
    events: list[Any] = field(default_factory=list)
    frames: Any = None
    objects: list[dict[str, Any]] | None = None
    tracks: list[dict[str, Any]] | None = None
    counts: dict[str, Any] | None = None


class ArraysSink:
    """Keeps every block's background, foreground and masks, for one :class:`Separation`.

    Parameters
    ----------
    channels : int
        Channels of the input: its foreground is kept grey (one channel) when it is 1.
    """

    def __init__(self, channels: int) -> None:
        self.channels = channels
        self.parts: dict[str, list[np.ndarray]] = {"background": [], "foreground": [],
                                                    "masks": []}  # fmt: skip
        self.still = Still()

    def open(self) -> None:
        """Nothing to prepare."""

    def write(self, block: Block) -> None:
        """Keep the block's arrays."""
        self.parts["background"].append(block.background)
        self.parts["masks"].append(block.masks)
        foreground = block.foreground
        self.parts["foreground"].append(foreground[..., 0] if self.channels == 1 else foreground)
        self.still.add(block.background)

    def close(self) -> None:
        """Nothing to finish."""

    def abort(self) -> None:
        """Let go of what was kept."""
        for arrays in self.parts.values():
            arrays.clear()

    def separation(self, report: Report, **found: Any) -> Separation:
        """The :class:`Separation` of the blocks written (``events``, ``frames``: found by
        :class:`~bpvideo.sinks.events.TableSink`)."""
        return Separation(
            **{name: np.concatenate(arrays) for name, arrays in self.parts.items()},
            background_image=self.still.median(),
            report=report,
            **found,
        )


@dataclass
class Window:
    """One finished window of :func:`bpvideo.iter_separate`.

    Attributes
    ----------
    index : int
        0-based position in the stream.
    numbers : list of int
        Source frame numbers of the window's new frames.
    frames : (k, H, W, 3) uint8 ndarray
        The new frames (BGR).
    background_frames : (k, H, W) or (k, H, W, 3) uint8 ndarray
        Their background.
    masks : (k, H, W) bool ndarray
        Their foreground masks.
    report : WindowReport or None
        How the window was solved.
    """

    index: int
    numbers: list[int]
    frames: np.ndarray
    background_frames: np.ndarray
    masks: np.ndarray
    report: WindowReport | None

    def __len__(self) -> int:
        return len(self.numbers)

    @property
    def foreground(self) -> np.ndarray:
        """(k, H, W, 3) uint8: the new frames where the mask is set, black elsewhere."""
        return masked_frames(self.frames, self.masks)


def gather_windows(blocks: Iterable[Block]) -> Iterator[Window]:
    """The blocks of each window gathered into one :class:`Window`, window by window."""
    kept: list[Block] = []
    for block in blocks:
        kept.append(block)
        if block.last:
            info = block.window
            yield Window(
                index=0 if info is None else info.index,
                numbers=[n for b in kept for n in b.numbers],
                frames=np.concatenate([b.frames for b in kept]),
                background_frames=np.concatenate([b.background for b in kept]),
                masks=np.concatenate([b.masks for b in kept]),
                report=None if info is None else info.report,
            )
            kept = []
