"""OS errors while writing, as one-line errors that name the file and the fix.

A write that fails raises an :class:`OSError` deep in a writer (a mask file, a CSV, an
encoder's pipe); the error a user reads is made here, once: which file (the first write
that failed, named where it will appear, never by its hidden staging path), why (a full
disk, the file size limit of ``ulimit -f``, too few file descriptors for ``ulimit -n``,
a folder removed while it was written) and the fix.

Writers wrap their writes in :func:`naming` (a write to an open file raises an
``OSError`` that names no file); :func:`write_failure` and :func:`resource_failure` read
the chain of exceptions for the first one.
"""

from __future__ import annotations

import errno
import os
import resource
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from bpvideo.errors import BpvideoError, InputError, WorkError, literal

__all__ = [
    "FULL",
    "MIN_OPEN_FILES",
    "check_open_files",
    "events_failure",
    "first_oserror",
    "naming",
    "raise_open_files",
    "reason",
    "removed_failure",
    "resource_failure",
    "retold",
    "temp_failure",
    "unstaged",
    "write_failure",
]

#: Errors of a device with no room left.
FULL = (errno.ENOSPC, errno.EDQUOT)
#: Errors of a process limit rather than of a file: the file size limit, open files.
LIMITS = (errno.EFBIG, errno.EMFILE, errno.ENFILE)
#: Open files a run needs at least (its pipes, encoders, their logs, mask writers, an
#: output's lock; a plain run held 17 at once): a lower ``ulimit -n`` is refused before
#: any work, where it made the probe of a good video fail as "cannot be decoded".
MIN_OPEN_FILES = 32
#: The soft limit on open files that bpvideo's own processes raise theirs to (up to the
#: hard limit) when it is lower.
OPEN_FILES = 1024


@contextmanager
def naming(path: str | os.PathLike) -> Iterator[None]:
    """Give an :class:`OSError` raised inside the block ``path`` as its file name when it
    names none (a write to an open file, a close that flushes)."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None:
            exc.filename = os.fspath(path)
        raise


def first_oserror(exc: BaseException) -> OSError | None:
    """The earliest :class:`OSError` in ``exc``'s chain (``__cause__``/``__context__``):
    the write that failed first, not a clean-up that failed after it."""
    found, seen = None, set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError):
            found = exc
        exc = exc.__cause__ or exc.__context__
    return found


def _limit(kind: int) -> str:
    """The soft limit of ``kind`` (an ``RLIMIT_*``), as ``ulimit`` shows it."""
    soft, _ = resource.getrlimit(kind)
    if soft == resource.RLIM_INFINITY:
        return "unlimited"
    return f"{soft // 1024} KiB" if kind == resource.RLIMIT_FSIZE else str(soft)


def reason(exc: OSError, fix: str) -> tuple[str, str]:
    """What went wrong and its fix, for an ``OSError`` while writing: a full disk, a
    process limit (file size, open files), or the system's words with ``fix``."""
    code = exc.errno
    if code in FULL:
        return "disk full (no space left on the device)", f"free some space or {fix}"
    if code == errno.EFBIG:
        limit = _limit(resource.RLIMIT_FSIZE)
        return (f"the file size limit was reached (ulimit -f: {limit})",
                "raise the limit (ulimit -f unlimited) or write smaller files")  # fmt: skip
    if code in (errno.EMFILE, errno.ENFILE):
        limit = _limit(resource.RLIMIT_NOFILE)
        return (f"too many open files (ulimit -n: {limit})",
                "raise the limit (ulimit -n 1024) and run again")  # fmt: skip
    return literal(exc.strerror or str(exc)), fix


#: Pairs ``(hidden, shown)``: a staging folder (or a file staged beside its place) and
#: the name its files will have once the run's result is in place.
Renames = Sequence[tuple[Path, Path]]


def _shown_name(error: OSError, renames: Renames) -> str:
    """The file ``error`` names, as the user will know it (a staged file under its final
    name); "" when it names none."""
    if not error.filename:
        return ""
    name = os.fsdecode(error.filename)
    for hidden, shown in renames:
        try:
            return str(shown / Path(name).relative_to(hidden))
        except ValueError:
            continue
    return name


def write_failure(path: Path, exc: BaseException, renames: Renames = ()) -> WorkError:
    """A one-line :class:`WorkError` for an OS error while writing into OUTDIR ``path``.

    Parameters
    ----------
    path : Path
        The output directory.
    exc : BaseException
        The error (its chain is searched for the first :class:`OSError`).
    renames : sequence of (Path, Path)
        The run's staging folder and staged files, with their final names: a file in
        them is named as it would have been in place.
    """
    first = first_oserror(exc)
    assert first is not None
    name = _shown_name(first, renames)
    if name and not Path(os.path.abspath(name)).is_relative_to(os.path.abspath(path)):
        what, fix = reason(first, "write it elsewhere")  # --masks-to, beside OUTDIR
        return WorkError(f"{literal(name)}: writing it failed: {what}: {fix}; nothing was kept")
    what, fix = reason(first, "check the output directory or choose another {output}")
    if first.errno in FULL:
        fix = "free some space or choose another {output}"
    where = f" ({literal(name)})" if name else ""
    return WorkError(
        f"{literal(path)}: writing the outputs failed: {what}{where}: {fix}; nothing was kept",
        option=("output", str(path)),
    )


