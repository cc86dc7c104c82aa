"""Output templates and input globs (``-o 'OUT/{stem}'``, ``'cams/*.mp4'``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bpvideo.errors import InputError
from bpvideo.sinks.paths import expand_inputs, format_output


def test_format_output_and_expand(tmp_path: Path) -> None:
    assert format_output("out/{stem}", "cams/a.mp4", 1) == "out/a"
    assert format_output("o/{parent}-{name}-{index:02d}", "cams/a.mp4", 3) == "o/cams-a.mp4-03"
    assert format_output("o/{stem}", "data/highway/input", 1) == "o/highway"
    assert format_output(None, "cams/a.mp4", 1) == "a-bpvideo"
    assert format_output("plain", "a.mp4", 2) == "plain"
    with pytest.raises(InputError, match=r"unknown placeholder \{camera\}"):
        format_output("o/{camera}", "a.mp4", 1)
    for name in ("b.mp4", "a.mp4", "c.txt"):
        (tmp_path / name).write_bytes(b"x")
    pattern = str(tmp_path / "*.mp4")
    assert expand_inputs([pattern, str(tmp_path / "a.mp4")]) == [
        str(tmp_path / "a.mp4"),
        str(tmp_path / "b.mp4"),
    ]
    with pytest.raises(InputError, match=r"\*\.mkv: the glob matches no file"):
        expand_inputs([str(tmp_path / "*.mkv")])
    with pytest.raises(InputError, match="stdin"):
        expand_inputs(["-", pattern])
