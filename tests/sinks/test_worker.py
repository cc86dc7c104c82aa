"""The writers' feeding thread: work in order, errors handed over, the end not waited for."""

from __future__ import annotations

import threading

import pytest

from bpvideo.sinks.worker import Worker


def test_items_done_in_order_then_last() -> None:
    done: list[object] = []
    worker = Worker(done.append, 2, "test-worker", last=lambda: done.append("last"))
    for i in range(5):
        worker.put(i)
    assert worker.finish() is None
    assert done == [0, 1, 2, 3, 4, "last"]


def test_end_returns_while_the_work_goes_on() -> None:
    release, finished = threading.Event(), threading.Event()
    done: list[int] = []

    def work(item: int) -> None:
        release.wait(10)
        done.append(item)

    worker = Worker(work, 4, "test-worker", last=finished.set)
    worker.put(1)
    worker.put(2)
    worker.end()  # returns although the first item is still being worked on
    assert done == [] and not finished.is_set()
    worker.end()  # a second end changes nothing
    release.set()
    assert finished.wait(10)
    assert worker.finish() is None and done == [1, 2]


def test_first_error_is_kept_later_items_dropped_last_still_runs() -> None:
    done: list[object] = []

    def work(item: int) -> None:
        if item == 1:
            raise ValueError("item 1")
        done.append(item)

    worker = Worker(work, 8, "test-worker", last=lambda: done.append("last"))
    worker.put(0)
    worker.put(1)
    worker.put(2)
    error = worker.finish()
    assert isinstance(error, ValueError) and done == [0, "last"]
    with pytest.raises(ValueError, match="item 1"):
        worker.put(3)


def test_an_error_of_last_is_handed_over() -> None:
    def last() -> None:
        raise OSError("closing failed")

    worker = Worker(lambda item: None, 1, "test-worker", last=last)
    worker.put(0)
    assert isinstance(worker.finish(), OSError)


def test_stop_drops_what_is_queued() -> None:
    release = threading.Event()
    done: list[int] = []

    def work(item: int) -> None:
        release.wait(10)
        done.append(item)

    worker = Worker(work, 8, "test-worker")
    for i in range(4):
        worker.put(i)
    threading.Timer(0.2, release.set).start()
    worker.stop()  # the current item ends; the queued ones are dropped
    assert len(done) <= 1
    assert isinstance(worker.error, RuntimeError)
