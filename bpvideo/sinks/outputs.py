"""The output directory of ``separate``: results appear complete or not at all.

Output layout (a contract that scripts depend on: keep it, add to it)::

    OUTDIR/background.mp4      H.264 (yuv420p, faststart): the low-rank part L
    OUTDIR/foreground.mp4      the input where the mask is set, black elsewhere
    OUTDIR/masks/bin%06d.png   0/255 masks, one per input frame, named after the frame
                               (in000470.jpg -> bin000470.png; videos: index + 1)
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
import fcntl
import json
import logging
import os
import re
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from bpvideo.errors import BpvideoError, InputError, WorkError, literal
from bpvideo.failures import (
    naming,
    removed_failure,
    unstaged,
    write_failure,
)
from bpvideo.sinks.table import OUTPUT_NAMES, SUMMARY

__all__ = [
    "OUTPUT_NAMES",
    "SUMMARY",
    "OutputDir",
    "atomic_write_bytes",
    "release_lock",
    "remove_killed",
    "signals_deferred",
    "take_lock",
    "write_json",
]

logger = logging.getLogger("bpvideo")

STAGING_PREFIX = ".bpvideo-partial-"
#: The lock file of a run writing OUTDIR (flock, released and removed when the run ends):
#: a second run into the same OUTDIR at the same time is refused.
LOCK_NAME = ".bpvideo-lock"


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
        with naming(path), os.fdopen(fd, "wb") as fh:
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


#: Start of this process (wall clock): staging folders older than it, of processes that
#: are gone, were left by a killed run (SIGKILL, power loss) and are removed.
_PROCESS_START = time.time()
#: Output directories completed (summary.json renamed into place) by this process, so
#: that a late interruption is not reported as "no output was kept".
COMMITTED: list[Path] = []
#: Output directories committed incomplete by this process (a run stopped by a signal
#: keeps its finished windows: summary.json says ``incomplete``), and the checkpoints
#: kept without a result: what the CLI's last line says was kept.
KEPT: list[str] = []


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, but owned by another user
        return True
    return True


def remove_stale_staging(
    folder: Path, prefix: str = STAGING_PREFIX, killed: Collection[int] = ()
) -> list[Path]:
    """Remove ``.bpvideo-partial-*`` folders that a killed run left in ``folder``.

    A staging folder is stale when it is older than this process and the process that
    made it (its pid is in the name) is gone, or when that process is one of ``killed``
    (a batch's workers it has just ended: younger than the batch, and surely gone). A
    run killed by SIGKILL cannot clean up; its staging folder is hidden and never holds
    ``summary.json`` in OUTDIR, so it is never mistaken for a result, and the next run
    into the same OUTDIR removes it.

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
        if not entry.name.startswith(prefix) or not (entry.is_dir() or prefix != STAGING_PREFIX):
            continue
        match = re.match(re.escape(prefix) + r"(\d+)-", entry.name)
        owner = int(match.group(1)) if match else None
        try:
            if owner not in killed and entry.stat().st_mtime >= _PROCESS_START:
                continue
        except OSError:
            continue
        if owner is not None and owner != os.getpid() and owner not in killed and _pid_alive(owner):
            continue
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        if not entry.exists():
            removed.append(entry)
            logger.info("removed %s, left by an interrupted run", entry)
    return removed


#: Signals whose default is to end the process: each stops a run as SIGTERM does (its
#: outputs removed, exit ``128 + signal``), and each is held back by
#: :func:`signals_deferred`. SIGINT is Python's KeyboardInterrupt.
STOP_SIGNALS: tuple[int, ...] = tuple(
    getattr(signal, name)
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM")
    if hasattr(signal, name)
)


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold the :data:`STOP_SIGNALS` back during a step that must not be cut in two.

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
        for signum in STOP_SIGNALS:
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


def _refused(path: Path, message: str) -> InputError:
    """An unusable output directory: ``message`` may name ``{output}`` (``-o``)."""
    return InputError(message, option=("output", str(path)))


def take_lock(folder: Path) -> int:
    """Lock ``folder`` for this run: an exclusive ``flock`` on its :data:`LOCK_NAME`, held
    until :func:`release_lock`; the open file's descriptor.

    Raises
    ------
    InputError
        Another run holds the lock (it is writing ``folder`` now).
    """
    path = folder / LOCK_NAME
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, _FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise _refused(
                folder,
                f"{literal(folder)}: another bpvideo run is writing it now: wait for "
                "it to end or choose another {output}",
            ) from None
        try:  # the file a run that just ended removed is no lock: take the new one
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)


