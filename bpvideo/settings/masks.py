"""How masks are made from the solution: the ``Masks`` section of the option table.

Each field is one option of ``bpvideo separate`` (see :mod:`bpvideo.settings`).
"""

from __future__ import annotations

from dataclasses import dataclass

from bpvideo.limits import MAX_PIXELS, MAX_RADIUS
from bpvideo.masks.options import BURSTS, MASK_RULES, NOISES, SHADOWS, MaskOptions
from bpvideo.settings.spec import option

__all__ = ["BURSTS", "MASK_RULES", "NOISES", "SHADOWS", "MaskSettings"]

_MASKS = MaskOptions()


@dataclass
class MaskSettings:
    """How masks are made from the solution (the ``Masks`` section of ``--help``)."""

    mask_rule: str = option(
        _MASKS.mask_rule,
        "str",
        "Foreground rule: threshold |A - L| (residual) or the support of S.",
        choices=MASK_RULES,
    )
    threshold: float | str = option(
        _MASKS.threshold,
        "threshold",
        "Threshold on |A - L| in grey levels (0-255), or 'auto': per pixel, from the camera's "
        "noise and each pixel's own spread (see --noise).",
        low=0,
        high=255,
        low_open=True,
        metavar="T|auto",
    )
    threshold_k: float = option(
        _MASKS.threshold_k,
        "float",
        "With --threshold auto: noise levels a foreground pixel is away from the background.",
        low=0,
        limit=1000,
        low_open=True,
    )
    noise: str = option(
        _MASKS.noise,
        "str",
        "With --threshold auto: local = each pixel also gets k x its own spread about the "
        "background (leaves, water, flicker), global = the camera's noise only.",
        choices=NOISES,
    )
    shadows: str = option(
        _MASKS.shadows,
        "str",
        "Cast shadows (darker, same colour and texture as the background): remove them from "
        "the masks, or keep them as foreground.",
        choices=SHADOWS,
    )
    open_radius: int = option(
        _MASKS.open_radius,
        "int",
        "Morphological opening radius in pixels (0 = off); of a view of up to 480 lines, "
        "scaled with the view beyond.",
        low=0,
        limit=MAX_RADIUS,
    )
    close_radius: int = option(
        _MASKS.close_radius,
        "int",
        "Morphological closing radius in pixels (0 = off); of a view of up to 480 lines, "
        "scaled with the view beyond.",
        low=0,
        limit=MAX_RADIUS,
    )
    min_area: int = option(
        _MASKS.min_area,
        "int",
        "Drop foreground blobs smaller than this many pixels (0 = off); of a view of up to "
        "480 lines, scaled with the view's area beyond.",
        low=0,
        limit=MAX_PIXELS,
    )
    appearances: int = option(
        _MASKS.appearances,
        "int",
        "With --threshold auto: background appearances kept per pixel at most (one per second "
        "of the window, at least 12), from frames across the whole window: moving water and "
        "leaves are background, a new appearance is foreground; 0 = one background image and "
        "each pixel's own spread.",
        low=0,
        limit=256,
    )
    bursts: str = option(
        _MASKS.bursts,
        "str",
        "With --appearances: what leaves the reference background in long runs of frames "
        "and shows a still scene between them (foliage close to the lens): a background "
        "appearance like any that recurs, or foreground (the default; background keeps far "
        "leaves that sway in strong gusts, as on cdnet_fall).",
        choices=BURSTS,
    )
