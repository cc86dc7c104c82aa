"""The ffmpeg child processes of the reader and the writer (the binary of imageio-ffmpeg),
and the probe of a video file.

File names are data, never syntax: ffmpeg gets every file as a ``file:`` URL of its
absolute path (:func:`file_url`), so that a name such as ``concat:other.mkv`` or
``-i`` is a file name and nothing else, and its inputs may open local files only
(``-protocol_whitelist``). What a video is (size, rate, frame count) comes from
libavformat's own fields through OpenCV's FFmpeg backend (:func:`probe`), never from
ffmpeg's log, which holds the file name and whatever text it contains.

:func:`decode` runs ffmpeg as a raw-frame decoder of the size the probe found (``-s``:
every frame has that many bytes, whatever the stream does); its stderr is kept only for
error messages.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import math
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from bpvideo.sources.accounting import FfmpegLog, failure
from bpvideo.sources.frame_times import (
    Timestamps,
    ask_options,
    passthrough_options,
    scan_packets,
)

__all__ = [
    "REFERENCING",
    "Decoding",
    "Probe",
    "ReferencesError",
    "ask_early",
    "data_bounds_of",
    "decode",
    "enlarge_pipe",
    "executable",
    "file_url",
    "input_options",
    "no_sigint",
    "packets_of",
    "probe",
]

# libavformat inside OpenCV (the probe) would print its complaints about a damaged file
# straight to fd 2; bpvideo says what is wrong itself, in one line. OpenCV reads this once,
# when its FFmpeg backend is first used.
os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")

#: Bytes of the pipes to and from ffmpeg (Linux ``F_SETPIPE_SZ``; 64 KiB by default, less
#: than one 320x240 BGR frame): deeper pipes mean fewer wake-ups and copies per frame.
PIPE_BYTES = 1 << 20
#: Seconds ffmpeg may take to say why it cannot open a file that the probe refused.
DIAGNOSE_TIMEOUT = 20.0


#: Demuxers that open other files named inside their input (playlists, lists of files,
#: manifests, composition playlists, file-name patterns, scripts): refused unless
#: allowed, whatever the file's extension (the demuxer is the one ffmpeg would pick).
REFERENCING = (
    "concat", "hls", "dash", "imf", "image2", "avisynth", "vapoursynth",
    "webm_dash_manifest",
)  # fmt: skip


class ReferencesError(OSError):
    """The input is read by a demuxer of :data:`REFERENCING` (``demuxer``: its name, or
    None when ffmpeg did not say), and that was not allowed."""

    def __init__(self, demuxer: str | None) -> None:
        super().__init__(demuxer or "a list of other files")
        self.demuxer = demuxer


#: ffmpeg's path (imageio-ffmpeg runs ``ffmpeg -version`` to find it) and demuxers are
#: asked once, perhaps first by :func:`ask_early`: a caller waits for that answer.
_ASKING = threading.RLock()


def _unlock_in_child() -> None:
    """In a forked child, a new lock: the thread that may hold the parent's is not there."""
    global _ASKING
    _ASKING = threading.RLock()


if hasattr(os, "register_at_fork"):  # not on Windows, which does not fork
    os.register_at_fork(after_in_child=_unlock_in_child)


def ask_early() -> threading.Thread:
    """Start asking, in the thread returned, what opening a video file needs of ffmpeg:
    its path (:func:`executable`), options (``-h full``, :func:`ask_options`) and demuxers
    (three runs, ~60 ms). Nothing is raised there: a question that failed is asked again
    where its answer is needed, and raises there."""
    thread = threading.Thread(target=_ask, name="bpvideo-ffmpeg-early", daemon=True)
    thread.start()
    return thread


def _ask() -> None:
    with contextlib.suppress(Exception):
        ask_options(executable())
        _allowed_demuxers()


def _allowed_demuxers() -> str:
    """Every demuxer of this ffmpeg but those of :data:`REFERENCING`, comma-separated
    (``-format_whitelist``; its list of demuxers is machine output, no file name in it)."""
    with _ASKING:
        return _listed_demuxers()


@functools.lru_cache(maxsize=1)
def _listed_demuxers() -> str:
    done = subprocess.run([executable(), "-hide_banner", "-demuxers"], capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=DIAGNOSE_TIMEOUT, check=False,
                          **no_sigint())  # fmt: skip
    names = []
    for line in done.stdout.decode("ascii", "replace").splitlines():
        match = re.match(r"^ D[E. ][d. ]? +(\S+) ", line)
        if match:
            names += match.group(1).split(",")
    allowed = [n for n in names if n not in REFERENCING]
    if not allowed:  # an ffmpeg that lists no demuxer: refuse nothing rather than all
        raise OSError("ffmpeg -demuxers listed no demuxer")
    return ",".join(allowed)


