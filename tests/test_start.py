"""What a run does before the library is imported: ``import bpvideo`` loads none of it,
``bpvideo separate`` asks ffmpeg first (bpvideo/__init__.py, bpvideo/__main__.py,
docs/performance.md "Start-up")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

#: A child that runs the command line as ``python -m bpvideo`` does (``bpvideo.__main__``),
#: noting what was imported when ffmpeg's questions were started, and prints that, the
#: BLAS threads asked of OpenBLAS and the exit code.
COMMAND = """
import os, sys
from bpvideo.sources import ffmpeg
started = []
real = ffmpeg.ask_early
ffmpeg.ask_early = lambda: started.append([m for m in LIBRARIES if m in sys.modules]) or real()
from bpvideo.__main__ import main
sys.argv = ["bpvideo", *sys.argv[1:]]
code = main()
print(started, os.environ.get("OPENBLAS_NUM_THREADS"), code)
"""
LIBRARIES = ("numpy", "cv2", "bpvideo.api", "bpvideo.job")


def _child(code: str, *args: str | os.PathLike, **env: str) -> list[str]:
    """The lines a child ``python -c code args`` printed (it must exit 0), without
    ``OPENBLAS_NUM_THREADS`` unless given."""
    environ = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    environ.update(PYTHONPATH=str(REPO), **env)
    done = subprocess.run([sys.executable, "-c", f"LIBRARIES = {LIBRARIES!r}\n{code}",
                           *map(str, args)], capture_output=True, text=True, env=environ,
                          timeout=300, check=False, cwd=REPO)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()


def test_importing_the_package_loads_none_of_the_library() -> None:
    code = (
        "import sys, bpvideo\n"
        "print([m for m in LIBRARIES if m in sys.modules])\n"
        "import bpvideo.evaluate.scoring, bpvideo.events.detect\n"
        "print([m for m in LIBRARIES if m in sys.modules], bpvideo.evaluate.__module__,\n"
        "      bpvideo.events.__module__, bpvideo.separate.__module__)\n"
    )
    nothing, loaded = _child(code)
    assert nothing == "[]"
    # The functions keep their names when the subpackages of the same names load.
    assert loaded.endswith("bpvideo.evaluate.scoring bpvideo.sinks.rederive bpvideo.api")


def test_separate_asks_ffmpeg_before_the_library_loads(tiny_clip: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    *_, line = _child(COMMAND, "separate", tiny_clip, "-o", out, "-q")
    assert line == "[[]] 1 0"  # asked once, nothing of the library loaded yet; one BLAS thread
    assert (out / "summary.json").is_file()


def test_other_commands_ask_nothing_and_a_blas_setting_is_kept() -> None:
    assert _child(COMMAND, "--version")[-1] == "[] None 0"
    assert _child(COMMAND, "separate", "--help", OPENBLAS_NUM_THREADS="2")[-1] == "[[]] 2 0"


def test_ctrl_c_while_the_library_loads_is_one_line() -> None:
    """SIGINT while ``python -m bpvideo`` imports the library (before the command line
    handles signals) was a KeyboardInterrupt traceback: one line and exit 130, as later."""
    code = (
        "import sys\n"
        "class Interrupt:\n"  # the import of the command line is where Ctrl-C lands
        "    def find_spec(self, name, *args):\n"
        "        if name == 'bpvideo._cli':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        "from bpvideo.__main__ import main\n"
        "sys.argv = ['bpvideo', 'separate', 'x.mp4']\n"
        "sys.exit(main())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=300,
                          check=False, cwd=REPO)  # fmt: skip
    assert done.returncode == 130, done.stderr
    assert done.stderr.startswith("bpvideo: interrupted: no output was kept")
    assert len(done.stderr.splitlines()) == 1
