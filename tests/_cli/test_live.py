"""Live streams read by ``bpvideo separate URL`` (issue 29), against a real local stream:
ffmpeg serving a clip at real time over HTTP on 127.0.0.1.

Each stream lasts a few seconds. The contract: every frame sent gets a mask, the outputs
are complete when the stream ends (or a signal stops the run), a dropped stream is
reconnected, segments roll over and each one is a complete result, and a URL named inside
a file (a playlist) stays refused.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from bpvideo.sinks.outputs import STAGING_PREFIX
from tests.conftest import default_signals, f_measure, process_env, read_masks, street_frames
from tests.live_helpers import FPS, free_port, serve, url, write_clip


@pytest.fixture(scope="module")
def street(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """A 6-second street clip (150 frames of 96x72 at 25 fps) and its ground truth."""
    frames, truth = street_frames(n=150)
    clip = write_clip(tmp_path_factory.mktemp("live") / "street.mkv", frames)
    return clip, truth


def _separate(*args: str | Path, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bpvideo", "separate", *map(str, args)],
                          capture_output=True, env=process_env(), timeout=timeout,
                          check=False)  # fmt: skip


def _summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text())


def _stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.kill()
    server.wait()


def test_stream_every_frame_masked_outputs_complete_events_on_stdout(street, tmp_path):
    clip, truth = street
    port = free_port()
    server = serve(clip, port)
    try:
        done = _separate(url(port), "-o", tmp_path / "out", "--reconnect", "1",
                         "--learn", "0:50", "--events-to", "-", "--count-line",
                         "48,0 48,71")  # fmt: skip
    finally:
        _stop(server)
    assert done.returncode == 0, done.stderr.decode()
    summary = _summary(tmp_path / "out")
    assert summary["frames"] == 150  # every frame sent
    assert summary["mask_numbers"] == list(range(1, 151))
    assert summary["learned"]["live"] is True
    masks = read_masks(tmp_path / "out" / "masks") > 0
    assert masks.shape == truth.shape
    assert f_measure(masks, truth) > 0.8  # H.264 at crf 12 between the clip and bpvideo
    assert (tmp_path / "out" / "background.mp4").stat().st_size > 0
    assert not list((tmp_path / "out").glob(STAGING_PREFIX + "*"))
    lines = [json.loads(line) for line in done.stdout.decode().splitlines()]
    events = [line for line in lines if "event" in line]
    assert events, "the objects crossing the street are events"
    # --count-line tracks objects: each is a line (objects.csv's row) as it ends, and the
    # counts so far follow each block in which one crossed the line.
    objects = [line for line in lines if "object" in line]
    counted = [line for line in lines if "counts" in line]
    assert len(events) + len(objects) + len(counted) == len(lines)
    with open(tmp_path / "out" / "objects.csv", newline="") as handle:
        assert [int(r["object"]) for r in csv.DictReader(handle)] == [
            o["object"] for o in objects
        ]  # the same objects as the result's (in the order they ended)
    assert counted and counted[-1]["counts"] == summary["counts"]
    totals = [sum(c["counts"]["48,0 48,71"].values()) for c in counted]
    assert totals == sorted(set(totals)) and totals[-1] >= 2
    # The arrival clock: times of day of the frames' arrival, on the stream's own clock.
    assert summary["start_time_source"] == "arrival"
    start = dt.datetime.fromisoformat(summary["start_time"])
    assert start.utcoffset() is not None
    for e in events:
        when = dt.datetime.fromisoformat(e["start_time_of_day"])
        assert when >= start and e["end_time_of_day"] >= e["start_time_of_day"]
    assert [e["event"] for e in events] == list(range(1, len(events) + 1))
    assert all(1 <= e["start_frame"] <= e["end_frame"] <= 150 for e in events)
    ends = [e["end_frame"] for e in events]
    assert all(a < b["start_frame"] for a, b in zip(ends, events[1:], strict=False))


def test_dropped_stream_is_reconnected(street, tmp_path):
    clip, _ = street
    port = free_port()
    first = serve(clip, port)
    proc = subprocess.Popen([sys.executable, "-m", "bpvideo", "separate", url(port), "-o",
                             tmp_path / "out", "--reconnect", "8", "--learn", "0:50",
                             "--segment", "4s"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=process_env())  # fmt: skip
    try:
        first.wait(timeout=30)  # the whole clip was sent: the connection closes
        time.sleep(1.0)  # a gap with no server at all
        second = serve(clip, port)
        _, err = proc.communicate(timeout=60)
        _stop(second)
    finally:
        _stop(first)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err.decode()
    log = err.decode()
    assert "the stream dropped after 150 frame(s)" in log
    assert "reconnected after a gap of" in log
    segments = sorted((tmp_path / "out").iterdir())
    summaries = [_summary(folder) for folder in segments]
    assert [s["frames"] for s in summaries] == [100, 100, 100]  # both connections, numbered on
    assert sum(len(list((f / "masks").glob("bin*.png"))) for f in segments) == 300
    # The arrival clock: the gap (a second at least with no server) is a gap in the
    # times, no frame or time made up for it; before and after it, real time.
    times = np.concatenate([s["times"] for s in summaries])
    steps = np.diff(times)
    assert summaries[0]["start_time_source"] == "arrival" and (steps >= 0).all()
    assert steps[149] > 0.9
    assert times[149] > 4.0 and times[299] - times[150] > 4.0  # 6 s of frames sent each
    # Each segment is named after its first frame's arrival, the gap included (it was
    # named after the frames counted at the stream's rate: a second early or more).
    for folder, summary in zip(segments, summaries, strict=True):
        began = dt.datetime.fromisoformat(summary["start_time"]).timestamp() + summary["times"][0]
        names = {
            time.strftime("%Y-%m-%dT%H-%M-%S", time.localtime(began + d)) for d in (-1e-3, 1e-3)
        }
        assert folder.name in names  # start_time is written to the millisecond


def test_segments_roll_over_each_complete_and_masks_stream(street, tmp_path):
    clip, truth = street
    port = free_port()
    server = serve(clip, port)
    raw = tmp_path / "masks.raw"
    try:
        done = _separate(url(port), "-o", tmp_path / "out", "--reconnect", "1", "--segment",
                         "2s", "--learn", "0:50", "--masks-to", raw)  # fmt: skip
    finally:
        _stop(server)
    assert done.returncode == 0, done.stderr.decode()
    segments = sorted(p for p in (tmp_path / "out").iterdir())
    assert len(segments) == 3  # 150 frames in segments of 2 s (50 frames)
    assert done.stdout.decode().split() == [str(p) for p in segments]
    numbers = []
    for folder in segments:
        summary = _summary(folder)
        assert summary["frames"] == 50
        assert len(list((folder / "masks").glob("bin*.png"))) == 50
        assert (folder / "background.mp4").exists() and (folder / "background.png").exists()
        numbers += summary["mask_numbers"]
    assert numbers == list(range(1, 151))
    streamed = np.fromfile(raw, np.uint8).reshape(150, 72, 96) > 0
    on_disk = np.concatenate([read_masks(folder / "masks") for folder in segments]) > 0
    assert np.array_equal(streamed, on_disk)
    assert f_measure(streamed, truth) > 0.8
    # `bpvideo events` finds each segment's events again, times of day included: the
    # arrival clock keeps what summary.json and frames.csv record (ms, us)
    from bpvideo.sinks.rederive import rederive

    for folder in segments:
        before = {n: (folder / n).read_bytes() for n in ("events.csv", "frames.csv")}
        rederive(folder)
        assert {n: (folder / n).read_bytes() for n in before} == before, folder.name


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_closes_the_segment_as_a_complete_result(street, tmp_path, signum):
    clip, _ = street
    port = free_port()
    server = serve(clip, port, loop=3)  # 24 s of stream: stopped long before its end
    proc = subprocess.Popen([sys.executable, "-m", "bpvideo", "separate", url(port), "-o",
                             tmp_path / "out", "--segment", "4s", "--learn", "0:50"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=process_env(),
                            preexec_fn=default_signals)  # fmt: skip
    try:
        # signalled once the process wrote a mask of its second segment: the first is
        # closed (its own files say so), the second being written; never a guess of time
        second = f"*/{STAGING_PREFIX}*/masks/bin*.png"
        while proc.poll() is None and not (
            list((tmp_path / "out").glob("*/summary.json"))
            and list((tmp_path / "out").glob(second))
        ):
            time.sleep(0.01)  # polls the process's own files
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=300)
    finally:
        _stop(server)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err.decode()
    assert f"stopped by signal {int(signum)}" in err.decode()
    segments = sorted((tmp_path / "out").iterdir())
    assert len(segments) == 2
    assert _summary(segments[0])["frames"] == 100
    last = _summary(segments[1])
    assert 0 < last["frames"] <= 100
    assert len(list((segments[1] / "masks").glob("bin*.png"))) == last["frames"]
    assert not list((tmp_path / "out").glob(f"*/{STAGING_PREFIX}*"))


def test_a_signal_while_the_stream_opens_stops_at_once(tmp_path):
    """SIGINT while the first connection waits for a camera that accepted and sends
    nothing: the run stops at once as any run stopped before its outputs (one line, exit
    130, no ffmpeg left). It waited out the read timeout (5 s), then said "cannot open the
    stream" and exit 2, as if the camera had failed."""
    import psutil

    with __import__("socket").socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        target = url(listener.getsockname()[1])
        proc = subprocess.Popen([sys.executable, "-m", "bpvideo", "separate", target, "-o",
                                 tmp_path / "out"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=process_env(),
                                preexec_fn=default_signals)  # fmt: skip
        try:
            connection, _ = listener.accept()  # its ffmpeg connected: the stream is opening
            with connection:
                connection.recv(4096)  # the request: ffmpeg now waits for the answer
                children = psutil.Process(proc.pid).children(recursive=True)
                proc.send_signal(signal.SIGINT)
                _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, err.decode()
    said = err.decode().strip()  # after a newline, as every interrupted run (a ^C line)
    assert said.startswith("bpvideo: interrupted: no output was kept")
    assert len(said.splitlines()) == 1
    assert not (tmp_path / "out").exists()
    _, alive = psutil.wait_procs(children, timeout=30)  # a hang guard: they are gone at once
    assert not alive


def test_a_signal_while_stdin_stays_open_exits_cleanly(tmp_path):
    """Live stdin still open (its writer sends no more) when SIGINT stops the run: the
    outputs are complete and the exit is 0. The reading thread held sys.stdin's lock in a
    read at exit: "Fatal Python error: _enter_buffered_busy", SIGABRT."""
    import os

    read_end, write_end = os.pipe()
    proc = subprocess.Popen([sys.executable, "-m", "bpvideo", "separate", "-", "--live", "-o",
                             tmp_path / "out", "--learn", "0:40", "--no-video"],
                            stdin=read_end, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=process_env(), preexec_fn=default_signals)  # fmt: skip
    os.close(read_end)
    try:
        os.write(write_end, _y4m(tmp_path / "c.mkv", n=60))
        for line in proc.stderr:  # the frames sent are being masked: the process says so
            if b"learned the background" in line:
                break
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        os.close(write_end)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err.decode()
    assert "Fatal Python error" not in err.decode()
    frames = _summary(tmp_path / "out")["frames"]  # those queued at the stop are dropped
    assert 40 <= frames <= 60
    assert len(list((tmp_path / "out" / "masks").glob("bin*.png"))) == frames


def test_live_stdin(tmp_path):
    frames, truth = street_frames(n=80)
    clip = write_clip(tmp_path / "c.mkv", frames)
    import imageio_ffmpeg

    y4m = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-loglevel", "error", "-i", clip,
                          "-f", "yuv4mpegpipe", "-pix_fmt", "yuv444p", "-"],
                         capture_output=True, check=True).stdout  # fmt: skip
    args = ["separate", "-", "--live", "-o", tmp_path / "out", "--learn", "0:40", "--no-video"]
    cmd = [sys.executable, "-m", "bpvideo", *map(str, args)]
    done = subprocess.run(cmd, input=y4m, capture_output=True, env=process_env(), timeout=90,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    assert _summary(tmp_path / "out")["frames"] == 80
    masks = read_masks(tmp_path / "out" / "masks") > 0
    assert f_measure(masks, truth) > 0.8


def _y4m(path: Path, n: int = 150) -> bytes:
    """The street clip of ``n`` frames as a y4m stream (what ``-`` with ``--live`` reads)."""
    import imageio_ffmpeg

    clip = write_clip(path, street_frames(n=n)[0])
    return subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-loglevel", "error", "-i", clip,
                           "-f", "yuv4mpegpipe", "-pix_fmt", "yuv444p", "-"],
                          capture_output=True, check=True).stdout  # fmt: skip


