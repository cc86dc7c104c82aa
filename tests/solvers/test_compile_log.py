"""A numba compilation is announced in the log (issue 39: the first run was silent)."""

from __future__ import annotations

import logging

import pytest

numba = pytest.importorskip("numba")


def test_a_compilation_is_logged_once_at_info(caplog):
    from bpvideo.solvers.backends import compile_log

    compile_log.watch_compiles()
    listener = compile_log._WATCHING[0]
    listener.told = False  # as in a fresh process

    @numba.njit(cache=False)
    def twice(x):
        return 2 * x

    @numba.njit(cache=False)
    def thrice(x):
        return 3 * x

    with caplog.at_level(logging.DEBUG, logger="bpvideo"):
        assert twice(2) == 4
        assert thrice(2) == 6
        assert twice(5) == 10  # compiled already: nothing logged
    info = [r for r in caplog.records if r.levelno == logging.INFO and r.name == "bpvideo"]
    assert len(info) == 1 and "compiling" in info[0].getMessage()
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert any("twice" in m for m in debug) and any("thrice" in m for m in debug)
    assert len(debug) == 2
