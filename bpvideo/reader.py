"""Reading frames into a pixels x frames matrix, and the observation mask (the I/O layer).

Sources
-------
- Video files (mp4, avi, mkv, mov, ... anything ffmpeg decodes) are decoded by the ffmpeg
  binary that ships with ``imageio-ffmpeg``, in a separate process. OpenCV's own AVI
  demuxer was seen to corrupt the heap and kill the process on a raw-video AVI
  (``malloc_consolidate(): invalid chunk size``, OpenCV 4.14 and 5.0); a decoder crash in
  a child process is an error message instead.
- Image folders: sorted frames (``in000001.jpg`` ...), the changedetection.net layout (a
  folder with ``input/``), or Wallflower's (``b00000.bmp`` beside other files: the largest
  group of files sharing a name prefix is taken).

Frames are kept as uint8 BGR (colour is never lost); the matrix has one column per frame,
grey levels (or B, G, R stacked with ``gray=False``) in 0..255 as float32.
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from bpvideo import _ffmpeg
from bpvideo.errors import InputError, WorkError

__all__ = [
    "IMAGE_EXTENSIONS",
    "FrameSource",
    "TruncatedVideoError",
    "Video",
    "VideoProbe",
    "iter_frames",
    "list_image_files",
    "load_observation_mask",
    "open_source",
    "parse_y4m_header",
    "probe",
    "random_observation",
    "read_video",
]

logger = logging.getLogger("bpvideo")

# OpenCV logs its own decoder complaints ("IHDR chunk shall be first") straight to fd 2;
# bpvideo reports an unreadable image itself, in one line that names the file.
if hasattr(cv2, "utils") and hasattr(cv2.utils, "logging"):
    cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_FATAL)

IMAGE_EXTENSIONS = {".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp", ".pgm", ".ppm"}
DEFAULT_FOLDER_FPS = 25.0
_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)$")


@dataclass
class Video:
    """Frames of one clip as a data matrix.

    Attributes
    ----------
    data : (m, n) float32 ndarray
        One column per frame: ``frame.reshape(-1)`` of the grey (or BGR) frame, 0..255.
    frames : (n, H, W, 3) uint8 ndarray
        The decoded BGR frames (after ``scale``), for writing the foreground video.
    frame_shape : tuple of int
        ``(H, W)`` for grey data, ``(H, W, 3)`` for colour data.
    fps : float
        Frame rate (of the selected frames, i.e. divided by ``step``).
    source : str
        Where the frames came from.
    frame_numbers : list of int
        Number of each selected frame in the source: the trailing number of the file name
        for image folders, the 0-based decode index for videos.
    mask : (m, n) bool ndarray or None
        Observation mask (True = observed), or None when fully observed.
    planes : (n, *frame_shape) uint8 ndarray or None
        The frames of ``data`` one after another (its transpose), when kept.
    """

    data: np.ndarray
    frames: np.ndarray
    frame_shape: tuple[int, ...]
    fps: float
    source: str
    frame_numbers: list[int] = field(default_factory=list)
    mask: np.ndarray | None = None
    partial: bool = False
    frames_expected: int | None = None
    total_frames: int | None = None
    partial_reason: str | None = None
    planes: np.ndarray | None = None

    @property
    def n_frames(self) -> int:
        """Number of frames (columns)."""
        return self.data.shape[1]

    @property
    def height(self) -> int:
        return self.frame_shape[0]

    @property
    def width(self) -> int:
        return self.frame_shape[1]

    def as_frames(self, matrix: np.ndarray) -> np.ndarray:
        """Reshape an (m, n) matrix to ``(n, *frame_shape)`` frames (a view when possible)."""
        return matrix.T.reshape((matrix.shape[1], *self.frame_shape))


@dataclass
class VideoProbe:
    """What is known about a source before reading it.

    Attributes
    ----------
    kind : {"video", "folder"}
    width, height : int
        Frame size before scaling.
    fps : float
        Native frame rate.
    frame_count : int or None
        Frames expected (None when the container does not say).
    files : list of Path
        The frame files of an image folder (empty for videos).
    """

    kind: str
    width: int
    height: int
    fps: float
    frame_count: int | None
    files: list[Path] = field(default_factory=list)


class TruncatedVideoError(WorkError):
    """A video whose decoding stopped before its end (truncated or damaged).

    Attributes
    ----------
    decoded : int
        Frames decoded before the failure (frame numbers ``0 .. decoded - 1``).
    expected : int or None
        Frames the container announces (None when it does not say).
    """

    def __init__(self, message: str, decoded: int, expected: int | None) -> None:
        super().__init__(message)
        self.decoded = decoded
        self.expected = expected


def short_read_tolerance(expected: int) -> int:
    """Frames a video may fall short of its announced count without being an error.

    Containers announce a duration, not a frame count: ``round(duration * fps)`` is often
    one frame more than the frames there are (AVI files of ../shared/data: 200 announced,
    199 decoded). Shortfalls above ``max(2, 1 %)`` are reported as truncation.
    """
    return max(2, math.ceil(0.01 * expected))


def _natural_key(path: Path) -> tuple[str, int, str]:
    match = _TRAILING_NUMBER.match(path.stem)
    if match:
        return (match.group(1), int(match.group(2)), path.suffix.lower())
    return (path.stem, -1, path.suffix.lower())


def list_image_files(folder: Path) -> list[Path]:
    """Frame files of an image folder, in frame order.

    Uses ``folder/input`` when present (changedetection.net layout). Among image files,
    the largest group sharing a name prefix and extension is taken (Wallflower keeps its
    ground-truth frame beside the input frames).

    Parameters
    ----------
    folder : Path
        The folder.

    Returns
    -------
    list of Path
        Sorted by the trailing number of the name.
    """
    if (folder / "input").is_dir():
        folder = folder / "input"
    images = [p for p in folder.iterdir() if p.suffix.lower() in IMAGE_EXTENSIONS and p.is_file()]
    if not images:
        return []
    groups = Counter(_natural_key(p)[0::2] for p in images)
    (prefix, ext), _ = groups.most_common(1)[0]
    chosen = sorted((p for p in images if _natural_key(p)[0::2] == (prefix, ext)), key=_natural_key)
    if len(chosen) < len(images):
        logger.info(
            "%s: using %d frames named %s*%s, ignoring %d other image(s)",
            folder,
            len(chosen),
            prefix,
            ext,
            len(images) - len(chosen),
        )
    return chosen


def _ffmpeg_reader(path: Path, pix_fmt: str = "bgr24") -> tuple[Iterator[bytes], dict]:
    try:
        return _ffmpeg.decode(str(path), pix_fmt)
    except (OSError, RuntimeError, KeyError, ValueError) as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(
            f"{path}: cannot be decoded as a video ({detail}): check the file, or re-encode "
            "it with ffmpeg -i IN -c:v libx264 OUT.mp4"
        ) from None


def probe(path: str | os.PathLike) -> VideoProbe:
    """Find the kind, size, frame rate and length of a source without decoding it all.

    Parameters
    ----------
    path : str or path-like
        A video file or an image folder.

    Returns
    -------
    VideoProbe

    Raises
    ------
    InputError
        If the path is missing, empty, or not a video or image folder.
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file or folder: check the path")
    if p.is_dir():
        files = list_image_files(p)
        if not files:
            raise InputError(
                f"{p}: folder holds no image frames ({', '.join(sorted(IMAGE_EXTENSIONS))}): "
                "give a video file or a folder of frames"
            )
        first = cv2.imread(str(files[0]), cv2.IMREAD_COLOR)
        if first is None:
            raise InputError(f"{files[0]}: cannot be read as an image: remove or replace it")
        h, w = first.shape[:2]
        return VideoProbe("folder", w, h, DEFAULT_FOLDER_FPS, len(files), files)
    if p.stat().st_size == 0:
        raise InputError(f"{p}: file is empty: give a video file with frames in it")
    if p.suffix.lower() in IMAGE_EXTENSIONS:
        raise InputError(
            f"{p}: is a single image, but separation needs many frames: give a video or a "
            "folder of frames"
        )
    gen, meta = _ffmpeg_reader(p)
    gen.close()
    return _video_probe(meta)


