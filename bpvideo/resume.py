"""Runs that survive a stop: a file's run keeps its finished windows, ``--resume`` goes
on from them (docs/usage.md, "Stopping and resuming").

A file solved window by window saves each finished window as it goes
(:class:`~bpvideo.sinks.checkpoint.Checkpoint`, in ``OUTDIR/.bpvideo-resume``). Stopped by
a signal, the run writes the saved windows as a result whose ``summary.json`` says
``incomplete`` (:func:`keep_incomplete`); killed (SIGKILL, a crash), it leaves the
checkpoint alone. ``--resume`` checks that the input and settings are the stopped run's
(:func:`check_resume`), replays the saved blocks through the sinks and lets the run loop
go on from the saved state: the result is the uninterrupted run's, mask for mask.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from bpvideo.errors import BpvideoError, InputError, literal
from bpvideo.pipeline.plan import Job
from bpvideo.pipeline.run import carried_state
from bpvideo.records import Block
from bpvideo.settings import SeparateSettings
from bpvideo.sinks import drain
from bpvideo.sinks.checkpoint import CHECKPOINT, Checkpoint, Saved, identity, read_checkpoint
from bpvideo.sinks.checkpoint import replay as replay_saved
from bpvideo.sinks.outputs import KEPT
from bpvideo.sinks.result import ResultFolder
from bpvideo.sinks.table import SUMMARY
from bpvideo.sources.files import FrameSource

__all__ = [
    "check_resume",
    "keep_incomplete",
    "missing_folders",
    "remove_created",
    "resumable",
    "start_checkpoint",
    "stopped",
    "with_checkpoint",
]

logger = logging.getLogger("bpvideo")

#: What the last line of a stopped run tells to do.
RESUME_HINT = "run the same command with --resume to finish"


def resumable(input: str, settings: SeparateSettings, live: bool) -> bool:
    """Whether a run can be resumed: a file or folder solved window by window (not
    stdin, a live stream, or a background learned elsewhere)."""
    return not (live or input == "-" or settings.learn is not None
                or settings.learn_from is not None)  # fmt: skip


def _incomplete_summary(out: Path) -> dict[str, Any] | None:
    """``summary.json``'s ``incomplete`` entry ({} for a complete result; None: none)."""
    try:
        summary = json.loads((out / SUMMARY).read_text())
    except (OSError, ValueError):
        return None
    return summary.get("incomplete") or {} if isinstance(summary, dict) else None


def check_resume(input: str, out_path: str, settings: SeparateSettings, live: bool) -> None:
    """Refuse ``--resume`` with nothing to resume, another input or other settings; and a
    run into an OUTDIR that holds a stopped run, unless ``--resume`` or ``--overwrite``.

    Raises
    ------
    InputError
        One line naming the fix (exit 2).
    """
    out = Path(out_path)
    where = literal(out)
    if settings.overwrite and not settings.resume:  # replaced, damaged or not
        return
    saved = read_checkpoint(out) if out.is_dir() else None
    summary = _incomplete_summary(out)
    if not settings.resume:
        if saved is not None and summary != {}:
            kept = "an incomplete result" if summary else "a stopped run"
            raise InputError(
                f"{where}: holds {kept} ({saved.span()} kept): pass {{resume}} to finish "
                "it, or {overwrite} to start again",
                option=("resume", False),
            )
        return
    if not resumable(input, settings, live):
        raise InputError(
            "{resume} goes on with a stopped run of a file or folder of frames, not stdin, a "
            "live stream or a learned background: run without {resume}",
            option=("resume", True),
        )
    if summary == {}:
        raise InputError(f"{where}: holds a complete result, nothing to resume: run without "
                         "{resume} (with {overwrite} to run again)",
                         option=("resume", True))  # fmt: skip
    if saved is None:
        raise InputError(f"{where}: nothing to resume (no stopped run was kept there): run "
                         "without {resume}", option=("resume", True))  # fmt: skip
    _check_same(saved, input, settings, where)


def _check_same(saved: Saved, input: str, settings: SeparateSettings, where: str) -> None:
    """Refuse a resume whose input or settings are not the stopped run's, naming them."""
    now = identity(input, settings.to_dict())
    if now["input"] != saved.run["input"]:
        raise InputError(
            f"{where}: its stopped run was of {literal(saved.run['input'])}, not "
            f"{literal(now['input'])}: give that input, or run without {{resume}} and with "
            "{overwrite} to start again",
            option=("resume", True),
        )
    if (now["size"], now["mtime_ns"]) != (saved.run["size"], saved.run["mtime_ns"]):
        raise InputError(
            f"{where}: {literal(now['input'])} changed since the stopped run: run without "
            "{resume} and with {overwrite} to start again",
            option=("resume", True),
        )
    before = saved.run["settings"]
    changed = sorted(k for k in {*before, *now["settings"]}
                     if before.get(k) != now["settings"].get(k))  # fmt: skip
    if changed:
        shown = ", ".join(f"{k}={before.get(k)!r} then, {now['settings'].get(k)!r} now"
                          for k in changed[:3])  # fmt: skip
        raise InputError(
            f"{where}: the stopped run had other settings ({literal(shown)}): run the same "
            "command as before, or without {resume} and with {overwrite} to start again",
            option=("resume", True),
        )


