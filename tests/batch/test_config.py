"""``bpvideo batch``: YAML configs (validation, line numbers, YAML traps), local and Dask runs."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

import cv2
import pytest

from bpvideo.batch.config import ConfigError, load_config, load_yaml
from bpvideo.batch.run import completed
from bpvideo.errors import InputError
from bpvideo.sinks.paths import expand_template
from bpvideo.sinks.writers import write_video
from tests.conftest import REPO, tiny_frames


@pytest.fixture
def cams(tmp_path: Path) -> Path:
    """tmp_path/cams: north/a.mkv, north/b.mkv (distinct clips), south/c.mkv, folder/input."""
    for seed, name in enumerate(["north/a.mkv", "north/b.mkv", "south/c.mkv"]):
        path = tmp_path / "cams" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        frames, _ = tiny_frames(n=16, seed=seed)
        write_video(path, frames, 10.0, lossless=True)
    folder = tmp_path / "cams" / "lobby" / "input"
    folder.mkdir(parents=True)
    frames, _ = tiny_frames(n=16, seed=7)
    for i, frame in enumerate(frames, start=1):
        cv2.imwrite(str(folder / f"in{i:06d}.png"), frame)
    return tmp_path / "cams"


def write_config(folder: Path, text: str, name: str = "night.yaml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


GOOD = """\
defaults:
  rank: 1
  sparsity: 3e-1
  max-iter: 60
  output: out/{camera}/{stem}
