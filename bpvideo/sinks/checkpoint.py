"""The checkpoint of a run solved window by window: what ``--resume`` needs after a stop,
a crash or SIGKILL (:class:`Checkpoint`, :func:`read_checkpoint`, :func:`replay`).

A hidden folder in OUTDIR, :data:`CHECKPOINT`, holds per finished window its blocks'
background and masks (``window-NNNNNN.npz``: the frames are the input's, read again), the
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
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bpvideo.errors import InputError, literal
from bpvideo.records import Block, WindowInfo, WindowReport
from bpvideo.sinks.outputs import signals_deferred, write_json

__all__ = ["CHECKPOINT", "Checkpoint", "Saved", "identity", "read_checkpoint", "replay"]

logger = logging.getLogger("bpvideo")

#: The checkpoint folder in OUTDIR (hidden: never taken for a result).
CHECKPOINT = ".bpvideo-resume"
RUN = "run.json"
#: Settings that do not change a result: a resumed run may differ in them.
FREE_SETTINGS = ("overwrite", "resume")


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
    """The checkpoint in ``outdir`` (None when there is none, or it saved no window)."""
    folder = Path(outdir) / CHECKPOINT
    try:
        run = json.loads((folder / RUN).read_text())
    except (OSError, ValueError):
        return None
    if not run.get("windows"):
        return None
    last = run["windows"][-1]["index"]
    try:
        with np.load(folder / f"state-{last:06d}.npz", allow_pickle=False) as data:
            state = {k: data[k] for k in data.files}
    except (OSError, ValueError) as exc:
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
        with np.load(saved.folder / f"window-{info.index:06d}.npz", allow_pickle=False) as data:
            for j in range(window["blocks"]):
                numbers = data[f"{j}_numbers"].tolist()
                background = data[f"{j}_background"]
                shape = background.shape[:3]
                masks = np.unpackbits(data[f"{j}_masks"], count=int(np.prod(shape)))
                read = [next(frames, None) for _ in numbers]
                if [None if r is None else r[0] for r in read] != numbers:
                    raise InputError(
                        f"{literal(saved.run['input'])}: its frames are not those the stopped "
                        "run solved (the input changed): run without {resume} and with "
                        "{overwrite}",
                        option=("resume", True),
                    )
                pictures = np.stack([frame for _, frame in read])  # type: ignore[misc]
                yield Block(numbers, pictures, background, masks.reshape(shape).astype(bool),
                            info, offset)  # fmt: skip
                offset += len(numbers)


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
        self._zip: zipfile.ZipFile | None = None
        self._path = self.folder / ".window.npz.tmp"
        self._blocks = 0
        self._numbers: list[int] = []

    def open(self) -> None:
        """Start the folder afresh (a resumed run keeps what it goes on from)."""
        if self.skip == 0:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder.mkdir(exist_ok=True)
            write_json(self.folder / RUN, self.run)

    def write(self, block: Block) -> None:
        """Add the block to its window's file; save the window at its last block."""
        info = block.window
        if info is None or info.index < self.skip or self.stopped:
            return
        if block.offset == 0:
            report = info.report
            total = self.run["total"]
            if report is None or (total is not None and self.frames + info.frames >= total):
                self.stopped = True  # the last window (or a learned background): not saved
                return
            self._start(info.index)
        assert self._zip is not None
        j = self._blocks
        for name, array in (("numbers", np.asarray(block.numbers, dtype=np.int64)),
                            ("background", block.background),
                            ("masks", np.packbits(block.masks, axis=None))):  # fmt: skip
            with self._zip.open(f"{j}_{name}.npy", "w", force_zip64=True) as handle:
                np.lib.format.write_array(handle, np.ascontiguousarray(array))
        self._blocks += 1
        self._numbers.extend(block.numbers)
        if block.last:
            self._save(info)

    def _start(self, index: int) -> None:
        self._path = self.folder / f".window-{index:06d}.npz.tmp"
        self._zip = zipfile.ZipFile(self._path, "w", zipfile.ZIP_DEFLATED, compresslevel=1)
        self._blocks = 0
        self._numbers = []

    def _save(self, info: WindowInfo) -> None:
        """Rename the window's file into place, save the state, then ``run.json``."""
        assert self._zip is not None
        self._zip.close()
        self._zip = None
        with signals_deferred():  # the window, its state and run.json: all or none
            os.replace(self._path, self.folder / f"window-{info.index:06d}.npz")
            state = self.folder / f"state-{info.index:06d}.npz"
            staged = self.folder / f".state-{info.index:06d}.npz.tmp"
            with open(staged, "wb") as handle:
                np.savez(handle, **self.state())
            os.replace(staged, state)
            numbers, self._numbers = self._numbers, []
            entry = {"index": info.index, "frames": info.frames, "blocks": self._blocks,
                     "observed": info.observed, "numbers": numbers,
                     "report": None if info.report is None else asdict(info.report)}  # fmt: skip
            previous = self.run["windows"][-1]["index"] if self.run["windows"] else None
            self.run["windows"].append(entry)
            write_json(self.folder / RUN, self.run)
            if previous is not None:
                (self.folder / f"state-{previous:06d}.npz").unlink(missing_ok=True)
        self.frames += info.frames
        logger.info("checkpoint: frames 1-%d saved (window %d)", self.frames, info.index + 1)

    def close(self) -> None:
        """The result is complete: the checkpoint is no longer needed."""
        self.abort()
        self.remove()

    def abort(self) -> None:
        """Drop the window being saved; keep the windows saved (``--resume``)."""
        if self._zip is not None:
            self._zip.close()
            self._zip = None
            self._path.unlink(missing_ok=True)

    def remove(self) -> None:
        """Remove the checkpoint folder."""
        shutil.rmtree(self.folder, ignore_errors=True)
