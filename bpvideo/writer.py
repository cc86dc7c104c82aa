"""Videos, masks, stills and summaries out, atomically (the writer layer).

Output layout of ``separate`` (a contract that scripts depend on: keep it, add to it)::

    OUTDIR/background.mp4      H.264 (yuv420p, faststart): the low-rank part L
    OUTDIR/foreground.mp4      the input where the mask is set, black elsewhere
    OUTDIR/masks/bin%06d.png   0/255 masks, one per input frame, numbered from 1
    OUTDIR/background.png      median of L over the frames
    OUTDIR/summary.json        input, parameters, solver report, timings; written last

``--lossless`` writes FFV1 ``background.mkv`` and ``foreground.mkv`` instead.

Every output is first written into a hidden staging folder inside OUTDIR
(``.bpvideo-partial-*``) and renamed into place when all are complete, ``summary.json``
last: a directory with ``summary.json`` holds a complete result. On failure the staging
folder is removed, and OUTDIR too when this run created it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from bpvideo import _ffmpeg
from bpvideo.errors import InputError, WorkError

__all__ = [
    "OUTPUT_NAMES",
    "MaskWriter",
    "OutputDir",
    "RawMaskSink",
    "VideoStream",
    "atomic_write_bytes",
    "encode_png",
    "write_json",
    "write_masks",
    "write_streams",
    "write_video",
]

logger = logging.getLogger("bpvideo")

SUMMARY = "summary.json"
STAGING_PREFIX = ".bpvideo-partial-"
#: Names a complete result may hold (used to refuse overwriting without --overwrite).
OUTPUT_NAMES = (
    SUMMARY,
    "background.mp4",
    "foreground.mp4",
    "background.mkv",
    "foreground.mkv",
    "background.png",
    "masks",
    "preview.png",
    "evaluation.csv",
)


def encode_png(image: np.ndarray) -> bytes:
    """PNG bytes of a uint8 image (grey or BGR)."""
    ok, buf = cv2.imencode(".png", image)
    if not ok:  # pragma: no cover - cv2 only fails on unsupported arrays
        raise WorkError(f"could not encode a {image.shape} {image.dtype} image as PNG")
    return buf.tobytes()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder, then rename."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, _FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, obj: Any) -> None:
    """Write ``obj`` as indented JSON, atomically."""
    atomic_write_bytes(path, (json.dumps(obj, indent=2, default=_json_default) + "\n").encode())


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def _write_mask_png(folder: Path, number: int, image: np.ndarray) -> None:
    """``folder/bin%06d.png`` of a 0/255 uint8 mask."""
    (folder / f"bin{number:06d}.png").write_bytes(encode_png(image))


def write_masks(folder: Path, masks: Iterable[np.ndarray], *, first: int = 1) -> int:
    """Write ``bin%06d.png`` files (0/255), numbered from ``first``.

    Parameters
    ----------
    folder : Path
        Destination folder (created).
    masks : iterable of (H, W) bool ndarray
        One mask per frame.
    first : int, default 1
        Number of the first file (changedetection.net numbers from 1).

    Returns
    -------
    int
        Number of files written.
    """
    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    for count, mask in enumerate(masks, start=1):
        _write_mask_png(folder, first + count - 1, np.where(mask, np.uint8(255), np.uint8(0)))
    return count


class _Worker:
    """A daemon thread that runs ``work(item)`` on queued items, in order.

    The first error is kept and handed to the caller: :meth:`put` raises it, and
    :meth:`finish` returns it; items queued after it are dropped. Used to encode videos
    and masks while the main thread forms the next frames (pipe writes, PNG encoding and
    file writes release the interpreter lock).
    """

    def __init__(self, work: Callable[[Any], None], maxsize: int, name: str) -> None:
        self._work = work
        self._queue: queue.Queue = queue.Queue(maxsize=max(1, maxsize))
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _END:
                return
            if self.error is None:
                try:
                    self._work(item)
                except BaseException as exc:  # handed to the caller
                    self.error = exc

    def put(self, item: Any) -> None:
        """Queue ``item`` (waits while the queue is full); raises the thread's error."""
        while True:
            if self.error is not None:
                raise self.error
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                if not self._thread.is_alive():  # pragma: no cover - cannot happen
                    self.error = RuntimeError(f"{self._thread.name} stopped")

    def finish(self) -> BaseException | None:
        """Wait until every item is done; return the error, if any."""
        with contextlib.suppress(BaseException):
            self._queue.put(_END)
        self._thread.join()
        return self.error

    def stop(self) -> None:
        """Drop the queued items and wait for the thread to end (its current item ends
        first: stop what it waits on, such as a child process, before)."""
        self.error = self.error or RuntimeError("stopped")
        while self._thread.is_alive():
            with contextlib.suppress(queue.Empty):
                self._queue.get_nowait()
            with contextlib.suppress(queue.Full):
                self._queue.put_nowait(_END)
            self._thread.join(0.05)


