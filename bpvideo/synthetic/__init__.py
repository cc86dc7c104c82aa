"""Synthetic data with known answers: the paper's RPCA instances and video scenes.

Everything here is generated from a seed, so tests, the README demo and the bundled
``sample_data/`` are licence-clean and reproducible.

- :mod:`~bpvideo.synthetic.problems`: :func:`make_rpca_problem`, the paper's instances;
- :mod:`~bpvideo.synthetic.street`: :func:`make_scene`, a street clip with exact masks;
- :mod:`~bpvideo.synthetic.hard`: :func:`make_hard_scene`, the classes of scenes where a
  one-image background fails (crowds, water, leaves, people who stay), with exact masks.
"""

from bpvideo.synthetic.problems import RPCAProblem, make_rpca_problem
from bpvideo.synthetic.street import GREY_WEIGHTS, Scene, make_scene

__all__ = ["GREY_WEIGHTS", "RPCAProblem", "Scene", "make_rpca_problem", "make_scene"]
