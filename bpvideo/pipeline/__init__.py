"""The order of operations of one job: windows of frames, solved and finished one by one.

- :mod:`~bpvideo.pipeline.plan`: the plan of a job (window, overlap, solve scale, device,
  memory, spooling), decided once, and the :class:`~bpvideo.pipeline.plan.Job` value;
- :mod:`~bpvideo.pipeline.memory`: the memory model the plan checks against;
- :mod:`~bpvideo.pipeline.windows`: cutting frames into windows, what a window hands on
  to the next;
- :mod:`~bpvideo.pipeline.scale`: the solve scale and the full-resolution background;
- :mod:`~bpvideo.background.reference`, :mod:`~bpvideo.background.light`: the reference
  background and the light of each frame;
- :mod:`~bpvideo.pipeline.solve`: solving one window;
- :mod:`~bpvideo.pipeline.finish`: a solved window's blocks of frames, background, masks;
- :mod:`~bpvideo.pipeline.run`: the loop, :func:`iter_blocks`;
- :mod:`~bpvideo.pipeline.learned`: a background learned once and applied to new frames.
"""

from __future__ import annotations

from bpvideo.pipeline.plan import Job, plan_run
from bpvideo.pipeline.run import iter_blocks, iter_solutions

__all__ = ["Job", "iter_blocks", "iter_solutions", "plan_run"]
