"""The report of a batch: one line per finished job on stderr, a table at the end, and
the JSON report (``night.report.json`` beside ``night.yaml`` unless ``--report`` or
``report:`` says otherwise) and the events of every job (``night.events.csv`` beside it),
rewritten atomically whenever a job starts or finishes.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bpvideo.batch.config import BatchConfig, Job
from bpvideo.errors import InputError, WorkError
from bpvideo.sinks.event_stream import batch_events_csv
from bpvideo.sinks.outputs import atomic_write_bytes, write_json
from bpvideo.sources.headers import read_text

__all__ = ["BatchReport", "Progress", "events_path", "format_table", "read_report"]


@dataclass
class Progress:
    """One line per finished job on stderr; a tqdm bar when stderr is a terminal."""

    total: int
    enabled: bool
    done: int = 0
    bar: Any = field(default=None)

    def __post_init__(self) -> None:
        if self.enabled and self.total and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=self.total, desc="batch", unit="job", file=sys.stderr)

    def finished(self, job: Job, result: dict[str, Any]) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)
        if result["status"] == "ok":
            if not self.enabled:
                return
            what = f"ok {result['frames']} frames, {result['seconds']:.1f}s -> {job.output}"
            if result.get("converged") is False:
                what += " (not converged: raise max_iter)"
        else:
            what = f"FAILED: {result['error']}"
        text = f"bpvideo: [{self.done}/{self.total}] {job.input}: {what}"
        if self.bar is not None:
            self.bar.write(text, file=sys.stderr)
        else:
            print(text, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _entry(job: Job) -> dict[str, Any]:
    return {
        "job": job.index,
        "config_entry": job.entry,
        "config_line": job.line,
        "input": job.input,
        "output": job.output,
        "status": "pending",
        "seconds": None,
        "frames": None,
        "error": None,
    }


def format_table(entries: list[dict[str, Any]]) -> str:
    """The summary table of a batch (one row per job, then the totals)."""
    rows = [("#", "status", "frames", "seconds", "input", "output / error")]
    for e in entries:
        seconds = "" if e["seconds"] is None else f"{e['seconds']:.1f}"
        frames = "" if e["frames"] is None else str(e["frames"])
        rows.append(
            (
                str(e["job"]),
                e["status"],
                frames,
                seconds,
                e["input"],
                e["error"] if e["error"] else e["output"],
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r[:5], widths, strict=True)) + "  " + r[5]
        for r in rows
    ]
    counts: dict[str, int] = {}
    for e in entries:
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    lines.append(", ".join(f"{n} {status}" for status, n in sorted(counts.items())))
    return "\n".join(line.rstrip() for line in lines)


class BatchReport:
    """The batch report: one entry per job, rewritten atomically whenever a job starts or
    finishes, so that it is true at every moment (a batch killed at any instant leaves
    a report of what finished).

    Job statuses: ``pending`` (not started), ``running``, ``ok``, ``failed``,
    ``skipped`` (complete already, ``--resume``), ``interrupted`` (stopped by a signal
    while it ran: nothing of it was kept on local workers).
    """

    def __init__(self, config: BatchConfig, path: Path) -> None:
        self.path = path
        self.entries = [_entry(job) for job in config.jobs]
        self.started = time.perf_counter()
        self._saved = False
        self._fresh = not os.path.lexists(path)  # no earlier report: discard() removes it
        self.state: dict[str, Any] = {
            "config": str(Path(config.path).resolve()),
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "pid": os.getpid(),
            "executor": None,
            "scheduler": None,
            "workers": None,
            "worker_processes": [],
            "seconds": None,
            "counts": {},
            "jobs": self.entries,
        }

    def discard(self) -> None:
        """Remove the report and its events table when this batch wrote them first (a
        batch refused before any job ran leaves nothing; an earlier report, replaced by
        this one, lists the same jobs)."""
        if self._fresh:
            for path in (self.path, events_path(self.path)):
                with contextlib.suppress(OSError):
                    path.unlink()

    def save(self) -> None:
        """Write the report as it stands (atomically).

        Raises
        ------
        InputError
            The first write fails (before any job ran): another ``--report`` is needed.
        WorkError
            A later write fails (the disk filled up, say).
        """
        counts: dict[str, int] = {}
        for e in self.entries:
            counts[e["status"]] = counts.get(e["status"], 0) + 1
        self.state["counts"] = counts
        self.state["seconds"] = round(time.perf_counter() - self.started, 3)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_json(self.path, self.state)
            atomic_write_bytes(events_path(self.path), batch_events_csv(self.entries))
        except OSError as exc:
            why = f"cannot write the report ({exc.strerror or exc})"
            if not self._saved:
                raise InputError(f"{self.path}: {why}: give another --report PATH") from None
            raise WorkError(f"{self.path}: {why}: free some space or fix the folder") from None
        self._saved = True

    def kept(self, job: Job, earlier: dict[str, Any] | None) -> None:
        """A job complete already (``--resume``): its earlier entry when the earlier report
        has one that says ``ok`` (status, seconds, frames... and ``"earlier_run": true``),
        else ``skipped``."""
        entry = self.entries[job.index]
        if earlier is not None and earlier.get("status") == "ok":
            for key in KEPT_KEYS:
                if key in earlier:
                    entry[key] = earlier[key]
            entry["earlier_run"] = True
        else:
            entry["status"] = "skipped"

    def running(self, jobs: list[Job]) -> None:
        """Jobs a worker took; save."""
        for job in jobs:
            self.entries[job.index]["status"] = "running"
        self.save()

    def interrupted(self, signum: int, kept: Callable[[int], int]) -> None:
        """The batch stopped on a signal: jobs that ran are ``interrupted``, with the
        frames their finished windows keep for ``--resume`` (``kept(job index)``); save."""
        for index, entry in enumerate(self.entries):
            if entry["status"] == "running":
                entry["status"] = "interrupted"
                entry["error"] = f"stopped by signal {signum} while it ran"
                entry["kept_frames"] = kept(index)
                if entry["kept_frames"]:
                    entry["error"] += (f"; the outputs of its first {entry['kept_frames']} "
                                       "frames are kept: --resume goes on from them")  # fmt: skip
        self.state["interrupted_by"] = signum
        self.save()

    def finished(self, job: Job, result: dict[str, Any], progress: Progress) -> None:
        """Record a finished job, say so, save."""
        entry = self.entries[job.index]
        for key in ("status", "seconds", "frames", "error"):
            entry[key] = result.get(key)
        if result.get("events") is not None:
            entry["events"] = result["events"]
        entry["cpu_seconds"] = result.get("cpu_seconds")
        if "converged" in result:
            entry["converged"] = result["converged"]
            entry["iterations"] = result["iterations"]
        progress.finished(job, result)
        self.save()


#: What an ``ok`` entry of an earlier report keeps on ``--resume``.
KEPT_KEYS = ("status", "seconds", "cpu_seconds", "frames", "converged", "iterations", "error",
             "events")  # fmt: skip


def events_path(report: Path) -> Path:
    """The batch's ``events.csv`` beside its report: ``night.events.csv`` beside
    ``night.report.json`` (one row per event of every job, with the job and its input)."""
    name = report.name
    for suffix in (".report.json", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return report.with_name(f"{name}.events.csv")


def read_report(path: Path) -> dict[str, Any]:
    """An earlier report (for ``--resume``), or ``{}`` when there is none or it is not one.

    Returns
    -------
    dict
        The report, with ``"by_job"``: its entries by ``(input, output)``.
    """
    try:
        state = json.loads(read_text(path, "the report"))
        by_job = {(e["input"], e["output"]): e for e in state["jobs"] if isinstance(e, dict)}
    except (OSError, InputError, ValueError, KeyError, TypeError, RecursionError):
        return {}
    if not isinstance(state, dict):
        return {}
    return {**state, "by_job": by_job}
