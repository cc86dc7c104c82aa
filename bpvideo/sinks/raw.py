"""Masks as raw gray frames to a file, a named pipe or stdout (``--masks-to``):
:class:`RawMaskSink`."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from collections.abc import Iterable
from typing import Any

import numpy as np

from bpvideo.errors import InputError, WorkError, literal
from bpvideo.failures import naming

__all__ = ["RawMaskSink", "open_target"]


def open_target(target: str, option: str, what: str, example: str, mode: str = "wb") -> Any:
    """``target`` (a file or a named pipe given as ``option``, where ``what`` is written)
    opened for writing; a named pipe without a reader is refused at once (a plain open
    would wait for one for ever, deaf to a stop), naming ``example`` of a reader.

    Raises
    ------
    InputError
        No reader of the pipe, or the file cannot be opened.
    """
    try:
        if stat.S_ISFIFO(os.stat(target).st_mode):
            try:
                fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                if exc.errno != errno.ENXIO:
                    raise
                raise InputError(
                    f"{literal(target)}: no program reads this pipe ({{{option}}}): start the "
                    f"reader first (e.g. {literal(example)}), then bpvideo",
                    option=(option, target),
                ) from None
            os.set_blocking(fd, True)
            return os.fdopen(fd, mode)
    except FileNotFoundError:
        pass  # a new file
    except OSError as exc:
        raise _refused(target, exc, option, what) from None
    try:
        return open(target, mode)
    except OSError as exc:
        raise _refused(target, exc, option, what) from None


def _open_raw(target: str) -> Any:
    return open_target(target, "masks_to", "the raw masks", "ffmpeg -f rawvideo ... -i PIPE")


def _refused(target: str, exc: OSError, option: str, what: str) -> InputError:
    return InputError(
        f"{literal(target)}: cannot write {what} ({exc.strerror}): choose another {{{option}}}",
        option=(option, target),
    )


class RawMaskSink:
    """Masks as raw gray frames (0/255, H*W bytes each) to a file or to stdout (``"-"``).

    Parameters
    ----------
    target : str
        A file path, or ``"-"`` for stdout (binary, unbuffered by Python's text layer).

    Notes
    -----
    A reader of stdout that closes the pipe early raises :class:`BrokenPipeError` from
    :meth:`write` (the CLI ends quietly on it: ``| head``); a named pipe (FIFO) whose
    reader goes away, or that no process reads, is a :class:`WorkError` that says so.
    """

    @staticmethod
    def check(target: str | None) -> None:
        """Refuse ``"-"`` when stdout is a terminal (binary would flood it), as gzip does.

        Raises
        ------
        InputError
            ``target`` is ``"-"`` and stdout is a terminal.
        """
        if target != "-":
            return
        try:
            terminal = sys.stdout.isatty()
        except (AttributeError, ValueError):  # replaced or closed stdout: not a terminal
            terminal = False
        if terminal:
            raise InputError(
                "{masks_to='-'} writes binary masks to stdout, which is a terminal: pipe or "
                "redirect stdout ('| ffmpeg -f rawvideo ...' or '> masks.raw'), or give "
                "{masks_to} a file",
                option=("masks_to", target),
            )

    def __init__(self, target: str) -> None:
        self.target = target
        self.to_stdout = target == "-"
        if self.to_stdout:
            self._fh = sys.stdout.buffer
        else:
            self._fh = _open_raw(target)
        self.count = 0

    def write(self, masks: Iterable[np.ndarray]) -> None:
        """Write boolean (H, W) masks as 0/255 bytes.

        Raises
        ------
        WorkError
            The reader of a named pipe went away.
        """
        try:
            with self._naming():
                for mask in masks:
                    self._fh.write(np.where(mask, np.uint8(255), np.uint8(0)).tobytes())
                    self.count += 1
                self._fh.flush()
        except BrokenPipeError:
            if self.to_stdout:
                raise
            raise WorkError(
                f"{literal(self.target)}: the program reading this pipe stopped after "
                f"{self.count} mask(s) ({{masks_to}}): check that program; nothing was kept",
                option=("masks_to", self.target),
            ) from None

    def close(self) -> None:
        """Flush (stdout) or close (file)."""
        with self._naming():
            if self.to_stdout:
                self._fh.flush()
            else:
                self._fh.close()

    def _naming(self) -> contextlib.AbstractContextManager[None]:
        """An OS error of the file names it (a full disk names none): its message then
        says which file, not OUTDIR (this one may lie elsewhere)."""
        return contextlib.nullcontext() if self.to_stdout else naming(self.target)
