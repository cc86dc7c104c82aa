"""Events of a batch: each job's in its report entry, all of them in one events.csv."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from bpvideo.batch.report import events_path
from bpvideo.sinks.writers import write_video
from tests.sinks.test_events import EVENTS, FPS, bursts


def test_batch_events_csv_lists_every_jobs_events(run_cli, tmp_path: Path):
    frames, _ = bursts()
    write_video(tmp_path / "moving.mkv", frames, FPS, lossless=True)
    write_video(tmp_path / "still.mkv", frames[:6], FPS, lossless=True)  # no motion
    options = "\n".join(f"  {k}: {v}" for k, v in EVENTS.items())
    (tmp_path / "night.yaml").write_text(
        f"workers: 1\ndefaults:\n  no_video: true\n{options}\n  output: out/{{stem}}\n"
        "jobs:\n  - input: moving.mkv\n  - input: still.mkv\n"
    )
    result = run_cli("batch", tmp_path / "night.yaml", "-q")
    assert result.code == 0, result.err
    report = json.loads((tmp_path / "night.report.json").read_text())
    moving, still = report["jobs"]
    assert len(moving["events"]) == 2 and still["events"] == []
    path = events_path(tmp_path / "night.report.json")
    assert path == tmp_path / "night.events.csv"
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["job"], Path(r["input"]).name) for r in rows] == [("0", "moving.mkv")] * 2
    with open(tmp_path / "out" / "moving" / "events.csv", newline="") as handle:
        own = list(csv.DictReader(handle))
    assert [{k: r[k] for k in own[0]} for r in rows] == own
