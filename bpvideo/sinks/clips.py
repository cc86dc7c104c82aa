"""``--clips``: the input's frames of each event, cut by ffmpeg.

A clip is a stream copy when the event starts on a keyframe of the input (its packets,
bit for bit, in an MP4: no quality lost, no encoder run) and MP4 can hold the input's
codec; otherwise ffmpeg re-encodes it as H.264 after an exact seek (it decodes from the
keyframe before and drops what precedes). Folders of frames are encoded from their
frames (:class:`~bpvideo.sinks.events.ClipsSink`).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from bpvideo.errors import WorkError
from bpvideo.sources import ffmpeg as _ffmpeg

__all__ = ["cut_clip", "keyframe_at"]

_SHOWINFO = re.compile(r"^\[Parsed_showinfo_\d+ @ [0-9a-fx]+\] n: *\d+ .*?pts_time:([-0-9.e]+)",
                       re.MULTILINE)  # fmt: skip


def _run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([_ffmpeg.executable(), "-hide_banner", "-nostdin", *args],
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, check=False, **_ffmpeg.no_sigint())  # fmt: skip


def keyframe_at(path: str, seconds: float) -> float | None:
    """The time (the stream's own, in seconds) of the keyframe at or before ``seconds``
    from the start of a video file; None when ffmpeg cannot tell.

    ffmpeg seeks without decoding what follows the keyframe (``-noaccurate_seek``) and
    keeps the stream's timestamps (``-copyts``); ``showinfo`` says the first frame's.
    """
    done = _run(["-loglevel", "info", "-ss", f"{max(0.0, seconds):.6f}", "-noaccurate_seek",
                 "-copyts", "-i", _ffmpeg.file_url(path), "-frames:v", "1", "-an", "-map",
                 "0:v:0", "-vf", "showinfo", "-f", "null", "-"])  # fmt: skip
    found = _SHOWINFO.search(done.stderr.decode(errors="replace"))
    return float(found.group(1)) if done.returncode == 0 and found else None


def _copy(path: str, out: Path, start: float, frames: int) -> bool:
    """Copy ``frames`` packets from the keyframe at ``start``; whether it worked."""
    done = _run(["-loglevel", "error", "-y", "-ss", f"{start:.6f}", "-i", _ffmpeg.file_url(path),
                 "-frames:v", str(frames), "-map", "0:v:0", "-an", "-c", "copy",
                 "-avoid_negative_ts", "make_zero", "-movflags", "+faststart",
                 _ffmpeg.file_url(out)])  # fmt: skip
    if done.returncode != 0:
        out.unlink(missing_ok=True)
        return False
    try:
        ok = _ffmpeg.probe(out).frame_count == frames
    except OSError:
        ok = False
    if not ok:
        out.unlink(missing_ok=True)
    return ok


def _encode(path: str, out: Path, start: float, frames: int, fps: float, crf: int,
            preset: str) -> None:  # fmt: skip
    done = _run([
        "-loglevel", "error", "-y", "-ss", f"{start:.6f}", "-i", _ffmpeg.file_url(path),
        "-frames:v", str(frames), "-map", "0:v:0", "-an", "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2",
        "-c:v", "libx264", "-preset", preset, "-crf", str(crf), "-pix_fmt", "yuv420p",
        "-r", f"{fps:.6f}", "-movflags", "+faststart", _ffmpeg.file_url(out),
    ])  # fmt: skip
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        raise WorkError(f"{out.name}: ffmpeg could not cut the clip ({why[-1] if why else ''}): "
                        "check free disk space")  # fmt: skip


def cut_clip(
    path: str, out: Path, first: int, frames: int, fps: float, *, crf: int, preset: str,
    origin: float | None = None,
) -> str:  # fmt: skip
    """Frames ``first`` (0-based) to ``first + frames - 1`` of a video file as ``out``.

    Parameters
    ----------
    path : str
        The video file.
    out : Path
        The clip (``.mp4``).
    first, frames : int
        Where it starts, how many frames it holds.
    fps : float
        The input's rate.
    crf, preset : int, str
        The H.264 encoder's settings when the clip is re-encoded.
    origin : float, optional
        The stream's time of its first frame (:func:`keyframe_at` of 0), when known.

    Returns
    -------
    str
        ``"copy"`` or ``"encode"``: how it was made.
    """
    start = first / fps
    origin = keyframe_at(path, 0.0) if origin is None else origin
    key = keyframe_at(path, start + 0.5 / fps)
    if origin is not None and key is not None and abs(key - origin - start) < 0.5 / fps:
        if _copy(path, out, start, frames):
            return "copy"
    _encode(path, out, start, frames, fps, crf, preset)
    return "encode"
