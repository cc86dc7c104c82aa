"""Live cameras: separate a network stream, a capture device or stdin as frames arrive
(:func:`separate_live`, what ``bpvideo separate URL`` and ``--live`` run), and the
library's online model (:class:`LiveSeparator`).

The frames come from :mod:`bpvideo.io.live` (a reading thread, reconnection), the masks
from :mod:`bpvideo.pipeline.live` (a background learned on the first seconds and kept
current), and go to sinks as each batch is made: the result folder, or rolling segment
folders (:mod:`bpvideo.io.sinks.segments`), raw masks (``masks_to``) and events as JSON
lines (``events_to``). SIGINT and SIGTERM end the stream: what was read is finished and
the current result (or segment) is committed complete.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from threadpoolctl import threadpool_limits

from bpvideo.api import drain, settings_of
from bpvideo.errors import BpvideoError, InputError, literal
from bpvideo.events.online import OnlineEvents
from bpvideo.io.event_sinks import block_times
from bpvideo.io.event_stream import event_options
from bpvideo.io.failures import retold
from bpvideo.io.guard import Access, check_access, separate_access
from bpvideo.io.live import is_device, is_url, open_live
from bpvideo.io.regions import region_mask
from bpvideo.io.sinks import Sink
from bpvideo.io.sinks.live_events import LiveEventSink
from bpvideo.io.sinks.raw import RawMaskSink
from bpvideo.io.sinks.segments import MaskStreamSink, ResultSink, SegmentSink
from bpvideo.io.stream import FrameSource
from bpvideo.model import BackgroundModel
from bpvideo.pipeline.live import (
    LEARN_SECONDS,
    MOST_FRAMES,
    OnlineBackground,
    apply_batch,
    iter_live_blocks,
    learn_frames,
)
from bpvideo.pipeline.plan import plan_run
from bpvideo.records import Stopwatch
from bpvideo.settings import (
    SeparateSettings,
    check_value,
    option_specs,
    parse_span,
    parse_time,
)

__all__ = ["LiveSeparator", "check_live_options", "is_live", "separate_live"]

logger = logging.getLogger("bpvideo")

#: Options that mean something only for a live input.
LIVE_ONLY = ("segment", "events_to")


def is_live(input: str, settings: SeparateSettings) -> bool:
    """Whether INPUT is read live: a URL always, stdin and devices with ``live``."""
    return is_url(input) or bool(settings.live)


def check_live_options(input: str, settings: SeparateSettings) -> None:
    """Refuse live options for a file, and options a live run cannot honour, before
    anything is opened.

    Raises
    ------
    InputError
        Naming the option.
    """
    if not is_live(input, settings):
        for name in LIVE_ONLY:
            if getattr(settings, name) is not None:
                raise InputError(
                    f"{{{name}}} applies to live inputs: add {{live}} or give a URL",
                    option=(name, getattr(settings, name)),
                )
        return
    if not (is_url(input) or input == "-" or is_device(input)):
        raise InputError(
            f"{input}: {{live}} reads stdin ('-'), a capture device or a URL: give one of "
            "them, or drop {live} for a file",
            option=("live", True),
        )
    for name in ("learn_from", "mask", "observe", "groundtruth", "preview", "end"):
        if getattr(settings, name) not in (None, False):
            raise InputError(f"{{{name}}} cannot be used on a live stream: drop it",
                             option=(name, getattr(settings, name)))  # fmt: skip
    for name, plain in (("start", 0), ("step", 1)):
        if getattr(settings, name) != plain:
            raise InputError(f"{{{name}}} cannot be used on a live stream: drop it (a live "
                             "stream is read from now on, every frame)",
                             option=(name, getattr(settings, name)))  # fmt: skip
    if settings.masks_to == "-" and settings.events_to == "-":
        raise InputError("{masks_to} and {events_to} cannot both be stdout: give one a file",
                         option=("events_to", "-"))  # fmt: skip
    RawMaskSink.check(settings.masks_to)


def _learn_span(settings: SeparateSettings, fps: float) -> tuple[int, int]:
    """Frames ``(start, end)`` of the stream the first model is learned on."""
    if settings.learn is not None:
        return parse_span(settings.learn, "learn")
    return 0, max(settings.rank + 2, round(LEARN_SECONDS * fps))


@contextlib.contextmanager
def _signals_stop(stop: threading.Event) -> Iterator[list[int]]:
    """SIGINT and SIGTERM set ``stop`` (the stream ends, outputs are finished) instead of
    raising; the signals received are listed. Only the main thread can do this."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum: int, frame: object) -> None:
        received.append(signum)
        stop.set()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def _limited(batches: Iterator[list], count: int | None) -> Iterator[list]:
    """At most ``count`` frames of ``batches`` (all of them with None)."""
    seen = 0
    for batch in batches:
        if count is not None and seen + len(batch) >= count:
            yield batch[: count - seen]
            return
        seen += len(batch)
        yield batch


