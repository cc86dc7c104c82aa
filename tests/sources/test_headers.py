"""Small files and image headers read at a bounded cost (bpvideo/sources/headers.py): a path
that is not a regular file (a FIFO with no writer) is refused at once, never waited on."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
import pytest

from bpvideo.errors import InputError
from bpvideo.sources import headers
from bpvideo.sources.headers import decode_image, image_size, read_image, read_text


def _returns(call: Callable[[], object], fifo: Path, seconds: float = 20.0) -> object:
    """``call()``'s result or exception, or fail when it is still waiting after
    ``seconds`` (the FIFO is then given a writer and closed, so that it returns)."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # release the reader
        thread.join(5)
        pytest.fail(f"still waiting on the FIFO after {seconds} s")
    return outcome[0]


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "door.png"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("name", ["read_text", "read_image", "decode_image", "open_file"])
def test_a_fifo_with_no_writer_is_refused_at_once(fifo: Path, name: str) -> None:
    reader = getattr(headers, name)
    args = (fifo, "the defaults file") if name in ("read_text", "open_file") else (fifo,)
    outcome = _returns(lambda: reader(*args), fifo)
    assert isinstance(outcome, InputError), outcome
    assert str(outcome).startswith(f"{fifo}: ")
    assert "is a named pipe (FIFO), not a regular file" in str(outcome)
    assert str(outcome).endswith("give a file")


def test_an_image_size_of_a_fifo_is_none_at_once(fifo: Path) -> None:
    assert _returns(lambda: image_size(fifo), fifo) is None


def test_regular_files_read_as_before(tmp_path: Path) -> None:
    picture = np.arange(12 * 20, dtype=np.uint8).reshape(12, 20)
    cv2.imwrite(str(tmp_path / "p.png"), picture)
    assert image_size(tmp_path / "p.png") == (20, 12)
    np.testing.assert_array_equal(read_image(tmp_path / "p.png", cv2.IMREAD_GRAYSCALE), picture)
    np.testing.assert_array_equal(decode_image(tmp_path / "p.png", cv2.IMREAD_GRAYSCALE), picture)
    (tmp_path / "t.txt").write_text("rank: 3\n")
    assert read_text(tmp_path / "t.txt", "the defaults file") == "rank: 3\n"
    with headers.open_file(tmp_path / "t.txt") as handle:
        assert handle.read() == b"rank: 3\n"  # blocking again: a plain file object
    with pytest.raises(IsADirectoryError):
        headers.open_file(tmp_path)
    assert read_image(tmp_path / "missing.png") is None


def test_video_containers_are_known_by_their_first_bytes_and_images_are_not(
    tiny_clip: Path, tmp_path: Path
) -> None:
    """MKV, MP4 and AVI starts are videos (the probe then loads no image plugin); an image
    in an ISO box (AVIF), a PNG or a short file is not said to be one."""
    sample = Path(__file__).resolve().parents[2] / "sample_data" / "sample.mp4"
    assert headers.video_container(tiny_clip)  # Matroska
    assert headers.video_container(sample)  # ISO base media, brand isom
    starts = {
        "clip.avi": (b"RIFF\x10\x00\x00\x00AVI LIST", True),
        "still.avif": (b"\x00\x00\x00\x1cftypavif\x00\x00\x00\x00", False),
        "still.heic": (b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00", False),
        "still.webp": (b"RIFF\x10\x00\x00\x00WEBPVP8 ", False),
        "short.mp4": (b"\x00\x00", False),
    }
    for name, (start, video) in starts.items():
        (tmp_path / name).write_bytes(start)
        assert headers.video_container(tmp_path / name) is video, name
    png = tmp_path / "still.png"
    cv2.imwrite(str(png), np.zeros((8, 8), np.uint8))
    assert not headers.video_container(png)
    assert not headers.video_container(tmp_path / "missing.mp4")
