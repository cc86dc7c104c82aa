"""How many appearance samples a window keeps, and of which pixels: within
:data:`SAMPLE_BYTES`, one per second of the window, of every pixel up to 720p and of a
grid of them from 1080p (:func:`sample_grid`; the samples themselves:
:mod:`bpvideo.masks.appearances`)."""

from __future__ import annotations

import numpy as np

__all__ = ["FEWEST", "MIN_SAMPLES", "SAMPLE_BYTES", "SAMPLE_EVERY", "sample_grid", "sample_times"]

#: Bytes the samples of one window may take (fewer samples of large frames; where fewer
#: than :data:`MIN_SAMPLES` fit, from 1080p, the samples are kept on a grid of every
#: ``stride``-th pixel, :func:`sample_grid`: with 11 samples of every pixel a 3000-frame
#: 1080p run peaked at 1192 MiB against the 1 GB bound, docs/performance.md).
SAMPLE_BYTES = 40 << 20
#: One sample per this many frames of the window (a second of 25 fps video), at least
#: :data:`FEWEST` and at most the ``appearances`` option: a long window's background
#: shows more appearances (chosen by leave-one-sequence-out, docs/quality.md).
SAMPLE_EVERY = 25
FEWEST = 12
#: Fewest samples worth keeping (below, the one-image background is used).
MIN_SAMPLES = 6


def sample_grid(
    n: int, height: int, width: int, channels: int, samples: int
) -> tuple[np.ndarray, int]:
    """The window's sampled frames (:func:`sample_times`) and the stride of the grid of
    pixels whose samples are kept.

    The stride is 1 (every pixel) where :data:`MIN_SAMPLES` samples of every pixel fit
    in :data:`SAMPLE_BYTES`; else the least stride at which the samples wanted (one per
    :data:`SAMPLE_EVERY` frames, at least :data:`FEWEST`, at most ``samples``) fit: 2 at
    1080p (a grid of 960x540), 4 at 4K (the same grid).

    Returns
    -------
    times : (K,) intp ndarray
        Empty when the window has too few frames (or ``samples`` is below
        :data:`MIN_SAMPLES`).
    stride : int
    """
    times = sample_times(n, height * width, channels, samples)
    wanted = min(samples, max(FEWEST, n // SAMPLE_EVERY), n)
    if len(times) or wanted < MIN_SAMPLES:
        return times, 1
    stride = 2
    while _grid_pixels(height, width, stride) * (channels + 1) * wanted > SAMPLE_BYTES and (
        stride < max(height, width)
    ):
        stride += 1
    return sample_times(n, _grid_pixels(height, width, stride), channels, samples), stride


def _grid_pixels(height: int, width: int, stride: int) -> int:
    return -(-height // stride) * -(-width // stride)


def sample_times(n: int, frame_pixels: int, channels: int, samples: int) -> np.ndarray:
    """The window's frames whose appearances are kept: evenly spaced over all ``n``
    frames, at most ``samples`` and at most what :data:`SAMPLE_BYTES` holds.

    Returns
    -------
    (K,) intp ndarray
        Empty when fewer than :data:`MIN_SAMPLES` fit.
    """
    fit = SAMPLE_BYTES // max(1, frame_pixels * (channels + 1))
    samples = min(samples, max(FEWEST, n // SAMPLE_EVERY))
    k = min(samples, n, int(fit))
    if k < MIN_SAMPLES:
        return np.zeros(0, dtype=np.intp)
    return np.unique(np.linspace(0, n - 1, k).round().astype(np.intp))