def _video_probe(meta: dict) -> VideoProbe:
    """The :class:`VideoProbe` of a video from ffmpeg's header (parsed)."""
    w, h = meta["size"]
    fps = float(meta.get("fps") or DEFAULT_FOLDER_FPS)
    duration = meta.get("duration")
    count = round(duration * fps) if duration and fps else None
    return VideoProbe("video", int(w), int(h), fps, count)


def iter_frames(
    path: str | os.PathLike,
    *,
    start: int = 0,
    frames: int | None = None,
    step: int = 1,
    info: VideoProbe | None = None,
    decoder: tuple[Iterator[bytes], dict] | None = None,
) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(frame_number, bgr_uint8_frame)`` for the selected frames of a source.

    Parameters
    ----------
    path : str or path-like
        A video file or an image folder.
    start, frames, step
        Frame selection: frames ``start, start + step, ...``, at most ``frames`` of them.
    info : VideoProbe, optional
        A probe of ``path`` already made.
    decoder : (frames, meta), optional
        An ffmpeg decoding ``path`` from its first frame, already started (the one
        :func:`open_source` probed with); closed with this iterator.

    Yields
    ------
    (int, (H, W, 3) uint8 ndarray)
        Frame number and frame.

    Raises
    ------
    InputError
        For frames that cannot be read, or of a different size than the first.
    TruncatedVideoError
        When decoding fails part-way, or the video ends more than
        :func:`short_read_tolerance` frames before the count its container announces;
        the message names the frame. The frames before it have been yielded.
    """
    p = Path(path)
    info = info or probe(p)
    count = 0
    if info.kind == "folder":
        selected = info.files[start::step]
        if frames is not None:
            selected = selected[:frames]
        for file in selected:
            image = cv2.imread(str(file), cv2.IMREAD_COLOR)
            if image is None:
                raise InputError(f"{file}: cannot be read as an image: remove or replace it")
            if image.shape[:2] != (info.height, info.width):
                raise InputError(
                    f"{file}: frame is {image.shape[1]}x{image.shape[0]} but the first frame is "
                    f"{info.width}x{info.height}: all frames of a folder must have one size"
                )
            match = _TRAILING_NUMBER.match(file.stem)
            number = int(match.group(2)) if match else count
            count += 1
            yield number, image
        return
    gen, meta = decoder if decoder is not None else _ffmpeg_reader(p)
    w, h = meta["size"]
    index = -1
    try:
        while frames is None or count < frames:
            try:
                buf = next(gen)
            except StopIteration:
                expected = info.frame_count
                if expected is not None and expected - (index + 1) > short_read_tolerance(expected):
                    raise TruncatedVideoError(
                        f"{p}: only {index + 1} of the {expected} frames its header announces "
                        f"could be decoded (truncated or damaged after frame {index + 1}): "
                        "repair or re-encode it, or pass --allow-partial to keep the frames read",
                        index + 1,
                        expected,
                    ) from None
                break
            except RuntimeError as exc:
                detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise TruncatedVideoError(
                    f"{p}: decoding failed at frame {index + 1} after {index + 1} frame(s) were "
                    f"decoded ({detail}): the file is damaged; re-encode it, use --frames to "
                    "stop before the damage, or pass --allow-partial to keep the frames read",
                    index + 1,
                    info.frame_count,
                ) from None
            index += 1
            if index < start or (index - start) % step:
                continue
            frame = np.frombuffer(buf, dtype=np.uint8).reshape(h, w, 3)
            count += 1
            yield index, frame
    finally:
        gen.close()


def _resize(image: np.ndarray, scale: float, interpolation: int = cv2.INTER_AREA) -> np.ndarray:
    if scale == 1.0:
        return image
    h, w = image.shape[:2]
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    if scale > 1.0 and interpolation == cv2.INTER_AREA:
        interpolation = cv2.INTER_LINEAR
    return cv2.resize(image, size, interpolation=interpolation)


def read_video(
    path: str | os.PathLike,
    *,
    start: int = 0,
    frames: int | None = None,
    step: int = 1,
    scale: float = 1.0,
    gray: bool = True,
    fps: float | None = None,
    dtype: type = np.float32,
    allow_partial: bool = False,
) -> Video:
    """Read a video file or image folder into a :class:`Video` matrix.

    Parameters
    ----------
    path : str or path-like
        Video file or image folder.
    start : int, default 0
        First frame (0-based).
    frames : int, optional
        Read at most this many frames.
    step : int, default 1
        Keep every ``step``-th frame.
    scale : float, default 1.0
        Resize factor applied to every frame.
    gray : bool, default True
        Grey-level matrix (m = H*W) or colour (m = 3*H*W, B, G, R interleaved per pixel).
    fps : float, optional
        Override the frame rate.
    dtype : numpy dtype, default float32
        Type of the data matrix.
    allow_partial : bool, default False
        Keep the frames decoded before a video turned out truncated or damaged (a warning
        is logged and the result has ``partial=True``) instead of raising.

    Returns
    -------
    Video

    Raises
    ------
    InputError
        If the source is missing, unreadable, or yields no frames.
    WorkError
        If decoding fails part-way.
    """
    info = probe(path)
    numbers: list[int] = []
    kept: list[np.ndarray] = []
    truncated: TruncatedVideoError | None = None
    try:
        for number, frame in iter_frames(path, start=start, frames=frames, step=step, info=info):
            numbers.append(number)
            kept.append(_resize(frame, scale))
    except TruncatedVideoError as exc:
        if not allow_partial:
            raise
        truncated = exc
        logger.warning(
            "%s: only %d frame(s) could be decoded (of %s announced); --allow-partial keeps "
            "the %d selected frame(s) read and marks the result partial",
            path,
            exc.decoded,
            exc.expected if exc.expected is not None else "an unknown number",
            len(kept),
        )
    if not kept:
        total = f"{info.frame_count}" if info.frame_count is not None else "no"
        raise InputError(
            f"{path}: no frames selected (the source has {total} frame(s), --start {start}, "
            f"--step {step}): lower --start or check the file"
        )
    stack = np.stack(kept)
    del kept
    if gray:
        planes = np.stack([cv2.cvtColor(f, cv2.COLOR_BGR2GRAY) for f in stack])
    else:
        planes = stack
    n = planes.shape[0]
    data = np.ascontiguousarray(planes.reshape(n, -1).T, dtype=dtype)
    rate = fps if fps is not None else info.fps / step
    video = Video(
        data=data,
        frames=stack,
        frame_shape=planes.shape[1:],
        fps=float(rate),
        source=str(path),
        frame_numbers=numbers,
    )
    if truncated is not None:
        video.partial = True
        video.partial_reason = truncated.message
        if truncated.expected is not None:
            selected = len(range(start, truncated.expected, step))
            video.frames_expected = selected if frames is None else min(frames, selected)
    return video


def load_observation_mask(
    path: str | os.PathLike,
    video: Video,
    *,
    native_size: tuple[int, int],
    start: int = 0,
    step: int = 1,
    scale: float = 1.0,
) -> np.ndarray:
    """Load an observation mask for ``video``: True where a pixel is observed.

    Parameters
    ----------
    path : str or path-like
        One image (applied to every frame) or a video/folder with one mask per frame
        (the same ``start``/``step`` selection as the frames is applied). Non-zero pixels
        are observed.
    video : Video
        The frames the mask belongs to.
    native_size : (width, height)
        Frame size of the source before scaling: the mask must have this size.
    start, step, scale
        The selection and scaling used to read ``video``.

    Returns
    -------
    (m, n) bool ndarray
        Same shape as ``video.data``.

    Raises
    ------
    InputError
        If the mask cannot be read, has the wrong size or too few frames, or observes
        nothing.
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: mask not found: check the --mask path")
    w0, h0 = native_size

    def prepare(image: np.ndarray, where: str) -> np.ndarray:
        if image.shape[:2] != (h0, w0):
            raise InputError(
                f"{where}: mask is {image.shape[1]}x{image.shape[0]} but frames are {w0}x{h0}: "
                "give a mask of the frame size"
            )
        if image.ndim == 3:
            image = image.max(axis=2)
        observed = _resize((image != 0).astype(np.uint8), scale, cv2.INTER_NEAREST) != 0
        if len(video.frame_shape) == 3:
            observed = np.repeat(observed[:, :, None], video.frame_shape[2], axis=2)
        return observed.reshape(-1)

    n = video.n_frames
    if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS:
        image = cv2.imread(str(p), cv2.IMREAD_UNCHANGED)
        if image is None:
            raise InputError(f"{p}: mask cannot be read as an image: give a PNG or BMP mask")
        column = prepare(image, str(p))
        mask = np.repeat(column[:, None], n, axis=1)
    else:
        mask = np.empty(video.data.shape, dtype=bool)
        got = 0
        for got, (_, frame) in enumerate(iter_frames(p, start=start, frames=n, step=step), start=1):
            mask[:, got - 1] = prepare(frame, f"{p} frame {got}")
        if got < n:
            raise InputError(
                f"{p}: mask has {got} frame(s) after --start/--step but the video has {n}: give "
                "one mask per frame, or a single mask image"
            )
    if not mask.any():
        raise InputError(f"{p}: mask observes no pixel (all zero): non-zero marks observed pixels")
    return mask