def input_options(references: bool = False) -> list[str]:
    """ffmpeg's options for a file input: local files only, and (unless ``references``)
    no demuxer of :data:`REFERENCING`."""
    options = ["-protocol_whitelist", "file"]
    if not references:
        options += ["-format_whitelist", _allowed_demuxers()]
    return options


def file_url(path: str | os.PathLike) -> str:
    """The ``file:`` URL of a path, as ffmpeg is given every file.

    Examples
    --------
    >>> file_url("/videos/concat:other.mkv")
    'file:/videos/concat:other.mkv'
    """
    return "file:" + os.path.abspath(os.fspath(path))


def enlarge_pipe(pipe: Any) -> None:
    """Deepen a pipe to or from ffmpeg, where the system allows it."""
    try:
        import fcntl

        fcntl.fcntl(pipe.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except (ImportError, AttributeError, OSError, ValueError):
        pass  # another platform: the default pipe works too


def executable() -> str:
    """Path of the ffmpeg binary (imageio-ffmpeg's, or ``IMAGEIO_FFMPEG_EXE``).

    Raises
    ------
    InputError
        Neither is there: what to install, and ``no_video`` for masks without ffmpeg.
    """
    try:
        import imageio_ffmpeg

        with _ASKING:  # imageio-ffmpeg remembers its answer, not a question under way
            return imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError) as exc:
        from bpvideo.errors import InputError, literal

        raise InputError(
            f"ffmpeg is not available ({literal(exc)}): pip install imageio-ffmpeg, or set "
            "IMAGEIO_FFMPEG_EXE to an ffmpeg binary; {no_video} writes the masks of a "
            "folder of frames without it",
            option=("no_video", False),
        ) from None


def no_sigint() -> dict[str, Any]:
    """Popen arguments that keep a terminal's Ctrl-C from the child (bpvideo stops it)."""
    if os.name == "nt":  # pragma: no cover
        return {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0x200)}
    if sys.version_info >= (3, 11):
        return {"process_group": 0}
    return {"start_new_session": True}  # pragma: no cover - Python 3.10


@dataclass(frozen=True)
class Probe:
    """What libavformat says about the first video stream of a file.

    Attributes
    ----------
    width, height : int
        Frame size, as decoded (after the rotation the container asks for).
    fps : float or None
        Frame rate (None when the container gives none).
    frame_count : int or None
        Frames the container announces (its count, or duration x rate; None when unknown).
    """

    width: int
    height: int
    fps: float | None
    frame_count: int | None


#: Names of this process's own descriptors (``/dev/stdin`` redirected from a file): an
#: ffmpeg child would open its own (its stdin is ``/dev/null``), so it is handed the file.
OWN_DESCRIPTORS = ("/dev/stdin", "/dev/fd/", "/proc/self/fd/")


def safe_name(path: str | os.PathLike) -> bool:
    """Whether OpenCV can take ``path`` as a name: it encodes names as UTF-8, so a name
    whose bytes are not UTF-8, or a file-system encoding other than UTF-8 (``LC_ALL=C``
    with ``PYTHONUTF8=0``), would name another file, or crash OpenCV; and a name of this
    process's own descriptors (:data:`OWN_DESCRIPTORS`) names another file in a child."""
    text = os.fspath(path)
    if os.path.abspath(text).startswith(OWN_DESCRIPTORS):
        return False  # the child's descriptors are others: it gets the file opened here
    try:
        return os.fsencode(text) == text.encode("utf-8")
    except UnicodeError:
        return False


@contextlib.contextmanager
def opened_name(path: str | os.PathLike) -> Iterator[str]:
    """A name of ``path`` that OpenCV and ffmpeg take whatever its bytes: the path itself
    when :func:`safe_name`, else ``/proc/self/fd/N`` of the file opened here (``N`` is
    kept open for the block; a child given ``pass_fds=(N,)`` opens it as well).

    Raises
    ------
    OSError
        The file cannot be opened, or the system has no ``/proc/self/fd``.
    """
    if safe_name(path):
        yield os.path.abspath(os.fspath(path))
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        name = f"/proc/self/fd/{fd}"
        if not os.path.exists(name):
            raise OSError(errno.ENOENT, "its name cannot be given to OpenCV: rename it")
        yield name
    finally:
        os.close(fd)


