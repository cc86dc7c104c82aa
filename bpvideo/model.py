"""A background learned once and applied to new frames without solving again
(:class:`BackgroundModel`), as OpenCV's background subtractors are used; one that keeps
learning as frames arrive (:class:`LiveSeparator`, the live update policy of
:func:`bpvideo.separate_live`)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from bpvideo.api import open_arrays
from bpvideo.background import tuning
from bpvideo.background.online import OnlineBackground
from bpvideo.errors import InputError, callable_argument
from bpvideo.pipeline.learned import LearnedBackground, iter_learned_blocks, learn
from bpvideo.pipeline.online import apply_batch, learn_frames, online_background
from bpvideo.records import Stopwatch
from bpvideo.settings import check_value, option_specs, settings_of
from bpvideo.solvers._common import Callback
from bpvideo.sources.arrays import as_bgr, open_frames
from bpvideo.sources.files import open_source

__all__ = ["BackgroundModel", "LiveSeparator"]


class BackgroundModel:
    """A background learned on some frames, applied to new ones without solving again.

    As OpenCV's background subtractors: ``model = BackgroundModel().fit(quiet_minute)``
    solves once (best pair, the options and solve scale of :func:`separate`), then
    ``model.apply(frame)`` gives the foreground mask of any new frame of the same camera
    at the cost of a few passes over its pixels: the frame is projected robustly onto the
    learned background subspace and thresholded with the threshold and clean-up the fit
    found (:mod:`bpvideo.pipeline.learned`).

    Parameters
    ----------
    **options
        Options of ``bpvideo separate`` (:class:`~bpvideo.settings.SeparateSettings`).

    Attributes
    ----------
    threshold : float
        Threshold on ``|frame - background|`` of the masks, in grey levels.
    background_image : (H, W) or (H, W, 3) uint8 ndarray
        The learned background as one image.

    Examples
    --------
    >>> import numpy as np
    >>> import bpvideo
    >>> rng = np.random.default_rng(0)
    >>> frames = rng.normal(100, 2, (40, 24, 32)).clip(0, 255).astype(np.uint8)
    >>> model = bpvideo.BackgroundModel().fit(frames[:30])
    >>> frame = frames[35].copy()
    >>> frame[5:12, 5:12] = 250  # something new
    >>> mask = model.apply(frame)
    >>> mask.shape, bool(mask[8, 8]), bool(mask[20, 25])
    ((24, 32), True, False)
    """

    #: Whether :meth:`fit` keeps the background appearances of the frames learned on
    #: (a live model starts its sample bank from them).
    _samples = False

    def __init__(self, **options: Any) -> None:
        self.settings = settings_of(options, arrays=True)
        self._learned: LearnedBackground | None = None

    def fit(self, frames: Any, /, *, callback: Callback | None = None) -> BackgroundModel:
        """Learn the background on ``frames`` (an array, an iterable, or a file's path).

        Returns
        -------
        BackgroundModel
            ``self``.
        """
        callable_argument("callback", callback)
        if isinstance(frames, (str, os.PathLike)):
            source = open_source(frames, **self.settings.selection(), scale=self.settings.scale)
        else:
            source = open_arrays(frames, self.settings)
        try:
            with threadpool_limits(limits=1, user_api="blas"):
                self._learned = learn(source, self.settings, callback=callback,
                                      samples=self._samples)  # fmt: skip
        finally:
            source.close()
        return self

    @property
    def learned(self) -> LearnedBackground:
        """What :meth:`fit` learned."""
        if self._learned is None:
            raise InputError("the model has not learned a background yet: call fit(frames)")
        return self._learned

    @property
    def threshold(self) -> float:
        return float(self.learned.threshold or 0.0)

    @property
    def background_image(self) -> np.ndarray:
        return self.learned.image

    def apply(self, frames: Any, /) -> np.ndarray:
        """Foreground masks of new frames.

        Parameters
        ----------
        frames : (H, W[, 3]) array_like, or (T, H, W[, 3]), or iterable of frames
            One frame or many, of the size the model learned on: uint8, or grey levels
            0..255 of another dtype (float images of 0..1 are refused: multiply by 255).
            An array of 3 dimensions is one colour frame when its last axis holds 1, 3
            or 4 channels and is not the learned width (else T grey frames).

        Returns
        -------
        (H, W) bool ndarray for one frame, (T, H, W) for many.

        Raises
        ------
        InputError
            Frames of another size than the learned one, of 4 channels, or of 0..1.
        """
        learned = self.learned
        single = _is_one_frame(frames, learned.native_size)
        if single:
            frame = np.asarray(frames)
            w, h = learned.native_size
            if frame.shape[:2] != (h, w):
                raise InputError(
                    f"the frame is {frame.shape[1]}x{frame.shape[0]} but the background was "
                    f"learned on {w}x{h}: give frames of that size"
                )
        source = open_frames([frames] if single else frames, scale=self.settings.scale)
        with threadpool_limits(limits=1, user_api="blas"):
            masks = [b.masks for b in iter_learned_blocks(learned, source, self.settings)]
        out = np.concatenate(masks)
        return out[0] if single else out


def _is_one_frame(frames: Any, native_size: tuple[int, int]) -> bool:
    """Whether ``frames`` is one (H, W) or (H, W, 3) frame of ``native_size`` (w, h)."""
    if not isinstance(frames, np.ndarray):
        return False
    w, h = native_size
    if frames.ndim == 2 or (frames.ndim == 3 and frames.shape[:2] == (h, w)):
        return True
    # (H', W', C): one frame of another size (refused with its size), not H' grey frames
    return frames.ndim == 3 and frames.shape[2] in (1, 3, 4) and frames.shape[1:] != (h, w)


class LiveSeparator(BackgroundModel):
    """A background model that keeps learning: ``apply(frame)`` masks a frame and lets the
    model follow the scene (light that drifts, a parked car absorbed after ``absorb``
    seconds), as :func:`separate_live` does for streams.

    ``fit(frames)`` learns the first model (as :class:`~bpvideo.BackgroundModel`);
    without it, the first :data:`~bpvideo.background.tuning.LEARN_SECONDS` of frames given to
    :meth:`apply` are learned on (their masks are returned once learned: ``apply`` returns
    None until then).

    Parameters
    ----------
    fps : float
        Frames per second of the frames given (``absorb`` is in seconds).
    **options
        Options of ``bpvideo separate`` (``absorb``, ``rank``, thresholds ...).

    Examples
    --------
    >>> import numpy as np
    >>> import bpvideo
    >>> rng = np.random.default_rng(0)
    >>> frames = rng.normal(100, 2, (60, 24, 32)).clip(0, 255).astype(np.uint8)
    >>> live = bpvideo.LiveSeparator(fps=10).fit(frames[:30])
    >>> frame = frames[40].copy()
    >>> frame[5:12, 5:12] = 250
    >>> mask = live.apply(frame)
    >>> bool(mask[8, 8]), bool(mask[20, 25])
    (True, False)
    """

    _samples = True

    def __init__(self, *, fps: float = 25.0, **options: Any) -> None:
        super().__init__(**options)
        self.fps = _frame_rate(fps)
        self.online: OnlineBackground | None = None
        self._pending: list[np.ndarray] = []
        self._index = 0
        self._clock = Stopwatch()

    def fit(self, frames: Any, /, *, callback: Any = None) -> LiveSeparator:
        super().fit(frames, callback=callback)
        self.online = online_background(self.learned, self.settings, self.fps)
        return self

    def apply(self, frames: Any, /) -> np.ndarray | None:
        """Masks of new frames (one (H, W[, 3]) frame, or (T, H, W[, 3])); the model takes
        them in. None while the first model is still being learned."""
        single = isinstance(frames, np.ndarray) and (
            frames.ndim == 2 or (frames.ndim == 3 and frames.shape[2] in (1, 3))
        )
        batch = [as_bgr(f, i) for i, f in enumerate([frames] if single else frames)]
        self._check_sizes(batch)
        if self.online is None:
            self._pending += batch
            if len(self._pending) < max(
                self.settings.rank + 2, round(tuning.LEARN_SECONDS * self.fps)
            ):
                return None
            batch, self._pending = self._pending, []
            with threadpool_limits(limits=1, user_api="blas"):
                self._learned = learn_frames(batch, self.settings, self.fps, "frames",
                                             samples=True)  # fmt: skip
            self.online = online_background(self._learned, self.settings, self.fps)
            single = False
        masks = []
        with threadpool_limits(limits=1, user_api="blas"):
            for lo in range(0, len(batch), tuning.MOST_FRAMES):  # the model follows along
                part = list(enumerate(batch[lo : lo + tuning.MOST_FRAMES], self._index))
                self._index += len(part)
                blocks = apply_batch(self.online, part, self.settings, self._index, self.fps,
                                     self._clock)  # fmt: skip
                masks += [b.masks for b in blocks]
        self._learned = self.online.learned
        out = np.concatenate(masks)
        return out[0] if single else out

    def _check_sizes(self, batch: list[np.ndarray]) -> None:
        """Refuse frames of another size than the model's (or than the first frame given
        while the first model is learned) with both sizes, before any is taken in."""
        if self.online is not None:
            w, h = self.online.learned.native_size
            learned = "the background was learned on"
        elif self._pending or batch:
            h, w = (self._pending or batch)[0].shape[:2]
            learned = "the first frame given was"
        else:
            return
        for i, frame in enumerate(batch):
            if frame.shape[:2] != (h, w):
                raise InputError(f"frame {i} given to apply is {frame.shape[1]}x"
                                 f"{frame.shape[0]} but {learned} {w}x{h}: give frames of "
                                 "that size")  # fmt: skip

    @property
    def updates(self) -> int:
        """Re-solves swapped in so far."""
        return 0 if self.online is None else self.online.updates


def _frame_rate(fps: Any) -> float:
    """``fps`` of :class:`LiveSeparator`, checked as ``separate``'s ``fps`` option is (a
    number in :data:`~bpvideo.limits.FPS_RANGE`): an :class:`InputError` naming it."""
    spec = next(spec for name, _, spec in option_specs() if name == "fps")
    if fps is None:
        raise InputError("{fps=} must be a number of frames per second", option=("fps", fps))
    return float(check_value("fps", spec, fps))
