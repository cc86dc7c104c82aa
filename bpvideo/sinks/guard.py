"""Paths a command writes, checked against the paths it reads before any work.

Every command (``separate``, ``batch``, ``evaluate``) lists what it will read and what it
will write, and :func:`check_access` refuses the run when a path written equals a path
read, or is a folder that holds one (it would be replaced), or when two outputs collide:
no output of bpvideo can replace, truncate or remove one of its own inputs. Paths are
compared after symbolic links are resolved; every path is also checked for being usable
at all (a name too long, a loop of links) so that the error names it before any work.
"""

from __future__ import annotations

import bisect
import errno
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bpvideo.errors import InputError, literal
from bpvideo.times import is_span

__all__ = [
    "Access",
    "check_access",
    "check_jobs",
    "check_usable",
    "config_reads",
    "folder_reads",
    "groundtruth_reads",
    "input_reads",
    "logfile_access",
    "region_reads",
    "separate_access",
]


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
    real : str or None
        The resolved path, when already known.
    folder : bool
        A folder read whole (its files are read, and a new file in it would be taken for
        one of them: a folder of frames), or a folder written into (OUTDIR).
    """

    path: Path
    what: str
    fix: str = ""
    option: tuple[str, Any] | None = None
    real: str | None = None
    folder: bool = False


def check_usable(path: str | os.PathLike, what: str) -> None:
    """Refuse a path that cannot be used at all (a name too long, a loop of links), naming
    it; a missing path or one that cannot be read is left to its reader.

    Raises
    ------
    InputError
        ``"PATH: WHAT cannot be used (why): check the path"``.
    """
    _real(Access(Path(path), what))


def _real(access: Access) -> str:
    """The resolved path of ``access``, once the path is known to be usable."""
    if access.real is not None:
        return access.real
    try:
        os.stat(access.path)
    except FileNotFoundError:
        pass  # to be created (a write), or reported by the reader (a read)
    except NotADirectoryError:
        pass  # a file on the way: reported by whoever opens it, with its own fix
    except (OSError, ValueError) as exc:
        if getattr(exc, "errno", None) not in (errno.EACCES, errno.EPERM):  # those: the opener
            why = getattr(exc, "strerror", None) or str(exc)
            fix = f": choose another {access.fix}" if access.fix else ": check the path"
            what = access.what if access.fix else literal(access.what)  # a template: written
            raise InputError(
                f"{literal(access.path)}: {what} cannot be used ({literal(why)}){fix}",
                option=access.option,
            ) from None
    return os.path.realpath(access.path)


def _under(real: str, ordered: list[str]) -> int | None:
    """Index in ``ordered`` (sorted) of a path inside the folder ``real``, or None."""
    prefix = real.rstrip(os.sep) + os.sep
    i = bisect.bisect_left(ordered, prefix)
    return i if i < len(ordered) and ordered[i].startswith(prefix) else None


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
    read: dict[str, Access] = {}
    for r in reads:
        read.setdefault(_real(r), r)
    read_order = sorted(read)
    writes = list(writes)
    _check_folders_written(read, [w for w in writes if w.folder])
    written: dict[str, Access] = {}
    for w in writes:
        if w.folder:
            continue
        real = _real(w)
        if real in written:
            other = written[real]
            raise _clash(w, other.what, other.path, "is also", other.option)
        written[real] = w
        if real in read:
            raise _clash(w, literal(read[real].what), read[real].path, "would replace")
        inside = _under(real, read_order)
        if inside is not None:
            r = read[read_order[inside]]
            raise _clash(w, literal(r.what), r.path, "would replace the folder holding")
    write_order = sorted(written)
    for real, w in written.items():
        inside = _under(real, write_order)
        if inside is not None:
            other = written[write_order[inside]]
            raise _clash(other, w.what, w.path, "is inside", w.option)


def _check_folders_written(read: dict[str, Access], folders: list[Access]) -> None:
    """Refuse a folder written into (OUTDIR) that is a folder read whole (a folder of
    frames given as the input, a cdnet ``input/`` folder, a ground-truth folder): its new
    files would lie among the files read, and be taken for them by the next run."""
    for w in folders:
        r = read.get(_real(w))
        if r is not None and r.folder:
            fix = f": choose another {w.fix}" if w.fix else ""
            raise InputError(
                f"{literal(w.path)}: {w.what} would put its files among those of "
                f"{literal(r.what)} (the folder {literal(r.path)}){fix}",
                option=w.option,
            )


def _clash(
    w: Access, other: str, path: Path, verb: str, other_option: tuple[str, Any] | None = None
) -> InputError:
    """``w`` would replace ``other`` (a template fragment, of ``other_option`` when it is
    another path written) at ``path``."""
    fix = f": choose another {w.fix}" if w.fix else ""
    return InputError(
        f"{literal(w.path)}: {w.what} {verb} {other} ({literal(path)}){fix}",
        option=w.option or other_option,
    )


def folder_reads(folder: Path, files: Sequence[Path], what: str) -> list[Access]:
    """A folder read whole: the folder and each of its files (resolved through the folder
    once: a folder of many frames costs one ``lstat`` per frame)."""
    real = os.path.realpath(folder)
    reads = [Access(folder, what, folder=True)]
    for f in files:
        linked = f.parent != folder or f.is_symlink()
        reads.append(Access(f, f"{what} {f.name}", real=None if linked else f"{real}/{f.name}"))
    return reads


def input_reads(path: str | os.PathLike | None, what: str) -> list[Access]:
    """What reading a source reads: a file, or a folder of frames and its frames.

    ``None``, ``"-"`` (stdin) and a URL read no path.
    """
    from bpvideo.sources.live import is_url

    if path is None or str(path) == "-" or is_url(path):
        return []
    p = Path(path)
    try:
        if p.is_dir():
            from bpvideo.sources.files import list_image_files

            files = list_image_files(p)
            return folder_reads(files[0].parent if files else p, files, what)
    except OSError:
        pass  # refused by the reader, with its message
    return [Access(p, what)]


def groundtruth_reads(path: str | os.PathLike) -> list[Access]:
    """What scoring against ground truth reads: the file, or the folder and its files (and
    those of a ``groundtruth/`` in it), and the ``ROI.bmp`` and ``temporalROI.txt`` that
    may lie beside them."""
    p = Path(path)
    folders = [p, p / "groundtruth"] if p.is_dir() else []
    reads = [Access(p, "the ground truth", folder=bool(folders))]
    for folder in folders:
        try:
            files = sorted(f for f in folder.iterdir() if f.is_file())
        except OSError:
            continue
        reads += folder_reads(folder, files, "the ground truth")
    for near in {p.parent, *folders}:
        for name in ("ROI.bmp", "temporalROI.txt"):
            reads.append(Access(near / name, f"the {name} of the ground truth"))
    return reads


def separate_access(
    input: str, output: str | os.PathLike, settings: Any
) -> tuple[list[Access], list[Access]]:
    """What :func:`bpvideo.separate_file` reads and writes, for :func:`check_access`.

    ``settings`` is a :class:`~bpvideo.settings.SeparateSettings`: ``mask``,
    ``learn_from``, ``background_from`` (a picture) and ``groundtruth`` are read;
    OUTDIR's outputs (every name a result may hold, since an overwrite removes those it
    does not write), ``masks_to`` and ``events_to`` written. A live run with ``segment``
    writes the same names in folders of OUTDIR: they are checked as OUTDIR's (an input
    inside OUTDIR is refused either way).
    """
    from bpvideo.sinks.outputs import OUTPUT_NAMES

    reads = input_reads(input, "the input") + input_reads(settings.mask, "the mask")
    reads += input_reads(settings.learn_from, "the clip to learn from")
    if settings.background_from not in ("auto", "none") and not is_span(settings.background_from):
        reads += input_reads(settings.background_from, "the empty scene")
    if settings.groundtruth is not None:
        reads += groundtruth_reads(settings.groundtruth)
    reads += region_reads(settings)
    option = ("output", os.fspath(output))
    writes = [Access(Path(output) / n, "the output", "{output}", option) for n in OUTPUT_NAMES]
    writes.append(Access(Path(output), "the output folder", "{output}", option, folder=True))
    for name in ("masks_to", "events_to"):  # paths written beside OUTDIR
        target = getattr(settings, name, None)
        if target not in (None, "-"):
            writes.append(Access(Path(target), f"{{{name}}}", f"{{{name}}}", (name, target)))
    return reads, writes


def logfile_access(logfile: str | os.PathLike | None) -> list[Access]:
    """``--logfile``, a path written (appended to) like any output: it may not be an input,
    the config, or an output of the run."""
    if logfile is None:
        return []
    option = ("logfile", os.fspath(logfile))
    return [Access(Path(logfile), "{logfile}", "{logfile}", option)]


def config_reads(path: str | os.PathLike | None, what: str) -> list[Access]:
    """A defaults file or a batch config: read, so no path written may be it."""
    return [] if path is None else [Access(Path(path), what)]


def region_reads(settings: Any) -> list[Access]:
    """The mask images of ``roi`` and ``exclude`` (polygons read nothing)."""
    from bpvideo.events.regions import parse_region

    return [Access(Path(spec), f"the --{name} image")
            for name in ("roi", "exclude") for spec in getattr(settings, name, ())
            if isinstance(parse_region(spec, name), str)]  # fmt: skip


def check_jobs(
    jobs: Iterable[tuple[str, str | os.PathLike, Any]],
    reads: Sequence[Access] = (),
    writes: Sequence[Access] = (),
) -> None:
    """:func:`check_access` over many ``separate`` jobs ``(input, output, settings)`` at
    once (and ``reads``, ``writes`` of the command itself): no job may write what another
    reads or writes.
    """
    all_reads, all_writes = list(reads), list(writes)
    for input, output, settings in jobs:
        job_reads, job_writes = separate_access(input, output, settings)
        all_reads += job_reads
        all_writes += job_writes
    check_access(all_reads, all_writes)