def probe(path: str | os.PathLike, references: bool = False) -> Probe:
    """Size, rate and frame count of a video file, from libavformat's fields.

    Read through OpenCV's FFmpeg backend (``cv2.CAP_FFMPEG``: its properties are the
    stream's and container's fields, not text), restricted to local files and (unless
    ``references``) to demuxers that read no other file, with the file given as a
    ``file:`` URL (of ``/proc/self/fd/N`` for a name OpenCV cannot take).

    Raises
    ------
    ReferencesError
        The file is a playlist or list of files (:data:`REFERENCING`).
    OSError
        The file cannot be opened as a video (the message says why, from ffmpeg).
    """
    with opened_name(path) as name:
        return _probe("file:" + name, references)


def _probe(url: str, references: bool) -> Probe:
    import cv2

    ask_options(executable())  # the decoder's options, asked while this probe runs
    options = input_options(references)
    capture_options = "|".join(
        f"{k[1:]};{v}" for k, v in zip(options[::2], options[1::2], strict=True)
    )
    previous = os.environ.get("OPENCV_FFMPEG_CAPTURE_OPTIONS")
    os.environ["OPENCV_FFMPEG_CAPTURE_OPTIONS"] = capture_options
    try:
        capture = cv2.VideoCapture(url, cv2.CAP_FFMPEG)
        try:
            opened = capture.isOpened()
            names = ("FRAME_WIDTH", "FRAME_HEIGHT", "FPS", "FRAME_COUNT")
            props = [capture.get(getattr(cv2, f"CAP_PROP_{name}")) for name in names]
        finally:
            capture.release()
    finally:
        if previous is None:
            os.environ.pop("OPENCV_FFMPEG_CAPTURE_OPTIONS", None)
        else:
            os.environ["OPENCV_FFMPEG_CAPTURE_OPTIONS"] = previous
    width, height, fps, count = props
    if not opened or not (width >= 1 and height >= 1):
        raise _why_not(url, references)
    return Probe(
        int(width),
        int(height),
        None if fps == 0 else fps,  # NaN or negative: refused by the caller
        int(count) if math.isfinite(count) and count >= 1 else None,
    )


def _why_not(url: str, references: bool) -> OSError:
    """Why ffmpeg cannot decode ``url``, in one line (for the message of a refused file);
    a :class:`ReferencesError` for a demuxer of :data:`REFERENCING`."""
    text = _diagnose(url, references, "error")
    if "Format not on whitelist" in text:
        # The demuxer probed is named on a debug line ("Format hls probed with size=...");
        # it decides nothing (the whitelist refused the file), it only names the format.
        found = re.findall(r"Format (\w+) probed with size=", _diagnose(url, references, "debug"))
        return ReferencesError(found[-1] if found else None)
    lines = [line.replace(url + ": ", "").replace(url, "the file") for line in text.splitlines()]
    return OSError(failure(lines, "no video stream could be read"))


def _diagnose(url: str, references: bool, level: str) -> str:
    """What ffmpeg prints (at ``level``) trying to decode the first frame of ``url``."""
    cmd = [executable(), "-hide_banner", "-nostdin", "-loglevel", level,
           *input_options(references), "-i", url, "-map", "0:V:0", "-frames:v", "1",
           "-f", "null", "-"]  # fmt: skip
    try:
        done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=DIAGNOSE_TIMEOUT, check=False, pass_fds=_fd_of(url),
                              **no_sigint())  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return "ffmpeg could not open it"
    return done.stderr.decode("utf-8", "replace")


def _fd_of(url: str) -> tuple[int, ...]:
    """The file descriptor a ``file:/proc/self/fd/N`` URL names (for ``pass_fds``)."""
    match = re.fullmatch(r"file:/proc/self/fd/(\d+)", url)
    return (int(match.group(1)),) if match else ()


