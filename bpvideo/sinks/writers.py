"""Videos and masks out, fed frame by frame and written by threads (the writers).

:class:`VideoStream` keeps one ffmpeg encoder open across a long video; :class:`MaskWriter`
writes ``bin%06d.png`` files; :class:`RawMaskSink` writes raw 0/255 masks to a file or
stdout (``--masks-to``). Each writes from its own thread, so that the caller forms the
next frames meanwhile (pipe writes, PNG encoding and file writes release the
interpreter lock).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import signal
import subprocess
import tempfile
from collections.abc import Iterable
from fractions import Fraction
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from bpvideo.errors import Terminated, WorkError, literal
from bpvideo.failures import naming, reason, temp_failure
from bpvideo.settings import default
from bpvideo.sinks.outputs import STOP_SIGNALS, signals_deferred
from bpvideo.sinks.worker import Worker
from bpvideo.sources import ffmpeg as _ffmpeg

__all__ = [
    "TUNED_X264",
    "MaskWriter",
    "VideoStream",
    "encode_png",
    "write_masks",
    "write_streams",
    "write_video",
    "yuv420p",
]


def encode_png(image: np.ndarray) -> bytes:
    """PNG bytes of a uint8 image (grey or BGR)."""
    ok, buf = cv2.imencode(".png", image)
    if not ok:  # pragma: no cover - cv2 only fails on unsupported arrays
        raise WorkError(f"could not encode a {image.shape} {image.dtype} image as PNG")
    return buf.tobytes()


#: Grey level -> luma of BT.601 limited range (16 to 235).
_GREY_LUMA = np.round(16 + np.arange(256) * (219 / 255)).astype(np.uint8)


def yuv420p(frame: np.ndarray) -> np.ndarray:
    """A BGR (H, W, 3) or grey (H, W) uint8 frame of even size as one yuv420p (I420)
    image, (3 H / 2, W) uint8: BT.601, limited range, as H.264 videos are tagged.

    Converted by OpenCV rather than by ffmpeg's default scaler, which truncates chroma
    (U and V one level low: decoded colours up to 5 levels off, red and blue most) and
    costs the encoder more; grey frames get the luma of their level and neutral chroma.
    """
    if frame.ndim == 3:
        return cv2.cvtColor(frame, cv2.COLOR_BGR2YUV_I420)
    h, w = frame.shape
    out = np.empty((h * 3 // 2, w), dtype=np.uint8)
    cv2.LUT(frame, _GREY_LUMA, dst=out[:h])
    out[h:] = 128
    return out


def _write_mask_png(folder: Path, number: int, image: np.ndarray) -> None:
    """``folder/bin%06d.png`` of a 0/255 uint8 mask."""
    path = folder / f"bin{number:06d}.png"
    with naming(path):
        path.write_bytes(encode_png(image))


def write_masks(
    folder: Path,
    masks: Iterable[np.ndarray],
    *,
    first: int = 1,
    numbers: Iterable[int] | None = None,
) -> int:
    """Write ``bin%06d.png`` files (0/255).

    Parameters
    ----------
    folder : Path
        Destination folder (created).
    masks : iterable of (H, W) bool ndarray
        One mask per frame.
    first : int, default 1
        Number of the first file, the next ones counting up (without ``numbers``).
    numbers : iterable of int, optional
        The number of each file (the frames' mask numbers, see
        :meth:`~bpvideo.sources.files.FrameSource.mask_number`).

    Returns
    -------
    int
        Number of files written.
    """
    folder.mkdir(parents=True, exist_ok=True)
    numbered = zip(itertools.count(first) if numbers is None else numbers, masks, strict=False)
    count = 0
    for number, mask in numbered:
        _write_mask_png(folder, number, np.where(mask, np.uint8(255), np.uint8(0)))
        count += 1
    return count


class MaskWriter:
    """``bin%06d.png`` masks (0/255), written by a thread.

    Parameters
    ----------
    folder : Path
        Destination folder (created).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.count = 0
        self._worker = Worker(self._write, 8, "bpvideo-masks")

    def _write(self, item: tuple[list[int], np.ndarray]) -> None:
        numbers, images = item
        for number, image in zip(numbers, images, strict=True):
            _write_mask_png(self.folder, number, image)

    def write(self, masks: np.ndarray, numbers: Iterable[int] | None = None) -> None:
        """Queue (k, H, W) boolean masks of the next k frames.

        Parameters
        ----------
        masks : (k, H, W) bool ndarray
            The masks.
        numbers : iterable of int, optional
            The number in each file's name (default: counting on from 1).

        Raises
        ------
        OSError
            From an earlier write that failed (disk full...).
        """
        images = np.multiply(np.ascontiguousarray(masks).view(np.uint8), 255, dtype=np.uint8)
        if numbers is None:
            numbers = range(self.count + 1, self.count + 1 + len(images))
        self._worker.put((list(numbers), images))
        self.count += len(images)

    def close(self) -> None:
        """Wait for the files; raise the error of a write that failed."""
        error = self._worker.finish()
        if error is not None:
            raise error

    def abort(self) -> None:
        """Stop writing (after a failure or an interruption)."""
        self._worker.stop()


