"""An online background: masks as frames arrive, a background model kept current.

The first frames of the stream (``--learn``, the first :data:`LEARN_SECONDS` by default)
are solved by best pair as :func:`~bpvideo.pipeline.learned.learn` does; every frame after
is projected robustly onto that subspace and thresholded
(:func:`~bpvideo.pipeline.learned.robust_coefficients`, the masks of ``separate``), in
batches of the frames that have arrived (at most :data:`MOST_FRAMES`), so that a mask
waits for no later frame.

The model follows the scene (:class:`OnlineBackground`): a ring of :data:`RING_FRAMES`
frames spread over the last ``absorb`` seconds is kept, and every :data:`REFRESH_FRAMES`
new ring frames a worker thread solves the ring again by best pair (the same solve, the
same options) and the new model is swapped in at the next batch. Light that drifts is
followed twice: at once by the robust fit of each frame (a change of gain is in the
subspace), and by each re-solve. A lasting change (a parked car) becomes background once
it fills enough of the ring for best pair to take it as low-rank: the measured rate is in
docs/method.md ("Live streams"). Pixels beyond the model's threshold are judged by a bank
of background samples refreshed by the masks (:mod:`bpvideo.masks.bank`), and regions
that are the background revealed (ghosts: :mod:`bpvideo.masks.ghosts`) are taken in at
once. Memory is the ring, the bank and one batch, whatever the length of the stream.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import queue
import threading
import time
from collections.abc import Iterable, Iterator

import cv2
import numpy as np

from bpvideo.errors import InputError
from bpvideo.io.arrays import open_frames
from bpvideo.io.video import video_from_frames
from bpvideo.masks import MaskModel
from bpvideo.masks.appearances import use_compiled
from bpvideo.masks.bank import SampleBank
from bpvideo.masks.ghosts import ghosts
from bpvideo.pipeline.finish import Solution, finish, window_info
from bpvideo.pipeline.learned import LearnedBackground, learn, robust_coefficients
from bpvideo.pipeline.reference import short_span
from bpvideo.pipeline.scale import Background
from bpvideo.records import Block, Stopwatch
from bpvideo.settings import SeparateSettings

__all__ = [
    "LEARN_ENDS",
    "LEARN_SECONDS",
    "LIVE_MOTION_BOX",
    "MOST_FRAMES",
    "REFRESH_FRAMES",
    "RING_FRAMES",
    "RING_SECONDS",
    "OnlineBackground",
    "iter_live_blocks",
    "learn_frames",
]

logger = logging.getLogger("bpvideo")
#: The thread of the re-solves: its routine log lines (frames read, iterations) are
#: dropped, a re-solve every few seconds would bury the rest.
RESOLVE_THREAD = "bpvideo-resolve"
logger.addFilter(lambda r: r.threadName != RESOLVE_THREAD or r.levelno >= logging.WARNING)

#: Seconds of stream the first model is learned on, unless ``learn`` says otherwise.
LEARN_SECONDS = 4.0
#: Side of the motion box of the learning span's and the ring's solves (a fraction of the
#: smaller frame side; :data:`bpvideo.pipeline.reference.MOTION_BOX` in batch runs). A
#: few seconds, or 48 frames, hold few still instants per pixel: a long, plain object
#: passing slowly (a trailer's side) is still within a small box from frame to frame, and
#: was taken for background (cdnet_fall live 0.57 with the batch box of 0.06). Chosen by
#: the live replay's leave-one-out (docs/performance.md, "Live streams").
LIVE_MOTION_BOX = 0.12
#: Frames at each end of the learning span whose agreement tells a pixel's background
#: (:func:`bpvideo.pipeline.covered.both_ends`; 0: not looked at): a plain trailer that
#: passed slowly through the first seconds (cdnet_fall) covered the road for most of them,
#: its side still within any box. Chosen by the live replay's leave-one-out
#: (docs/performance.md, "Live streams").
LEARN_ENDS = 8
#: Frames at each end of a ring's solve, the same (0: not looked at; the ring's ends are
#: 30 s apart and its young foreground already replaced: 5 frames measured no better).
RING_ENDS = 0
#: Frames masked together at most (those that arrived while the previous batch was made).
MOST_FRAMES = 8
#: Frames of the ring that the model is solved again on.
RING_FRAMES = 48
#: Seconds of stream the ring spans (a frame joins it every ``RING_SECONDS / RING_FRAMES``).
RING_SECONDS = 30.0
#: New ring frames between two re-solves (every 5 s of stream).
REFRESH_FRAMES = 8
#: Masks judged by a bank of background samples refreshed by the masks
#: (:mod:`bpvideo.masks.bank`), started from the learning window's appearances.
SAMPLE_BANK = True
#: Seconds a pixel must have been background before the bank takes it in.
SETTLE_SECONDS = 1.0
#: Seconds a region must have been foreground before it is judged a ghost (the
#: background revealed: :mod:`bpvideo.masks.ghosts`) and taken in at once; 0: never.
GHOST_SECONDS = 1.0


def _solve_settings(settings: SeparateSettings) -> SeparateSettings:
    """``settings`` for solving frames in memory: no selection, no learned background."""
    return dataclasses.replace(settings, start=0, frames=None, end=None, duration=None,
                               step=1, learn=None, learn_from=None)  # fmt: skip


def learn_frames(
    frames: list[np.ndarray],
    settings: SeparateSettings,
    fps: float,
    name: str,
    blocks: list[Block] | None = None,
    samples: bool = False,
    ends: int | None = None,
) -> LearnedBackground:
    """Learn a background on BGR frames in memory (best pair, the options of ``settings``,
    a short span's rules: :func:`~bpvideo.pipeline.reference.short_span` with
    :data:`LIVE_MOTION_BOX` and ``ends``, :data:`LEARN_ENDS` unless given); ``blocks``
    gets the finished blocks of the frames solved, when given; ``samples``: keep their
    background appearances (a sample bank starts from them).

    Raises
    ------
    InputError
        Too few frames for the rank.
    """
    source = open_frames(frames, fps=fps, name=name)
    with short_span(LIVE_MOTION_BOX, LEARN_ENDS if ends is None else ends):
        return learn(source, _solve_settings(settings), blocks=blocks, samples=samples)


class OnlineBackground:
    """A learned background kept current by re-solves of recent frames (module docstring).

    Parameters
    ----------
    learned : LearnedBackground
        The first model.
    settings : SeparateSettings
        The options each re-solve runs with.
    fps : float
        Frames per second of the stream.
    absorb : float
        Seconds a pixel stays foreground before the change is taken into the background
        (``--absorb``); 0: never.
    """

    def __init__(
        self, learned: LearnedBackground, settings: SeparateSettings, fps: float, absorb: float
    ) -> None:
        self.learned = learned
        self.settings = settings
        self.fps = fps
        first = learned.appearances
        keep = first is not None and SAMPLE_BANK
        settle = round(SETTLE_SECONDS * fps)
        self.bank = SampleBank.start(first, settle=settle) if keep else None
        if self.bank is not None:
            use_compiled()  # loaded once for the stream (its memory at once, not mid-run)
        self.stride = max(1, round(RING_SECONDS * fps / RING_FRAMES))
        self.absorb_frames = round(absorb * fps) if absorb > 0 else None
        self.ring: collections.deque[np.ndarray] = collections.deque(maxlen=RING_FRAMES)
        self.age: np.ndarray | None = None  # frames each pixel has been foreground
        self.count = 0
        self.fresh = 0
        self.updates = 0
        self._next: LearnedBackground | None = None
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
        self.fresh = max(self.fresh, REFRESH_FRAMES)  # solved again at once
        self.age[taken] = 0  # taken in: counted again should it stay foreground
        return taken

    def _ghosts(
        self, frame: np.ndarray, background: np.ndarray, mask: np.ndarray
    ) -> np.ndarray | None:
        """The regions of ``mask`` (the frame's foreground) that have been foreground for
        :data:`GHOST_SECONDS` and are the background revealed
        (:func:`~bpvideo.masks.ghosts.ghosts`), or None."""
        if not GHOST_SECONDS:
            return None
        assert self.age is not None
        old = self.age >= max(1, round(GHOST_SECONDS * self.fps))
        if not old.any():
            return None
        if frame.ndim == 3:
            frame = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
            background = cv2.cvtColor(np.asarray(background, np.float32), cv2.COLOR_BGR2GRAY)
        found = ghosts(frame, background, old, mask)
        return found if found.any() else None

    def _channels(self, frame: np.ndarray) -> np.ndarray:
        """A BGR frame in the solve's channels (grey unless ``gray=False``)."""
        if self.settings.gray and frame.ndim == 3:
            return cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
        return frame

    def _as_sampled(self, frame: np.ndarray) -> np.ndarray:
        """A BGR frame as the bank holds its samples: BGR (as a window draws them when its
        frames are at hand), or the solve's channels."""
        assert self.bank is not None
        return frame if self.bank.samples.shape[0] == 3 else self._channels(frame)

    def mask_model(self, learned: LearnedBackground) -> MaskModel | None:
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
        (see :meth:`_keep`); a re-solve starts when :data:`REFRESH_FRAMES` frames have
        joined the ring and none is running (waited for when twice as many have joined
        meanwhile)."""
        frames = list(frames)
        for frame, mask, background in zip(frames, masks, backgrounds, strict=True):
            taken = self._keep(frame, mask, background)
            if taken is not None and self.bank is not None:
                self.bank.take(self._as_sampled(frame), taken)
        if self.bank is not None:
            self.bank.refresh(np.stack([self._as_sampled(f) for f in frames]), masks)
        if self.fresh >= 2 * REFRESH_FRAMES:
            # frames come faster than the ring is solved (a stream read faster than real
            # time): wait, so that the model keeps up in stream time
            self._idle.wait()
        if (
            self.fresh >= REFRESH_FRAMES
            and self._idle.is_set()
            and len(self.ring) >= REFRESH_FRAMES
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
            fresh = learn_frames(frames, self.settings, self.fps / self.stride, "ring",
                                 ends=RING_ENDS)  # fmt: skip
        except Exception as exc:  # keep the model in use
            logger.debug("re-solving the background failed: %s", exc)
            return
        with self._lock:
            self._next = fresh
        logger.debug("background re-solved on %d frames in %.2fs", len(frames),
                     time.perf_counter() - t)  # fmt: skip

    def model(self) -> LearnedBackground:
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


def apply_batch(
    online: OnlineBackground,
    batch: list[tuple[int, np.ndarray]],
    settings: SeparateSettings,
    index: int,
    fps: float,
    clock: Stopwatch,
) -> Iterator[Block]:
    """The blocks of a batch of numbered frames under the current model (then offered to
    the ring)."""
    t = time.perf_counter()
    learned = online.model()
    video = video_from_frames(batch, gray=settings.gray, fps=fps, source="live")
    C = robust_coefficients(learned, video.data)
    clock.add("solve", time.perf_counter() - t)
    L = Background(left=learned.basis, right=np.ascontiguousarray(C.T))
    model = online.mask_model(learned)
    solution = Solution(video, 0, L, None, model, window_info(video, 0, index))
    masks, backgrounds = [], []
    for block in finish(solution, settings.masks, clock):
        masks.append(block.masks)
        backgrounds.append(block.background)
        yield block
    online.offer((frame for _, frame in batch), np.concatenate(masks), np.concatenate(backgrounds))


def iter_live_blocks(
    batches: Iterable[list[tuple[int, np.ndarray]]],
    settings: SeparateSettings,
    *,
    fps: float,
    name: str,
    learn: tuple[int, int],
    clock: Stopwatch | None = None,
    state: dict | None = None,
) -> Iterator[Block]:
    """Separate a live stream: learn on its frames ``learn`` (START, END), then mask each
    batch as it comes with a model kept current (see the module docstring).

    Parameters
    ----------
    batches : iterable of list of (int, (H, W, 3) uint8 ndarray)
        Numbered frames in batches of what has arrived.
    settings : SeparateSettings
        The options (``absorb``: seconds of the ring).
    fps : float
        The stream's frame rate.
    name : str
        The source, for messages.
    learn : (int, int)
        Frames ``START:END`` of the stream (0-based, END excluded) the first model is
        learned on (fewer when the stream ends before); the frames before START are
        masked with it once it is learned.
    clock : Stopwatch, optional
        Counts the seconds of each stage.
    state : dict, optional
        Filled with ``"online"`` (the :class:`OnlineBackground`) once it exists.

    Raises
    ------
    InputError
        The stream ended before any frame, or with too few frames for the rank.
    """
    clock = clock or Stopwatch()
    batches = iter(batches)
    start, end = learn
    buffer: list[tuple[int, np.ndarray]] = []
    t = time.perf_counter()
    for batch in batches:
        buffer.extend(batch)
        if len(buffer) >= end:
            break
    clock.add("read", time.perf_counter() - t)
    if not buffer:
        raise InputError(f"{name}: the stream ended before its first frame: check the source")
    start = min(start, max(len(buffer) - settings.rank - 2, 0))  # a stream that ended early
    t = time.perf_counter()
    first: list[Block] = []
    learned = learn_frames([f for _, f in buffer[start:end]], settings, fps, name, first,
                           samples=True)  # fmt: skip
    clock.add("solve", time.perf_counter() - t)
    logger.info("learned the background on frames %d:%d of %s in %.2fs", start,
                min(end, len(buffer)), name, time.perf_counter() - t)  # fmt: skip
    online = OnlineBackground(learned, settings, fps, settings.absorb)
    if state is not None:
        state["online"] = online
    try:
        yield from _masked(online, buffer[:start], settings, fps, clock)
        for block in first:  # the solve's own masks, numbered as the stream's frames
            frames = [buffer[start + n][1] for n in block.numbers]
            block.numbers = [buffer[start + n][0] for n in block.numbers]
            yield block
            online.offer(frames, block.masks, block.background)
        rest, first = buffer[end:], []
        del buffer
        yield from _masked(online, rest, settings, fps, clock)
        del rest
        for batch in batches:
            yield from apply_batch(online, batch, settings, 0, fps, clock)
    finally:
        online.close()


def _masked(
    online: OnlineBackground,
    frames: list[tuple[int, np.ndarray]],
    settings: SeparateSettings,
    fps: float,
    clock: Stopwatch,
) -> Iterator[Block]:
    """The blocks of numbered frames already read, :data:`MOST_FRAMES` at a time."""
    for lo in range(0, len(frames), MOST_FRAMES):
        yield from apply_batch(online, frames[lo : lo + MOST_FRAMES], settings, 0, fps, clock)
