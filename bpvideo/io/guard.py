"""Paths a command writes, checked against the paths it reads before any work.

Every command (``separate``, ``batch``, ``evaluate``) lists what it will read and what it
will write, and :func:`check_access` refuses the run when a path written equals a path
read, or is a folder that holds one (it would be replaced), or when two outputs collide:
no output of bpvideo can replace, truncate or remove one of its own inputs. Paths are
compared after symbolic links are resolved; every path is also checked for being usable
at all (a name too long, a loop of links) so that the error names it before any work.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bpvideo.errors import InputError, literal

__all__ = ["Access", "check_access", "folder_reads", "input_reads"]


@dataclass(frozen=True)
class Access:
    """One path a command reads or writes.

    Attributes
    ----------
    path : Path
        The path as given.
    what : str
        How a message names it: ``"the input"``, ``"the output summary.json"``... For a
        path written, a message template (``"{masks_to}"``); literal text for a read.
    fix : str
        For a path written: the option to change, as a message template (``"{output}"``
        with ``option``) or literal text (``"--report"``).
    option : (str, object) or None
        The option of ``fix`` and its value.
    """

    path: Path
    what: str
    fix: str = ""
    option: tuple[str, Any] | None = None


def _real(access: Access) -> str:
    """The resolved path of ``access``, once the path is known to be usable."""
    try:
        os.stat(access.path)
    except FileNotFoundError:
        pass  # to be created (a write), or reported by the reader (a read)
    except NotADirectoryError:
        pass  # a file on the way: reported by whoever opens it, with its own fix
    except (OSError, ValueError) as exc:
        if getattr(exc, "errno", None) in (errno.EACCES, errno.EPERM):
            pass  # reported, with its fix, by whoever opens it
        else:
            why = getattr(exc, "strerror", None) or str(exc)
            fix = f": choose another {access.fix}" if access.fix else ": check the path"
            what = access.what if access.fix else literal(access.what)  # a template: written
            raise InputError(
                f"{literal(access.path)}: {what} cannot be used ({literal(why)}){fix}",
                option=access.option,
            ) from None
    return os.path.realpath(access.path)


def _inside(inner: str, outer: str) -> bool:
    return inner.startswith(outer.rstrip(os.sep) + os.sep)


def check_access(reads: Iterable[Access], writes: Iterable[Access]) -> None:
    """Refuse a run whose outputs would replace its inputs or each other.

    Parameters
    ----------
    reads : iterable of Access
        Every path the command reads (files, and the folders it reads whole).
    writes : iterable of Access
        Every path it writes, replaces or removes.

    Raises
    ------
    InputError
        A path that cannot be used, a path written that is (or holds) a path read, or two
        paths written that are the same (or one holds the other); the message names both
        and the option to change.
    """
    read_paths = [(_real(r), r) for r in reads]
    written: list[tuple[str, Access]] = []
    for w in writes:
        real = _real(w)
        for other_real, other in written:
            if real == other_real or _inside(real, other_real) or _inside(other_real, real):
                raise _clash(w, other.what, other.path, "is also")
        for read_real, r in read_paths:
            if real == read_real:
                raise _clash(w, literal(r.what), r.path, "would replace")
            if _inside(read_real, real):
                raise _clash(w, literal(r.what), r.path, "would replace the folder holding")
        written.append((real, w))


def _clash(w: Access, other: str, path: Path, verb: str) -> InputError:
    """``w`` would replace ``other`` (a template fragment) at ``path``."""
    fix = f": choose another {w.fix}" if w.fix else ""
    return InputError(
        f"{literal(w.path)}: {w.what} {verb} {other} ({literal(path)}){fix}", option=w.option
    )


def folder_reads(folder: Path, files: Sequence[Path], what: str) -> list[Access]:
    """A folder read whole: the folder and each of its files."""
    return [Access(folder, what)] + [Access(f, f"{what} {f.name}") for f in files]


def input_reads(path: str | os.PathLike | None, what: str) -> list[Access]:
    """What reading a source reads: a file, or a folder of frames and its frames.

    ``None`` and ``"-"`` (stdin) read no path.
    """
    if path is None or str(path) == "-":
        return []
    p = Path(path)
    try:
        if p.is_dir():
            from bpvideo.io.sources import list_image_files

            files = list_image_files(p)
            return folder_reads(files[0].parent if files else p, files, what)
    except OSError:
        pass  # refused by the reader, with its message
    return [Access(p, what)]