#: ffmpeg's exit status when it ended on a signal it caught (SIGINT, SIGTERM...).
FFMPEG_SIGNALLED = 255
#: Bytes of frames queued for each encoder.
QUEUE_BYTES = 16 << 20
#: Up to this frame size (640x480) x264 encodes in one thread: 7-13 % less CPU than its
#: frame threads, and still over 200 frames/s at veryfast, faster than any pipeline that
#: feeds it (docs/performance.md).
ONE_THREAD_PIXELS = 640 * 480
#: x264 options a result's two videos add to a preset (``tuned``): to ``veryfast``, one
#: subpixel pass and 16x16 blocks in predicted frames: 20-31 % less x264 CPU, 11-17 %
#: larger files, the same PSNR (docs/performance.md, "Encoder presets").
TUNED_X264 = {"veryfast": "subme=1:partitions=none"}


class VideoStream:
    """An ffmpeg encoder that takes frames as they are finished, fed by its own thread.

    The child process (the ffmpeg binary of imageio-ffmpeg) stays open across
    :meth:`write` calls, so a long video is encoded without holding its frames. Frames
    are queued (at most :data:`QUEUE_BYTES`) and written into ffmpeg's pipe by a thread,
    so that the caller goes on computing while ffmpeg encodes; a pipe write releases the
    interpreter lock.

    Parameters
    ----------
    path : Path
        Output file; ``.mp4`` for H.264, ``.mkv`` for FFV1 (``lossless=True``).
    fps : float
        Frame rate.
    lossless : bool, default False
        FFV1 instead of H.264.
    crf : int, default 18
        H.264 constant rate factor (``--crf``), 0 to 51.
    preset : str, default "veryfast"
        x264 preset (``--preset``).
    tuned : bool, default False
        Add :data:`TUNED_X264` to the preset (a result's two videos).

    Notes
    -----
    H.264 in yuv420p needs even sizes: odd frames are padded by one replicated row or
    column (players and browsers refuse odd sizes). The size and colour are taken from the
    first frame written. The frames handed to :meth:`write` must not be changed afterwards
    (they are written later, from the queue).
    """

    def __init__(
        self,
        path: Path,
        fps: float,
        *,
        lossless: bool = False,
        crf: int = default("crf"),
        preset: str = default("preset"),
        tuned: bool = False,
    ) -> None:
        self.path = Path(path)
        self.fps = float(fps)
        self.lossless = lossless
        self.crf = int(crf)
        self.preset = preset
        self.tuned = tuned
        self.frames_written = 0
        self._proc: subprocess.Popen | None = None
        self._worker: Worker | None = None
        self._log: Any = None
        self._pad: tuple[int, int] = (0, 0)
        self._colour = False
        self._shape: tuple[int, ...] = ()

    def _command(self, frame: np.ndarray) -> list[str]:
        colour = frame.ndim == 3
        h, w = frame.shape[:2]
        pad_h, pad_w = (0, 0) if self.lossless else (h % 2, w % 2)
        if self.lossless:
            codec, pix_in = "ffv1", ("bgr24" if colour else "gray")
            params = ["-pix_fmt", "bgr0" if colour else "gray", "-level", "3"]
        else:
            # fed in yuv420p, converted here (see yuv420p): tagged as such, so that players
            # do not take an HD video for BT.709
            codec, pix_in = "libx264", "yuv420p"
            params = [
                "-pix_fmt", "yuv420p", "-colorspace", "smpte170m", "-color_range", "tv",
                "-crf", str(self.crf), "-preset", self.preset, "-movflags", "+faststart",
            ]  # fmt: skip
            if h * w <= ONE_THREAD_PIXELS:
                params += ["-threads", "1"]
            if self.tuned and self.preset in TUNED_X264:
                params += ["-x264-params", TUNED_X264[self.preset]]
        self._pad = (pad_h, pad_w)
        self._colour = colour
        self._shape = frame.shape
        fps = Fraction(self.fps).limit_denominator()
        return [
            _ffmpeg.executable(),
            "-hide_banner", "-loglevel", "error", "-y",
            "-f", "rawvideo", "-pix_fmt", pix_in,
            "-s", f"{w + pad_w}x{h + pad_h}", "-r", str(fps), "-i", "-",
            "-an", "-c:v", codec, *params, _ffmpeg.file_url(self.path),
        ]  # fmt: skip

    def _open(self, frame: np.ndarray) -> None:
        cmd = self._command(frame)
        try:
            self._log = tempfile.TemporaryFile()
        except OSError as exc:
            raise temp_failure(exc) from None
        with signals_deferred():  # ffmpeg starts here: let it start under supervision
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=self._log,
                **_ffmpeg.no_sigint(),
            )
        _ffmpeg.enlarge_pipe(self._proc.stdin)
        frame_bytes = max(1, int(np.prod(frame.shape)))
        stdin = self._proc.stdin
        convert = (lambda f: f) if self.lossless else yuv420p
        self._worker = Worker(
            lambda frame: stdin.write(memoryview(convert(frame)).cast("B")),
            max(4, QUEUE_BYTES // frame_bytes),
            "bpvideo-encoder",
            last=lambda: _close_quietly(stdin),
        )

    def _failure(self, detail: object, code: int | None = None) -> WorkError:
        """Why ffmpeg could not write the file: a full disk or the file size limit (from
        its status and log) with their fix, else its last log line."""
        message, log = "", ""
        if self._log is not None:
            with contextlib.suppress(OSError, ValueError):
                self._log.seek(0)
                log = self._log.read().decode(errors="replace").strip()
                message = log.splitlines()[-1] if log else ""
        if code is None and self._proc is not None:
            code = self._proc.poll()
        known = None
        if code == -signal.SIGXFSZ or "File too large" in log:
            known = errno.EFBIG
        elif "No space left" in log or "Disk quota" in log:
            known = errno.ENOSPC
        if known is not None:
            what, fix = reason(OSError(known, os.strerror(known)), "write somewhere else")
            return WorkError(f"{literal(self.path)}: ffmpeg could not write the video: {what}: "
                             f"{fix}")  # fmt: skip
        return WorkError(
            f"{literal(self.path)}: ffmpeg could not write the video "
            f"({literal(message or detail)}): check free disk space"
        )

    def open(self, shape: tuple[int, ...]) -> None:
        """Start the encoder for frames of ``shape`` ((H, W) grey or (H, W, 3) BGR) now.

        Optional: :meth:`write` starts it on the first frame otherwise. Starting it early
        lets ffmpeg load while frames are still being read and solved.
        """
        if self._proc is None:
            self._open(np.empty(shape, dtype=np.uint8))

    def write(self, frames: Iterable[np.ndarray]) -> None:
        """Queue ``frames``: (H, W) grey or (H, W, 3) BGR uint8 arrays, for encoding.

        Raises
        ------
        WorkError
            If ffmpeg failed (disk full, ...).
        """
        for frame in frames:
            if self._proc is None:
                self._open(frame)
            if frame.shape != self._shape:
                self.abort()
                raise WorkError(
                    f"{self.path}: a frame of {frame.shape} after frames of {self._shape}: "
                    "every frame of a video must have one shape"
                )
            pad_h, pad_w = self._pad
            if pad_h or pad_w:
                widths = ((0, pad_h), (0, pad_w)) + (((0, 0),) if self._colour else ())
                frame = np.pad(frame, widths, mode="edge")
            self._put(np.ascontiguousarray(frame))
            self.frames_written += 1

    def _put(self, frame: np.ndarray) -> None:
        assert self._worker is not None
        try:
            self._worker.put(frame)
        except (KeyboardInterrupt, Terminated):
            # a signal to this process while it waited for room in the queue: the run was
            # stopped, the disk is not to blame
            self.abort()
            raise
        except BaseException as exc:
            # a pipe that broke because ffmpeg was stopped by a signal is that signal, not
            # a full disk: ffmpeg's status tells (asked before abort() kills it)
            stopped = self._stop_signal(wait=1.0) if isinstance(exc, OSError) else None
            failure = self._failure(exc)  # while ffmpeg's status and log are there
            self.abort()
            if stopped is not None:
                raise Terminated(stopped) from None
            raise failure from None

    def _stop_signal(self, wait: float | None) -> int | None:
        """The signal that ended ffmpeg (killed by it, or status 255: ffmpeg caught it and
        ended, "Exiting normally, received signal"), waiting up to ``wait`` seconds (None:
        as long as it takes) for it to end; None when it ended otherwise or runs on."""
        if self._proc is None:
            return None
        try:
            code = self._proc.wait(wait)
        except subprocess.TimeoutExpired:
            return None
        if code == FFMPEG_SIGNALLED:
            return signal.SIGTERM
        return -code if code < 0 and -code in STOP_SIGNALS else None

    def end(self) -> None:
        """No more frames: ffmpeg finishes the file (its last frames, the index) once the
        queued frames are written, while the caller goes on; :meth:`close` waits for it."""
        if self._worker is not None:
            self._worker.end()

    def close(self) -> None:
        """Finish the file (waits for the queue and for ffmpeg).

        Raises
        ------
        WorkError
            If ffmpeg failed.
        """
        if self._proc is None:
            return
        assert self._worker is not None
        error = self._worker.finish()  # its last act closes ffmpeg's input
        # self._proc stays set until ffmpeg has ended: a signal that stops the wait leaves
        # abort() an encoder to kill (not one that writes on into a removed folder)
        stopped = self._stop_signal(wait=None)  # stopped by a signal, not by the disk
        code = self._proc.returncode
        self._proc = None
        try:
            if stopped is not None:
                raise Terminated(stopped)
            if error is not None or code != 0:
                raise self._failure(error or f"exit status {code}", code)
        finally:
            self._close_log()

    def abort(self) -> None:
        """Kill the encoder without raising (after a failure or an interruption)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            proc.kill()  # a write blocked in the feeding thread now fails
        if self._worker is not None:
            self._worker.stop()
        with contextlib.suppress(OSError):
            proc.stdin.close()
        with contextlib.suppress(OSError):
            proc.wait()
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            with contextlib.suppress(OSError):
                self._log.close()
            self._log = None


def _close_quietly(pipe: Any) -> None:
    """Close ``pipe`` (ffmpeg's input); a failed close shows as ffmpeg's exit status."""
    with contextlib.suppress(OSError):
        pipe.close()


def write_streams(pairs: Iterable[tuple[VideoStream, np.ndarray]]) -> None:
    """Feed several encoders frame by frame in turn, so that they encode side by side.

    Parameters
    ----------
    pairs : iterable of (VideoStream, frames)
        Each stream with its frames (the same number of frames for every stream).

    Raises
    ------
    WorkError
        If an ffmpeg fails (see :meth:`VideoStream.write`).
    """
    pairs = list(pairs)
    for i in range(max((len(frames) for _, frames in pairs), default=0)):
        for stream, frames in pairs:
            if i < len(frames):
                stream.write(frames[i : i + 1])


def write_video(path: Path, frames: np.ndarray, fps: float, *, lossless: bool = False) -> None:
    """Encode frames with ffmpeg (from imageio-ffmpeg).

    Parameters
    ----------
    path : Path
        Output file; ``.mp4`` for H.264, ``.mkv`` for FFV1 (``lossless=True``).
    frames : (n, H, W) or (n, H, W, 3) uint8 ndarray
        Grey or BGR frames.
    fps : float
        Frame rate.
    lossless : bool, default False
        FFV1 instead of H.264.

    Raises
    ------
    WorkError
        If ffmpeg fails (disk full, ...).

    Notes
    -----
    H.264 in yuv420p needs even sizes: odd frames are padded by one replicated row or
    column (players and browsers refuse odd sizes). See :class:`VideoStream`.
    """
    stream = VideoStream(path, fps, lossless=lossless)
    try:
        stream.write(frames)
        stream.close()
    finally:
        stream.abort()
