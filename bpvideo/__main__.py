"""``python -m bpvideo`` and the ``bpvideo`` command: the command line
(:mod:`bpvideo._cli`), with what ``bpvideo separate`` needs from outside Python started
before the library is imported."""

from __future__ import annotations

import os
import sys


def main() -> int:
    """Run the command line; returns its exit code.

    For ``bpvideo separate``, first (docs/performance.md, "Start-up"):

    - the soft limit on open files is raised (:func:`bpvideo.failures.raise_open_files`);
    - ffmpeg's answers that opening a video needs (its path, its demuxers, its options:
      three runs of ffmpeg, ~60 ms) are asked in a thread
      (:func:`bpvideo.sources.ffmpeg.ask_early`), on the core that importing numpy,
      OpenCV and the library (~0.25 s, one core) leaves idle;
    - OpenBLAS starts without worker threads (``OPENBLAS_NUM_THREADS=1`` unless set):
      the job runs BLAS on one thread anyway (``threadpool_limits``), and the workers of
      the two OpenBLAS libraries (numpy's, OpenCV's) would spin ~0.1 s each on that
      second core after loading.

    Ctrl-C while the library loads (before the command line handles signals) stops it as
    at any later moment: one line, exit 130, no traceback.
    """
    try:
        if sys.argv[1:2] == ["separate"]:
            os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
            from bpvideo.failures import MIN_OPEN_FILES, raise_open_files

            # Under too low a limit on open files, ffmpeg's pipes would take the ones the
            # imports need (a traceback); the command line says so in one line instead.
            if raise_open_files() >= MIN_OPEN_FILES:
                from bpvideo.sources.ffmpeg import ask_early

                ask_early()
        from bpvideo._cli import main as command_line
    except KeyboardInterrupt:  # Ctrl-C while the library loads: nothing was started yet
        sys.stderr.write("bpvideo: interrupted: no output was kept (outputs appear only when "
                         "complete); run the command again\n")  # fmt: skip
        return 130
    return command_line()


if __name__ == "__main__":
    sys.exit(main())
