"""The options of the mask step, and their defaults (the one home of them: the option
table of :mod:`bpvideo.settings` takes its defaults for these options from here)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

__all__ = [
    "BURSTS",
    "CLEANUP_LINES",
    "MASK_RULES",
    "NOISES",
    "SHADOWS",
    "MaskOptions",
    "view_factor",
]

MASK_RULES = ("residual", "support")
NOISES = ("local", "global")
SHADOWS = ("remove", "keep")
BURSTS = ("background", "foreground")

#: The clean-up's radii and least area are pixels of a view of up to this many lines (the
#: shorter side): the largest of the dev sequences they were chosen on (cdnet_fall,
#: 720x480). Beyond, they grow with the view, so that a scene seen by a camera of more
#: pixels is cleaned up alike (:func:`view_factor`; docs/method.md, "Masks").
CLEANUP_LINES = 480


def view_factor(height: int, width: int) -> float:
    """How much larger than :data:`CLEANUP_LINES` the view of ``height`` x ``width`` is
    (1 up to it): 2.25 at 1080p, 4.5 at 4K."""
    return max(1.0, min(height, width) / CLEANUP_LINES)


@dataclass(frozen=True)
class MaskOptions:
    """How masks are made from a solution: the ``masks`` section of the settings.

    Attributes
    ----------
    mask_rule : {"residual", "support"}
        Threshold ``|A - L|``, or the support of ``S`` (the paper's rule).
    threshold : float or "auto"
        Threshold on ``|A - L|`` in grey levels, or per pixel from the noise.
    threshold_k : float
        With ``threshold="auto"``: noise levels a foreground pixel is away from the
        background (chosen by leave-one-sequence-out, docs/quality.md).
    noise : {"local", "global"}
        With ``threshold="auto"``: each pixel's own spread too, or the camera's noise only.
    shadows : {"remove", "keep"}
        Leave cast shadows out of the masks, or keep them.
    open_radius, close_radius : int
        Morphological opening and closing radii in pixels (0 = off).
    min_area : int
        Blobs smaller than this many pixels are dropped (0 = off).
    appearances : int
        Background appearances kept per pixel at most: one per second of the window (25
        frames), at least 12 (:mod:`bpvideo.masks.appearances`; 0: one background image
        and each pixel's own spread).
    bursts : {"background", "foreground"}
        With ``appearances``: what departs from the reference background in long runs
        of frames over a still scene (foliage close to the lens) is a background
        appearance like any other that recurs, or foreground (the default, chosen by
        leave-one-sequence-out: docs/quality.md; :mod:`bpvideo.masks.bursts`; a
        window's model, from the solver's observed entries:
        :func:`~bpvideo.masks.sample.window_model`).
    """

    mask_rule: str = "residual"
    threshold: float | str = "auto"
    threshold_k: float = 6.0
    noise: str = "local"
    shadows: str = "remove"
    open_radius: int = 1
    close_radius: int = 3
    min_area: int = 25
    appearances: int = 24
    bursts: str = "foreground"

    def for_view(self, height: int, width: int) -> MaskOptions:
        """These options for frames of ``height`` x ``width``: the clean-up's radii times
        :func:`view_factor` (rounded), its least area times the factor squared."""
        f = view_factor(height, width)
        if f == 1.0:
            return self
        return replace(self, open_radius=round(self.open_radius * f),
                       close_radius=round(self.close_radius * f),
                       min_area=round(self.min_area * f * f))  # fmt: skip

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`~bpvideo.masks.foreground_masks` (rule, thresholds,
        clean-up)."""
        out = asdict(self)
        out["rule"] = out.pop("mask_rule")
        del out["bursts"]  # the window's model takes it (window_model), not the rule
        return out
