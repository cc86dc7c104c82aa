"""The order of operations of one job: windows of frames, solved and finished one by one.

- :mod:`~bpvideo.pipeline.windows`: the memory plan, cutting frames into windows, what a
  window hands on to the next;
- :mod:`~bpvideo.pipeline.scale`: the solve scale and the full-resolution background;
- :mod:`~bpvideo.pipeline.solve`: solving one window;
- :mod:`~bpvideo.pipeline.run`: :func:`iter_windows`, the generator of finished windows;
- :mod:`~bpvideo.pipeline.learned`: a background learned once and applied to new frames.
"""

from __future__ import annotations

from bpvideo.pipeline.run import Block, Plan, Window, iter_windows

__all__ = ["Block", "Plan", "Window", "iter_windows"]
