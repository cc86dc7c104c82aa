"""The live update policy of the background model: a model learned on a stream's first
seconds, kept current as frames arrive (:class:`OnlineBackground`).

A ring of :data:`~bpvideo.background.tuning.RING_FRAMES` frames spread over the last
``absorb`` seconds is kept, and every :data:`~bpvideo.background.tuning.REFRESH_FRAMES`
new ring frames a worker thread solves the ring again (the solve is the caller's: the
pipeline hands :func:`~bpvideo.pipeline.online.learn_frames`) and the new model is swapped
in at the next batch. A lasting change (a parked car) becomes background once it fills
enough of the ring for best pair to take it as low-rank, or at once after ``absorb``
seconds; regions that are the background revealed (ghosts:
:mod:`bpvideo.masks.ghosts`) are taken in at once. Pixels beyond the model's threshold
are judged by a bank of background samples refreshed by the masks
(:mod:`bpvideo.masks.bank`). Memory is the ring and the bank, whatever the length of the
stream.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import cv2
import numpy as np

from bpvideo.background import tuning
from bpvideo.masks import MaskModel
from bpvideo.masks.appearances import use_compiled
from bpvideo.masks.bank import SampleBank
from bpvideo.masks.ghosts import ghosts

__all__ = ["RESOLVE_THREAD", "OnlineBackground"]

logger = logging.getLogger("bpvideo")
#: The thread of the re-solves: its routine log lines (frames read, iterations) are
#: dropped, a re-solve every few seconds would bury the rest.
RESOLVE_THREAD = "bpvideo-resolve"
logger.addFilter(lambda r: r.threadName != RESOLVE_THREAD or r.levelno >= logging.WARNING)

#: A learned background (:class:`bpvideo.pipeline.learned.LearnedBackground`: ``model``,
#: ``appearances``, ``basis`` ...), as the caller's solve returns it.
Learned = Any


class OnlineBackground:
    """A learned background kept current by re-solves of recent frames (module docstring).

    Parameters
    ----------
    learned : Learned
        The first model.
    fps : float
        Frames per second of the stream.
    absorb : float
        Seconds a pixel stays foreground before the change is taken into the background
        (``--absorb``); 0: never.
    gray : bool
        Whether the model is solved on grey levels (else on B, G, R).
    resolve : callable
        ``resolve(frames, fps)``: the model learned on ring frames (their rate) by the
        same solve as the first; run on the re-solving thread.
    """

    def __init__(
        self,
        learned: Learned,
        fps: float,
        absorb: float,
        *,
        gray: bool,
        resolve: Callable[[list[np.ndarray], float], Learned],
    ) -> None:
        self.learned = learned
        self.gray = gray
        self.resolve = resolve
        self.fps = fps
        first = learned.appearances
        # a bank holds every pixel's samples: where the window's are on a grid (from
        # 1080p, :func:`~bpvideo.masks.budget.sample_grid`) the stream keeps one image
        keep = first is not None and first.stride == 1 and tuning.SAMPLE_BANK
        settle = round(tuning.SETTLE_SECONDS * fps)
        self.bank = SampleBank.start(first, settle=settle) if keep else None
        if self.bank is not None:
            use_compiled()  # loaded once for the stream (its memory at once, not mid-run)
        self.stride = max(1, round(tuning.RING_SECONDS * fps / tuning.RING_FRAMES))
        self.absorb_frames = round(absorb * fps) if absorb > 0 else None
        self.ring: collections.deque[np.ndarray] = collections.deque(maxlen=tuning.RING_FRAMES)
        self.age: np.ndarray | None = None  # frames each pixel has been foreground
        self.count = 0
        self.fresh = 0
        self.updates = 0
        self._next: Learned | None = None
        self._worker: threading.Thread | None = None
        self._jobs: queue.Queue[list[np.ndarray] | None] = queue.Queue()
        self._idle = threading.Event()  # no re-solve running
        self._idle.set()
        self._lock = threading.Lock()

    def _keep(
        self, frame: np.ndarray, mask: np.ndarray, background: np.ndarray
    ) -> np.ndarray | None:
        """Count a frame's foreground age; every ``stride``-th frame joins the ring with its
        young foreground replaced by the background the model gave it. Pixels that have
        been foreground for ``absorb`` seconds, and ghosts (:meth:`_ghosts`), are taken
        in: written into every ring frame. Returns those pixels (None when none).

        Ring frames are in the solve's channels (grey (H, W) unless ``gray=False``)."""
        frame = self._channels(frame)
        if self.age is None:
            self.age = np.zeros(mask.shape, np.int32)
        self.age += 1
        self.age[~mask] = 0
        taken = None
        if self.absorb_frames is not None:
            taken = self.age >= self.absorb_frames
        if self.count % self.stride == 0:
            ghost = self._ghosts(frame, background, mask)
            if ghost is not None:
                taken = ghost if taken is None else taken | ghost
            young = mask if taken is None else mask & ~taken
            self.ring.append(np.where(young if frame.ndim == 2 else young[..., None],
                                      background, frame))  # fmt: skip
            self.fresh += 1
        self.count += 1
        if taken is None or not taken.any():
            return None
        for old in self.ring:
            old[taken] = frame[taken]
        self.fresh = max(self.fresh, tuning.REFRESH_FRAMES)  # solved again at once
        self.age[taken] = 0  # taken in: counted again should it stay foreground
        return taken

    def _ghosts(
        self, frame: np.ndarray, background: np.ndarray, mask: np.ndarray
    ) -> np.ndarray | None:
        """The regions of ``mask`` (the frame's foreground) that have been foreground for
        :data:`tuning.GHOST_SECONDS` and are the background revealed
        (:func:`~bpvideo.masks.ghosts.ghosts`), or None."""
        if not tuning.GHOST_SECONDS:
            return None
        assert self.age is not None
        old = self.age >= max(1, round(tuning.GHOST_SECONDS * self.fps))
        if not old.any():
            return None
        if frame.ndim == 3:
            frame = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
            background = cv2.cvtColor(np.asarray(background, np.float32), cv2.COLOR_BGR2GRAY)
        found = ghosts(frame, background, old, mask)
        return found if found.any() else None

    def _channels(self, frame: np.ndarray) -> np.ndarray:
        """A BGR frame in the solve's channels (grey unless ``gray=False``)."""
        if self.gray and frame.ndim == 3:
            return cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
        return frame

    def _as_sampled(self, frame: np.ndarray) -> np.ndarray:
        """A BGR frame as the bank holds its samples: BGR (as a window draws them when its
        frames are at hand), or the solve's channels."""
        assert self.bank is not None
        return frame if self.bank.samples.shape[0] == 3 else self._channels(frame)

    def mask_model(self, learned: Learned) -> MaskModel | None:
        """The thresholds to mask new frames with: ``learned``'s, judged by the bank's
        appearances when there is one."""
        model = learned.model
        if self.bank is None or model is None:
            return model
        return dataclasses.replace(model, appearances=self.bank.appearances(model.threshold))

    def offer(
        self, frames: Iterable[np.ndarray], masks: np.ndarray, backgrounds: np.ndarray
    ) -> None:
        """Frames that were masked, with their (k, H, W) masks and (k, H, W[, 3]) background
        (see :meth:`_keep`); a re-solve starts when :data:`tuning.REFRESH_FRAMES` frames have
        joined the ring and none is running (waited for when twice as many have joined
        meanwhile)."""
        frames = list(frames)
        for frame, mask, background in zip(frames, masks, backgrounds, strict=True):
            taken = self._keep(frame, mask, background)
            if taken is not None and self.bank is not None:
                self.bank.take(self._as_sampled(frame), taken)
        if self.bank is not None:
            self.bank.refresh(np.stack([self._as_sampled(f) for f in frames]), masks)
        if self.fresh >= 2 * tuning.REFRESH_FRAMES:
            # frames come faster than the ring is solved (a stream read faster than real
            # time): wait, so that the model keeps up in stream time
            self._idle.wait()
        if (
            self.fresh >= tuning.REFRESH_FRAMES
            and self._idle.is_set()
            and len(self.ring) >= tuning.REFRESH_FRAMES
        ):
            self.fresh = 0
            self._idle.clear()
            self._jobs.put([f.copy() for f in self.ring])
            if self._worker is None:  # one thread for every re-solve: its memory is reused
                self._worker = threading.Thread(target=self._work, daemon=True,
                                                name=RESOLVE_THREAD)  # fmt: skip
                self._worker.start()

    def _work(self) -> None:
        """The re-solving thread: one ring after another, until :meth:`close`."""
        while (frames := self._jobs.get()) is not None:
            self._resolve(frames)
            del frames
            self._idle.set()

    def _resolve(self, frames: list[np.ndarray]) -> None:
        t = time.perf_counter()
        try:
            fresh = self.resolve(frames, self.fps / self.stride)
        except Exception as exc:  # keep the model in use
            logger.debug("re-solving the background failed: %s", exc)
            return
        with self._lock:
            self._next = fresh
        logger.debug("background re-solved on %d frames in %.2fs", len(frames),
                     time.perf_counter() - t)  # fmt: skip

    def model(self) -> Learned:
        """The model to use now (a finished re-solve is swapped in here)."""
        with self._lock:
            if self._next is not None:
                self.learned, self._next = self._next, None
                self.updates += 1
        return self.learned

    def close(self, wait: float = 0.0) -> None:
        """End the re-solving thread (a running re-solve is given ``wait`` seconds; it is a
        daemon thread)."""
        if self._worker is not None:
            self._jobs.put(None)
            self._worker.join(wait)
            self._worker = None