def events_failure(path: Path, exc: BaseException, renames: Renames = ()) -> BpvideoError:
    """A one-line error for an OS error while ``bpvideo events`` writes the events of
    OUTDIR ``path`` again: a folder it cannot write in (read-only, no permission) is an
    unusable OUTDIR (:class:`InputError`); a failure part-way (a full disk) kept the
    earlier set whole (:class:`WorkError`)."""
    first = first_oserror(exc)
    assert first is not None
    if first.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return InputError(f"{literal(path)}: cannot write in it ({literal(first.strerror)}): "
                          "the events are written beside its masks; copy the folder where you "
                          "can write, or run as its owner")  # fmt: skip
    what, fix = reason(first, "check the output directory")
    name = _shown_name(first, renames)
    where = f" ({literal(name)})" if name else ""
    return WorkError(f"{literal(path)}: writing the events failed: {what}{where}: {fix}; the "
                     "earlier events were kept")  # fmt: skip


def raise_open_files() -> float:
    """Raise this process's soft limit on open files to :data:`OPEN_FILES` (or the hard
    limit, when lower); the soft limit then (``inf``: none)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < OPEN_FILES:
        soft = OPEN_FILES if hard == resource.RLIM_INFINITY else min(hard, OPEN_FILES)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        except (OSError, ValueError):
            soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return float("inf") if soft == resource.RLIM_INFINITY else float(soft)


def check_open_files() -> None:
    """Raise this process's soft limit on open files to :data:`OPEN_FILES` (or the hard
    limit, when lower), and refuse to start when even that is below
    :data:`MIN_OPEN_FILES`.

    Raises
    ------
    WorkError
        ``"too few open files allowed (ulimit -n: 12; a run needs 32): raise the limit
        (ulimit -n 1024) and run again"``.
    """
    soft = raise_open_files()
    if soft < MIN_OPEN_FILES:
        raise WorkError(f"too few open files allowed (ulimit -n: {soft:g}; a run needs "
                        f"{MIN_OPEN_FILES}): raise the limit (ulimit -n {OPEN_FILES}) and run "
                        "again")  # fmt: skip


def removed_failure(path: Path) -> WorkError:
    """The output directory (or its staging folder) was removed while the run wrote into
    it: whatever failed then (a write, an encoder) failed for that."""
    return WorkError(f"{literal(path)}: the output directory was removed while the run wrote "
                     "into it: leave it in place while bpvideo runs, or choose another "
                     "{output}; nothing was kept", option=("output", str(path)))  # fmt: skip


def resource_failure(exc: BaseException) -> WorkError | None:
    """A one-line :class:`WorkError` for an OS error no layer named, when it is a full
    disk or a process limit (file size, open files): the file, why and the fix; None for
    any other error (a bug to report)."""
    first = first_oserror(exc)
    if first is None or first.errno not in FULL + LIMITS:
        return None
    what, fix = reason(first, "")
    if first.errno in FULL:
        fix = "free some space or write somewhere else"
    name = f"{literal(os.fsdecode(first.filename))}: " if first.filename else ""
    return WorkError(f"{name}{what}: {fix}")


def unstaged(error: BpvideoError, renames: Renames) -> BpvideoError | None:
    """``error``, raised while an output folder was written and then removed, as its user
    reads it: the files of the hidden staging folder (and files staged beside their
    place) named as they would have been in place (an encoder's error names the file it
    wrote), and a failure of the work ending ``nothing was kept``; None when it needs
    neither."""
    template = error.template
    for hidden, shown in renames:
        template = template.replace(literal(hidden), literal(shown))
        template = template.replace(str(hidden), literal(shown))
    if isinstance(error, WorkError) and "kept" not in template:
        template += "; nothing was kept"
    return None if template == error.template else retold(error, template)


def retold(error: BpvideoError, template: str) -> BpvideoError:
    """A copy of ``error`` (of its class, with its option and fields) whose message is
    ``template``; made without calling the class's ``__init__``, whose arguments may
    differ (:class:`~bpvideo.sources.files.TruncatedVideoError`)."""
    fixed = type(error).__new__(type(error))
    fixed.__dict__.update(error.__dict__)
    fixed.template = template
    fixed.message = fixed.render()
    fixed.args = (fixed.message,)
    return fixed


def temp_failure(exc: OSError) -> WorkError:
    """A one-line :class:`WorkError` for an OS error in the temporary folder (``TMPDIR``:
    the frame spool of long videos, ffmpeg's logs), which is not the output's disk."""
    folder = tempfile.gettempdir()
    if exc.errno in FULL:
        why = "full (no space left on the device)"
    else:
        why = f"not usable ({literal(exc.strerror or exc)})"
    return WorkError(
        f"the temporary folder {literal(folder)} (TMPDIR) is {why}: free some space there, or "
        "set TMPDIR to a folder with room; nothing was kept"
    )