_END = object()


class MaskWriter:
    """``bin%06d.png`` masks (0/255), numbered from 1, written by a thread.

    Parameters
    ----------
    folder : Path
        Destination folder (created).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.count = 0
        self._worker = _Worker(self._write, 8, "bpvideo-masks")

    def _write(self, item: tuple[int, np.ndarray]) -> None:
        first, images = item
        for j, image in enumerate(images):
            _write_mask_png(self.folder, first + j, image)

    def write(self, masks: np.ndarray) -> None:
        """Queue (k, H, W) boolean masks, the next k frames.

        Raises
        ------
        OSError
            From an earlier write that failed (disk full...).
        """
        images = np.multiply(np.ascontiguousarray(masks).view(np.uint8), 255, dtype=np.uint8)
        self._worker.put((self.count + 1, images))
        self.count += len(images)

    def close(self) -> None:
        """Wait for the files; raise the error of a write that failed."""
        error = self._worker.finish()
        if error is not None:
            raise error

    def abort(self) -> None:
        """Stop writing (after a failure or an interruption)."""
        self._worker.stop()


#: Bytes of frames queued for each encoder.
QUEUE_BYTES = 16 << 20


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

    Notes
    -----
    H.264 in yuv420p needs even sizes: odd frames are padded by one replicated row or
    column (players and browsers refuse odd sizes). The size and colour are taken from the
    first frame written. The frames handed to :meth:`write` must not be changed afterwards
    (they are written later, from the queue).
    """

    def __init__(self, path: Path, fps: float, *, lossless: bool = False) -> None:
        self.path = Path(path)
        self.fps = float(fps)
        self.lossless = lossless
        self.frames_written = 0
        self._proc: subprocess.Popen | None = None
        self._worker: _Worker | None = None
        self._log: Any = None
        self._pad: tuple[int, int] = (0, 0)
        self._colour = False
        self._shape: tuple[int, ...] = ()

    def _command(self, frame: np.ndarray) -> list[str]:
        colour = frame.ndim == 3
        h, w = frame.shape[:2]
        pad_h, pad_w = (0, 0) if self.lossless else (h % 2, w % 2)
        if self.lossless:
            codec, pix_out, params = "ffv1", ("bgr0" if colour else "gray"), ["-level", "3"]
        else:
            codec, pix_out = "libx264", "yuv420p"
            params = ["-crf", "18", "-preset", "veryfast", "-movflags", "+faststart"]
        self._pad = (pad_h, pad_w)
        self._colour = colour
        self._shape = frame.shape
        fps = Fraction(self.fps).limit_denominator()
        return [
            _ffmpeg.executable(),
            "-hide_banner", "-loglevel", "error", "-y",
            "-f", "rawvideo", "-pix_fmt", "bgr24" if colour else "gray",
            "-s", f"{w + pad_w}x{h + pad_h}", "-r", str(fps), "-i", "-",
            "-an", "-c:v", codec, "-pix_fmt", pix_out, *params, str(self.path),
        ]  # fmt: skip

    def _open(self, frame: np.ndarray) -> None:
        cmd = self._command(frame)
        self._log = tempfile.TemporaryFile()
        with _signals_deferred():  # ffmpeg starts here: let it start under supervision
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
        self._worker = _Worker(
            lambda frame: stdin.write(memoryview(frame).cast("B")),
            max(4, QUEUE_BYTES // frame_bytes),
            "bpvideo-encoder",
        )

    def _failure(self, detail: object) -> WorkError:
        message = ""
        if self._log is not None:
            with contextlib.suppress(OSError, ValueError):
                self._log.seek(0)
                lines = self._log.read().decode(errors="replace").strip().splitlines()
                message = lines[-1] if lines else ""
        return WorkError(
            f"{self.path}: ffmpeg could not write the video ({message or detail}): check free "
            "disk space"
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
        except BaseException as exc:
            self.abort()
            raise self._failure(exc) from None

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
        error = self._worker.finish()
        proc, self._proc = self._proc, None
        with contextlib.suppress(OSError):
            proc.stdin.close()
        code = proc.wait()
        try:
            if error is not None or code != 0:
                raise self._failure(error or f"exit status {code}")
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


class RawMaskSink:
    """Masks as raw gray frames (0/255, H*W bytes each) to a file or to stdout (``"-"``).

    Parameters
    ----------
    target : str
        A file path, or ``"-"`` for stdout (binary, unbuffered by Python's text layer).

    Notes
    -----
    A reader that closes the pipe early raises :class:`BrokenPipeError` from
    :meth:`write`; the CLI ends quietly on it.
    """

    def __init__(self, target: str) -> None:

        self.target = target
        self.to_stdout = target == "-"
        if self.to_stdout:
            self._fh = sys.stdout.buffer
        else:
            try:
                self._fh = open(target, "wb")
            except OSError as exc:
                raise InputError(
                    f"{target}: cannot write the raw masks ({exc.strerror}): choose another "
                    "--masks-to"
                ) from None

    def write(self, masks: Iterable[np.ndarray]) -> None:
        """Write boolean (H, W) masks as 0/255 bytes."""
        for mask in masks:
            self._fh.write(np.where(mask, np.uint8(255), np.uint8(0)).tobytes())
        self._fh.flush()

    def close(self) -> None:
        """Flush (stdout) or close (file)."""
        if self.to_stdout:
            self._fh.flush()
        else:
            self._fh.close()


#: Start of this process (wall clock): staging folders older than it, of processes that
#: are gone, were left by a killed run (SIGKILL, power loss) and are removed.
_PROCESS_START = time.time()
#: Output directories completed (summary.json renamed into place) by this process, so
#: that a late interruption is not reported as "no output was kept".
COMMITTED: list[Path] = []
_STAGING_PID = re.compile(re.escape(STAGING_PREFIX) + r"(\d+)-")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, but owned by another user
        return True
    return True


def remove_stale_staging(folder: Path) -> list[Path]:
    """Remove ``.bpvideo-partial-*`` folders that a killed run left in ``folder``.

    A staging folder is stale when it is older than this process and the process that
    made it (its pid is in the name) is gone. A run killed by SIGKILL cannot clean up; its
    staging folder is hidden and never holds ``summary.json`` in OUTDIR, so it is never
    mistaken for a result, and the next run into the same OUTDIR removes it.

    Returns
    -------
    list of Path
        The folders removed.
    """
    removed = []
    try:
        entries = list(folder.iterdir())
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(STAGING_PREFIX) or not entry.is_dir():
            continue
        try:
            if entry.stat().st_mtime >= _PROCESS_START:
                continue
        except OSError:
            continue
        match = _STAGING_PID.match(entry.name)
        if match and int(match.group(1)) != os.getpid() and _pid_alive(int(match.group(1))):
            continue
        shutil.rmtree(entry, ignore_errors=True)
        if not entry.exists():
            removed.append(entry)
            logger.info("removed %s, left by an interrupted run", entry)
    return removed


@contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back during a step that must not be cut in two.

    Used while outputs are renamed into place (an interrupted run never leaves some
    renamed and others not) and while an ffmpeg child starts (so that it is always
    stopped). A signal that arrives meanwhile is recorded and handed to the previous
    handler when the block ends. Python-level handlers, not a signal mask: a mask would
    be inherited by the ffmpeg children.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []

    def hold(signum: int, frame: object) -> None:
        pending.append(signum)

    previous: dict[int, Any] = {}
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, hold)
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in pending[:1]:
            handler = previous[signum]
            if callable(handler):
                handler(signum, None)  # KeyboardInterrupt, or the CLI's Terminated
            elif handler == signal.SIG_DFL:
                signal.raise_signal(signum)


def write_failure(path: Path, exc: OSError) -> WorkError:
    """A one-line :class:`WorkError` for an OS error while writing into ``path``."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        what = "disk full (no space left on the device)"
        fix = "free some space or choose another -o"
    else:
        what = exc.strerror or str(exc)
        fix = "check the output directory or choose another -o"
    where = f" ({exc.filename})" if exc.filename else ""
    return WorkError(f"{path}: writing the outputs failed: {what}{where}: {fix}; nothing was kept")


class OutputDir:
    """An output directory whose results appear complete or not at all.

    Use as a context manager: :meth:`stage` gives paths inside a hidden staging folder,
    :meth:`commit` moves the staged files into place (``summary.json`` last). Leaving the
    block with an exception removes what this run wrote.

    Parameters
    ----------
    path : path-like
        The output directory.
    overwrite : bool, default False
        Replace the outputs of an earlier run. Without it, a directory that already holds
        outputs is refused before any work starts.
    """

    def __init__(self, path: str | os.PathLike, *, overwrite: bool = False) -> None:
        self.path = Path(path)
        self.overwrite = overwrite
        self.staging: Path | None = None
        self._created: list[Path] = []

    def check(self) -> None:
        """Refuse unusable output directories before any work starts.

        Raises
        ------
        InputError
            If OUTDIR is a file, is not writable, or holds outputs and ``overwrite`` is off.
        """
        p = self.path
        if p.exists() and not p.is_dir():
            raise InputError(f"{p}: output path is a file, not a directory: choose another -o")
        if p.is_dir():
            existing = [name for name in OUTPUT_NAMES if (p / name).exists()]
            if existing and not self.overwrite:
                raise InputError(
                    f"{p}: already holds results ({', '.join(existing)}): pass --overwrite to "
                    "replace them or choose another -o"
                )
        ancestor = p
        while not ancestor.exists():
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            raise InputError(f"{ancestor}: is a file, so {p} cannot be created: choose another -o")
        if not os.access(ancestor, os.W_OK | os.X_OK):
            raise InputError(
                f"{p}: cannot write in {ancestor} (permission denied): choose another -o"
            )
        # os.access says yes to root everywhere: try for real (read-only mounts, /proc).
        try:
            # named like a staging folder of this process: a run killed here leaves it to
            # the next run's remove_stale_staging
            os.rmdir(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-probe-", dir=ancestor))
        except OSError as exc:
            raise InputError(
                f"{p}: cannot write in {ancestor} ({exc.strerror}): choose another -o"
            ) from None

    def __enter__(self) -> OutputDir:
        self.check()
        missing = []
        parent = self.path
        while not parent.exists():
            missing.append(parent)
            parent = parent.parent
        self._created = missing
        try:
            with _signals_deferred():  # __exit__ does not run if __enter__ is interrupted
                self.path.mkdir(parents=True, exist_ok=True)
                remove_stale_staging(self.path)
                self.staging = Path(
                    tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=self.path)
                )
                os.chmod(self.staging, 0o777 & ~_umask())
        except OSError as exc:
            self.discard()
            raise WorkError(
                f"{self.path}: cannot create the output directory ({exc.strerror}): "
                "choose another -o"
            ) from None
        except BaseException:  # a signal held back above: undo, then let it through
            self.discard()
            raise
        return self

    def stage(self, name: str) -> Path:
        """Path of ``name`` inside the staging folder."""
        if self.staging is None:
            raise RuntimeError("OutputDir.stage() outside its with-block")
        return self.staging / name

    def commit(self) -> None:
        """Move staged outputs into place; ``summary.json`` last."""
        assert self.staging is not None
        final_summary = self.path / SUMMARY
        if final_summary.exists():
            final_summary.unlink()  # the old result stops being 'complete' first
        names = sorted(os.listdir(self.staging), key=lambda s: s == SUMMARY)
        with _signals_deferred():
            for name in names:
                src, dst = self.staging / name, self.path / name
                if src.is_dir() and dst.exists():
                    old = self.staging / f".old-{name}"
                    os.replace(dst, old)
                os.replace(src, dst)
            COMMITTED.append(self.path)
        shutil.rmtree(self.staging, ignore_errors=True)
        self.staging = None

    def discard(self) -> None:
        """Remove the staging folder, and OUTDIR when this run created it and it is empty."""
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging = None
        self._remove_created(self._created)

    @staticmethod
    def _remove_created(created: list[Path]) -> None:
        for folder in created:  # deepest first
            try:
                folder.rmdir()
            except OSError:
                break

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if self.staging is not None:
            self.discard()
        if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
            # A closed stdout (--masks-to -) is not a write failure: the CLI ends quietly.
            raise write_failure(self.path, exc) from exc
