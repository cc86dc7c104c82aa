"""The cores a run may use (affinity, cgroup quota, a batch worker's share) and
``--threads`` (issue 39)."""

from __future__ import annotations

import multiprocessing
import os
import threading
from pathlib import Path

import pytest

from bpvideo import cores
from bpvideo.errors import InputError
from bpvideo.settings import settings_of


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.setattr(cores, "_STATE", {"threads": None, "limit": None})
    monkeypatch.setattr(cores.os, "sched_getaffinity", lambda pid: set(range(8)))


def _cpu_max(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cpu.max"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "cpus"),
    [
        ("max 100000\n", None),
        ("200000 100000\n", 2.0),
        ("150000 100000\n", 1.5),
        ("50000 100000\n", 0.5),
        ("300000\n", 3.0),
        ("garbage here\n", None),
        ("", None),
        ("-1 100000\n", None),
    ],
)
def test_the_cgroup_quota_is_read_from_cpu_max(tmp_path, text, cpus):
    assert cores.cgroup_cpus(_cpu_max(tmp_path, text)) == cpus


def test_no_cgroup_file_is_no_quota(tmp_path):
    assert cores.cgroup_cpus(tmp_path / "absent") is None
    assert cores.available_cores(tmp_path / "absent") == 8


def test_the_quota_caps_the_affinity_rounded_up(tmp_path):
    assert cores.available_cores(_cpu_max(tmp_path, "200000 100000")) == 2
    assert cores.available_cores(_cpu_max(tmp_path, "150000 100000")) == 2
    assert cores.available_cores(_cpu_max(tmp_path, "10000 100000")) == 1
    assert cores.available_cores(_cpu_max(tmp_path, "6400000 100000")) == 8  # affinity
    assert cores.available_cores(_cpu_max(tmp_path, "max 100000")) == 8


def test_a_batch_workers_share_caps_auto(tmp_path, monkeypatch):
    monkeypatch.setattr(cores, "CPU_MAX", tmp_path / "absent")
    cores.limit(3)
    assert cores.available_cores(tmp_path / "absent") == 3
    assert cores.use("auto") == 3
    assert cores.use(5) == 5  # asked for explicitly: as asked
    cores.limit(None)
    assert cores.use(None) == 8


def test_threads_is_the_runs_count_and_one_in_a_pools_thread(tmp_path, monkeypatch):
    monkeypatch.setattr(cores, "CPU_MAX", tmp_path / "absent")
    assert cores.threads() == 8  # nothing set: the cores
    cores.use(2)
    seen = []

    def pooled():
        cores.in_pool()
        seen.append(cores.threads())

    thread = threading.Thread(target=pooled)
    thread.start()
    thread.join()
    assert seen == [1] and cores.threads() == 2


@pytest.mark.parametrize(("given", "taken"), [(None, "auto"), ("auto", "auto"), (3, 3),
                                              ("4", 4), ("AUTO", "auto")])  # fmt: skip
def test_threads_option_parsing(given, taken):
    options = {} if given is None else {"threads": given}
    assert settings_of(options, arrays=False).threads == taken


@pytest.mark.parametrize("bad", [0, -2, "many", 1.5, 100_000])
def test_threads_option_refuses_what_is_no_count(bad):
    with pytest.raises(InputError, match="threads"):
        settings_of({"threads": bad}, arrays=False)


def test_threads_flag_of_the_command_line(run_cli, tmp_path):
    result = run_cli("separate", "--help")
    assert "--threads N|auto" in result.out
    bad = run_cli("separate", str(tmp_path / "none.mp4"), "--threads", "0")
    assert bad.code != 0 and "threads" in bad.err


def test_a_batch_divides_the_cores_between_its_workers(monkeypatch):
    from bpvideo.batch import executors as run

    made = []

    class Pool:
        def __init__(self, workers, initializer, initargs):
            made.append((workers, initargs))

        def shutdown(self, wait):
            pass

    monkeypatch.setattr(run, "WorkerPool", Pool)
    monkeypatch.setattr(run.cores, "available_cores", lambda: 8)
    for workers in (1, 3, 8, 16):
        with run.local_executor(workers):
            pass
    assert [share for _, (_, share) in made] == [8, 2, 1, 1]


def test_beside_runs_work_in_one_more_thread_only_when_the_run_has_two():
    def where(x):
        return x, threading.current_thread().name, cores.threads()

    cores.use(1)
    with cores.beside("bpvideo-test") as start:
        assert start(where, 1).result() == (1, threading.current_thread().name, 1)
    cores.use(2)
    with cores.beside("bpvideo-test") as start:
        first, second = start(where, 2), start(where, 3)
    # in order, in the one more thread, which spreads its own work no further
    assert first.result()[0] == 2 and second.result()[0] == 3
    assert first.result()[1].startswith("bpvideo-test") and first.result()[2] == 1

    def fails():
        raise ValueError("no")

    with cores.beside("bpvideo-test") as start:
        failed = start(fails)
    with pytest.raises(ValueError, match="no"):
        failed.result()
    cores.use(1)
    with pytest.raises(ValueError, match="no"), cores.beside("bpvideo-test") as start:
        start(fails)


def test_in_blocks_runs_the_second_half_beside_with_two_threads_and_enough_entries():
    def where(lo, hi):
        return lo, hi, threading.current_thread().name

    here = threading.current_thread().name
    cores.use(1)
    assert cores.in_blocks(where, 10, 1 << 30) == [(0, 10, here)]
    cores.use(2)
    assert cores.in_blocks(where, 10, cores.SPLIT_ENTRIES - 1) == [(0, 10, here)]
    first, second = cores.in_blocks(where, 10, 1 << 30)
    assert first == (0, 5, here) and second[:2] == (5, 10)
    assert second[2].startswith("bpvideo-rows")
    # in the one more thread, work spreads no further
    assert cores.in_blocks(lambda lo, hi: cores.in_blocks(where, 10, 1 << 30), 4, 1 << 30)[1] == [
        (0, 10, second[2])
    ]
    # a failed first half raises once the second is done
    done = []

    def fails(lo, hi):
        if lo == 0:
            raise ValueError("no")
        done.append(hi)

    with pytest.raises(ValueError, match="no"):
        cores.in_blocks(fails, 10, 1 << 30)
    assert done == [10]


def test_by_rows_hands_every_row_once_a_chunk_at_a_time(monkeypatch):
    monkeypatch.setattr(cores, "CHUNK_ENTRIES", 1000)
    for count in (1, 2):
        cores.use(count)
        seen: list[tuple[int, int]] = []
        cores.by_rows(lambda lo, hi, seen=seen: seen.append((lo, hi)), 1001, 300)
        rows = sorted(r for lo, hi in seen for r in range(lo, hi))
        assert rows == list(range(1001))
        assert max(hi - lo for lo, hi in seen) == 3  # 1000 entries: 3 rows of 300


def _halves() -> list[int]:
    cores.use(2)
    return cores.in_blocks(lambda lo, hi: hi, 4, 1 << 30)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this system")
def test_in_blocks_in_a_forked_child_of_a_process_that_used_it():
    """The parent's thread of the blocks is not the child's: the child starts its own
    (with the parent's, its second half would wait for ever)."""
    assert _halves() == [2, 4]
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply_async(_halves).get(timeout=60) == [2, 4]
