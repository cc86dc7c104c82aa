"""The thresholds of masks from some of the frames (:func:`sample_model`).

One sampler for data held whole (arrays) and for a window of the pipeline (its data matrix
and the background's factors): :data:`SAMPLE_FRAMES` evenly spaced frames (and the frames
right after them, for the camera's noise) are read a block of :data:`BLOCK_PIXELS` pixels
at a time, straight from the data and the background: no full-resolution float frame is
formed. Its inputs are anything with the methods of :class:`Data` and :class:`Columns`
(:class:`~bpvideo.records.Video` and :class:`~bpvideo.pipeline.scale.Background` have
them; arrays are wrapped here).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future
from typing import Protocol

import numpy as np

from bpvideo import cores
from bpvideo.masks import pooled
from bpvideo.masks.appearances import DOUBT_K, Appearances, draw_appearances, sample_grid
from bpvideo.masks.bursts import burst_samples, foreground_bursts
from bpvideo.masks.options import MaskOptions
from bpvideo.masks.thresholds import (
    MaskModel,
    SampleBlock,
    agreement,
    model_from_blocks,
    residual_noise,
    shade_from_blocks,
    temporal_noise,
)

__all__ = ["BLOCK_PIXELS", "SAMPLE_FRAMES", "Columns", "Data", "sample_model", "window_model"]

#: Frames sampled for the thresholds.
SAMPLE_FRAMES = 32
#: Pixels (rows of the data matrix) per block.
BLOCK_PIXELS = 1 << 15
#: Entries of frame pairs sampled for the camera's noise.
_PAIR_ENTRIES = 1 << 20
_DEFAULT = MaskOptions()


class Data(Protocol):
    """The data of some frames as an m x n matrix (:class:`~bpvideo.records.Video`)."""

    frame_shape: tuple[int, ...]
    mask: np.ndarray | None

    @property
    def shape(self) -> tuple[int, int]: ...

    def rows(self, lo: int, hi: int, cols: np.ndarray, step: int = 1) -> np.ndarray: ...

    def pixels(self, lo: int, hi: int, cols: np.ndarray) -> np.ndarray: ...


class Columns(Protocol):
    """The background of the same frames (:class:`~bpvideo.pipeline.scale.Background`)."""

    def rows(self, index: np.ndarray, cols: np.ndarray) -> np.ndarray: ...

    def block(self, lo: int, hi: int, cols: np.ndarray) -> np.ndarray: ...


def sample_model(
    A: np.ndarray,
    L: np.ndarray,
    frame_shape: tuple[int, ...],
    *,
    observed: np.ndarray | None = None,
    frames: np.ndarray | None = None,
    threshold: float | str = _DEFAULT.threshold,
    threshold_k: float = _DEFAULT.threshold_k,
    noise: str = _DEFAULT.noise,
    appearances: int = _DEFAULT.appearances,
) -> MaskModel:
    """The :class:`~bpvideo.masks.thresholds.MaskModel` of data held whole, from
    :data:`SAMPLE_FRAMES` evenly spaced frames (and the frames right after them).

    Parameters
    ----------
    A, L : (m, n) or (n, *frame_shape) ndarray
        Data and background.
    frame_shape : (H, W) or (H, W, C)
    observed : bool ndarray of A's shape, optional
        Entries that agree with the background; when None, those within
        :data:`~bpvideo.masks.thresholds.AGREE_K` noise levels of it
        (:func:`~bpvideo.masks.thresholds.agreement`).
    frames : (n, H, W, 3) uint8 ndarray, optional
        The frames in colour, for the shadow test (None: shadows are kept).
    threshold, threshold_k, noise, appearances
        As the options of ``separate``.
    """
    frames_first = A.ndim == len(frame_shape) + 1
    data = _ArrayData(A, frame_shape, frames, frames_first)
    background = _ArrayColumns(L, frames_first)
    agree = None if observed is None else _ArrayColumns(observed, frames_first)
    options = MaskOptions(threshold=threshold, threshold_k=threshold_k, noise=noise,
                          shadows="remove" if frames is not None else "keep",
                          appearances=appearances)  # fmt: skip
    model = window_model(data, background, options, observed=agree)
    assert model is not None
    return model


def window_model(
    video: Data,
    L: Columns,
    options: MaskOptions,
    *,
    new_from: int = 0,
    observed: np.ndarray | Columns | None = None,
    rows: np.ndarray | None = None,
) -> MaskModel | None:
    """The :class:`~bpvideo.masks.thresholds.MaskModel` of a window's masks.

    Parameters
    ----------
    video : Data
        The window (its data matrix, and its frames in colour for the shadow test).
    L : Columns
        Its full-resolution background, m x n.
    options : MaskOptions
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
    if options.mask_rule != "residual":
        return None
    n = video.shape[1]
    last = max(new_from, n - 2)
    cols = np.unique(np.linspace(new_from, last, min(SAMPLE_FRAMES, n - new_from)).round())
    cols = cols.astype(np.intp)
    agree = _Agreement(video, L, observed, rows)
    appearances = options.appearances if options.threshold == "auto" else 0
    shade = options.shadows == "remove"
    # the background's colour apart from the spreads when the agreement is the solver's
    # observation (its sampled columns taken once, read twice); else each block's
    # agreement (a residual, or a gather of whole columns) is formed once
    apart = shade and isinstance(observed, np.ndarray)
    # Passes run beside the caller's thread (--threads above 1), each needing none of the
    # caller's answers but those it was given: the background's colour and the bursts
    # (the solver's observation) beside the thresholds' spreads, then the pooled test's
    # limits (the thresholds) beside the appearances. Each computes what it did in line:
    # the same bytes with any count of threads.
    with cores.beside("bpvideo-model") as start:
        colour = None
        if apart:
            colour = start(shade_from_blocks, _colours(video, agree, cols), video.frame_shape)
        bursts = None
        if appearances and options.bursts == "foreground" and isinstance(observed, np.ndarray):
            times, stride = _sample_grid(video, appearances)
            if len(times):
                bursts = start(_Bursts(observed, rows), times, video.frame_shape, stride)
        sensor = None
        if options.threshold == "auto":
            sensor = _sensor_noise(video, agree, cols)
        model = model_from_blocks(
            _blocks(video, L, agree, cols, shade and not apart),
            video.frame_shape,
            sensor=sensor,
            threshold=options.threshold,
            threshold_k=options.threshold_k,
            noise=options.noise,
        )
        limits = None
        if pooled.POOLED and model.sigma is not None:
            limits = start(_pooled_limits, video, L, model, cols)
        if appearances:
            model.appearances = _appearances(video, L, model, appearances, bursts)
        if limits is not None:
            model.pooled = limits.result()
        if colour is not None:
            model.shade = colour.result()
    return model


