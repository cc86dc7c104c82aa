"""The plan of a job: window sizes that follow the input and the options, refusals that
name the fix, and the memory readings the plan starts from."""

from __future__ import annotations

import pytest

from bpvideo.errors import InputError
from bpvideo.pipeline import memory
from bpvideo.pipeline.plan import plan_window
from bpvideo.pipeline.windows import AUTO_WHOLE_MAX, AUTO_WINDOW
from bpvideo.settings import SeparateSettings


def test_memory_estimate_refuses_what_cannot_fit(run_cli, tiny_clip, tmp_path, monkeypatch):
    settings = SeparateSettings(window=0).validate()
    with pytest.raises(InputError, match=r"window=\d+.*scale"):  # library words
        plan_window(settings, 640, 480, 3000, name="cam.mp4", available=2 * 2**30)
    assert plan_window(settings, 64, 48, 100, name="x", available=2**30) == (None, 0)
    auto = SeparateSettings().validate()
    # Windows follow the input and the options, never the memory free at the moment:
    # the same plan with 8 or 64 GiB, and a refusal that names the fix when short.
    plans = {plan_window(auto, 640, 480, 100_000, name="x", available=g * 2**30) for g in (8, 64)}
    assert plans == {(AUTO_WINDOW, AUTO_WHOLE_MAX)}
    with pytest.raises(InputError, match=r"60% of 2.00 GiB available\): pass window=\d+"):
        plan_window(auto, 640, 480, 100_000, name="x", available=2 * 2**30)
    with pytest.raises(InputError, match="lower scale"):
        plan_window(auto, 4000, 3000, None, name="x", available=2**30)
    # The CLI says so in one line, before writing anything.
    monkeypatch.setattr("bpvideo.pipeline.plan.available_memory", lambda: 100_000)
    res = run_cli("separate", tiny_clip, "-o", tmp_path / "o", "--window", "0")
    assert res.code == 2 and res.err.count("\n") == 1
    assert "--window" in res.err and "--scale" in res.err and "available" in res.err
    assert not (tmp_path / "o").exists()


def test_memory_readings_agree_with_psutil(monkeypatch) -> None:
    import psutil

    # read from /proc on Linux, from psutil elsewhere: the same numbers either way
    for direct in (True, False):
        if not direct:
            monkeypatch.setattr(memory, "_proc_number", lambda path, key: None)
        rss, avail = memory.resident_memory(), memory.available_memory()
        assert abs(rss - psutil.Process().memory_info().rss) < 32 << 20
        assert abs(avail - psutil.virtual_memory().available) < 0.1 * avail