def separate_live(
    input: str,
    output: str | os.PathLike | None = None,
    /,
    *,
    stdin: BinaryIO | None = None,
    stop: threading.Event | None = None,
    **options: Any,
) -> list[Path]:
    """Separate a live stream as it comes; write its result folder or segments.

    Parameters
    ----------
    input : str
        A URL (rtsp, rtsps, http(s), rtmp(s), udp, tcp, srt), a capture device, or
        ``"-"`` (stdin).
    output : str or path-like, optional
        OUTDIR (default ``live-bpvideo``, ``stdin-bpvideo`` for stdin). With ``segment``
        it holds one folder per segment.
    stdin : binary file, optional
        Stream read for ``"-"`` instead of ``sys.stdin.buffer``.
    stop : threading.Event, optional
        Set it to end the stream (as SIGINT does): the outputs are finished.
    **options
        Options of ``bpvideo separate`` (``live``, ``reconnect``, ``segment``,
        ``events_to``, ``absorb``, ``learn`` ...).

    Returns
    -------
    list of Path
        The result folders written, each complete (OUTDIR without ``segment``); their
        ``summary.json`` holds the report.

    Raises
    ------
    InputError
        Bad options, or a stream that cannot be opened.
    """
    clock = Stopwatch()
    settings = settings_of(dict(options, live=True), arrays=False)
    input = os.fspath(input)
    check_live_options(input, settings)
    out_path = Path(output if output is not None else
                    "stdin-bpvideo" if input == "-" else "live-bpvideo")  # fmt: skip
    reads, writes = separate_access("-", out_path, settings)
    if settings.events_to not in (None, "-"):
        writes.append(Access(Path(settings.events_to), "{events_to}", "{events_to}",
                             ("events_to", settings.events_to)))  # fmt: skip
    check_access(reads, writes)
    stop = stop or threading.Event()
    with _signals_stop(stop) as received, threadpool_limits(limits=1, user_api="blas"):
        source, reader = open_live(input, scale=settings.scale, reconnect=settings.reconnect,
                                   stop=stop, stdin=stdin)  # fmt: skip
        try:
            folders = _run(source, reader, settings, out_path, clock)
        finally:
            reader.close()
    if received:
        logger.warning("stopped by signal %d: the outputs of the frames read are complete",
                       received[0])  # fmt: skip
    logger.info("wrote %d result folder(s) in %s", len(folders), out_path)
    return folders


def _run(source: FrameSource, reader: Any, settings: SeparateSettings, out_path: Path,
         clock: Stopwatch) -> list[Path]:  # fmt: skip
    """Drain the live blocks of ``source`` into the sinks; the result folders written."""
    fps = source.fps
    start, end = _learn_span(settings, fps)
    state: dict[str, Any] = {}
    plan = plan_run(source, settings)

    def solved() -> tuple[list, Any, dict[str, Any]]:
        online: OnlineBackground | None = state.get("online")
        learned = online.learned if online is not None else None
        info = {"live": True, "frames": f"{start}:{end}", "updates": 0, "threshold": None}
        if learned is None:
            return [], plan, info
        info.update(updates=online.updates, threshold=learned.threshold)
        return learned.reports, learned.plan, info

    count = None
    if settings.frames is not None or settings.duration is not None:
        count = settings.frames or parse_time(settings.duration, "duration").to_frames(fps)
    batches = _limited(reader.batches(MOST_FRAMES, settings.scale), count)
    blocks = iter_live_blocks(batches, settings, fps=fps, name=source.name,
                              learn=(start, end), clock=clock, state=state)  # fmt: skip

    def make(path: Path) -> ResultSink:
        return ResultSink(path, source, settings, clock, solved)

    results: Sink
    if settings.segment is not None:
        span = parse_time(settings.segment, "segment").to_frames(fps)
        results = SegmentSink(out_path, span, make, time.time(), fps)
    else:
        results = make(out_path)
    sinks: list[Sink] = [results]
    if settings.masks_to is not None:
        sinks.append(MaskStreamSink(settings.masks_to))
    if settings.events_to is not None:
        sinks.append(_event_sink(settings, source, fps))
    try:
        drain(blocks, sinks)
    except BpvideoError as exc:
        kept = results.closed if isinstance(results, SegmentSink) else []
        if not kept:
            raise
        raise _saying_kept(exc, kept, out_path) from exc
    if isinstance(results, SegmentSink):
        return results.closed
    return [results.path] if results.report is not None else []