def decode(
    path: str | os.PathLike,
    width: int,
    height: int,
    pix_fmt: str = "bgr24",
    references: bool = False,
) -> Iterator[bytes]:
    """Start ffmpeg decoding ``path`` into raw frames of ``width`` x ``height``.

    Parameters
    ----------
    path : str or path-like
        A video file (see :func:`probe`).
    width, height : int
        Frame size (from :func:`probe`); ffmpeg scales to it should the stream differ.
    pix_fmt : {"bgr24", "gray"}
        Pixel format of the frames.
    references : bool, default False
        Allow the demuxers of :data:`REFERENCING`.

    Returns
    -------
    Decoding
        An iterator of bytes: one frame per item, in decoding order, every frame as the
        stream holds it (a variable frame rate is passed through); its ``times`` give
        each frame's timestamp, as the stream has it (``-copyts``: a clock that jumps,
        a transport stream's discontinuity, keeps its gap); its ``damage()`` gives
        ffmpeg's complaints about the input. Closing it (or reading to the end) stops
        ffmpeg. Raises RuntimeError on a frame cut short or a decoding error (the
        message holds ffmpeg's last line).
    """
    ffmpeg = executable()
    read_end, write_end = os.pipe()
    try:
        with opened_name(path) as name:
            cmd = [
                ffmpeg, "-hide_banner", "-nostdin", "-nostats", "-loglevel", "level+warning",
                "-copyts", *input_options(references), "-i", "file:" + name, "-map", "0:V:0", "-an",
                "-sn", *passthrough_options(ffmpeg, write_end), "-f", "rawvideo", "-pix_fmt",
                pix_fmt, "-s", f"{width}x{height}", "pipe:1",
            ]  # fmt: skip
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(write_end, *_fd_of("file:" + name)),
                **no_sigint(),
            )
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)  # the child's copy stays open: its end of file ends the thread
    enlarge_pipe(proc.stdout)
    log = FfmpegLog(proc.stderr)
    bpp = 1 if pix_fmt == "gray" else 3
    frames = _frames(proc, log, width * height * bpp)
    return Decoding(frames, Timestamps(read_end), lambda: _stop(proc, log), log.damage)


class Decoding:
    """The frames of :func:`decode` (an iterator of bytes) and their times.

    Attributes
    ----------
    times : Timestamps
        ``times.time(i)``: seconds of frame ``i`` from the first frame (None if unknown).
    damage : callable
        ``damage()``: ffmpeg's complaints about the input so far (lines; empty: none).
    """

    def __init__(
        self,
        frames: Iterator[bytes],
        times: Timestamps,
        stop: Callable[[], None],
        damage: Callable[[], list[str]] = list,
    ) -> None:
        self._frames = frames
        self.times = times
        self._stop = stop
        self.damage = damage

    def __iter__(self) -> Decoding:
        return self

    def __next__(self) -> bytes:
        return next(self._frames)

    def close(self) -> None:
        """Stop ffmpeg (also when no frame was read: the generator never started)."""
        self._frames.close()  # type: ignore[attr-defined]
        self._stop()


def _scan(path: str | os.PathLike, references: bool) -> tuple[Any, Any, Any]:
    """:func:`~bpvideo.sources.frame_times.scan_packets` of a file (None when unknown)."""
    try:
        with opened_name(path) as name:
            url = "file:" + name
            return scan_packets(executable(), url, input_options(references), _fd_of(url))
    except OSError:
        return None, None, None


def packets_of(path: str | os.PathLike, references: bool = False) -> int | None:
    """Packets of a file's video stream that hold a picture (None when unknown)."""
    return _scan(path, references)[1]


def data_bounds_of(path: str | os.PathLike, references: bool = False) -> tuple[float, float] | None:
    """Where a file's data start on its container's clock, and how many seconds they
    last (:func:`~bpvideo.sources.frame_times.data_end`); None when unknown."""
    span, _, start = _scan(path, references)
    return None if span is None or start is None else (start, span)


def _frames(proc: subprocess.Popen, log: FfmpegLog, size: int) -> Iterator[bytes]:
    stdout = proc.stdout
    count = 0
    try:
        while True:
            buf = stdout.read(size)
            if not buf:
                if count == 0 and proc.wait() != 0:  # not one frame: say why
                    raise RuntimeError(log.text() or f"ffmpeg exited with {proc.returncode}")
                return
            if len(buf) < size:
                raise RuntimeError(f"a frame was cut short\n{log.text()}")
            count += 1
            yield buf
    finally:
        _stop(proc, log)


def _stop(proc: subprocess.Popen, log: FfmpegLog) -> None:
    """Kill ffmpeg (if still running) and reap it."""
    with contextlib.suppress(OSError):
        proc.kill()
    for pipe in (proc.stdout, proc.stderr):
        with contextlib.suppress(OSError):
            pipe.close()
    with contextlib.suppress(OSError):
        proc.wait()
    log.join(1.0)