def _pooled_limits(
    video: Data, L: Columns, model: MaskModel, cols: np.ndarray
) -> np.ndarray | None:
    """:func:`~bpvideo.masks.pooled.pooled_limits` of the window (:func:`_box_means`)."""
    assert model.sigma is not None
    return pooled.pooled_limits(model.sigma, model.noise or 0.0, _box_means(video, L, model, cols))


def _box_means(video: Data, L: Columns, model: MaskModel, cols: np.ndarray) -> np.ndarray:
    """:func:`~bpvideo.masks.pooled.box_mean_without_light` of the signed ``A - L`` (the
    mean of the channels) of :data:`~bpvideo.masks.pooled.POOL_FRAMES` of the sampled
    frames, (k, H, W) float32: each written into its place as it is formed (a list of
    them and its stacked copy held both at once, 0.8 GB at 4K)."""
    H, W = video.frame_shape[:2]
    m = video.shape[0]
    pick = cols[np.unique(np.linspace(0, len(cols) - 1, min(len(cols), pooled.POOL_FRAMES)).round())
                .astype(np.intp)]  # fmt: skip
    out = np.empty((len(pick), H, W), dtype=np.float32)
    for i, c in enumerate(pick):
        one = np.array([c])
        a = video.rows(0, m, one).reshape(H, W, -1)
        b = L.block(0, m, one).reshape(H, W, -1)
        r = pooled.signed_residual(a, b)
        out[i] = pooled.box_mean_without_light(r, b, np.abs(r) > model.threshold)
    return out


