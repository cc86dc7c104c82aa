"""Live sources (bpvideo/sources/live.py): which INPUTs are URLs, what ffmpeg may open for
them, passwords kept out of messages."""

from __future__ import annotations

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