def random_observation(shape: tuple[int, int], fraction: float, seed: int = 0) -> np.ndarray:
    """A uniform random observation mask keeping ``fraction`` of the entries.

    Parameters
    ----------
    shape : (m, n)
        Matrix shape.
    fraction : float
        Probability that an entry is observed, in (0, 1].
    seed : int
        Random seed (repeatable masks).

    Returns
    -------
    (m, n) bool ndarray
    """
    rng = np.random.default_rng(seed)
    mask = rng.random(shape, dtype=np.float32) < fraction
    if not mask.any():
        mask.flat[rng.integers(mask.size)] = True
    return mask


# --- streaming sources: files, folders and stdin ---------------------------------------

Y4M_MAGIC = b"YUV4MPEG2"


@dataclass
class FrameSource:
    """A stream of selected, scaled uint8 BGR frames, read only as they are consumed.

    Attributes
    ----------
    name : str
        Where the frames come from (``"-"`` for stdin).
    width, height : int
        Frame size after scaling.
    fps : float
        Frame rate of the selected frames.
    frame_count : int or None
        Frames expected after the selection (None when unknown, e.g. stdin).
    native_size : (int, int)
        ``(width, height)`` before scaling.
    frames : iterator of (int, (H, W, 3) uint8 ndarray)
        Frame number and frame, in order.
    partial : bool
        Set once the frames are consumed: the video was truncated or damaged and
        ``allow_partial`` kept the frames decoded before the damage.
    frames_expected : int or None
        With ``partial``: the frames the container announced.
    total_frames : int or None
        Frames in the source before the selection (None when unknown, e.g. stdin).
    """

    name: str
    width: int
    height: int
    fps: float
    frame_count: int | None
    native_size: tuple[int, int]
    frames: Iterator[tuple[int, np.ndarray]]
    partial: bool = False
    frames_expected: int | None = None

    def close(self) -> None:
        """Stop reading (ends a decoding child process)."""
        for frames in (self.frames, getattr(self, "_decoder", None)):
            close = getattr(frames, "close", None)
            if close is not None:
                close()


