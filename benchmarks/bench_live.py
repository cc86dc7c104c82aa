"""Live streams (issue 29): latency, quality and a long run of ``bpvideo separate URL``.

Every stream is real: ffmpeg serves a clip over HTTP on 127.0.0.1 as MPEG-TS (H.264, a
keyframe every second), at real time (``-re``) unless said otherwise, and bpvideo reads
it as a camera. Masks are read from ``--masks-to`` (a FIFO) as bpvideo writes them, each
stamped with its arrival time.

- ``latency``: a 25 fps 320x240 stream (cdnet_highway's frames, or a synthetic street
  when ../shared/data is absent). The first mask's delay from the stream's start, and
  after the first 10 s the share of masks written within 1 s of their frame being sent.
  Frame ``i`` counts as sent at ``max(served + i / 25, start)``: the server paces its
  reading from its own start ``served`` (``-re`` without its initial burst:
  ``-readrate_initial_burst 0``) and writes nothing before bpvideo, started at ``start``,
  has connected; no frame is sent earlier, so the delays are upper bounds. Then:
  every frame masked, the outputs complete.
- ``quality``: each dev sequence of ../shared/data served at real time (lossless H.264,
  yuv444p) and read live at the defaults; F-measure against the batch run's
  (``bpvideo.separate`` of the same frames) and MOG2's.
- ``long``: cdnet_highway looped with a light ramp (``eq=brightness``, a sine of
  +-``--swing`` of the range over ``--period`` seconds), served as fast as bpvideo reads
  it, with ``--segment``; stopped by SIGINT after ``--minutes`` of wall time or
  ``--stream-minutes`` of stream, whichever comes first. The resident memory of
  the bpvideo process over time, and the F-measure of each pass over the clip against
  its ground truth (the background follows the light: masks do not fill).

Examples::

    python benchmarks/bench_live.py latency
    python benchmarks/bench_live.py quality
    python benchmarks/bench_live.py long --minutes 15
    python benchmarks/bench_live.py long --minutes 150 --stream-minutes 120 --period 1200
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _sequences import DATA, Sequence, discover, run_bpvideo, run_opencv

from bpvideo.sinks.writers import write_video

FPS = 25.0
REPO = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(clip: Path, port: int, *, real_time: bool = True, lossless: bool = False,
           extra: tuple[str, ...] = ()) -> subprocess.Popen:  # fmt: skip
    import imageio_ffmpeg

    codec = (["-qp", "0", "-pix_fmt", "yuv444p"] if lossless
             else ["-crf", "18", "-pix_fmt", "yuv420p"])  # fmt: skip
    cmd = [imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-loglevel", "error",
           *(["-re", "-readrate_initial_burst", "0"] if real_time else []), *extra,
           "-i", str(clip), "-c:v", "libx264",
           "-preset", "ultrafast", "-tune", "zerolatency", "-g", str(int(FPS)), *codec,
           "-f", "mpegts", "-listen", "1", f"http://127.0.0.1:{port}/x.ts"]  # fmt: skip
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


def _bpvideo(log: Path, *args: str | Path) -> subprocess.Popen:
    """``bpvideo separate ARGS``, its stderr into ``log`` (a pipe left unread would fill)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), OPENBLAS_NUM_THREADS="1")
    with open(log, "wb") as err:
        return subprocess.Popen([sys.executable, "-m", "bpvideo", "separate", *map(str, args)],
                                stdout=subprocess.DEVNULL, stderr=err, env=env)  # fmt: skip


class MaskReader(threading.Thread):
    """Reads raw masks from a FIFO as they come; keeps each one's arrival time and hands
    each mask to ``on_mask`` (when given)."""

    def __init__(self, fifo: Path, shape: tuple[int, int], on_mask=None) -> None:
        super().__init__(daemon=True)
        self.fifo, self.shape, self.on_mask = fifo, shape, on_mask
        self.size = shape[0] * shape[1]
        self.times: list[float] = []
        self.start()

    def run(self) -> None:
        with open(self.fifo, "rb", buffering=0) as fh:
            buf = bytearray()
            while True:
                chunk = fh.read(1 << 20)
                if not chunk:
                    return
                buf += chunk
                now = time.time()
                while len(buf) >= self.size:
                    self.times.append(now)
                    if self.on_mask is not None:
                        mask = np.frombuffer(bytes(buf[: self.size]), np.uint8) > 0
                        self.on_mask(mask.reshape(self.shape))
                    del buf[: self.size]


