"""Binary foreground masks from a solution: the rule, its thresholds, cast shadows, the
clean-up, and the sampler that measures the thresholds.

- :mod:`~bpvideo.masks.options`: :class:`MaskOptions`, the options of this step and their
  defaults;
- :mod:`~bpvideo.masks.rule`: :func:`foreground_masks` (threshold or support, shadows,
  clean-up) and :func:`clean_mask`;
- :mod:`~bpvideo.masks.thresholds`: noise levels and per-pixel limits (:class:`MaskModel`);
- :mod:`~bpvideo.masks.sample`: :func:`sample_model`, the thresholds measured on sampled
  frames, of arrays or of a window;
- :mod:`~bpvideo.masks.shadows`: the cast-shadow test (ratio, chroma, texture).

This package imports neither the pipeline nor the I/O layer: it takes arrays, or objects
with the methods of :class:`~bpvideo.masks.sample.Data` and
:class:`~bpvideo.masks.sample.Columns`.
"""

from bpvideo.masks.options import MaskOptions
from bpvideo.masks.rule import MaskResult, clean_mask, foreground_masks, judged_on_observed
from bpvideo.masks.sample import sample_model, window_model
from bpvideo.masks.thresholds import MaskModel

__all__ = [
    "MaskModel",
    "MaskOptions",
    "MaskResult",
    "clean_mask",
    "foreground_masks",
    "judged_on_observed",
    "sample_model",
    "window_model",
]
