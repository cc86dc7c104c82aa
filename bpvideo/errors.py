"""Error and warning types of bpvideo.

Every failure the tool expects is a :class:`BpvideoError` whose message is one line that
names the input and the fix. The CLI prints it and exits with its ``exit_code``: 2 for
usage errors (bad options, bad input files), 1 for work that failed.
"""

from __future__ import annotations


class BpvideoError(Exception):
    """A failure with a one-line message that names the input and the fix.

    Parameters
    ----------
    message : str
        One line: what went wrong, with which input, and how to fix it.
    """

    exit_code: int = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class InputError(BpvideoError):
    """Bad usage: an invalid option value or an unusable input (exit code 2)."""

    exit_code = 2


class WorkError(BpvideoError):
    """Work that failed part-way: decoding, writing, solving (exit code 1)."""

    exit_code = 1


class Terminated(BaseException):
    """SIGTERM, turned into an exception so that cleanup (``finally``, ``__exit__``) runs.

    A ``BaseException`` like :class:`KeyboardInterrupt`: ``except Exception`` does not
    swallow it. The CLI exits with ``128 + signum`` (143).
    """

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum


class ConvergenceWarning(UserWarning):
    """The solver stopped at ``max_iter`` before meeting its tolerance."""
