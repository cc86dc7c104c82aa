"""A numba compilation is announced in the log (issue 39: the first run was silent)."""

from __future__ import annotations

import logging

import numpy as np
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


def test_a_fresh_cache_compiles_once_then_loads_with_the_same_masks(tmp_path):
    """The first run on an empty numba cache (a fresh install) says once that it compiles
    (the masks' match of frames from 640x480: the solver runs numpy's kernels), the second
    loads the kernel silently, and the masks are the same bytes."""
    import os
    import subprocess
    import sys

    import cv2

    from tests.conftest import process_env, read_masks, street_frames

    frames, _ = street_frames(n=40, w=640, h=480)  # COMPILED_FRAME: the masks' kernel
    (tmp_path / "clip" / "input").mkdir(parents=True)
    for i, frame in enumerate(frames, start=1):
        cv2.imwrite(str(tmp_path / "clip" / "input" / f"in{i:06d}.png"), frame)
    env = {**process_env(), "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    said, masks = [], []
    for run in ("first", "second"):
        out = tmp_path / run
        done = subprocess.run(
            [sys.executable, "-m", "bpvideo", "separate", str(tmp_path / "clip"), "-o",
             str(out), "--no-video"],
            env=env, capture_output=True, text=True, timeout=600, check=True,
        )  # fmt: skip
        said.append(done.stderr.count("compiling the fast kernels with numba"))
        masks.append(read_masks(out / "masks"))
    assert said == [1, 0]
    assert os.listdir(tmp_path / "numba")  # the kernels were cached there
    assert masks[0].any()
    assert np.array_equal(masks[0], masks[1])


#: A child's work: the numba solver's warm-up on an empty or full cache; prints how many
#: kernels this process compiled.
WARM = """
from bpvideo.solvers.backends import compile_log, get_backend
get_backend("numba").warm_up()
print(compile_log.compiles())
"""


def test_the_warm_up_caches_every_kernel_and_a_second_process_only_loads(tmp_path):
    """On an empty cache, the numba solver's warm-up compiles its kernels; a second
    process compiles nothing (every kernel, with the signatures a solve uses, is in the
    cache)."""
    import subprocess
    import sys

    from tests.conftest import process_env

    env = {**process_env(), "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    compiled = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", WARM], env=env, capture_output=True,
                              text=True, timeout=600, check=True)  # fmt: skip
        compiled.append(int(done.stdout.split()[-1]))
    assert compiled[0] >= 7 and compiled[1] == 0
    cached = {p.name.split("-")[0] for p in (tmp_path / "numba").rglob("*.nbi")}
    kernels = {"apply", "fused", "row_thresholds", "col_thresholds", "matmul", "t_matmul",
               "row_median"}  # fmt: skip
    assert {f"_numba_kernels.{k}" for k in kernels} <= cached