class LiveSeparator(BackgroundModel):
    """A background model that keeps learning: ``apply(frame)`` masks a frame and lets the
    model follow the scene (light that drifts, a parked car absorbed after ``absorb``
    seconds), as :func:`separate_live` does for streams.

    ``fit(frames)`` learns the first model (as :class:`~bpvideo.BackgroundModel`);
    without it, the first :data:`~bpvideo.pipeline.live.LEARN_SECONDS` of frames given to
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
        self.online = OnlineBackground(self.learned, self.settings, self.fps, self.settings.absorb)
        return self

    def apply(self, frames: Any, /) -> np.ndarray | None:
        """Masks of new frames (one (H, W[, 3]) frame, or (T, H, W[, 3])); the model takes
        them in. None while the first model is still being learned."""
        from bpvideo.io.arrays import as_bgr

        single = isinstance(frames, np.ndarray) and (
            frames.ndim == 2 or (frames.ndim == 3 and frames.shape[2] in (1, 3))
        )
        batch = [as_bgr(f, i) for i, f in enumerate([frames] if single else frames)]
        self._check_sizes(batch)
        if self.online is None:
            self._pending += batch
            if len(self._pending) < max(self.settings.rank + 2, round(LEARN_SECONDS * self.fps)):
                return None
            batch, self._pending = self._pending, []
            with threadpool_limits(limits=1, user_api="blas"):
                self._learned = learn_frames(batch, self.settings, self.fps, "frames",
                                             samples=True)  # fmt: skip
            self.online = OnlineBackground(self._learned, self.settings, self.fps,
                                           self.settings.absorb)  # fmt: skip
            single = False
        masks = []
        with threadpool_limits(limits=1, user_api="blas"):
            for lo in range(0, len(batch), MOST_FRAMES):  # the model follows along
                part = list(enumerate(batch[lo : lo + MOST_FRAMES], self._index))
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


def _saying_kept(error: BpvideoError, kept: list[Path], root: Path) -> BpvideoError:
    """``error`` of a run that had closed segments: its message says which were kept (a
    part that said "nothing was kept" spoke for the segment being written only)."""
    said = (f"kept: the {len(kept)} segment(s) closed before it, complete, in {root} "
            f"({kept[0].name} to {kept[-1].name}); the one being written was removed")  # fmt: skip
    if "nothing was kept" in error.template:
        return retold(error, error.template.replace("nothing was kept", literal(said)))
    return retold(error, f"{error.template}; {literal(said)}")


def _frame_rate(fps: Any) -> float:
    """``fps`` of :class:`LiveSeparator`, checked as ``separate``'s ``fps`` option is (a
    number in :data:`~bpvideo.limits.FPS_RANGE`): an :class:`InputError` naming it."""
    spec = next(spec for name, _, spec in option_specs() if name == "fps")
    if fps is None:
        raise InputError("{fps=} must be a number of frames per second", option=("fps", fps))
    return float(check_value("fps", spec, fps))


def _event_sink(settings: SeparateSettings, source: FrameSource, fps: float) -> LiveEventSink:
    """``--events-to``: the events of the stream, by the rules and regions of the event
    outputs (docs/events.md), written as each ends."""
    detector = OnlineEvents(fps, **event_options(settings))
    region = region_mask(settings.roi, settings.exclude, (source.height, source.width),
                         settings.scale)  # fmt: skip

    def times(frames: list[int], numbers: list[int]) -> np.ndarray:
        return block_times(source, frames, numbers, fps)

    return LiveEventSink(settings.events_to, detector, source.mask_number, times, region)