def with_checkpoint(
    job: Job, input: str, out_path: str, live: bool, blocks: Iterable[Block],
    reopen: Callable[[], FrameSource],
) -> tuple[Checkpoint | None, Iterable[Block]]:  # fmt: skip
    """The checkpoint of a file solved window by window (None for other runs), and the
    job's blocks (with ``--resume``, those of the windows kept first)."""
    if not resumable(input, job.settings, live) or job.plan.window is None:
        return None, blocks
    checkpoint, replayed = start_checkpoint(job, input, out_path, reopen)
    return checkpoint, blocks if replayed is None else itertools.chain(replayed, blocks)


def start_checkpoint(
    job: Job, input: str, out_path: str, reopen: Callable[[], FrameSource]
) -> tuple[Checkpoint, Iterator[Block] | None]:
    """The job's checkpoint sink, and with ``--resume`` the blocks of the saved windows
    (replayed before the run loop's; ``job.resume`` set so that it goes on after them)."""
    settings = job.settings
    saved = read_checkpoint(Path(out_path)) if settings.resume else None
    ident = identity(input, settings.to_dict())
    total = job.source.frame_count
    checkpoint = Checkpoint(Path(out_path) / CHECKPOINT, lambda: carried_state(job), ident,
                            total, saved)  # fmt: skip
    if saved is None:
        return checkpoint, None
    job.resume = saved.resume_state()
    logger.info("resuming: %s kept by the stopped run", saved.span())
    return checkpoint, _replayed(saved, reopen, job.source.times)


def _replayed(
    saved: Saved, reopen: Callable[[], FrameSource], times: dict[int, float]
) -> Iterator[Block]:
    """The saved windows' blocks, their frames read again from a second opening of the
    input (closed once they are all read). Their times go into ``times`` (the job's
    source's, which reads these frames only later): the sinks ask it."""
    source = reopen()
    try:
        for block in replay_saved(saved, iter(source.frames)):
            times.update((n, source.times[n]) for n in block.numbers if n in source.times)
            yield block
    finally:
        source.close()


def keep_incomplete(
    job: Job, out_path: str, checkpoint: Checkpoint, reopen: Callable[[], FrameSource]
) -> bool:
    """After a stop: write the saved windows as a result marked incomplete (summary.json's
    ``incomplete``), and say what was kept (:data:`~bpvideo.sinks.outputs.KEPT`). Another
    signal meanwhile leaves the checkpoint alone (``--resume`` still finishes the run).
    Whether anything was kept."""
    saved = read_checkpoint(Path(out_path))
    if saved is None:  # no window was finished
        checkpoint.remove()
        return False
    out = Path(out_path)
    KEPT.append(f"{saved.span()} kept in {out / CHECKPOINT} (no result written yet)")
    # raw masks to a pipe were streamed already; ground truth scores every frame
    settings = dataclasses.replace(job.settings, masks_to=None, groundtruth=None)
    try:
        _write_kept(saved, out, settings, job, reopen)
    except BpvideoError as failed:  # a full disk: the stop goes on, the checkpoint stays
        logger.warning("the finished windows stay in the checkpoint only: %s", failed)
        return True
    KEPT[-1] = f"{saved.span()} kept in {out} (incomplete)"
    logger.info("wrote %s: %s of the input, marked incomplete", out, saved.span())
    return True


def _write_kept(
    saved: Saved, out: Path, settings: SeparateSettings, job: Job,
    reopen: Callable[[], FrameSource],
) -> None:  # fmt: skip
    """The saved windows as a result folder marked incomplete."""
    source = reopen()
    try:
        folder = ResultFolder(out, source, settings, job.plan, job.clock)
        folder.outdir.overwrite = True  # an incomplete result of an earlier stop
        folder.incomplete = {
            "frames": saved.frames,
            "of": saved.run.get("total"),
            "last_frame": saved.windows[-1]["numbers"][-1],
            "resume": RESUME_HINT,
        }
        drain(replay_saved(saved, iter(source.frames)), [folder])
    finally:
        source.close()


def missing_folders(path: Path) -> list[Path]:
    """The folders on the way to ``path`` that do not exist yet, deepest first."""
    missing = []
    while not path.exists() and path != path.parent:
        missing.append(path)
        path = path.parent
    return missing


def stopped(input: str, output: str, settings: dict[str, Any]) -> int:
    """The frames whose outputs the checkpoint in ``output`` keeps when it is one of a
    stopped run of ``input`` with these settings (:meth:`SeparateSettings.to_dict`):
    ``--resume`` goes on from them (``batch``). 0 when there is none."""
    try:
        saved = read_checkpoint(Path(output))
        now = identity(input, settings)
    except (OSError, BpvideoError):
        return 0
    if saved is None or any(saved.run.get(k) != v for k, v in now.items()):
        return 0
    return saved.frames


def remove_created(created: list[Path]) -> None:
    """Remove the folders a run created (deepest first) when they are empty."""
    for folder in created:
        with contextlib.suppress(OSError):
            os.rmdir(folder)
