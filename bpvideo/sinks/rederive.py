"""Events of masks in memory (:func:`events`) and of an output directory written before
(:func:`rederive`: ``bpvideo events OUTDIR``), without solving again."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from bpvideo.errors import BpvideoError, InputError
from bpvideo.events import Event, EventRecorder, FrameTable, check_fps, check_times
from bpvideo.failures import events_failure
from bpvideo.settings import SeparateSettings, option_name
from bpvideo.sinks.event_stream import EventStream, event_options, events_csv, frame_times
from bpvideo.sinks.events import report_facts
from bpvideo.sinks.guard import Access, check_access, region_reads
from bpvideo.sinks.objects import ObjectsSink, objects_of_masks, track_masks
from bpvideo.sinks.outputs import (
    STAGING_PREFIX,
    SUMMARY,
    atomic_write_bytes,
    remove_stale_staging,
    signals_deferred,
    write_json,
)
from bpvideo.sinks.readback import (
    backdrop,
    frame_seconds,
    mask_files,
    read_mask,
    read_summary,
    run_options,
    summary_clock,
)
from bpvideo.sinks.report import Links, read_objects, report_html, wall_clock
from bpvideo.sinks.table import OUTPUTS, tracks_objects
from bpvideo.sources.regions import region_mask

__all__ = ["EVENT_SETTINGS", "events", "find_events", "rederive"]

logger = logging.getLogger("bpvideo")

#: The options that :func:`events` takes (masks in memory: no objects are tracked).
MASK_EVENT_SETTINGS = ("min_event", "event_gap", "event_pad", "event_threshold", "roi", "exclude")
#: The options that :func:`rederive` may change: those, and what decides the objects.
EVENT_SETTINGS = (*MASK_EVENT_SETTINGS, "events", "count_line")
#: Masks read at a time.
BLOCK = 64

#: The files ``bpvideo events`` writes again, by role (:mod:`bpvideo.sinks.table`).
EVENT_FILES = {o.role: o.name for o in OUTPUTS if o.sink in ("EventsSink", "ReportSink")}
#: The files of the objects, written again when they are tracked.
OBJECT_FILES = {o.role: o.name for o in OUTPUTS if o.sink == "ObjectsSink"}
CLIP_NAME = next(o.name for o in OUTPUTS if o.role == "clips")


def find_events(
    masks: np.ndarray,
    settings: SeparateSettings,
    *,
    fps: float,
    numbers: Any = None,
    times: Any = None,
) -> tuple[FrameTable, list[Event]]:
    """The frame table and events of (T, H, W) bool masks under ``settings``.

    ``numbers`` (default 1, 2, ...) and ``times`` in seconds (default ``(number - 1) /
    fps``) label the frames.
    """
    try:
        masks = np.asarray(list(masks) if isinstance(masks, Iterator) else masks, dtype=bool)
    except ValueError:  # frames of several shapes: numpy's message names no argument
        raise InputError("masks are of several shapes: give (T, H, W) booleans") from None
    if masks.ndim != 3:
        raise InputError(f"masks of shape {masks.shape}: give (T, H, W) booleans")
    n = len(masks)
    fps = check_fps(fps)
    numbers = np.arange(1, n + 1) if numbers is None else np.asarray(numbers)
    if len(numbers) != n:
        raise InputError(f"{n} masks but {len(numbers)} numbers: give one number per mask")
    times = frame_times(numbers, fps) if times is None else check_times(times, n)
    region = region_mask(settings.roi, settings.exclude, masks.shape[1:], settings.scale)
    recorder = EventRecorder(fps, region, **event_options(settings))
    for lo in range(0, n, BLOCK):
        recorder.add(numbers[lo : lo + BLOCK], times[lo : lo + BLOCK], masks[lo : lo + BLOCK])
    return recorder.finish()


def events(masks: Any, /, *, fps: float = 25.0, times: Any = None, **options: Any) -> list[Event]:
    """The events of foreground masks: stretches of frames with foreground.

    Parameters
    ----------
    masks : (T, H, W) bool array_like
        Foreground masks (:attr:`bpvideo.Separation.masks`, say).
    fps : float, default 25
        Frames per second (lengths given as times are turned into frames with it).
    times : (T,) float array_like, optional
        Seconds of each frame (default: ``index / fps``).
    **options
        ``event_threshold``, ``min_event``, ``event_gap``, ``event_pad``, ``roi``,
        ``exclude`` as ``bpvideo separate`` takes them (frames, or times such as ``"2s"``).

    Returns
    -------
    list of Event
        ``event``, ``start_frame``/``end_frame`` (1-based, inclusive), ``start_time`` /
        ``end_time`` (``HH:MM:SS.mmm``), ``duration``, ``peak_area``, ``x, y, w, h``.

    Examples
    --------
    >>> import numpy as np, bpvideo
    >>> masks = np.zeros((100, 24, 32), bool)
    >>> masks[30:60, 5:10, 5:10] = True
    >>> [(e.start_frame, e.end_frame, e.start_time) for e in bpvideo.events(masks, fps=25,
    ...  event_pad=0)]
    [(31, 60, '00:00:01.200')]
    """
    unknown = sorted(k for k in options if option_name(k) not in MASK_EVENT_SETTINGS)
    if unknown:
        raise InputError(f"unknown event option(s): {', '.join(unknown)}: the options are "
                         f"{', '.join(MASK_EVENT_SETTINGS)}")  # fmt: skip
    settings = SeparateSettings.from_mapping(options)
    return find_events(masks, settings, fps=fps, times=times)[1]


def _read_all(outdir: Path, numbers: list[int], times: np.ndarray, stream: EventStream,
              still: np.ndarray, objects: ObjectsSink | None,
              region: np.ndarray | None) -> None:  # fmt: skip
    """Feed the masks of ``outdir``, cut to ``region`` as a run with that region cuts
    them, to the events (and the objects, when tracked), :data:`BLOCK` at a time (read by
    two threads)."""
    files = mask_files(outdir, numbers)
    shape = still.shape[:2]
    with ThreadPoolExecutor(2) as pool:
        for lo in range(0, len(files), BLOCK):
            block = pool.map(lambda f: read_mask(f, shape), files[lo : lo + BLOCK])
            masks = np.stack(list(block))
            if region is not None:
                masks &= region
            frames = np.broadcast_to(still, (len(masks), *still.shape))
            stream.add(numbers[lo : lo + BLOCK], masks, frames, times[lo : lo + BLOCK])
            if objects is not None:
                track_masks(objects, numbers[lo : lo + BLOCK], masks)


def _staging(outdir: Path) -> Path:
    """A staging folder for the new set, in OUTDIR (one a killed run left is removed by
    the next run, as a result's: :func:`~bpvideo.sinks.outputs.remove_stale_staging`)."""
    remove_stale_staging(outdir)
    return Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-events-", dir=outdir))


def _recut_clips(
    outdir: Path, staging: Path, summary: dict[str, Any], settings: SeparateSettings,
    found: list[Event], outputs: dict[str, str],
) -> list[str]:  # fmt: skip
    """Stage the clips of the new events, cut again from the input, when the run had
    clips; when the input cannot be read again, the old clips are dropped (from
    ``outputs`` too): the names of OUTDIR's entries to remove."""
    if "clips" not in outputs and not (outdir / "clips").exists():
        return []
    if _recut(summary, settings, found, staging / "clips"):
        outputs["clips"] = CLIP_NAME
        return []
    outputs.pop("clips", None)
    logger.warning("%s: the clips of the earlier events were removed (the input %s cannot be "
                   "read again): run bpvideo separate --clips for clips", outdir,
                   summary.get("input"))  # fmt: skip
    return ["clips"]


def _recut(summary: dict[str, Any], settings: SeparateSettings, found: list[Event],
           folder: Path) -> bool:  # fmt: skip
    """Cut the clips of ``found`` into ``folder`` from the run's input, as the run did;
    whether the input could be read again."""
    from types import SimpleNamespace

    from bpvideo.sinks.events import ClipsSink
    from bpvideo.sources.files import open_source

    path = summary.get("input")
    if not isinstance(path, str) or path == "-" or not os.path.exists(path):
        return False
    try:
        source = open_source(path, **settings.selection(), scale=settings.scale,
                             fps=settings.fps, allow_partial=True)  # fmt: skip
    except BpvideoError:
        return False
    try:
        if source.frame_count is None:
            return False
        events = SimpleNamespace(source=source, events=found, fps=source.fps * settings.step)
        stage = SimpleNamespace(stage=lambda name: folder.parent / name)
        sink = ClipsSink(stage, events, settings)  # type: ignore[arg-type]
        sink.open()
        sink.close()
    finally:
        source.close()
    return True


def _swap(outdir: Path, staging: Path, dropped: list[str]) -> None:
    """Put the staged set in place of the old one, ``summary.json`` last; the old entries
    and those dropped move into the staging folder (removed with it). Signals wait."""
    names = sorted(os.listdir(staging), key=lambda n: n == SUMMARY)
    old = staging / ".old"
    with signals_deferred():
        old.mkdir()
        for name in [*names, *dropped]:
            if name != SUMMARY and os.path.lexists(outdir / name):
                os.replace(outdir / name, old / name)
        for name in names:
            os.replace(staging / name, outdir / name)


def _page(
    outdir: Path, staging: Path, summary: dict[str, Any], settings: SeparateSettings,
    stream: EventStream, found: list[Event], tracked: bool, still: bytes | None,
) -> str:  # fmt: skip
    """The new ``report.html``: it links the new clips (staged) and the overlay (the
    masks': it stays), and shows the objects (staged) when they are tracked, on ``still``
    (background.png, when it is of the masks' size)."""
    links = Links(Links.of(staging, found).clips, Links.of(outdir, []).overlay)
    shape = (int(summary["height"]), int(summary["width"]))
    return report_html(
        title=str(summary.get("input", outdir)),
        series=stream.series.arrays(),
        events=found,
        thumbs=stream.thumbs.of(found),
        background_png=still,
        settings=settings.to_dict(),
        facts=report_facts(
            str(summary.get("input")), stream.frames, shape[1], shape[0], float(summary["fps"])
        ),
        objects=read_objects(staging / "objects.csv") if tracked else None,
        object_count=summary.get("objects") if tracked else None,
        counts=summary.get("counts"),
        links=links,
        start=wall_clock(summary.get("start_time")),
    )


def _with_objects(
    summary: dict[str, Any], outputs: dict[str, str], objects: ObjectsSink | None,
    settings: SeparateSettings, found: list[Event],
) -> list[Event]:  # fmt: skip
    """Close the objects when they are tracked: their number and counts go to
    ``summary``, their files to ``outputs`` (those of the run are dropped otherwise).
    The events: the objects' with ``events="objects"``, else ``found``."""
    for key in ("objects", "counts"):
        summary.pop(key, None)
    if objects is None:
        return found
    objects.close()
    summary.update(objects.summary())
    outputs.update(OBJECT_FILES)
    return objects.events() if settings.events == "objects" else found


def _update(summary: dict[str, Any], settings: SeparateSettings, found: list[Event],
            outputs: dict[str, str]) -> None:  # fmt: skip
    """summary.json's settings (the event options now), events and outputs."""
    changed = {k: v for k, v in settings.to_dict().items() if k in EVENT_SETTINGS}
    summary["settings"] = {**summary.get("settings", {}), **changed}
    summary["events"] = [e.row() for e in found]
    summary["outputs"] = outputs


def _checked_settings(
    outdir: Path, summary: dict[str, Any], options: dict[str, Any], writes: Sequence[Access]
) -> SeparateSettings:
    """The settings of the new events (the run's, ``options`` over them), once the paths
    read and written (the set, and the caller's ``writes``) have passed the guard."""
    given = {option_name(k): v for k, v in options.items() if v is not None}
    unknown = sorted(k for k, v in options.items() if option_name(k) not in EVENT_SETTINGS)
    if unknown:
        raise InputError(f"unknown event option(s): {', '.join(unknown)}")
    settings = SeparateSettings.from_mapping({**run_options(summary), **given})
    if summary.get("incomplete"):
        logger.warning("%s: an incomplete result (%s frames kept): the events are of those; "
                       "%s", outdir, summary["incomplete"].get("frames"),
                       summary["incomplete"].get("resume"))  # fmt: skip
    names = (*EVENT_FILES.values(), *OBJECT_FILES.values(), "clips", SUMMARY)
    outputs = [Access(outdir / n, "the output", "OUTDIR") for n in names]
    reads = [Access(outdir / "masks", "the masks"), *region_reads(settings)]
    if writes:  # the masks one by one: a file written (the log) may not be one of them
        numbers = [int(n) for n in summary["mask_numbers"]]
        reads += [Access(path, "the mask") for path in mask_files(outdir, numbers)]
    check_access(reads, [*outputs, *writes])
    return settings


def rederive(
    outdir: str | Path,
    *,
    writes: Sequence[Access] = (),
    checked: Callable[[], None] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Find the events of an output directory again from its masks; replace what the
    events make as one set: ``events.csv``, ``frames.csv``, ``report.html``, the clips
    (cut again from the input; removed when it cannot be read), summary.json's ``events``
    and, when the run tracked objects or the options ask for them (``events="objects"``, a
    ``count_line``), ``objects.csv``, ``tracks.csv`` and summary.json's ``objects`` and
    ``counts`` (tracked again on the masks: the run's objects when its settings are
    kept). The set is staged, then swapped in place of the old one: a failure or a stop
    midway leaves the old set whole.

    Parameters
    ----------
    outdir : str or Path
        An output directory of ``bpvideo separate``.
    writes : sequence of Access
        Other paths the caller writes (``--logfile``): checked by the guard with the
        outputs, so that none is a mask, the summary or an output of the set.
    checked : callable, optional
        Called once the paths are checked (the CLI opens its log file then).
    **options
        Event options over the run's own (:data:`EVENT_SETTINGS`); a region can only
        narrow the run's (its masks hold no foreground outside the run's region).

    Returns
    -------
    dict
        The summary, as rewritten.
    """
    if not str(outdir).strip():  # Path("") is the current folder: not what was typed
        raise InputError("OUTDIR is an empty name: give the output directory of a run")
    outdir = Path(outdir)
    summary = read_summary(outdir)
    numbers = [int(n) for n in summary["mask_numbers"]]
    settings = _checked_settings(outdir, summary, options, writes)
    if checked is not None:
        checked()
    fps = float(summary["fps"]) * settings.step
    shape = (int(summary["height"]), int(summary["width"]))
    times = frame_seconds(outdir, numbers, fps)
    region = region_mask(settings.roi, settings.exclude, shape, settings.scale)
    still, still_png = backdrop(outdir, shape)
    try:
        staging = _staging(outdir)
    except OSError as exc:  # a read-only OUTDIR, one not ours
        raise events_failure(outdir, exc) from exc
    clock = summary_clock(summary)
    tracked = tracks_objects(settings) or (outdir / OBJECT_FILES["objects"]).exists()
    stream = objects = None
    try:
        stream = EventStream(staging / EVENT_FILES["frames"], fps, region, settings)
        if tracked:
            objects = objects_of_masks(staging, settings, shape, float(summary["fps"]), clock,
                                       dict(zip(numbers, times.tolist(), strict=True)))  # fmt: skip
        _read_all(outdir, numbers, times, stream, still, objects, region)
        found = [e.timed(clock) for e in stream.finish()]
        outputs = {**(summary.get("outputs") or {}), **EVENT_FILES}
        found = _with_objects(summary, outputs, objects, settings, found)
        dropped = _recut_clips(outdir, staging, summary, settings, found, outputs)
        page = _page(outdir, staging, summary, settings, stream, found, tracked, still_png)
        atomic_write_bytes(staging / EVENT_FILES["events"], events_csv(found))
        atomic_write_bytes(staging / EVENT_FILES["report"], page.encode())
        _update(summary, settings, found, outputs)
        write_json(staging / SUMMARY, summary)
        _swap(outdir, staging, dropped)
    except OSError as exc:  # a full disk part-way: the earlier set stays whole
        raise events_failure(outdir, exc, [(staging, outdir)]) from exc
    finally:
        for sink in (stream, objects):
            if sink is not None:
                sink.abort()
        shutil.rmtree(staging, ignore_errors=True)
    logger.info("%s: %d event(s)%s in %d frame(s)", outdir, len(found),
                f", {summary['objects']} object(s)" if tracked else "", stream.frames)  # fmt: skip
    return summary
