"""A live stream's blocks: masks as frames arrive (:func:`iter_live_blocks`).

The first frames of the stream (``--learn``, the first
:data:`~bpvideo.background.tuning.LEARN_SECONDS` by default) are solved by best pair as
:func:`~bpvideo.pipeline.learned.learn` does; every frame after is projected robustly
onto that subspace and thresholded (:func:`~bpvideo.pipeline.learned.robust_coefficients`,
the masks of ``separate``), in batches of the frames that have arrived (at most
:data:`~bpvideo.background.tuning.MOST_FRAMES`), so that a mask waits for no later frame.
The model is kept current by the live update policy,
:class:`~bpvideo.background.online.OnlineBackground`, whose re-solves are
:func:`learn_frames`. Light that drifts is followed twice: at once by the robust fit of
each frame (a change of gain is in the subspace), and by each re-solve; the rate at which
a lasting change is taken in is measured in docs/method.md ("Live streams").
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterable, Iterator

import numpy as np

from bpvideo.background import tuning
from bpvideo.background.online import OnlineBackground
from bpvideo.background.reference import short_span
from bpvideo.errors import InputError
from bpvideo.pipeline.finish import Solution, finish, window_info
from bpvideo.pipeline.learned import LearnedBackground, learn, robust_coefficients
from bpvideo.pipeline.scale import Background
from bpvideo.records import Block, Stopwatch
from bpvideo.settings import SeparateSettings, parse_span
from bpvideo.sources.arrays import open_frames
from bpvideo.sources.video import video_from_frames

__all__ = [
    "apply_batch",
    "iter_live_blocks",
    "learn_frames",
    "learn_span",
    "limited",
    "online_background",
]

logger = logging.getLogger("bpvideo")


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
    a short span's rules: :func:`~bpvideo.background.reference.short_span` with
    :data:`tuning.LIVE_MOTION_BOX` and ``ends``, :data:`tuning.LEARN_ENDS` unless given); ``blocks``
    gets the finished blocks of the frames solved, when given; ``samples``: keep their
    background appearances (a sample bank starts from them).

    Raises
    ------
    InputError
        Too few frames for the rank.
    """
    source = open_frames(frames, fps=fps, name=name)
    with short_span(tuning.LIVE_MOTION_BOX, tuning.LEARN_ENDS if ends is None else ends):
        return learn(source, _solve_settings(settings), blocks=blocks, samples=samples)


def learn_span(settings: SeparateSettings, fps: float) -> tuple[int, int]:
    """Frames ``(start, end)`` of the stream the first model is learned on: ``learn``, or
    the first :data:`~bpvideo.background.tuning.LEARN_SECONDS`."""
    if settings.learn is not None:
        start, end = parse_span(settings.learn, "learn")
        if end is not None:
            return start, end
    return 0, max(settings.rank + 2, round(tuning.LEARN_SECONDS * fps))


def limited(batches: Iterable[list], count: int | None) -> Iterator[list]:
    """At most ``count`` frames of ``batches`` (all of them with None)."""
    seen = 0
    for batch in batches:
        if count is not None and seen + len(batch) >= count:
            yield batch[: count - seen]
            return
        seen += len(batch)
        yield batch


def online_background(
    learned: LearnedBackground, settings: SeparateSettings, fps: float
) -> OnlineBackground:
    """The live update policy of a stream learned as ``learned``: the ring is solved again
    by :func:`learn_frames` with the options of ``settings``."""

    def resolve(frames: list[np.ndarray], rate: float) -> LearnedBackground:
        return learn_frames(frames, settings, rate, "ring", ends=tuning.RING_ENDS)

    return OnlineBackground(learned, fps, settings.absorb, gray=settings.gray, resolve=resolve)


def apply_batch(
    online: OnlineBackground,
    batch: list[tuple[int, np.ndarray]],
    settings: SeparateSettings,
    index: int,
    fps: float,
    clock: Stopwatch,
    region: np.ndarray | None = None,
) -> Iterator[Block]:
    """The blocks of a batch of numbered frames under the current model (then offered to
    the ring); foreground outside ``region`` ((H, W) bool) is not reported (the model is
    offered the masks whole, as a file's solve sees every pixel)."""
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
        yield _within(block, region)
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
    region: np.ndarray | None = None,
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
    region : (H, W) bool ndarray, optional
        Where foreground is reported (``--roi`` / ``--exclude``); None: everywhere.

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
    online = online_background(learned, settings, fps)
    if state is not None:
        state["online"] = online
    try:
        yield from _masked(online, buffer[:start], settings, fps, clock, region)
        for block in first:  # the solve's own masks, numbered as the stream's frames
            frames = [buffer[start + n][1] for n in block.numbers]
            block.numbers = [buffer[start + n][0] for n in block.numbers]
            yield _within(block, region)
            online.offer(frames, block.masks, block.background)
        rest, first = buffer[end:], []
        del buffer
        yield from _masked(online, rest, settings, fps, clock, region)
        del rest
        for batch in batches:
            yield from apply_batch(online, batch, settings, 0, fps, clock, region)
    finally:
        online.close()


def _masked(
    online: OnlineBackground,
    frames: list[tuple[int, np.ndarray]],
    settings: SeparateSettings,
    fps: float,
    clock: Stopwatch,
    region: np.ndarray | None,
) -> Iterator[Block]:
    """The blocks of numbered frames already read, :data:`tuning.MOST_FRAMES` at a time."""
    for lo in range(0, len(frames), tuning.MOST_FRAMES):
        part = frames[lo : lo + tuning.MOST_FRAMES]
        yield from apply_batch(online, part, settings, 0, fps, clock, region)


def _within(block: Block, region: np.ndarray | None) -> Block:
    """``block`` with no foreground outside ``region`` (itself without one)."""
    if region is None:
        return block
    return dataclasses.replace(block, masks=block.masks & region)