jobs:
  - input: cams/north/*.mkv
    camera: north
  - input: cams/south/c.mkv
    camera: south
    rank: 2
    tol: "5e-4"
  - input: cams/lobby/input
    output: out/lobby/{stem}-r{rank}   # a SEQ/input folder is named by SEQ
    min_area: 0
"""


def read_report(path: Path) -> dict:
    return json.loads(path.read_text())


def test_valid_config_runs_every_job(run_cli, cams: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, GOOD)
    res = run_cli("batch", config, "--workers", "2")
    assert res.code == 0, res.err
    assert res.out == ""  # stdout carries data only (none here)
    outs = {
        "north/a": tmp_path / "out/north/a",
        "north/b": tmp_path / "out/north/b",
        "south/c": tmp_path / "out/south/c",
        "lobby": tmp_path / "out/lobby/lobby-r1",
    }
    summaries = {k: json.loads((p / "summary.json").read_text()) for k, p in outs.items()}
    for s in summaries.values():
        assert s["frames"] == 16 and s["settings"]["sparsity"] == 0.3
        assert s["settings"]["max_iter"] == 60
    assert summaries["north/a"]["settings"]["rank"] == 1
    assert summaries["south/c"]["settings"]["rank"] == 2  # per-job override
    assert summaries["south/c"]["settings"]["tol"] == 5e-4  # numeric string accepted
    assert summaries["lobby"]["settings"]["min_area"] == 0
    assert summaries["north/a"]["input"].endswith("north/a.mkv")
    assert summaries["north/b"]["input"].endswith("north/b.mkv")
    # Each job separated its own clip: the masks differ (different seeds move the square).
    assert len(list((outs["lobby"] / "masks").iterdir())) == 16
    report = read_report(tmp_path / "night.report.json")  # default place: beside the config
    assert [j["status"] for j in report["jobs"]] == ["ok"] * 4
    assert [j["frames"] for j in report["jobs"]] == [16] * 4
    assert all(j["seconds"] > 0 and j["error"] is None for j in report["jobs"])
    assert all(j["cpu_seconds"] > 0 and j["converged"] is True for j in report["jobs"])
    assert report["counts"] == {"ok": 4} and report["executor"] == "local"
    assert [j["config_line"] for j in report["jobs"]] == [7, 7, 9, 13]
    # One progress line per finished job and the summary table on stderr.
    assert sum(f"[{i}/4]" in res.err for i in range(1, 5)) == 4
    assert "4 ok" in res.err


def test_dry_run_lists_jobs_and_runs_nothing(run_cli, cams: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, GOOD)
    res = run_cli("batch", config, "--dry-run")
    assert res.code == 0, res.err
    lines = [line.split("\t") for line in res.out.splitlines()]
    assert lines == [
        [str(cams / "north/a.mkv"), str(tmp_path / "out/north/a")],
        [str(cams / "north/b.mkv"), str(tmp_path / "out/north/b")],
        [str(cams / "south/c.mkv"), str(tmp_path / "out/south/c")],
        [str(cams / "lobby/input"), str(tmp_path / "out/lobby/lobby-r1")],
    ]
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "night.report.json").exists()


BAD = """\
defaults:
  rank: 2
  sparsity: 1.5
  max_iter: 10
  rank: 3
jobs:
  - input: cams/nowhere/*.mkv
    camera: x
    output: out/{camera}/{stem}
  - input: cams/south/c.mkv
    rnak: 2
    gamma: -1
    output: out/{cam}/{stem}
  - input: missing.mp4
    rank: two
    lossless: maybe
  - input: cams/north/*.mkv
    output: out/north
wrokers: 3
"""


def test_config_with_several_errors_reports_all(run_cli, cams: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, BAD)
    res = run_cli("batch", config)
    assert res.code == 2
    assert res.out == ""
    expected = [
        f"{config}:3: defaults.sparsity: must be > 0 and < 1, got 1.5",
        f"{config}:5: duplicate key 'rank' (first given on line 2)",
        f"{config}:7: jobs[0].input: 'cams/nowhere/*.mkv' matches nothing",
        f"{config}:11: jobs[1].rnak: unknown key (did you mean 'rank'?)",
        f"{config}:12: jobs[1].gamma: must be > 0 and <= 2, got -1",
        f"{config}:13: jobs[1].output: {{cam}} is not defined",
        f"{config}:14: jobs[2].input: missing.mp4: no such file or folder",
        f"{config}:15: jobs[2].rank: must be an integer, got 'two'",
        f"{config}:16: jobs[2].lossless: must be true or false, got 'maybe'",
        f"{config}:18: defaults.output",  # placeholder replaced below
        f"{config}:19: wrokers: unknown key (did you mean 'workers'?)",
    ]
    # Two clips of the glob would both write out/north: reported on the output's line.
    expected[9] = f"{config}:18: jobs[3].output: b.mkv would write {tmp_path / 'out/north'}"
    lines = res.err.splitlines()
    for want in expected:
        assert any(line.startswith(f"bpvideo: error: {want}") for line in lines), want
    assert lines[-1] == (
        f"bpvideo: error: {config}: {len(expected)} problems, nothing was run: fix them and "
        "run again"
    )
    assert len(lines) == len(expected) + 1  # one line per problem, no traceback
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "night.report.json").exists()


def test_a_defaults_typo_is_said_once_for_all_its_jobs(run_cli, cams: Path, tmp_path: Path):
    """An unknown key under ``defaults:`` is met by every job (as a template value their
    output does not use): one line, not one per job."""
    config = write_config(tmp_path, "defaults:\n  rnak: 3\njobs:\n"
                          "  - input: cams/north/*.mkv\n  - input: cams/south/c.mkv\n")  # fmt: skip
    res = run_cli("batch", config)
    assert res.code == 2 and res.out == ""
    assert res.err.splitlines() == [
        f"bpvideo: error: {config}:2: defaults.rnak: unknown key (did you mean 'rank'?): not an "
        "option of separate, and the output template '{stem}-bpvideo' does not use {rnak}"
    ]


def test_duplicate_keys_are_errors(tmp_path: Path, cams: Path) -> None:
    config = write_config(
        tmp_path,
        "jobs:\n  - input: cams/south/c.mkv\n    rank: 1\n    sparsity: 0.2\n    rank: 4\n",
    )
    with pytest.raises(ConfigError) as info:
        load_config(config)
    assert info.value.problems == [
        f"{config}:5: duplicate key 'rank' (first given on line 3): keep only one"
    ]
    # A merge key ('<<: *base') may be overridden: that is not a duplicate.
    merged = write_config(
        tmp_path,
        "base: &base {rank: 1, sparsity: 0.2}\n",
        name="m.yaml",
    )
    data, duplicates = load_yaml(merged)
    assert duplicates == []
    text = "x: &b {rank: 1}\ny:\n  <<: *b\n  rank: 3\n"
    data, duplicates = load_yaml(write_config(tmp_path, text, name="m2.yaml"))
    assert duplicates == [] and data["y"] == {"rank": 3}


def test_exponent_floats_load_as_numbers(tmp_path: Path, cams: Path) -> None:
    text = "a: 1e-1\nb: 5E3\nc: -2.5e+2\nd: 1.0e-1\ne: '1e-1'\nf: 1e\ng: 10\n"
    data, _ = load_yaml(write_config(tmp_path, text, name="f.yaml"))
    assert data["a"] == 0.1 and isinstance(data["a"], float)
    assert data["b"] == 5000.0 and data["c"] == -250.0 and data["d"] == 0.1
    assert data["e"] == "1e-1"  # quoted: a string, still accepted by float options
    assert data["f"] == "1e" and data["g"] == 10 and isinstance(data["g"], int)
    config = write_config(
        tmp_path,
        "defaults:\n  sparsity: 1e-1\n  tol: '2e-4'\n  threshold: 2.5e1\n"
        "jobs:\n  - input: cams/south/c.mkv\n    output: out/c\n",
    )
    (job,) = load_config(config).jobs
    assert job.settings["sparsity"] == 0.1
    assert job.settings["tol"] == 2e-4
    assert job.settings["threshold"] == 25.0


def test_frame_spans_load_as_text(tmp_path: Path, cams: Path) -> None:
    """YAML 1.1 reads 10:20 as 620 (base 60); a config reads it as the span it is."""
    data, _ = load_yaml(write_config(tmp_path, "a: 10:20\nb: 0x1F\nc: 017\n", name="s.yaml"))
    assert (data["a"], data["b"], data["c"]) == ("10:20", 31, 15)
    config = write_config(
        tmp_path,
        "defaults:\n  learn: 10:60\njobs:\n  - input: cams/south/c.mkv\n    output: out/c\n",
    )
    (job,) = load_config(config).jobs
    assert job.settings["learn"] == "10:60"


def test_bad_yaml_syntax_is_one_line_with_line_number(run_cli, tmp_path: Path) -> None:
    config = write_config(tmp_path, "defaults:\n  rank: 2\njobs:\n  - input: [a.mp4\n")
    res = run_cli("batch", config)
    assert res.code == 2
    lines = res.err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"bpvideo: error: {config}:5: invalid YAML")
    res = run_cli("batch", tmp_path / "absent.yaml")
    assert res.code == 2 and "no such config file" in res.err


def test_corrupt_input_fails_alone(run_cli, cams: Path, tmp_path: Path) -> None:
    (cams / "north" / "broken.mkv").write_bytes(b"\x00not a video" * 500)
    config = write_config(tmp_path, GOOD)
    res = run_cli("batch", config, "--workers", "2", "--report", tmp_path / "r" / "rep.json")
    assert res.code == 1
    report = read_report(tmp_path / "r" / "rep.json")
    by_input = {Path(j["input"]).name: j for j in report["jobs"]}
    assert set(by_input) == {"a.mkv", "b.mkv", "broken.mkv", "c.mkv", "input"}
    bad = by_input.pop("broken.mkv")
    assert bad["status"] == "failed" and bad["frames"] is None
    assert "broken.mkv" in bad["error"] and "cannot be decoded" in bad["error"]
    assert all(j["status"] == "ok" for j in by_input.values())
    assert report["counts"] == {"ok": 4, "failed": 1}
    assert not (tmp_path / "out/north/broken").exists()  # nothing half-written
    assert (tmp_path / "out/north/b/summary.json").exists()
    assert "FAILED" in res.err and "cannot be decoded" in res.err


def test_resume_skips_complete_jobs(run_cli, cams: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, GOOD)
    assert run_cli("batch", config, "--workers", "2").code == 0
    first = read_report(tmp_path / "night.report.json")["jobs"]
    summary_a = tmp_path / "out/north/a/summary.json"
    stamp = summary_a.stat().st_mtime_ns
    # Everything complete: nothing to run.
    res = run_cli("batch", config, "--resume", "--dry-run")
    assert res.code == 0 and res.out == ""
    # One result lost, one job's parameters changed: only those two are not complete.
    import shutil

    shutil.rmtree(tmp_path / "out/south/c")
    changed = GOOD.replace("min_area: 0", "min_area: 0\n    overwrite: true\n    rank: 2")
    changed = changed.replace("{stem}-r{rank}", "{stem}")
    write_config(tmp_path, changed)
    (tmp_path / "out/lobby/lobby-r1").rename(tmp_path / "out/lobby/lobby")
    res = run_cli("batch", config, "--resume", "--dry-run")
    assert [line.split("\t")[1] for line in res.out.splitlines()] == [
        str(tmp_path / "out/south/c"),
        str(tmp_path / "out/lobby/lobby"),
    ]
    res = run_cli("batch", config, "--resume", "--workers", "2")
    assert res.code == 0, res.err
    report = read_report(tmp_path / "night.report.json")
    # The two complete jobs keep their real status and seconds from the first run.
    assert [j["status"] for j in report["jobs"]] == ["ok", "ok", "ok", "ok"]
    for earlier, now in zip(first[:2], report["jobs"][:2], strict=True):
        assert now["earlier_run"] is True
        assert (now["seconds"], now["frames"]) == (earlier["seconds"], earlier["frames"])
    assert not any("earlier_run" in j for j in report["jobs"][2:])
    assert summary_a.stat().st_mtime_ns == stamp  # untouched
    lobby = json.loads((tmp_path / "out/lobby/lobby/summary.json").read_text())
    assert lobby["settings"]["rank"] == 2
    jobs = load_config(config).jobs
    assert all(completed(job) for job in jobs)


def test_dask_local_cluster(run_cli, cams: Path, tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    config = write_config(tmp_path, GOOD)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        res = run_cli(
            "batch", config, "--executor", "dask", "--scheduler", cluster.scheduler_address
        )
    assert res.code == 0, res.err
    report = read_report(tmp_path / "night.report.json")
    assert report["executor"] == "dask"
    assert [j["status"] for j in report["jobs"]] == ["ok"] * 4
    for out in ("north/a", "north/b", "south/c", "lobby/lobby-r1"):
        summary = json.loads((tmp_path / "out" / out / "summary.json").read_text())
        assert summary["frames"] == 16


def test_dask_missing_says_how_to_install(
    run_cli, cams: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    config = write_config(tmp_path, "executor: dask\n" + GOOD)
    res = run_cli("batch", config)
    assert res.code == 2
    assert res.err.splitlines() == [
        "bpvideo: error: --executor dask needs dask.distributed, which is not installed: "
        "pip install 'bpvideo[dask]'"
    ]


def test_a_scheduler_out_of_reach_leaves_no_report(
    run_cli, cams: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Dask client cannot connect (here at once; Dask waits 10 s): exit 2 and no report
    or events table of jobs that never ran (they stayed, every job "pending")."""
    import contextlib

    import bpvideo.batch.run as batch_run

    @contextlib.contextmanager
    def unreachable(scheduler, workers):
        raise InputError(f"cannot connect to the Dask scheduler {scheduler}")
        yield  # pragma: no cover

    monkeypatch.setattr(batch_run, "dask_executor", unreachable)
    config = write_config(tmp_path, "scheduler: tcp://127.0.0.1:1\n" + GOOD)
    res = run_cli("batch", config)
    assert res.code == 2 and "cannot connect to the Dask scheduler" in res.err
    assert not list(tmp_path.glob("night.*.*")), list(tmp_path.iterdir())


def test_template_fields() -> None:
    assert expand_template("o/{camera}/{stem}", "cams/n/clip1.mp4", {"camera": "n"}) == "o/n/clip1"
    assert expand_template("{parent}_{name}", "cams/n/clip1.mp4", {}) == "n_clip1.mp4"
    assert expand_template("{stem}", "seqs/highway/", {}) == "highway"


@pytest.mark.parametrize("name", sorted(p.name for p in (REPO / "configs").glob("*.yaml")))
def test_example_configs_load(name: str) -> None:
    config = load_config(REPO / "configs" / name)
    assert config.jobs
    for job in config.jobs:
        assert Path(job.input).exists()
        assert Path(job.output).is_relative_to(REPO / "out")
        assert job.settings["rank"] >= 1
    if name == "night.yaml":
        assert config.workers == 2 and config.executor == "local"
        assert [j.settings["sparsity"] for j in config.jobs] == [0.1] * 3
    if name == "cluster.yaml":
        assert config.executor == "dask" and config.scheduler.startswith("tcp://")


def test_example_configs_exist() -> None:
    assert len(list((REPO / "configs").glob("*.yaml"))) >= 2


def test_scheduler_needs_dask_executor(run_cli, cams: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, GOOD)
    res = run_cli("batch", config, "--executor", "local", "--scheduler", "tcp://h:1")
    assert res.code == 2 and "--scheduler needs --executor dask" in res.err


def test_top_level_must_be_mapping(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"x.yaml:1: must be a mapping"):
        load_config(write_config(tmp_path, "- a\n- b\n", name="x.yaml"))
    assert os.path.exists(tmp_path / "x.yaml")


def test_malformed_entries_each_reported_once(tmp_path: Path, cams: Path) -> None:
    text = (
        "executor: slurm\n"
        "defaults: 3\n"
        "jobs:\n"
        "  - 5\n"
        "  - input: 7\n"
        "  - {input: cams/south/c.mkv, output: '{stem', camera: 1}\n"
        "  - {input: cams/south/c.mkv, output: 'o/{camera}', camera: {a: 1}}\n"
    )
    with pytest.raises(ConfigError) as info:
        load_config(write_config(tmp_path, text, name="m.yaml"))
    label = str(tmp_path / "m.yaml")
    assert info.value.problems == [
        f"{label}:1: executor: must be local or dask, got 'slurm'",
        f"{label}:2: defaults: must be a mapping of options",
        f"{label}:4: jobs[0]: must be a mapping with an input, got 5",
        f"{label}:5: jobs[1].input: must be a path (a string), got 7",
        f"{label}:6: jobs[2].output: bad template '{{stem': expected '}}' before end of string",
        f"{label}:7: jobs[3].camera: template values must be text, got {{'a': 1}}",
    ]


def test_overwrite_replaces_earlier_results(run_cli, cams: Path, tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        "defaults:\n  max-iter: 30\njobs:\n  - input: cams/south/c.mkv\n    output: out/c\n",
    )
    assert run_cli("batch", config).code == 0
    summary = tmp_path / "out/c/summary.json"
    stamp = summary.stat().st_mtime_ns
    # Run again: the job fails, and says so in batch's own words.
    res = run_cli("batch", config)
    assert res.code == 1
    error = read_report(tmp_path / "night.report.json")["jobs"][0]["error"]
    assert "pass --overwrite to replace them" in error and "overwrite=True" not in error
    res = run_cli("batch", config, "--overwrite")
    assert res.code == 0, res.err
    assert summary.stat().st_mtime_ns != stamp
    assert read_report(tmp_path / "night.report.json")["counts"] == {"ok": 1}
    res = run_cli("batch", config, "--overwrite", "--resume")
    assert res.code == 2 and res.out == ""
    assert res.err.count("\n") == 1 and "--resume and --overwrite" in res.err


def test_the_local_dask_cluster_sets_its_workers_up_as_local_ones() -> None:
    """``--executor dask`` without a scheduler starts workers set up as the local pool's:
    an equal share of the cores, bpvideo's allocator and collector settings
    (``own_process``: Dask's ``MALLOC_TRIM_THRESHOLD_`` made jobs 1.4-1.6x slower), quiet
    logs."""
    pytest.importorskip("distributed")
    from bpvideo import cores
    from bpvideo.batch.executors import local_cluster

    def state() -> tuple:
        import gc
        import logging

        from bpvideo import cores

        return cores.limited(), gc.get_freeze_count() > 0, logging.getLogger("bpvideo").level

    cluster, client = local_cluster(2)
    try:
        found = list(client.run(state).values())
    finally:
        client.close()
        cluster.close()
    share = max(1, cores.available_cores() // 2)
    assert found == [(share, True, logging.ERROR)] * 2


def test_a_job_where_no_pool_shares_the_cores_runs_one_thread(monkeypatch) -> None:
    """On a Dask worker that bpvideo did not start, nothing has divided the cores: a job
    runs on one thread (its neighbours on the machine are other workers), and the
    process is left as it was."""
    import bpvideo.job
    from bpvideo import cores
    from bpvideo.batch.config import Job
    from bpvideo.batch.run import run_job

    seen = []

    class Summary(dict):
        events = ()

    def fake(input, output, **settings):
        seen.append((cores.limited(), cores.available_cores()))
        return Summary(frames=1, solver={"iterations": 1, "converged": True})

    monkeypatch.setattr(bpvideo.job, "separate_file", fake)
    assert cores.limited() is None
    result = run_job(Job(0, 0, 1, "in.mp4", "out", {}), blas_threads=1)
    assert result["status"] == "ok", result
    assert seen == [(1, 1)] and cores.limited() is None