def _clip_frames() -> tuple[np.ndarray, str]:
    """320x240 frames: cdnet_highway's, or a synthetic street."""
    if (DATA / "cdnet_highway").is_dir():
        return Sequence.load("cdnet_highway").frames, "cdnet_highway (700 frames)"
    from bpvideo.synthetic import make_scene

    scene = make_scene(320, 240, 700, seed=0)
    frames = np.repeat(np.clip(scene.frames, 0, 255).astype(np.uint8)[..., None], 3, axis=3)
    return frames, "a synthetic street (700 frames)"


def ts_frames(data: bytes, pid: int = 0x100) -> list[bytes]:
    """An MPEG-TS file cut into frames: each piece starts at a packet that starts a PES of
    the video stream (``pid``: ffmpeg's first stream), with the packets of other PIDs
    (tables, clock) that come before the next one."""
    pieces, start = [], 0
    for at in range(0, len(data) - 187, 188):
        head = data[at : at + 4]
        if head[0] != 0x47:
            raise ValueError(f"not MPEG-TS at byte {at}")
        if ((head[1] & 0x1F) << 8 | head[2]) == pid and head[1] & 0x40 and at > start:
            if any(data[p + 1] & 0x40 and ((data[p + 1] & 0x1F) << 8 | data[p + 2]) == pid
                   for p in range(start, at, 188)):  # fmt: skip
                pieces.append(data[start:at])
                start = at
    pieces.append(data[start:])
    return pieces


class PacedServer(threading.Thread):
    """Serves MPEG-TS pieces (one per frame) over HTTP on 127.0.0.1 to one client at
    ``fps`` pieces a second, and records when each piece was written to the socket."""

    def __init__(self, pieces: list[bytes], fps: float) -> None:
        super().__init__(daemon=True)
        self.pieces, self.fps = pieces, fps
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.sent: list[float] = []
        self.start()

    def run(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(4096)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: video/mp2t\r\n"
                         b"Connection: close\r\n\r\n")  # fmt: skip
            origin = time.time()
            for k, piece in enumerate(self.pieces):
                delay = origin + k / self.fps - time.time()
                if delay > 0:
                    time.sleep(delay)
                self.sent.append(time.time())
                conn.sendall(piece)
        self.sock.close()


def latency(args: argparse.Namespace) -> dict:
    import imageio_ffmpeg

    frames, what = _clip_frames()
    n = len(frames)
    with tempfile.TemporaryDirectory(prefix="bench-live-") as tmp:
        tmp = Path(tmp)
        clip, ts = tmp / "clip.mkv", tmp / "clip.ts"
        write_video(clip, frames, FPS, lossless=True)
        subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-loglevel", "error", "-i", clip,
                        "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency",
                        "-g", str(int(FPS)), "-crf", "18", "-pix_fmt", "yuv420p", ts],
                       check=True)  # fmt: skip
        pieces = ts_frames(ts.read_bytes())
        fifo = tmp / "masks.fifo"
        os.mkfifo(fifo)
        server = PacedServer(pieces, FPS)
        proc = _bpvideo(tmp / "log", f"http://127.0.0.1:{server.port}/x.ts", "-o",
                        tmp / "out", "--masks-to", fifo, "--reconnect", "1")  # fmt: skip
        reader = MaskReader(fifo, frames.shape[1:3])
        proc.wait()
        err = (tmp / "log").read_text()
        reader.join(10)
        server.join(10)
        summary = json.loads((tmp / "out" / "summary.json").read_text())
    count = min(len(reader.times), len(server.sent))
    delay = np.array(reader.times[:count]) - np.array(server.sent[:count])
    later = delay[np.arange(count) / FPS >= 10.0]
    result = {
        "clip": what,
        "frames_sent": n,
        "ts_pieces": len(pieces),
        "masks_written": len(reader.times),
        "summary_frames": summary["frames"],
        "exit": proc.returncode,
        "first_mask_s": round(reader.times[0] - server.sent[0], 2) if count else None,
        "within_1s_after_10s": round(float((later <= 1.0).mean()), 4) if len(later) else None,
        "delay_after_10s_median_s": round(float(np.median(later)), 3) if len(later) else None,
        "delay_after_10s_p99_s": round(float(np.percentile(later, 99)), 3) if len(later) else None,
        "delay_after_10s_max_s": round(float(later.max()), 3) if len(later) else None,
    }
    if proc.returncode:
        result["stderr"] = err[-2000:]
    return result