def _live_stdin(data: bytes, *args: str | Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "bpvideo", "separate", "-", "--live", *map(str, args)]
    return subprocess.run(cmd, input=data, capture_output=True, env=process_env(), timeout=120,
                          check=False)  # fmt: skip


def test_live_stdin_reads_raw_frames_of_the_given_size(tmp_path):
    """``--live`` reads raw frames of ``--size``/``--pix-fmt`` on stdin as ``-`` does (they
    were decoded as a container and refused with "give --size", which was given). A stream
    cut inside a frame keeps the frames before it and says so (it said nothing); cut
    inside the first frame, it is the error of the run."""
    frames, truth = street_frames(n=30)
    gray = frames.mean(axis=3).astype(np.uint8).tobytes()
    raw = ["--size", "96x72", "--pix-fmt", "gray", "--fps", "10", "--no-video"]
    done = _live_stdin(gray + bytes(100), "-o", tmp_path / "out", "--learn", "0:20", *raw)
    err = done.stderr.decode()
    assert done.returncode == 0, err
    summary = _summary(tmp_path / "out")
    assert (summary["frames"], summary["fps"]) == (30, 10.0)
    assert f_measure(read_masks(tmp_path / "out" / "masks") > 0, truth) > 0.8
    assert "stdin: stream ended inside frame 30 (100 of 6912 bytes" in err
    assert "the 30 frame(s) before it are kept" in err
    done = _live_stdin(bytes(100), "-o", tmp_path / "cut", *raw)
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert err.startswith("bpvideo: error: stdin: stream ended inside frame 0") and "--size" in err
    assert len(err.splitlines()) == 1 and not (tmp_path / "cut").exists()


