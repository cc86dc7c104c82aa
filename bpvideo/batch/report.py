"""The report of a batch: one line per finished job on stderr, a table at the end, and
``batch_report.json`` (rewritten atomically after every finished job, so an interrupted
batch leaves a report saying which jobs finished).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bpvideo.batch.config import BatchConfig, Job
from bpvideo.errors import InputError
from bpvideo.io.outputs import write_json

__all__ = ["BatchReport", "Progress", "format_table"]


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
    """``batch_report.json``: one entry per job, rewritten atomically as jobs finish."""

    def __init__(self, config: BatchConfig, path: Path) -> None:
        self.path = path
        self.entries = [_entry(job) for job in config.jobs]
        self.started = time.perf_counter()
        self.state: dict[str, Any] = {
            "config": str(Path(config.path).resolve()),
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "executor": None,
            "scheduler": None,
            "workers": None,
            "seconds": None,
            "counts": {},
            "jobs": self.entries,
        }

    def check(self) -> None:
        """Refuse a report path that cannot be written, before any job runs."""
        ancestor = self.path.parent
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        if self.path.is_dir() or not os.access(ancestor, os.W_OK | os.X_OK):
            raise InputError(
                f"{self.path}: cannot write the report there: give another --report PATH"
            )

    def save(self) -> None:
        """Write the report as it stands."""
        counts: dict[str, int] = {}
        for e in self.entries:
            counts[e["status"]] = counts.get(e["status"], 0) + 1
        self.state["counts"] = counts
        self.state["seconds"] = round(time.perf_counter() - self.started, 3)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_json(self.path, self.state)

    def finished(self, job: Job, result: dict[str, Any], progress: Progress) -> None:
        """Record a finished job, say so, save."""
        entry = self.entries[job.index]
        for key in ("status", "seconds", "frames", "error"):
            entry[key] = result.get(key)
        entry["cpu_seconds"] = result.get("cpu_seconds")
        if "converged" in result:
            entry["converged"] = result["converged"]
            entry["iterations"] = result["iterations"]
        progress.finished(job, result)
        self.save()
