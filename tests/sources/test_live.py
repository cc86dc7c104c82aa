"""Live sources (bpvideo/sources/live.py): which INPUTs are URLs, what ffmpeg may open for
them, passwords kept out of messages."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

import pytest

from bpvideo.sources.connection import URL_SCHEMES, command, is_url, redact


@pytest.mark.parametrize("name", ["rtsp://10.0.0.5/s1", "RTSPS://h/x", "http://h:8080/x.ts",
                                  "https://h/x", "rtmp://h/app", "udp://0.0.0.0:5000",
                                  "tcp://h:1", "srt://h:9000"])  # fmt: skip
def test_urls(name):
    assert is_url(name)


NOT_URLS = ["cam.mp4", "file:cam.mp4", "concat:a.mp4|b.mp4", "-", "rtsp:/x", "./rtsp://x",
            "subfile,,start,0,end,0,,:x.mp4"]  # fmt: skip


@pytest.mark.parametrize("name", NOT_URLS)
def test_not_urls(name):
    assert not is_url(name)


def test_ffmpeg_may_open_the_url_protocol_family_only():
    cmd = command("http://127.0.0.1:8080/x.ts", None)
    allowed = cmd[cmd.index("-protocol_whitelist") + 1].split(",")
    assert "file" not in allowed and set(allowed) <= {"http", "tcp"}
    for scheme, protocols in URL_SCHEMES.items():
        assert "file" not in protocols.split(","), scheme
    assert cmd[cmd.index("-i") + 1] == "http://127.0.0.1:8080/x.ts"
    assert "-fps_mode" in cmd and cmd[cmd.index("-fps_mode") + 1] == "passthrough"


def test_a_reconnection_keeps_the_first_size():
    cmd = command("rtsp://h/x", (320, 240))
    assert cmd[cmd.index("-s") + 1] == "320x240"


def test_passwords_are_not_shown():
    assert redact("rtsp://admin:s3cret@10.0.0.5:554/s1") == "rtsp://admin:***@10.0.0.5:554/s1"
    assert redact("http://h/x?user=a") == "http://h/x?user=a"


def _serve_once_then_trickle(listener, stop, first: bool = True) -> None:
    """An HTTP "camera" on ``listener``: the first client gets a 3-frame y4m stream and
    the connection closes (a drop); every later one (every one, ``first=False``) gets a
    200 answer, then a byte now and then, never a frame (a server that keeps ffmpeg's
    read timeout from firing)."""
    import time

    y4m = b"YUV4MPEG2 W48 H36 F25:1 Ip A1:1 C444\n" + (b"FRAME\n" + bytes(48 * 36 * 3)) * 3
    answer = b"HTTP/1.0 200 OK\r\nContent-Type: video/x-yuv4mpeg\r\n\r\n"
    listener.settimeout(0.2)
    while not stop.is_set():
        try:
            conn, _ = listener.accept()
        except OSError:
            continue
        with conn:
            conn.recv(4096)
            if first:
                conn.sendall(answer + y4m)
                first = False
                continue
            conn.sendall(answer)
            try:
                while not stop.is_set():
                    conn.sendall(b"\0")
                    time.sleep(0.2)
            except OSError:  # ffmpeg was killed
                pass


@contextlib.contextmanager
def _camera(first: bool = True) -> Iterator[str]:
    """The URL of :func:`_serve_once_then_trickle` on 127.0.0.1 (``first``: its first
    client gets 3 frames), served until the block ends."""
    stop = threading.Event()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        server = threading.Thread(target=_serve_once_then_trickle, args=(listener, stop, first),
                                  daemon=True)  # fmt: skip
        server.start()
        try:
            yield f"http://127.0.0.1:{listener.getsockname()[1]}/x.y4m"
        finally:
            stop.set()
            server.join(10)


def test_a_reconnection_attempt_ends_within_the_reconnect_seconds():
    """After a drop, an attempt that a server keeps opening (a trickle of bytes, no frame)
    ends when the ``reconnect`` seconds are over, and so does the stream, its frames kept.
    The attempt's ffmpeg waited for a frame with no end: the stream never ended."""
    from bpvideo.sources.live import LiveReader

    with _camera() as url:
        reader = LiveReader(url, reconnect=1.0)
        got: list = []
        consumer = threading.Thread(target=lambda: got.extend(reader.frames()), daemon=True)
        consumer.start()
        consumer.join(60)  # a hang guard: the stream ends about 1 s after the drop
        ended = not consumer.is_alive()
        reader.close()
    assert ended, "the reconnection attempt outlived --reconnect"
    assert len(got) == 3 and reader.gaps == []


def test_an_attempt_that_gets_no_frame_ends_at_its_timeout():
    """The one connection's bound, which the first connection (``max(reconnect, 20 s)``)
    and each reconnection (the seconds left) use: a server that trickles bytes kept the
    attempt open for ever; now it fails as a stream that cannot be opened."""
    from bpvideo.sources.connection import connect

    procs: list = []
    with _camera(first=False) as url, pytest.raises(OSError, match=r"no frame within 0\.5s"):
        connect(url, None, procs.append, timeout=0.5)
    assert procs and procs[0].poll() is not None  # its ffmpeg is gone
    assert procs[0].stdout.closed and procs[0].stderr.closed  # its pipes too


def test_the_first_connection_waits_for_its_first_frame_at_most_first_frame(monkeypatch):
    """The first connection to a server that answers and trickles bytes, never a frame,
    ends after :data:`~bpvideo.sources.live.FIRST_FRAME` seconds (20 s; 0.5 s here) as a
    stream that cannot be opened, its ffmpeg gone: the run neither starts nor hangs."""
    from bpvideo.errors import InputError
    from bpvideo.sources import live

    monkeypatch.setattr(live, "FIRST_FRAME", 0.5)
    monkeypatch.setattr(live, "FIRST_TRIES", 0.0)  # one attempt
    procs, waits, real_connect = [], [], live.connect

    def connect(name, size, started, timeout=None):
        waits.append(timeout)
        assert timeout is not None, "the first connection waits with no bound"
        return real_connect(name, size, lambda p: (procs.append(p), started(p)), timeout)

    monkeypatch.setattr(live, "connect", connect)
    with _camera(first=False) as url:
        with pytest.raises(InputError, match=r"open the stream \(no frame within 0\.5s\)"):
            live.LiveReader(url, reconnect=0.2)
    assert waits == [0.5]  # max(reconnect, FIRST_FRAME)
    assert procs and all(p.poll() is not None for p in procs)
    assert all(p.stdout.closed and p.stderr.closed for p in procs)