def test_a_stream_without_video_is_said_so(tmp_path):
    """An audio-only stream: "it has no video stream" (it said "Error opening output
    files: Invalid argument", ffmpeg's last line)."""
    import imageio_ffmpeg

    audio = tmp_path / "audio.mka"
    subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-loglevel", "error", "-f", "lavfi", "-i",
                    "sine=d=10", "-c:a", "mp2", audio], check=True)  # fmt: skip
    port = free_port()
    server = serve(audio, port)
    try:
        done = _separate(url(port), "-o", tmp_path / "out", "--reconnect", "0.1")
    finally:
        _stop(server)
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert len(err.splitlines()) == 1
    assert f"{url(port)}: cannot open the stream (it has no video stream)" in err
    assert not (tmp_path / "out").exists()


def test_an_events_to_pipe_without_a_reader_is_refused(tmp_path):
    """--events-to a named pipe that no program reads: refused in one line, as --masks-to
    is (its open waited for a reader for ever, deaf to Ctrl-C, OUTDIR held)."""
    import os

    fifo = tmp_path / "events.fifo"
    os.mkfifo(fifo)
    done = _live_stdin(_y4m(tmp_path / "c.mkv", n=30), "-o", tmp_path / "out", "--learn",
                       "0:20", "--no-video", "--events-to", fifo)  # fmt: skip
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert err.startswith(f"bpvideo: error: {fifo}: no program reads this pipe (--events-to)")
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_a_masks_to_reader_that_dies_is_told_with_what_was_kept(tmp_path):
    """The reader of the --masks-to FIFO stops after 60 masks: the segments closed before
    are complete and kept, and the message says so (it said "nothing was kept")."""
    import os

    fifo = tmp_path / "masks.fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["head", "-c", str(60 * 72 * 96), str(fifo)],
                              stdout=subprocess.DEVNULL)  # fmt: skip
    try:
        done = _live_stdin(_y4m(tmp_path / "c.mkv"), "-o", tmp_path / "out", "--learn", "0:40",
                           "--no-video", "--segment", "1s", "--masks-to", fifo, "-q")  # fmt: skip
    finally:
        reader.kill()
        reader.wait()
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    kept = sorted(p for p in (tmp_path / "out").iterdir())
    assert len(kept) >= 2  # 25 frames each: at least the first 50 of the 60 read
    for folder in kept:
        assert _summary(folder)["frames"] == 25
    assert "nothing was kept" not in err
    assert err.startswith(f"bpvideo: error: {fifo}: the program reading this pipe stopped")
    assert (f"kept: the {len(kept)} segment(s) closed before it, complete, in "
            f"{tmp_path / 'out'} ({kept[0].name} to {kept[-1].name}); the one being written "
            "was removed") in err  # fmt: skip


