"""A real local stream for the live tests: ffmpeg serving a clip at real time over HTTP on
127.0.0.1 (``-re ... -f mpegts -listen 1 http://127.0.0.1:PORT/x.ts``)."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import numpy as np

from bpvideo.sinks.writers import write_video

FPS = 25.0


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_clip(path: Path, frames: np.ndarray, fps: float = FPS) -> Path:
    """A lossless clip of ``frames`` (what the server streams)."""
    write_video(path, frames, fps, lossless=True)
    return path


def serve(clip: Path, port: int, *, loop: int = 0) -> subprocess.Popen:
    """Start ffmpeg serving ``clip`` at real time (``-re``) as MPEG-TS over HTTP on
    127.0.0.1:``port`` to the first client; ``loop`` more times over (``-stream_loop``).
    H.264 with a keyframe every second, no B-frames (what cameras send)."""
    import imageio_ffmpeg

    cmd = [imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-re",
           "-stream_loop", str(loop), "-i", str(clip), "-c:v", "libx264", "-preset",
           "ultrafast", "-tune", "zerolatency", "-crf", "12", "-g", str(int(FPS)),
           "-pix_fmt", "yuv420p", "-f", "mpegts", "-listen", "1",
           f"http://127.0.0.1:{port}/x.ts"]  # fmt: skip
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)  # fmt: skip


def url(port: int) -> str:
    return f"http://127.0.0.1:{port}/x.ts"