def _live_masks(seq: Sequence) -> np.ndarray:
    """The masks of ``seq`` served at real time, losslessly, and read live."""
    with tempfile.TemporaryDirectory(prefix="bench-live-") as tmp:
        tmp = Path(tmp)
        clip = tmp / "clip.mkv"
        write_video(clip, seq.frames, FPS, lossless=True)
        port = _free_port()
        server = _serve(clip, port, lossless=True)
        proc = _bpvideo(tmp / "log", f"http://127.0.0.1:{port}/x.ts", "-o", tmp / "out",
                        "--no-video", "--reconnect", "1")  # fmt: skip
        proc.wait()
        err = (tmp / "log").read_text()
        server.wait()
        if proc.returncode:
            raise SystemExit(f"{seq.name}: bpvideo failed: {err[-1000:]}")
        files = sorted((tmp / "out" / "masks").glob("bin*.png"))
        return np.stack([cv2.imread(str(f), cv2.IMREAD_GRAYSCALE) > 0 for f in files])


def quality(args: argparse.Namespace) -> dict:
    rows = {}
    for name in args.sequences or discover():
        seq = Sequence.load(name)
        masks = _live_masks(seq)
        if len(masks) != len(seq.frames):
            raise SystemExit(f"{name}: {len(masks)} masks for {len(seq.frames)} frames")
        live = seq.score(masks)["f_measure"]
        batch = run_bpvideo(seq, {})["f_measure"]
        mog2 = run_opencv(seq, "MOG2")["f_measure"]
        rows[name] = {"live": round(live, 3), "batch": round(batch, 3), "mog2": round(mog2, 3),
                      "live_over_batch": round(live / batch, 3) if batch else None}  # fmt: skip
        print(name, rows[name], file=sys.stderr, flush=True)
    return rows