@pytest.mark.parametrize("segment", [None, "1s"])
def test_a_full_disk_in_a_live_run_is_the_disk_full_error(small_disk, tmp_path, segment):
    """ENOSPC part-way through a live stream: the same one-line disk-full error as a file
    run (it was "internal error: OSError"), naming the file; closed segments are kept."""
    out = small_disk / "out"
    extra = ["--segment", segment] if segment else []
    done = _live_stdin(_y4m(tmp_path / "c.mkv"), "-o", out, "--learn", "0:40", "-q", *extra)
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert len(err.splitlines()) == 1 and "internal error" not in err, err
    assert "disk full (no space left on the device)" in err and STAGING_PREFIX not in err
    if segment is None:
        assert err.endswith("; nothing was kept\n"), err
        assert not out.exists()
    else:
        kept = sorted(out.iterdir())
        assert all((folder / "summary.json").is_file() for folder in kept)
        assert ("nothing was kept" in err) == (not kept), err


@pytest.mark.parametrize("kind", ["m3u8", "ffconcat"])
def test_url_named_in_a_file_stays_refused(tmp_path, kind):
    port = free_port()
    target = url(port)
    playlist = tmp_path / f"list.{kind}"
    if kind == "m3u8":
        playlist.write_text(f"#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\n{target}\n"
                            "#EXT-X-ENDLIST\n")  # fmt: skip
    else:
        playlist.write_text(f"ffconcat version 1.0\nfile '{target}'\n")
    with __import__("socket").socket() as listener:  # any connection would be seen here
        listener.bind(("127.0.0.1", port))
        listener.listen(1)
        listener.settimeout(0.1)
        done = _separate(playlist, "-o", tmp_path / "out")
        with pytest.raises(TimeoutError):
            listener.accept()
    assert done.returncode == 2, done.stderr.decode()
    assert len(done.stderr.decode().strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_live_options_refused_for_files(tiny_clip, tmp_path):
    done = _separate(tiny_clip, "-o", tmp_path / "out", "--segment", "1h")
    assert done.returncode == 2
    assert "--segment applies to live inputs" in done.stderr.decode()
    done = _separate(tiny_clip, "--live", "-o", tmp_path / "out")
    assert done.returncode == 2
    assert "--live reads stdin" in done.stderr.decode()


@pytest.mark.parametrize("target", ["http://127.0.0.1:{port}/x.ts", "udp://127.0.0.1:{port}",
                                    "srt://127.0.0.1:{port}?mode=listener"])  # fmt: skip
def test_unreachable_url_is_one_line(tmp_path, target):
    """Nothing there: one line, exit 2. On UDP (nothing refuses a datagram) and for an SRT
    listener that no camera calls, the read timeout says so; ffmpeg's rw_timeout never
    ended those waits: the run hung."""
    target = target.format(port=free_port())
    done = _separate(target, "-o", tmp_path / "out", "--reconnect", "0.5")
    assert done.returncode == 2
    err = done.stderr.decode().strip().splitlines()
    assert len(err) == 1 and "cannot open the stream" in err[0], err
    assert not (tmp_path / "out").exists()


def test_rate_of_the_stream(street, tmp_path):
    """The outputs keep the stream's rate."""
    clip, _ = street
    port = free_port()
    server = serve(clip, port)
    try:
        done = _separate(url(port), "-o", tmp_path / "out", "--no-video", "--learn", "0:50",
                         "--reconnect", "0.5", "--frames", "60")  # fmt: skip
    finally:
        _stop(server)
    assert done.returncode == 0, done.stderr.decode()
    summary = _summary(tmp_path / "out")
    assert summary["fps"] == FPS
    assert summary["frames"] == 60
