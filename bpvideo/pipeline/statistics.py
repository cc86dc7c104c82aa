"""The thresholds of a window's masks, from some of its frames (:func:`window_model`).

The automatic threshold of a window (:mod:`bpvideo.thresholds`) is measured on
:data:`SAMPLE_FRAMES` evenly spaced new frames of the window (and the frames right after
them, for the camera's noise), a block of :data:`BLOCK_PIXELS` pixels at a time, straight
from the data matrix and the background's factors: no full-resolution float frame of the
window is formed.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from bpvideo.io.video import Video
from bpvideo.pipeline.scale import Background
from bpvideo.settings import SeparateSettings
from bpvideo.thresholds import (
    MaskModel,
    SampleBlock,
    agreement,
    model_from_blocks,
    residual_noise,
    temporal_noise,
)

__all__ = ["BLOCK_PIXELS", "SAMPLE_FRAMES", "window_model"]

#: Frames of a window sampled for its thresholds.
SAMPLE_FRAMES = 32
#: Pixels (rows of the data matrix) per block.
BLOCK_PIXELS = 1 << 15
#: Entries of frame pairs sampled for the camera's noise.
_PAIR_ENTRIES = 1 << 20


def window_model(
    video: Video,
    L: Background,
    settings: SeparateSettings,
    *,
    new_from: int = 0,
    observed: np.ndarray | None = None,
    rows: np.ndarray | None = None,
) -> MaskModel | None:
    """The :class:`~bpvideo.thresholds.MaskModel` of a window's masks.

    Parameters
    ----------
    video : Video
        The window (its data matrix, and its frames in colour for the shadow test).
    L : Background
        Its full-resolution background, m x n.
    settings : SeparateSettings
        ``mask_rule``, ``threshold``, ``threshold_k``, ``noise``, ``shadows``.
    new_from : int
        First frame not shared with the previous window (only new frames are sampled).
    observed : (m', n) bool ndarray, optional
        The entries the solver observed (solve scale): where pixels agreed with the
        background. None: every entry (or the observation mask).
    rows : (m,) ndarray, optional
        Row map from full-resolution rows to ``observed``'s (None: the same rows).

    Returns
    -------
    MaskModel or None
        None for the support rule.
    """
    if settings.mask_rule != "residual":
        return None
    n = video.n_frames
    last = max(new_from, n - 2)
    cols = np.unique(np.linspace(new_from, last, min(SAMPLE_FRAMES, n - new_from)).round())
    cols = cols.astype(np.intp)
    agree = _Agreement(video, L, observed, rows)
    sensor = None
    if settings.threshold == "auto":
        sensor = _sensor_noise(video, agree, cols)
    return model_from_blocks(
        _blocks(video, L, agree, cols, settings.shadows == "remove"),
        video.frame_shape,
        sensor=sensor,
        threshold=settings.threshold,
        threshold_k=settings.threshold_k,
        noise=settings.noise,
    )


class _Agreement:
    """Where entries of the full-resolution data agreed with the background: the solver's
    observed entries (read through the row map), or, without them, the residual's own
    :func:`~bpvideo.thresholds.agreement`; and the observation mask."""

    def __init__(
        self,
        video: Video,
        L: Background,
        observed: np.ndarray | None,
        rows: np.ndarray | None,
    ) -> None:
        self.video = video
        self.L = L
        self.observed = observed
        self.rows = rows
        self.noise = None
        if observed is None:  # one noise level for the window, from a sample of entries
            m, n = video.shape
            step = max(1, (m * min(n, 8)) // _PAIR_ENTRIES)
            index = np.arange(0, m, step)
            cols = np.unique(np.linspace(0, n - 1, min(n, 8)).round().astype(np.intp))
            self.noise = residual_noise(video.rows(0, m, cols, step) - L.rows(index, cols))

    def __call__(self, lo: int, hi: int, cols: np.ndarray, step: int = 1) -> np.ndarray:
        """(rows ``lo:hi:step``, len(cols)) bool."""
        index = np.arange(lo, hi, step)
        if self.observed is not None:
            out = self.observed[index if self.rows is None else self.rows[index]][:, cols]
        else:
            residual = self.video.rows(lo, hi, cols, step) - self.L.rows(index, cols)
            out = agreement(residual, self.noise)
        if self.video.mask is not None:
            out &= self.video.mask[index][:, cols]
        return out


def _sensor_noise(video: Video, agree: _Agreement, cols: np.ndarray) -> float:
    """:func:`~bpvideo.thresholds.temporal_noise` of the sampled frames and the next ones,
    on a subsample of the pixels."""
    n = video.n_frames
    nxt = np.minimum(cols + 1, n - 1)
    m = video.shape[0]
    step = max(1, (m * len(cols)) // _PAIR_ENTRIES)
    pairs = np.stack([video.rows(0, m, cols, step), video.rows(0, m, nxt, step)])
    return temporal_noise(pairs, np.stack([agree(0, m, cols, step), agree(0, m, nxt, step)]))


def _blocks(
    video: Video, L: Background, agree: _Agreement, cols: np.ndarray, shade: bool
) -> Iterator[SampleBlock]:
    """The sampled frames, :data:`BLOCK_PIXELS` pixels at a time."""
    m = video.shape[0]
    channels = video.frame_shape[2] if len(video.frame_shape) == 3 else 1
    step = BLOCK_PIXELS * channels
    for lo in range(0, m, step):
        hi = min(m, lo + step)
        block_colour = None
        if shade:
            block_colour = video.pixels(lo // channels, hi // channels, cols)
        yield SampleBlock(
            np.ascontiguousarray(video.rows(lo, hi, cols)),
            L.block(lo, hi, cols),
            agree(lo, hi, cols),
            block_colour,
        )
