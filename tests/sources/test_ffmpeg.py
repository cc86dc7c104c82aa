"""The ffmpeg decoder and the probe: every frame, libavformat's fields, names as data."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from bpvideo.errors import InputError
from bpvideo.sinks.writers import write_video
from bpvideo.sources import ffmpeg as _ffmpeg
from bpvideo.sources.files import iter_frames, open_source, probe
from bpvideo.synthetic import make_scene


def test_decoder_gives_every_frame_and_the_probe_the_header(tmp_path: Path) -> None:
    scene = make_scene(32, 24, 9, seed=6)
    path = tmp_path / "clip.mkv"
    write_video(path, scene.frames, 25.0, lossless=True)
    found = _ffmpeg.probe(path)
    assert (found.width, found.height, found.frame_count) == (32, 24, 9)
    assert found.fps == pytest.approx(25.0)
    got = [np.frombuffer(b, np.uint8).reshape(24, 32, 3) for b in _ffmpeg.decode(path, 32, 24)]
    np.testing.assert_array_equal(np.stack(got), scene.frames)  # FFV1: lossless
    source = open_source(path, pix_fmt="bgr24")
    assert (source.width, source.height, source.frame_count) == (32, 24, 9)
    np.testing.assert_array_equal(np.stack([f for _, f in source.frames]), scene.frames)
    source.close()
    assert [n for n, _ in iter_frames(path, start=2, step=3, info=probe(path))] == [2, 5, 8]


def test_probe_refuses_a_file_that_is_not_a_video(tmp_path: Path) -> None:
    path = tmp_path / "notes.mp4"
    path.write_text("not a video\n" * 20)
    with pytest.raises(OSError, match="Invalid data"):
        _ffmpeg.probe(path)


@pytest.mark.parametrize(
    "name",
    [
        "concat:other.mkv",
        "-i",
        "a\nStream #0:0: Video: rawvideo, 640x480, 25 fps\nb.mkv",
        "x?y#z.mkv",
    ],
)
def test_a_file_name_is_only_a_name(tmp_path: Path, name: str) -> None:
    """A name shaped like an ffmpeg protocol, an option or ffmpeg's own log lines reads
    that very file: its own frames and size (the probe reads no text)."""
    scene = make_scene(32, 24, 6, seed=1)
    other = make_scene(16, 16, 9, seed=2)
    write_video(tmp_path / "clip.mkv", scene.frames, 25.0, lossless=True)
    write_video(tmp_path / "other.mkv", other.frames, 25.0, lossless=True)
    hostile = tmp_path / name
    shutil.copy(tmp_path / "clip.mkv", hostile)
    source = open_source(hostile, pix_fmt="bgr24")
    try:
        assert (source.width, source.height, source.frame_count) == (32, 24, 6)
        frames = np.stack([f for _, f in source.frames])
    finally:
        source.close()
    np.testing.assert_array_equal(frames, scene.frames)


def test_a_relative_name_with_a_colon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``concat:a.mkv|b.mkv`` given relative to the working folder is that file, not
    ffmpeg's concatenation of two others."""
    monkeypatch.chdir(tmp_path)
    scene = make_scene(32, 24, 5, seed=3)
    write_video(Path("a.mkv"), make_scene(32, 24, 7, seed=4).frames, 25.0, lossless=True)
    write_video(Path("concat:a.mkv|a.mkv"), scene.frames, 25.0, lossless=True)
    info = probe("concat:a.mkv|a.mkv")
    assert info.frame_count == 5
    assert len(list(iter_frames("concat:a.mkv|a.mkv", info=info))) == 5


def test_file_url_is_absolute() -> None:
    assert _ffmpeg.file_url("concat:x.mkv").startswith("file:/")
    assert _ffmpeg.file_url("/a/-i") == "file:/a/-i"


# --- inputs that name other inputs (issue 27) --------------------------------------------


def _lists(tmp_path: Path, clip: Path) -> dict[str, Path]:
    """Inputs whose demuxer opens other files, under extensions that hide it."""
    hls = "#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\n{}\n#EXT-X-ENDLIST\n"
    made = {
        "hls.m3u8": hls.format(clip.name),
        "ffconcat.mp4": f"ffconcat version 1.0\nfile {clip.name}\n",
        "ffconcat.mkv": f"ffconcat version 1.0\nfile '{clip}'\nfile {clip.name}\n",
        "ffconcat.txt": f"ffconcat version 1.0\nfile {clip.name}\n",
    }
    for name, text in made.items():
        (tmp_path / name).write_text(text)
    return {name: tmp_path / name for name in made}


