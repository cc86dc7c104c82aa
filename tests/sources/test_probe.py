"""The probe: what a path is (a video, a folder, something else) before it is read."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import cv2
import pytest

from bpvideo.errors import InputError
from bpvideo.sinks.writers import write_video
from bpvideo.sources.probe import probe
from tests.conftest import process_env, tiny_frames


def test_a_video_named_jpg_is_a_video(tiny_clip: Path, tmp_path: Path) -> None:
    """A video is one by its content, not its name; an image named ``.jpg`` is refused."""
    video = tmp_path / "clip.jpg"
    shutil.copyfile(tiny_clip, video)
    found = probe(video)
    assert (found.kind, found.width, found.height, found.frame_count) == ("video", 48, 36, 24)
    image = tmp_path / "one.jpg"
    cv2.imwrite(str(image), tiny_frames(n=1)[0][0])
    with pytest.raises(InputError, match=r"one\.jpg: is a single image"):
        probe(image)


def test_the_probe_of_a_video_loads_no_image_plugin(tiny_clip: Path) -> None:
    """A video is told from an image by its first bytes: Pillow (and its ~40 plugins,
    ~50 ms of every run's start) is not loaded to find that a video is no image."""
    code = "import sys; from bpvideo.sources.probe import probe; "
    code += f"probe({str(tiny_clip)!r}); print('PIL' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=process_env(), timeout=120, check=True)  # fmt: skip
    assert done.stdout.strip() == "False", done.stderr


def test_a_pipe_given_as_a_path_is_named_a_pipe(tmp_path: Path) -> None:
    """A FIFO (``/dev/stdin`` of a pipe) is not "empty": it is a pipe, and ``-`` reads it."""
    fifo = tmp_path / "stream"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=r"stream: is a pipe, not a file.*give - to read stdin"):
        probe(fifo)


def test_a_video_on_a_descriptor_of_this_process_is_read(tmp_path: Path) -> None:
    """``/dev/fd/N`` of a file opened here names this process's descriptor: the decoder
    (a child) is handed the file, not its own descriptor of that number."""
    frames, _ = tiny_frames(n=6)
    path = tmp_path / "clip.mkv"
    write_video(path, frames, 10.0, lossless=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        from bpvideo.sources.files import open_source

        source = open_source(f"/dev/fd/{fd}")
        got = [frame for _, frame in source.frames]
    finally:
        os.close(fd)
    assert len(got) == 6 and (got[3] == frames[3]).all()