class _ArrayData:
    """An array of data as :class:`Data`: (m, n) columns, or (n, *frame_shape) frames."""

    def __init__(
        self,
        A: np.ndarray,
        frame_shape: tuple[int, ...],
        frames: np.ndarray | None,
        frames_first: bool,
    ) -> None:
        self.A, self.frame_shape, self.frames = A, frame_shape, frames
        self.frames_first = frames_first
        self.colour = frames is not None
        self.mask = None

    @property
    def shape(self) -> tuple[int, int]:
        if self.frames_first:
            return int(np.prod(self.frame_shape)), self.A.shape[0]
        return self.A.shape

    def rows(self, lo: int, hi: int, cols: np.ndarray, step: int = 1) -> np.ndarray:
        if self.frames_first:
            flat = self.A[cols].reshape(len(cols), -1)
            return np.ascontiguousarray(flat[:, lo:hi:step].T)
        return self.A[lo:hi:step][:, cols]

    def pixels(self, lo: int, hi: int, cols: np.ndarray) -> np.ndarray:
        assert self.frames is not None
        flat = self.frames.reshape(len(self.frames), -1, 3)
        return np.ascontiguousarray(flat[cols, lo:hi].transpose(1, 0, 2))


class _ArrayColumns:
    """An array of background (or agreement) as :class:`Columns`."""

    def __init__(self, M: np.ndarray, frames_first: bool) -> None:
        self.M, self.frames_first = M, frames_first

    def _flat(self, cols: np.ndarray) -> np.ndarray:
        return self.M[cols].reshape(len(cols), -1).T if self.frames_first else self.M[:, cols]

    def rows(self, index: np.ndarray, cols: np.ndarray) -> np.ndarray:
        out = self._flat(cols)[index]
        return out if out.dtype == bool else out.astype(np.float32, copy=False)

    def block(self, lo: int, hi: int, cols: np.ndarray) -> np.ndarray:
        out = np.ascontiguousarray(self._flat(cols)[lo:hi])
        return out if out.dtype == bool else out.astype(np.float32, copy=False)


class _Agreement:
    """Where entries of the full-resolution data agreed with the background: the solver's
    observed entries (read through the row map), or, without them, the residual's own
    :func:`~bpvideo.masks.thresholds.agreement`; and the observation mask."""

    def __init__(
        self,
        video: Data,
        L: Columns,
        observed: np.ndarray | Columns | None,
        rows: np.ndarray | None,
    ) -> None:
        self.video = video
        self.L = L
        self.observed = observed
        self.rows = rows
        self.noise = None
        self._columns: dict[bytes, np.ndarray] = {}
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
            at = index if self.rows is None else self.rows[index]
            if isinstance(self.observed, np.ndarray):
                out = self._observed_columns(cols)[at]
            else:
                out = self.observed.rows(at, cols)
        else:
            residual = self.video.rows(lo, hi, cols, step) - self.L.rows(index, cols)
            out = agreement(residual, self.noise)
        if self.video.mask is not None:
            out &= self.video.mask[index][:, cols]
        return out

    def _observed_columns(self, cols: np.ndarray) -> np.ndarray:
        """The solver's observation of the frames ``cols``, (m', len(cols)) bool: taken
        once for every block (gathering whole rows of every frame, then the columns, went
        over the whole observation once per block)."""
        key = np.asarray(cols).tobytes()
        found = self._columns.get(key)
        if found is None:  # (two threads may both take it: the same answer)
            assert isinstance(self.observed, np.ndarray)
            found = self._columns[key] = self.observed[:, cols]
        return found