def _truth(seq: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """cdnet_highway's ground truth: foreground, and the pixels scored."""
    roi = cv2.imread(str(DATA / "cdnet_highway" / "ROI.bmp"), cv2.IMREAD_GRAYSCALE) > 0
    gt = seq.labels()
    return gt == 255, ((gt == 255) | (gt == 0) | (gt == 50)) & roi


def long_run(args: argparse.Namespace) -> dict:
    import psutil

    seq = Sequence.load("cdnet_highway")
    n, (h, w) = len(seq.frames), seq.frames.shape[1:3]
    truth, scored = _truth(seq)
    ramp = f"eq=brightness='{args.swing}*sin(2*PI*t/{args.period})':eval=frame"
    with tempfile.TemporaryDirectory(prefix="bench-live-", dir=args.tmp) as tmp:
        tmp = Path(tmp)
        clip = tmp / "clip.mkv"
        write_video(clip, seq.frames, FPS, lossless=True)
        fifo = tmp / "masks.fifo"
        os.mkfifo(fifo)
        port = _free_port()
        import imageio_ffmpeg

        cmd = [imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-loglevel", "error",
               "-stream_loop", "-1", "-i", str(clip), "-vf", ramp, "-c:v", "libx264",
               "-preset", "ultrafast", "-tune", "zerolatency", "-g", "25", "-crf", "18",
               "-pix_fmt", "yuv420p", "-f", "mpegts", "-listen", "1",
               f"http://127.0.0.1:{port}/x.ts"]  # fmt: skip
        server = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}/x.ts"
        proc = _bpvideo(tmp / "log", url, "-o", tmp / "out", "--masks-to", fifo, "--segment",
                        args.segment, "--reconnect", "2")  # fmt: skip
        scorer = PassScorer(n, truth, scored)
        reader = MaskReader(fifo, (h, w), scorer.add)
        samples = []
        t0 = time.time()
        ps = psutil.Process(proc.pid)
        masks_seen = 0
        frames_wanted = args.stream_minutes * 60 * FPS if args.stream_minutes else np.inf
        while (time.time() - t0 < args.minutes * 60 and proc.poll() is None
               and len(reader.times) < frames_wanted):  # fmt: skip
            time.sleep(5)
            own = ps.memory_info().rss
            rss = own + sum(c.memory_info().rss for c in ps.children())
            samples.append((round(time.time() - t0), len(reader.times), round(own / 2**20),
                            round(rss / 2**20)))  # fmt: skip
            masks_seen = len(reader.times)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
        err = (tmp / "log").read_text()
        server.kill()
        server.wait()
        reader.join(10)
        per_pass = scorer.scores
        segments = sorted((tmp / "out").iterdir())
        complete = [json.loads((s / "summary.json").read_text())["frames"] for s in segments
                    if (s / "summary.json").exists()]  # fmt: skip
    rss, total = [s[2] for s in samples], [s[3] for s in samples]
    return {
        "wall_s": round(time.time() - t0),
        "frames": len(reader.times),
        "stream_minutes": round(len(reader.times) / FPS / 60, 1),
        "rate_fps": round(masks_seen / max(samples[-1][0], 1), 1) if samples else None,
        "rss_mib_bpvideo_first_last_max": _spread(rss),
        "rss_mib_with_ffmpeg_first_last_max": _spread(total),
        "samples_t_frames_rss_total": samples,
        "f_per_pass": per_pass,
        "segments": len(segments),
        "segment_frames": complete,
        "exit": proc.returncode,
        "stderr_tail": err[-600:],
    }


def _spread(values: list[int]) -> tuple[int, int, int] | None:
    """The third sample (after the start), the last and the largest."""
    return (values[min(2, len(values) - 1)], values[-1], max(values)) if values else None


class PassScorer:
    """F-measure of each full pass over the clip, from masks handed over one by one (scored
    and dropped: never all kept)."""

    def __init__(self, n: int, truth: np.ndarray, scored: np.ndarray) -> None:
        self.n, self.truth, self.scored = n, truth, scored
        self.scores: list[float] = []
        self.counts = np.zeros(3, np.int64)
        self.index = 0

    def add(self, mask: np.ndarray) -> None:
        i = self.index % self.n
        t, s = self.truth[i], self.scored[i]
        self.counts += [np.count_nonzero(mask & t & s), np.count_nonzero(mask & ~t & s),
                        np.count_nonzero(~mask & t & s)]  # fmt: skip
        self.index += 1
        if self.index % self.n == 0:
            tp, fp, fn = self.counts
            self.scores.append(round(2 * tp / max(2 * tp + fp + fn, 1), 4))
            self.counts[:] = 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("latency")
    q = sub.add_parser("quality")
    q.add_argument("--sequences", nargs="+")
    lr = sub.add_parser("long")
    lr.add_argument("--minutes", type=float, default=15.0)
    lr.add_argument("--stream-minutes", type=float, default=None,
                    help="stop after this much stream has been masked")  # fmt: skip
    lr.add_argument("--swing", type=float, default=0.1, help="brightness amplitude (of 1)")
    lr.add_argument("--period", type=float, default=600.0, help="seconds of stream")
    lr.add_argument("--segment", default="10m")
    lr.add_argument("--tmp", default=None, help="folder of the outputs (default: /tmp)")
    args = parser.parse_args(argv)
    run = {"latency": latency, "quality": quality, "long": long_run}[args.what]
    print(json.dumps(run(args), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
