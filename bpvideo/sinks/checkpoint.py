"""The checkpoint of a run solved window by window: what ``--resume`` needs after a stop,
a crash or SIGKILL (:class:`Checkpoint`, :func:`read_checkpoint`, :func:`replay`).

A hidden folder in OUTDIR, :data:`CHECKPOINT`, holds per finished window its blocks'
background and masks (``window-NNNNNN.bin``, zlib: the background as differences
from frame to frame, the masks as bits; the frames are the input's, read again), the
state the window hands on to the next (``state-NNNNNN.npz``: warm start, reference
background, detail, frames done) and ``run.json`` (the input, the settings, the windows
saved), each written under a temporary name then renamed, ``run.json`` last: whatever
moment a run is killed at, the checkpoint names only windows whose files are whole.
``--resume`` replays the saved blocks through fresh sinks (the same blocks, in the same
order: masks, videos, events and summary as an uninterrupted run writes them) and the run
loop goes on from the saved state. A complete result removes its checkpoint.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from bpvideo.errors import InputError, literal
from bpvideo.records import Block, WindowInfo, WindowReport
from bpvideo.sinks.outputs import write_json

__all__ = ["CHECKPOINT", "Checkpoint", "Saved", "identity", "read_checkpoint", "replay"]

logger = logging.getLogger("bpvideo")

#: The checkpoint folder in OUTDIR (hidden: never taken for a result).
CHECKPOINT = ".bpvideo-resume"
RUN = "run.json"
#: Settings that do not change a result: a resumed run may differ in them (``threads``:
#: the masks are the same on any number of threads, tests/pipeline/test_threads.py).
FREE_SETTINGS = ("overwrite", "resume", "threads")


def identity(input: str, settings_dict: dict[str, Any]) -> dict[str, Any]:
    """What a resumed run must share with the stopped one: the input (its path, size and
    modification time) and the settings that shape the result."""
    path = Path(input).resolve()
    stat = path.stat()
    settings = {k: v for k, v in settings_dict.items() if k not in FREE_SETTINGS}
    return {
        "input": str(path),
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "settings": json.loads(json.dumps(settings, default=str)),
    }


@dataclass
class Saved:
    """A checkpoint read back: ``run.json`` and the state of its last window."""

    folder: Path
    run: dict[str, Any]
    state: dict[str, Any]

    @property
    def windows(self) -> list[dict[str, Any]]:
        """The windows saved, in order (``index``, ``frames``, ``numbers``, ...)."""
        return self.run["windows"]

    @property
    def frames(self) -> int:
        """Frames whose outputs are saved."""
        return sum(w["frames"] for w in self.windows)

    def resume_state(self) -> tuple[int, dict[str, Any]]:
        """``Job.resume``: the windows done and the state they handed on, with the new
        frame numbers of each window (checked against the input as it is read again)."""
        numbers = {w["index"]: w["numbers"] for w in self.windows}
        return len(self.windows), {**self.state, "numbers": numbers}

    def span(self) -> str:
        """``frames 1-300 of 900`` (1-based, as the log's windows; ``of`` when known)."""
        total = self.run.get("total")
        of = f" of {total}" if total else ""
        return f"frames 1-{self.frames}{of}"


def read_checkpoint(outdir: Path) -> Saved | None:
    """The checkpoint in ``outdir`` (None when there is none, or it saved no window).

    Raises
    ------
    InputError
        A checkpoint that cannot be read back (its ``run.json`` or last state damaged).
    """
    folder = Path(outdir) / CHECKPOINT
    try:
        text = (folder / RUN).read_text()
    except OSError:  # none: the run was stopped before its first window was saved
        return None
    try:
        run = json.loads(text)
        if not run.get("windows"):
            return None
        last = int(run["windows"][-1]["index"])
        with np.load(folder / f"state-{last:06d}.npz", allow_pickle=False) as data:
            state = {k: data[k] for k in data.files}
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise InputError(
            f"{literal(folder)}: the checkpoint is damaged ({exc}): run without {{resume}} "
            "and with {overwrite}",
            option=("resume", True),
        ) from None
    return Saved(folder, run, state)


def replay(saved: Saved, frames: Iterator[tuple[int, np.ndarray]]) -> Iterator[Block]:
    """The blocks of the saved windows, as the run wrote them, with their input frames
    read again from ``frames`` (the source's, from its first frame)."""
    for window in saved.windows:
        report = window.get("report")
        info = WindowInfo(
            index=window["index"],
            frames=window["frames"],
            report=None if report is None else WindowReport(**report),
            observed=window["observed"],
        )
        offset = 0
        with open(saved.folder / f"window-{info.index:06d}.bin", "rb") as handle:
            for block in window["blocks"]:
                numbers = window["numbers"][offset : offset + block["frames"]]
                shape = tuple(block["shape"])
                delta = np.frombuffer(_unpack(handle, block["background"]), np.uint8)
                background = np.cumsum(delta.reshape(shape), axis=0, dtype=np.uint8)
                bits = np.frombuffer(_unpack(handle, block["masks"]), np.uint8)
                masks = np.unpackbits(bits, count=int(np.prod(shape[:3]))).reshape(shape[:3])
                read = [next(frames, None) for _ in numbers]
                if [None if r is None else r[0] for r in read] != numbers:
                    raise InputError(
                        f"{literal(saved.run['input'])}: its frames are not those the stopped "
                        "run solved (the input changed): run without {resume} and with "
                        "{overwrite}",
                        option=("resume", True),
                    )
                pictures = np.stack([frame for _, frame in read])  # type: ignore[misc]
                yield Block(numbers, pictures, background, masks.astype(bool), info, offset)
                offset += len(numbers)


def _pack(handle: BinaryIO, data: bytes) -> int:
    """Write ``data`` compressed (zlib, run lengths only: the fastest that shrinks the
    background's differences, 0.18 s and 18x for 200 frames of 320x240); its length."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 15, 9, zlib.Z_RLE)
    packed = packer.compress(data) + packer.flush()
    handle.write(packed)
    return len(packed)


def _unpack(handle: BinaryIO, length: int) -> bytes:
    try:
        return zlib.decompress(handle.read(length))
    except zlib.error as exc:
        raise InputError(f"{literal(handle.name)}: the checkpoint is damaged ({exc}): run "
                         "without {resume} and with {overwrite}",
                         option=("resume", True)) from None  # fmt: skip


def _delta(frames: np.ndarray) -> np.ndarray:
    """uint8 frames as the first, then each one's difference from the one before (mod 256:
    ``np.cumsum(..., dtype=np.uint8)`` gives them back). A background changes little from
    frame to frame: deflated, 200 frames of 320x240 take 0.2 MB instead of 15 MB, in
    0.2 s instead of 1.7 s (deflating the frames themselves)."""
    out = frames.copy()
    np.subtract(frames[1:], frames[:-1], out=out[1:])
    return out


class Checkpoint:
    """A sink: saves each finished window (see the module docstring).

    Parameters
    ----------
    folder : Path
        ``OUTDIR/.bpvideo-resume``.
    state : callable
        ``state()``: the arrays the last solved window hands on (asked at its last block).
    ident : dict
        :func:`identity` of the run.
    total : int or None
        Frames the input is expected to have (a window that reaches them is the last: not
        saved, the result is about to be complete).
    saved : Saved, optional
        The checkpoint a resumed run goes on from (its windows are not saved again).
    """

    def __init__(
        self,
        folder: Path,
        state: Callable[[], dict[str, Any]],
        ident: dict[str, Any],
        total: int | None,
        saved: Saved | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.state = state
        self.run: dict[str, Any] = dict(ident, total=total, windows=[])
        if saved is not None:
            self.run["windows"] = list(saved.windows)
        self.skip = len(self.run["windows"])
        self.frames = sum(w["frames"] for w in self.run["windows"])
        self.stopped = False  # a window was not saved: none after it is either
        self._file: BinaryIO | None = None
        self._path = self.folder / ".window.tmp"
        self._blocks: list[dict[str, Any]] = []
        self._numbers: list[int] = []
        #: One thread compresses and writes, in order, while the next frames are solved
        #: (zlib lets go of the interpreter lock).
        self._writer: ThreadPoolExecutor | None = None
        self._broken: OSError | None = None

    def open(self) -> None:
        """Start the folder afresh (a resumed run keeps what it goes on from)."""
        if self.skip == 0:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder.mkdir(exist_ok=True)
            write_json(self.folder / RUN, self.run)
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="bpvideo-checkpoint")

    def write(self, block: Block) -> None:
        """Queue the block for its window's file; the window's state at its last block."""
        info = block.window
        if info is None or info.index < self.skip or self.stopped or self._writer is None:
            return
        if block.offset == 0:
            total = self.run["total"]
            if info.report is None or (total is not None and self.frames + info.frames >= total):
                self.stopped = True  # the last window (or a learned background): not saved
                return
            self._blocks, self._numbers = [], []
            self._later(self._start, info.index)
        entry = {"frames": len(block), "shape": list(block.background.shape)}
        self._blocks.append(entry)
        self._numbers.extend(int(n) for n in block.numbers)
        bits = np.packbits(block.masks, axis=None)
        self._later(self._add, entry, _delta(block.background), bits)
        if block.last:  # the state now, before the next window is solved (copied: kept)
            state = {k: np.array(v, copy=True) for k, v in self.state().items()}
            self._later(self._save, info, state, self._blocks, self._numbers)
            self.frames += info.frames

    def _later(self, work: Callable[..., None], *args: Any) -> None:
        """Run ``work(*args)`` in the writer thread after what is queued; a failure to
        write (a full disk) stops the checkpoint, said once, and not the run."""

        def guarded() -> None:
            if self._broken is not None:
                return
            try:
                work(*args)
            except OSError as exc:
                self._broken = exc
                logger.warning("%s: no more windows are saved (%s): a stop now keeps only "
                               "those saved before", self.folder, exc.strerror or exc)  # fmt: skip

        assert self._writer is not None
        self._writer.submit(guarded)

    def _start(self, index: int) -> None:
        self._path = self.folder / f".window-{index:06d}.tmp"
        self._file = open(self._path, "wb")

    def _add(self, entry: dict[str, Any], delta: np.ndarray, bits: np.ndarray) -> None:
        assert self._file is not None
        entry["background"] = _pack(self._file, delta.tobytes())
        entry["masks"] = _pack(self._file, bits.tobytes())

    def _save(
        self, info: WindowInfo, state: dict[str, Any], blocks: list[Any], numbers: list[int]
    ) -> None:
        """Rename the window's file into place, save the state, then ``run.json``: a
        checkpoint read at any moment names only windows whose files are whole."""
        assert self._file is not None
        self._file.close()
        self._file = None
        os.replace(self._path, self.folder / f"window-{info.index:06d}.bin")
        staged = self.folder / f".state-{info.index:06d}.npz.tmp"
        with open(staged, "wb") as handle:
            np.savez(handle, **state)
        os.replace(staged, self.folder / f"state-{info.index:06d}.npz")
        entry = {"index": info.index, "frames": info.frames, "blocks": blocks,
                 "observed": info.observed, "numbers": numbers,
                 "report": None if info.report is None else asdict(info.report)}  # fmt: skip
        previous = self.run["windows"][-1]["index"] if self.run["windows"] else None
        self.run["windows"].append(entry)
        write_json(self.folder / RUN, self.run)
        if previous is not None:
            (self.folder / f"state-{previous:06d}.npz").unlink(missing_ok=True)
        done = sum(w["frames"] for w in self.run["windows"])
        logger.debug("checkpoint: frames 1-%d saved (window %d)", done, info.index + 1)

    def close(self) -> None:
        """The result is complete: the checkpoint is no longer needed."""
        self.abort()
        self.remove()

    def abort(self) -> None:
        """Finish saving the windows queued whole; drop the one being written; keep the
        windows saved (``--resume``)."""
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None
        if self._file is not None:
            self._file.close()
            self._file = None
            self._path.unlink(missing_ok=True)

    def remove(self) -> None:
        """Remove the checkpoint folder."""
        shutil.rmtree(self.folder, ignore_errors=True)