class _Bursts:
    """The burst samples (:func:`~bpvideo.masks.bursts.burst_samples`) of a window, from
    the solver's observed entries of every frame (solve scale) and the row map to them."""

    def __init__(self, observed: np.ndarray, rows: np.ndarray | None) -> None:
        self.observed, self.rows = observed, rows

    def __call__(self, times: np.ndarray, shape: tuple[int, ...], stride: int) -> np.ndarray | None:
        """(K, grid height, grid width) bool, or None where no sample is a burst."""
        found = burst_samples(self.observed, times)
        if found is None:
            return None
        H, W = shape[:2]
        channels = shape[2] if len(shape) == 3 else 1
        pixel = (np.arange(0, H, stride)[:, None] * W + np.arange(0, W, stride)).ravel()
        at = pixel * channels if self.rows is None else self.rows[pixel * channels]
        grid = (-(-H // stride), -(-W // stride))
        return np.ascontiguousarray(found[at].T).reshape(len(times), *grid)


def _sample_grid(video: Data, samples: int) -> tuple[np.ndarray, int]:
    """The appearances' sampled frames and grid step
    (:func:`~bpvideo.masks.budget.sample_grid`) of the window ``video``."""
    shape = video.frame_shape
    channels = shape[2] if len(shape) == 3 else 1
    depth = 3 if getattr(video, "colour", True) else channels  # a Video has its BGR frames
    return sample_grid(video.shape[1], shape[0], shape[1], depth, samples)


def _appearances(
    video: Data,
    L: Columns,
    model: MaskModel,
    samples: int,
    bursts: Future[np.ndarray | None] | None = None,
) -> Appearances | None:
    """The background appearances of the whole window (both sides of every frame), from
    its sampled frames' residuals (:func:`~bpvideo.masks.appearances.draw_appearances`),
    in colour when the BGR frames are at hand, else in the data's own channels; of every
    pixel, or of a grid of them where the frames are large
    (:func:`~bpvideo.masks.budget.sample_grid`); less the samples that are bursts over a
    still scene (``bursts``: the answer of :class:`_Bursts` for those frames and that
    grid, from the solver's observed entries: :mod:`.bursts`)."""
    n = video.shape[1]
    shape = video.frame_shape
    H, W = shape[:2]
    channels = shape[2] if len(shape) == 3 else 1
    colour = getattr(video, "colour", True)  # a Video always has its BGR frames
    depth = 3 if colour else channels
    times, stride = _sample_grid(video, samples)
    if not len(times):
        return None
    grid = (-(-H // stride), -(-W // stride))
    limit = np.broadcast_to(np.asarray(model.limit_map, np.float32), (H, W))
    limit = limit[::stride, ::stride].ravel()
    pixels = grid[0] * grid[1]
    looks = np.empty((pixels, len(times), depth), dtype=np.uint8)
    beyond = np.empty((pixels, len(times)), dtype=bool)  # beyond the pixel's limit
    far = np.empty((pixels, len(times)), dtype=bool)  # beyond DOUBT_K global thresholds
    for lo, hi, A, Lb, colours in _sampled_blocks(video, L, times, stride, colour):
        residual = np.abs(A - Lb)
        del Lb
        if channels > 1:
            residual = residual.reshape(hi - lo, channels, -1).max(axis=1)
        np.greater(residual, limit[lo:hi, None], out=beyond[lo:hi])
        np.greater(residual, DOUBT_K * model.threshold, out=far[lo:hi])
        if colours is not None:
            looks[lo:hi] = colours
        else:
            own = np.clip(np.rint(A), 0, 255).reshape(hi - lo, channels, -1)
            looks[lo:hi] = own.transpose(0, 2, 1)
    far &= ~beyond
    frames = looks.transpose(1, 0, 2).reshape(len(times), *grid, -1)
    del looks  # the frames' copy replaces it (reshaped: one sample's planes together)
    beyond = np.ascontiguousarray(beyond.T).reshape(len(times), *grid)
    doubtful = np.ascontiguousarray(far.T).reshape(len(times), *grid)
    del far
    burst = None if bursts is None else bursts.result()
    if burst is not None:
        burst = foreground_bursts(frames, beyond, doubtful, burst, times, n, model.threshold)
    return draw_appearances(frames, beyond, doubtful, times, n, model.threshold, stride, burst)


def _sampled_blocks(
    video: Data, L: Columns, times: np.ndarray, stride: int, colour: bool
) -> Iterator[tuple[int, int, np.ndarray, np.ndarray, np.ndarray | None]]:
    """The sampled frames ``times`` of every ``stride``-th pixel, a block at a time.

    Yields
    ------
    lo, hi : int
        The block's pixels in the grid (every pixel when ``stride`` is 1).
    A, L : (rows, K) float32 ndarray
        Their rows of the data and of the background (``rows = (hi - lo) x channels``).
    colours : (hi - lo, K, 3) uint8 ndarray or None
        Their BGR colour (when ``colour``).
    """
    shape = video.frame_shape
    H, W = shape[:2]
    channels = shape[2] if len(shape) == 3 else 1
    if stride == 1:
        for lo in range(0, H * W, BLOCK_PIXELS):
            hi = min(H * W, lo + BLOCK_PIXELS)
            A = video.rows(lo * channels, hi * channels, times).astype(np.float32)
            Lb = L.block(lo * channels, hi * channels, times)
            yield lo, hi, A, Lb, video.pixels(lo, hi, times) if colour else None
        return
    # whole rows of the frames, read then thinned to the grid's (rows a multiple of stride)
    step = max(1, BLOCK_PIXELS // (W * stride)) * stride
    width = -(-W // stride)
    K = len(times)
    for y0 in range(0, H, step):
        y1 = min(H, y0 + step)
        lo, hi = y0 * W, y1 * W
        A = video.rows(lo * channels, hi * channels, times).astype(np.float32)
        A = A.reshape(y1 - y0, W, channels * K)[::stride, ::stride].reshape(-1, K)
        Lb = L.block(lo * channels, hi * channels, times)
        Lb = Lb.reshape(y1 - y0, W, channels * K)[::stride, ::stride].reshape(-1, K)
        colours = None
        if colour:
            colours = video.pixels(lo, hi, times).reshape(y1 - y0, W, K, 3)
            colours = colours[::stride, ::stride].reshape(-1, K, 3)
        first = (y0 // stride) * width
        yield first, first + len(A) // channels, A, Lb, colours


def _sensor_noise(video: Data, agree: _Agreement, cols: np.ndarray) -> float:
    """:func:`~bpvideo.masks.thresholds.temporal_noise` of the sampled frames and the next ones,
    on a subsample of the pixels."""
    n = video.shape[1]
    nxt = np.minimum(cols + 1, n - 1)
    m = video.shape[0]
    step = max(1, (m * len(cols)) // _PAIR_ENTRIES)
    pairs = np.stack([video.rows(0, m, cols, step), video.rows(0, m, nxt, step)])
    return temporal_noise(pairs, np.stack([agree(0, m, cols, step), agree(0, m, nxt, step)]))


def _colours(
    video: Data, agree: _Agreement, cols: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The sampled frames' colour and agreement, the blocks of :func:`_blocks`."""
    for lo, hi, channels in _block_rows(video):
        yield video.pixels(lo // channels, hi // channels, cols), agree(lo, hi, cols)


def _block_rows(video: Data) -> Iterator[tuple[int, int, int]]:
    """``(lo, hi, channels)``: the data's rows :data:`BLOCK_PIXELS` pixels at a time (a
    pixel's channels are rows side by side)."""
    m = video.shape[0]
    channels = video.frame_shape[2] if len(video.frame_shape) == 3 else 1
    step = BLOCK_PIXELS * channels
    for lo in range(0, m, step):
        yield lo, min(m, lo + step), channels


def _blocks(
    video: Data, L: Columns, agree: _Agreement, cols: np.ndarray, shade: bool
) -> Iterator[SampleBlock]:
    """The sampled frames, :data:`BLOCK_PIXELS` pixels at a time."""
    for lo, hi, channels in _block_rows(video):
        block_colour = None
        if shade:
            block_colour = video.pixels(lo // channels, hi // channels, cols)
        yield SampleBlock(
            np.ascontiguousarray(video.rows(lo, hi, cols)),
            L.block(lo, hi, cols),
            agree(lo, hi, cols),
            block_colour,
        )
