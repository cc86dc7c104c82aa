"""What an option or an input may ask for, and the defaults every layer shares.

Checked before any work: the options' own bounds (``low``, ``high`` and ``limit`` in
:mod:`bpvideo.settings`) and what a file or a stream announces (frame sizes, rates, header
lengths), so that a small input never costs more than its own memory estimate. A low
module: the readers of :mod:`bpvideo.sources`, the option table and the batch config all take
their numbers from here.
"""

from __future__ import annotations

#: Frame rate of inputs that carry none (image folders, raw frames, arrays), and of the
#: outputs made from them.
DEFAULT_FPS = 25.0

#: Frame indices and counts (``start``, ``frames``, ``step``, ``learn``).
MAX_FRAMES = 2**31 - 1
#: Frame numbers a folder's file names may give (``in000001.png``): the largest whole
#: number a float holds exactly, as the frames' seconds must; names of larger numbers
#: are numbered in their order instead.
MAX_NAME_NUMBER = 2**53
#: Seconds an option may name (``absorb``): about 116 days, longer than any clip.
MAX_SECONDS = 1e7
#: Frames of a window or an overlap.
MAX_WINDOW = 1_000_000
#: Frame rates, of the outputs (``fps``) and of what an input announces (frames/s).
FPS_RANGE = (1e-3, 1000.0)
#: Width or height of a frame, as an input announces it or after ``scale``.
MAX_SIDE = 32768
#: Pixels of a frame (width x height), as an input announces it or after ``scale``
#: (below Pillow's own bound of 2 x 89478485, at which it refuses to open an image).
MAX_PIXELS = 2**27
#: Morphology radii (``open_radius``, ``close_radius``): the cost per pixel grows with
#: the radius (a radius of 64 took 26 ms per 320x240 frame; 128, 134 ms).
MAX_RADIUS = 50
#: Bytes of a header line (y4m stream header, y4m FRAME line).
MAX_HEADER_LINE = 4096
#: Bytes of a small text file read whole (temporalROI.txt, summary.json, a report).
MAX_TEXT_BYTES = 16 * 2**20
#: A YAML config: its bytes, its nodes once aliases are expanded, and its nesting depth.
MAX_CONFIG_BYTES = 4 * 2**20
MAX_CONFIG_NODES = 200_000
MAX_CONFIG_DEPTH = 64
#: Threads of one solver (``threads``), and worker processes of a batch (``workers``):
#: each worker is a process of its own (about 100 MiB before its first frame), so the
#: bound keeps a typo (``workers: 100000``) from forking the machine to a halt.
MAX_THREADS = 1024
MAX_WORKERS = 1024
#: Paths a glob may match (inputs of ``separate`` or of one batch job).
MAX_GLOB_MATCHES = 100_000
#: The batch report beside a config ``night.yaml``: ``night`` + this suffix.
REPORT_SUFFIX = ".report.json"