def release_lock(folder: Path, fd: int) -> None:
    """Remove ``folder``'s lock file, then release it (a run waiting on it takes a new
    one)."""
    with contextlib.suppress(OSError):
        (folder / LOCK_NAME).unlink()
    os.close(fd)


def remove_killed(folder: Path, killed: Collection[int] = ()) -> bool:
    """Remove what a killed run left in ``folder``, a result folder that never completed
    (no ``summary.json``): its stale staging folders (see :func:`remove_stale_staging`
    for ``killed``), its lock file when no run holds it, and the folder itself once
    empty. Whether the folder is gone."""
    if (folder / SUMMARY).exists():
        return False
    remove_stale_staging(folder, killed=killed)
    lock = folder / LOCK_NAME
    if lock.exists():
        try:
            release_lock(folder, take_lock(folder))
        except InputError:  # a live run holds it
            return False
    try:
        folder.rmdir()
    except OSError:  # it holds something else: not ours to remove
        return False
    logger.info("removed %s, left by an interrupted run", folder)
    return True


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
        self._beside: list[tuple[Path, Path]] = []  # (staged, final) outside OUTDIR
        self._lock: int | None = None  # the open lock file while this run writes OUTDIR

    def check(self) -> None:
        """Refuse unusable output directories before any work starts.

        Raises
        ------
        InputError
            If OUTDIR is a file, is not writable, or holds outputs and ``overwrite`` is off.
        """
        p = self.path
        q, where = literal(p), literal(self._ancestor())
        if p.exists() and not p.is_dir():
            raise _refused(
                p, f"{q}: output path is a file, not a directory: choose another {{output}}"
            )
        if p.is_symlink() and not p.exists():  # mkdir would fail on it: "File exists"
            target = literal(os.readlink(p))
            raise _refused(p, f"{q}: is a link to {target}, which does not exist: create that "
                           "folder or choose another {output}")  # fmt: skip
        if p.is_dir():
            self._check_results()
        ancestor = self._ancestor()
        if not ancestor.is_dir():
            raise _refused(
                p, f"{where}: is a file, so {q} cannot be created: choose another {{output}}"
            )
        if not os.access(ancestor, os.W_OK | os.X_OK):
            raise _refused(
                p, f"{q}: cannot write in {where} (permission denied): choose another {{output}}"
            )
        # os.access says yes to root everywhere: try for real (read-only mounts, /proc).
        try:
            # named like a staging folder of this process: a run killed here leaves it to
            # the next run's remove_stale_staging; a signal waits until it is gone
            with signals_deferred():
                probe = tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-probe-",
                                         dir=ancestor)  # fmt: skip
                os.rmdir(probe)
        except OSError as exc:
            raise _refused(
                p, f"{q}: cannot write in {where} ({exc.strerror}): choose another {{output}}"
            ) from None

    def _check_results(self) -> None:
        """Refuse an OUTDIR that holds results, unless ``overwrite``."""
        existing = [name for name in OUTPUT_NAMES if (self.path / name).exists()]
        if existing and not self.overwrite:
            raise _refused(
                self.path,
                f"{literal(self.path)}: already holds results ({', '.join(existing)}): pass "
                "{overwrite=True} to replace them or choose another {output}",
            )

    def _take_lock(self) -> None:
        """Lock OUTDIR for this run (:func:`take_lock`), then check again for results
        (another run may have finished since :meth:`check`)."""
        self._lock = take_lock(self.path)
        self._check_results()

    def _release_lock(self) -> None:
        """Release OUTDIR's lock (:func:`release_lock`)."""
        if self._lock is not None:
            release_lock(self.path, self._lock)
            self._lock = None

    def _ancestor(self) -> Path:
        """The nearest existing folder on the way to OUTDIR (OUTDIR itself when it exists)."""
        ancestor = self.path
        while not ancestor.exists():
            ancestor = ancestor.parent
        return ancestor

    def __enter__(self) -> OutputDir:
        self.check()
        missing = []
        parent = self.path
        while not parent.exists():
            missing.append(parent)
            parent = parent.parent
        self._created = missing
        try:
            with signals_deferred():  # __exit__ does not run if __enter__ is interrupted
                self.path.mkdir(parents=True, exist_ok=True)
                self._take_lock()
                remove_stale_staging(self.path)
                self.staging = Path(
                    tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=self.path)
                )
                os.chmod(self.staging, 0o777 & ~_umask())
        except OSError as exc:
            self.discard()
            raise WorkError(
                f"{literal(self.path)}: cannot create the output directory ({exc.strerror}): "
                "choose another {output}",
                option=("output", str(self.path)),
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

    def stage_beside(self, final: str | os.PathLike) -> Path:
        """A staging file for an output outside OUTDIR (``--masks-to FILE``), in the same
        folder as ``final`` (hidden, named after this process); :meth:`commit` renames it
        into place, a failure removes it."""
        final = Path(final)
        prefix = f".{final.name}{STAGING_PREFIX}"
        remove_stale_staging(final.parent, prefix)
        fd, staged = tempfile.mkstemp(prefix=f"{prefix}{os.getpid()}-", dir=final.parent)
        os.close(fd)
        os.chmod(staged, _FILE_MODE)
        self._beside.append((Path(staged), final))
        return Path(staged)

    def commit(self, complete: bool = True) -> None:
        """Move staged outputs into place; ``summary.json`` last (``complete`` False: the
        result of a stopped run, whose summary says ``incomplete``).

        Outputs of an earlier result that this one does not have (``background.mkv`` of a
        lossless run, ``preview.png``...) are removed with the staging folder: a result is
        never mixed with the files of another.
        """
        assert self.staging is not None
        final_summary = self.path / SUMMARY
        if final_summary.exists():
            final_summary.unlink()  # the old result stops being 'complete' first
        names = sorted(os.listdir(self.staging), key=lambda s: s == SUMMARY)
        stale = [n for n in OUTPUT_NAMES if n not in names and os.path.lexists(self.path / n)]
        with signals_deferred():
            for name in stale:
                os.replace(self.path / name, self.staging / f".old-{name}")
            for staged, final in self._beside:
                os.replace(staged, final)
            self._beside = []
            for name in names:
                src, dst = self.staging / name, self.path / name
                if src.is_dir() and dst.exists():
                    old = self.staging / f".old-{name}"
                    os.replace(dst, old)
                os.replace(src, dst)
            if complete:
                COMMITTED.append(self.path)
        shutil.rmtree(self.staging, ignore_errors=True)
        self.staging = None
        self._release_lock()

    def discard(self) -> None:
        """Remove the staging folder, and OUTDIR when this run created it and it is empty."""
        for staged, _ in self._beside:
            staged.unlink(missing_ok=True)
        self._beside = []
        if self.staging is not None:
            for _ in range(5):  # a file a stopping writer still made: removed at the next try
                shutil.rmtree(self.staging, ignore_errors=True)
                if not os.path.lexists(self.staging):
                    break
                time.sleep(0.02)
            self.staging = None
        self._release_lock()
        self._remove_created(self._created)

    @staticmethod
    def _remove_created(created: list[Path]) -> None:
        for folder in created:  # deepest first
            try:
                folder.rmdir()
            except OSError:
                break

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        renames = list(self._beside)  # staged files named as they would be in place
        removed = False
        if self.staging is not None:
            renames.append((self.staging, self.path))
            removed = not os.path.isdir(self.staging)
            self.discard()
        self._release_lock()
        if removed and isinstance(exc, (OSError, BpvideoError)):
            raise removed_failure(self.path) from exc
        if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
            # A closed stdout (--masks-to -) is not a write failure: the CLI ends quietly.
            raise write_failure(self.path, exc, renames) from exc
        if isinstance(exc, BpvideoError):
            fixed = unstaged(exc, renames)  # not by a name that no longer exists
            if fixed is not None:
                raise fixed from exc