def test_lists_of_other_files_are_refused_by_their_demuxer(tmp_path: Path) -> None:
    clip = tmp_path / "clip.mkv"
    write_video(clip, make_scene(32, 24, 6, seed=1).frames, 25.0, lossless=True)
    for name, path in _lists(tmp_path, clip).items():
        with pytest.raises(_ffmpeg.ReferencesError) as caught:
            _ffmpeg.probe(path)
        assert caught.value.demuxer in ("hls", "concat"), name
        with pytest.raises(InputError, match=r"playlist or a list of other files.*allow_refer"):
            open_source(path)
    # allowed: the list is read, and it names the clip
    source = open_source(tmp_path / "ffconcat.mp4", allow_references=True)
    assert len(list(source.frames)) == 6
    source.close()


def test_a_decoder_refuses_a_list_whatever_the_probe_said(tmp_path: Path) -> None:
    clip = tmp_path / "clip.mkv"
    write_video(clip, make_scene(32, 24, 6, seed=1).frames, 25.0, lossless=True)
    listed = _lists(tmp_path, clip)["ffconcat.mp4"]
    with pytest.raises(RuntimeError):
        list(_ffmpeg.decode(listed, 32, 24))
    assert len(list(_ffmpeg.decode(listed, 32, 24, references=True))) == 6


# --- names OpenCV cannot take (issue 27) -------------------------------------------------


def test_names_that_are_not_utf8(tmp_path: Path) -> None:
    """A name whose bytes are not UTF-8: probed and decoded through the opened file."""
    scene = make_scene(32, 24, 5, seed=2)
    folder = os.fsdecode(os.fsencode(str(tmp_path)) + b"/d\xe9j\xe0")
    os.mkdir(folder)
    path = os.path.join(folder, os.fsdecode(b"cl\xffip.mkv"))
    write_video(path, scene.frames, 25.0, lossless=True)
    assert not _ffmpeg.safe_name(path)
    assert _ffmpeg.probe(path).frame_count == 5
    got = np.stack([np.frombuffer(b, np.uint8) for b in _ffmpeg.decode(path, 32, 24)])
    np.testing.assert_array_equal(got.reshape(scene.frames.shape), scene.frames)


def test_the_early_questions_are_asked_once_whoever_asks_first(monkeypatch) -> None:
    """ffmpeg's demuxers and options, asked by :func:`ask_early`'s thread while the caller
    asks too: one run of ffmpeg each."""
    from bpvideo.sources import frame_times

    runs: list[list[str]] = []
    real = subprocess.run
    monkeypatch.setattr(
        subprocess, "run", lambda cmd, **kw: runs.append(cmd[1:]) or real(cmd, **kw)
    )
    monkeypatch.setattr(frame_times, "_ASKED", {})
    _ffmpeg._listed_demuxers.cache_clear()
    thread = _ffmpeg.ask_early()
    listed = _ffmpeg._allowed_demuxers().split(",")
    thread.join(60)
    assert "matroska" in listed and "concat" not in listed
    asked = sorted(r for r in runs if "-demuxers" in r or "full" in r)
    assert asked == [["-hide_banner", "-demuxers"], ["-hide_banner", "-h", "full"]]
    assert "-fps_mode" in frame_times._options_of(_ffmpeg.executable())


def test_a_question_that_failed_early_raises_where_it_is_needed(monkeypatch) -> None:
    import imageio_ffmpeg

    def missing() -> str:
        raise RuntimeError("No ffmpeg exe could be found")

    failures: list[threading.ExceptHookArgs] = []
    monkeypatch.setattr(threading, "excepthook", failures.append)
    monkeypatch.setattr(imageio_ffmpeg, "get_ffmpeg_exe", missing)
    _ffmpeg.ask_early().join(60)
    assert failures == []
    with pytest.raises(InputError, match="ffmpeg is not available"):
        _ffmpeg.executable()


def test_a_forked_child_is_not_held_by_its_parents_question() -> None:
    """A question under way in a thread of the parent at a fork: the child asks its own."""
    held, done = threading.Event(), threading.Event()

    def ask() -> None:
        with _ffmpeg._ASKING:
            held.set()
            done.wait(60)

    thread = threading.Thread(target=ask)
    thread.start()
    held.wait(60)
    try:
        pid = os.fork()
        if pid == 0:  # the child: exit 0 once it has the answer (hangs on the parent's lock)
            os._exit(0 if _ffmpeg._allowed_demuxers() else 1)
        for _ in range(600):  # a hang guard only: the child answers in well under a second
            finished, status = os.waitpid(pid, os.WNOHANG)
            if finished:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the child waited for its parent's question")
    finally:
        done.set()
        thread.join()
    assert status == 0