def _scaled_size(w: int, h: int, scale: float) -> tuple[int, int]:
    if scale == 1.0:
        return w, h
    return max(1, round(w * scale)), max(1, round(h * scale))


def _select(
    frames: Iterator[tuple[int, np.ndarray]], start: int, count: int | None, step: int
) -> Iterator[tuple[int, np.ndarray]]:
    kept = 0
    for index, frame in frames:
        if count is not None and kept >= count:
            return
        if index < start or (index - start) % step:
            continue
        kept += 1
        yield index, frame


def _read_exact(stream, size: int) -> bytes:
    """Up to ``size`` bytes: fewer only at the end of the stream."""
    chunks = []
    got = 0
    while got < size:
        chunk = stream.read(size - got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _iter_raw(
    stream, width: int, height: int, pix_fmt: str, name: str
) -> Iterator[tuple[int, np.ndarray]]:
    channels = 1 if pix_fmt == "gray" else 3
    size = width * height * channels
    index = 0
    while True:
        buf = _read_exact(stream, size)
        if not buf:
            return
        if len(buf) < size:
            raise WorkError(
                f"{name}: stream ended inside frame {index} ({len(buf)} of {size} bytes of a "
                f"{width}x{height} {pix_fmt} frame): check --size and --pix-fmt"
            )
        frame = np.frombuffer(buf, dtype=np.uint8)
        if channels == 1:
            frame = cv2.cvtColor(frame.reshape(height, width), cv2.COLOR_GRAY2BGR)
        else:
            frame = frame.reshape(height, width, 3)
        yield index, frame
        index += 1


@dataclass
class Y4MHeader:
    """What a YUV4MPEG2 stream header says."""

    width: int
    height: int
    fps: float
    colorspace: str
    full_range: bool


def parse_y4m_header(line: bytes, name: str = "-") -> Y4MHeader:
    """Parse the first line of a y4m stream (``YUV4MPEG2 W320 H240 F25:1 C420jpeg ...``).

    Raises
    ------
    InputError
        If the header is not y4m, lacks the size, or has an unsupported colour space.
    """
    tokens = line.decode("ascii", "replace").split()
    if not tokens or tokens[0] != "YUV4MPEG2":
        raise InputError(f"{name}: not a y4m stream header: give --size WxH for raw frames")
    fields = {t[0]: t[1:] for t in tokens[1:] if t}
    try:
        width, height = int(fields["W"]), int(fields["H"])
    except (KeyError, ValueError):
        raise InputError(f"{name}: y4m header lacks W/H: {line[:80]!r}") from None
    fps = 25.0
    if "F" in fields:
        num, _, den = fields["F"].partition(":")
        try:
            fps = float(num) / float(den or 1)
        except (ValueError, ZeroDivisionError):
            fps = 25.0
    colorspace = fields.get("C", "420jpeg")
    base = "mono" if colorspace.startswith("mono") else colorspace[:3]
    if base not in ("420", "444", "422", "mono") or colorspace.endswith(("p10", "p12", "p16")):
        raise InputError(
            f"{name}: y4m colour space C{colorspace} is not supported (8-bit 420, 422, 444, "
            "mono are): convert with ffmpeg -pix_fmt yuv420p"
        )
    full = any(t.upper() == "XCOLORRANGE=FULL" for t in tokens)
    return Y4MHeader(width, height, fps or 25.0, base, full)


def _yuv_to_bgr(y: np.ndarray, u: np.ndarray, v: np.ndarray, full: bool) -> np.ndarray:
    """BT.601 YUV planes (same size) to BGR uint8."""
    yf = y.astype(np.float32)
    uf = u.astype(np.float32) - 128.0
    vf = v.astype(np.float32) - 128.0
    if full:
        r, g, b = yf + 1.402 * vf, yf - 0.344136 * uf - 0.714136 * vf, yf + 1.772 * uf
    else:
        yf = 1.164383 * (yf - 16.0)
        r = yf + 1.596027 * vf
        g = yf - 0.391762 * uf - 0.812968 * vf
        b = yf + 2.017232 * uf
    out = np.stack([b, g, r], axis=2)
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def _iter_y4m(stream, header: Y4MHeader, name: str) -> Iterator[tuple[int, np.ndarray]]:
    w, h = header.width, header.height
    cw, ch = {
        "420": ((w + 1) // 2, (h + 1) // 2),
        "422": ((w + 1) // 2, h),
        "444": (w, h),
        "mono": (0, 0),
    }[header.colorspace]
    size = w * h + 2 * cw * ch
    index = 0
    while True:
        line = stream.readline()
        if not line:
            return
        if not line.startswith(b"FRAME"):
            raise WorkError(
                f"{name}: y4m frame {index} lacks its FRAME marker: the stream is damaged"
            )
        buf = _read_exact(stream, size)
        if len(buf) < size:
            raise WorkError(
                f"{name}: stream ended inside frame {index} ({len(buf)} of {size} bytes): the "
                "y4m stream is truncated"
            )
        data = np.frombuffer(buf, dtype=np.uint8)
        y = data[: w * h].reshape(h, w)
        if header.colorspace == "mono":
            frame = cv2.cvtColor(y, cv2.COLOR_GRAY2BGR)
        else:
            u = data[w * h : w * h + cw * ch].reshape(ch, cw)
            v = data[w * h + cw * ch :].reshape(ch, cw)
            if ch != h:
                u, v = np.repeat(u, 2, axis=0)[:h], np.repeat(v, 2, axis=0)[:h]
            if cw != w:
                u, v = np.repeat(u, 2, axis=1)[:, :w], np.repeat(v, 2, axis=1)[:, :w]
            frame = _yuv_to_bgr(y, u, v, header.full_range)
        yield index, frame
        index += 1


def _ffmpeg_y4m(stream, head: bytes, name: str):
    """Decode a container on ``stream`` (``head`` already read from it) into y4m by ffmpeg."""
    import subprocess
    import threading

    cmd = [
        _ffmpeg.executable(),
        "-hide_banner",
        "-loglevel",
        "error",
        "-i",
        "pipe:0",
        "-f",
        "yuv4mpegpipe",
        "-pix_fmt",
        "yuv444p",
        "-strict",
        "-1",
        "pipe:1",
    ]
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )

    def feed() -> None:
        try:
            proc.stdin.write(head)
            while True:
                chunk = stream.read(1 << 16)
                if not chunk:
                    break
                proc.stdin.write(chunk)
        except (BrokenPipeError, OSError, ValueError):
            pass
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    line = proc.stdout.readline()
    if not line.startswith(Y4M_MAGIC):
        err = proc.stderr.read().decode("utf-8", "replace").strip().splitlines()
        proc.kill()
        proc.wait()
        detail = err[-1] if err else "no video stream"
        raise InputError(
            f"{name}: stdin cannot be decoded as a video ({detail}): give --size WxH and "
            "--pix-fmt for raw frames, or a y4m or other container stream"
        )
    header = parse_y4m_header(line, name)

    def frames() -> Iterator[tuple[int, np.ndarray]]:
        try:
            yield from _iter_y4m(proc.stdout, header, name)
            if proc.wait() != 0:
                err = proc.stderr.read().decode("utf-8", "replace").strip().splitlines()
                raise WorkError(
                    f"{name}: decoding the stream failed ({err[-1] if err else 'ffmpeg error'})"
                    ": check the input"
                )
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            proc.stderr.close()

    return header, frames()


def _selected_count(total: int | None, start: int, frames: int | None, step: int) -> int | None:
    """Frames that ``start``/``frames``/``step`` select from ``total`` (None if unknown)."""
    if total is None:
        return None
    count = max(0, -(-(total - start) // step))
    return count if frames is None else min(count, frames)


def open_source(
    path: str | os.PathLike,
    *,
    start: int = 0,
    frames: int | None = None,
    step: int = 1,
    scale: float = 1.0,
    fps: float | None = None,
    size: tuple[int, int] | None = None,
    pix_fmt: str = "gray",
    stdin=None,
    allow_partial: bool = False,
) -> FrameSource:
    """Open a video file, image folder or stdin (``"-"``) as a :class:`FrameSource`.

    Nothing but the header is read: frames are decoded as the iterator is consumed, so
    only the frames a caller keeps are in memory (as uint8).

    Parameters
    ----------
    path : str or path-like
        Video file, image folder, or ``"-"`` for stdin. Stdin holds raw frames when
        ``size`` is given (``pix_fmt`` gray or bgr24, as ``ffmpeg -f rawvideo -pix_fmt
        gray -`` writes), else a y4m stream (its header gives size and rate), else any
        container ffmpeg can read from a pipe.
    start, frames, step : int
        Frame selection, as in :func:`read_video`.
    scale : float
        Resize factor.
    fps : float, optional
        Frame rate override (raw stdin has none: 25 by default).
    size : (width, height), optional
        Size of raw frames on stdin.
    pix_fmt : {"gray", "bgr24"}
        Pixel format of raw frames on stdin.
    stdin : binary file, optional
        Stream to read instead of ``sys.stdin.buffer`` (tests).
    allow_partial : bool, default False
        On a truncated or damaged video, end the stream at the damage (and set
        ``source.partial``) instead of raising :class:`TruncatedVideoError`.

    Returns
    -------
    FrameSource

    Raises
    ------
    InputError
        Missing or undecodable input (before any frame is consumed).
    """
    decoder: tuple[Iterator[bytes], dict] | None = None
    if str(path) == "-":
        import sys

        stream = stdin if stdin is not None else sys.stdin.buffer
        name = "stdin"
        count = None
        if size is not None:
            w, h = size
            raw = _iter_raw(stream, w, h, pix_fmt, name)
            rate = fps if fps is not None else DEFAULT_FOLDER_FPS
        else:
            head = _read_exact(stream, len(Y4M_MAGIC))
            if not head:
                raise InputError("stdin: is empty: pipe frames into bpvideo separate -")
            if head == Y4M_MAGIC:
                header = parse_y4m_header(head + stream.readline(), name)
                raw = _iter_y4m(stream, header, name)
            else:
                header, raw = _ffmpeg_y4m(stream, head, name)
            w, h = header.width, header.height
            rate = fps if fps is not None else header.fps / step
        selected = _select(raw, start, frames, step)
    else:
        p = Path(path)
        if p.is_file() and p.stat().st_size > 0 and p.suffix.lower() not in IMAGE_EXTENSIONS:
            decoder = _ffmpeg_reader(p)  # one ffmpeg probes and decodes
            info = _video_probe(decoder[1])
        else:
            info = probe(path)  # a folder, or an input refused with a clear message
        w, h = info.width, info.height
        name = str(path)
        selected = iter_frames(
            path, start=start, frames=frames, step=step, info=info, decoder=decoder
        )
        count = _selected_count(info.frame_count, start, frames, step)
        rate = fps if fps is not None else info.fps / step

    def scaled() -> Iterator[tuple[int, np.ndarray]]:
        kept = 0
        try:
            for number, frame in selected:
                kept += 1
                yield number, _resize(frame, scale)
        except TruncatedVideoError as exc:
            if not allow_partial:
                raise
            source.partial, source.frames_expected = (
                True,
                _selected_count(exc.expected, start, frames, step),
            )
            logger.warning(
                "%s: only %d frame(s) could be decoded (of %s announced); --allow-partial keeps "
                "the %d selected frame(s) read and marks the result partial",
                name,
                exc.decoded,
                exc.expected if exc.expected is not None else "an unknown number",
                kept,
            )
        finally:
            selected.close()

    sw, sh = _scaled_size(w, h, scale)
    source = FrameSource(name, sw, sh, float(rate), count, (w, h), scaled())
    source.total_frames = None if str(path) == "-" else info.frame_count
    if decoder is not None:  # closed by close() even when no frame is read
        source._decoder = decoder[0]
    return source
