"""Every option of ``bpvideo separate``: its default, bounds and help, in one place.

The CLI builds its click options from :class:`SeparateSettings`, YAML configs are checked
against it, and the pipeline reads it. To add an option, add a field here with
:func:`option`; the CLI, the config loader and ``summary.json`` pick it up.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, fields
from typing import Any

from bpvideo.errors import InputError

__all__ = [
    "MASK_RULES",
    "METHODS",
    "SeparateSettings",
    "check_value",
    "option",
    "option_specs",
    "parse_size",
]

METHODS = ("bestpair", "ncf", "ialm", "godec", "rpca_gd")
#: Methods that take ``init`` (a starting point); the baselines start their own way.
INIT_METHODS = ("bestpair", "ncf")
MASK_RULES = ("residual", "support")
INITS = ("robust", "zeros", "median")
PIX_FMTS = ("gray", "bgr24")


@dataclass(frozen=True)
class Spec:
    """Type, bounds and help of one option.

    Attributes
    ----------
    kind : {"int", "float", "str", "bool", "path", "threshold", "scale", "window"}
        Value type. "threshold" and "scale" are a float within the bounds or the string
        "auto"; "window" is an integer within the bounds or the string "auto".
    help : str
        One-line help text (also the CLI help).
    low, high : float or None
        Bounds; ``low_open``/``high_open`` make them strict.
    choices : tuple of str or None
        Allowed values of a "str" option.
    optional : bool
        ``None`` is a valid value (meaning "not set").
    flag : str or None
        CLI flag when it is not derived from the name (``--max-iter`` from ``max_iter``).
    secondary : str or None
        The "off" flag of a boolean pair (``--color`` for ``--gray``).
    cli : bool
        Whether the option appears on the command line of ``separate``.
    """

    kind: str
    help: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] | None = None
    optional: bool = False
    flag: str | None = None
    secondary: str | None = None
    cli: bool = True
    metavar: str | None = None


def option(default: Any, kind: str, help: str, **kwargs: Any) -> Any:
    """Declare a settings field with its :class:`Spec`."""
    return dataclasses.field(default=default, metadata={"spec": Spec(kind, help, **kwargs)})


def _bounds_text(spec: Spec) -> str:
    parts = []
    if spec.low is not None:
        parts.append(f"{'>' if spec.low_open else '>='} {spec.low:g}")
    if spec.high is not None:
        parts.append(f"{'<' if spec.high_open else '<='} {spec.high:g}")
    return " and ".join(parts)


def check_value(name: str, spec: Spec, value: Any) -> Any:
    """Coerce and check one option value; raise :class:`InputError` when it is invalid.

    Parameters
    ----------
    name : str
        Option name (as in :class:`SeparateSettings`).
    spec : Spec
        Its specification.
    value : Any
        The value, from the CLI, a YAML file or Python.

    Returns
    -------
    Any
        The value, converted to the option's type.
    """
    label = (spec.flag or name).lstrip("-").replace("_", "-")  # a -> inertia-a
    if value is None:
        if spec.optional:
            return None
        raise InputError(f"{label} must be set")
    kind = spec.kind
    if kind == "bool":
        if isinstance(value, bool):
            return value
        raise InputError(f"{label} must be true or false, got {value!r}")
    if kind in ("threshold", "scale", "window") and isinstance(value, str):
        if value.strip().lower() == "auto":
            return "auto"
        if kind == "window":
            kind = "int"
    elif kind == "window":
        kind = "int"
    if kind in ("int", "float", "threshold", "scale"):
        if isinstance(value, bool):
            raise InputError(f"{label} must be a number, got {value!r}")
        try:
            if kind == "int":
                if isinstance(value, float) and not value.is_integer():
                    raise ValueError
                number: float = int(value)
            else:
                number = float(value)
        except (TypeError, ValueError):
            what = "an integer" if kind == "int" else "a number"
            extra = " or 'auto'" if spec.kind in ("threshold", "scale", "window") else ""
            raise InputError(f"{label} must be {what}{extra}, got {value!r}") from None
        if not math.isfinite(number):
            raise InputError(f"{label} must be finite, got {value!r}")
        bad_low = spec.low is not None and (
            number <= spec.low if spec.low_open else number < spec.low
        )
        bad_high = spec.high is not None and (
            number >= spec.high if spec.high_open else number > spec.high
        )
        if bad_low or bad_high:
            raise InputError(f"{label} ({value}) must be {_bounds_text(spec)}")
        return number
    if kind in ("str", "path"):
        if not isinstance(value, str):
            raise InputError(f"{label} must be a string, got {value!r}")
        if spec.choices is not None and value not in spec.choices:
            raise InputError(f"{label} ({value!r}) must be one of: {', '.join(spec.choices)}")
        return value
    raise AssertionError(f"unknown option kind {kind!r}")  # pragma: no cover


@dataclass
class SeparateSettings:
    """Settings of one ``separate`` job. Defaults here are the tool's defaults.

    Every field carries a :class:`Spec` (type, bounds, help). Construct with keywords and
    call :meth:`validate`, or use :meth:`from_mapping` for untrusted input.
    """

    # --- input ---------------------------------------------------------------------------
    start: int = option(0, "int", "First frame to read (0-based).", low=0)
    frames: int | None = option(
        None, "int", "Number of frames to read (default: all).", low=1, optional=True, metavar="N"
    )
    step: int = option(
        1, "int", "Read every K-th frame (temporal subsampling).", low=1, metavar="K"
    )
    scale: float = option(
        1.0, "float", "Resize frames by this factor before solving.", low=0, high=4, low_open=True
    )
    gray: bool = option(
        True,
        "bool",
        "Solve on grey levels (--gray) or on all colour channels (--color).",
        secondary="--color",
    )
    fps: float | None = option(
        None,
        "float",
        "Frame rate of the outputs (default: the input's, 25 for image folders).",
        low=0,
        low_open=True,
        optional=True,
    )
    size: str | None = option(
        None,
        "str",
        "Frame size WxH of raw frames on stdin (INPUT '-'); without it stdin is read as y4m "
        "or any container ffmpeg can stream.",
        optional=True,
        metavar="WxH",
    )
    pix_fmt: str = option(
        "gray", "str", "Pixel format of raw frames on stdin (with --size).", choices=PIX_FMTS
    )
    # --- windowed solving ----------------------------------------------------------------
    window: int | str = option(
        "auto",
        "window",
        "Frames solved together: N per window (background carried between windows), 0 = the "
        "whole video at once, auto = whole video for short clips, else windows that fit in "
        "memory.",
        low=0,
        metavar="N|auto",
    )
    overlap: int = option(
        20, "int", "Frames shared by consecutive windows (re-solved, not re-written).", low=0
    )
    allow_partial: bool = option(
        False,
        "bool",
        "Keep the frames read from a truncated or damaged video instead of failing "
        '(summary.json then says "partial": true).',
    )
    # --- observation mask ----------------------------------------------------------------
    mask: str | None = option(
        None,
        "path",
        "Observation mask: one image for every frame, or a video/folder with one per frame "
        "(non-zero = observed).",
        optional=True,
        metavar="PATH",
    )
    observe: float | None = option(
        None,
        "float",
        "Observe a random fraction P of the pixels (the paper's |Omega|).",
        low=0,
        high=1,
        low_open=True,
        optional=True,
        metavar="P",
    )
    seed: int = option(0, "int", "Random seed for --observe.", low=0)
    # --- solver --------------------------------------------------------------------------
    method: str = option(
        "bestpair",
        "str",
        "Solver: best-pair APG; NCF (alternating projections); or the paper's comparison "
        "methods iEALM (convex PCP, inexact ALM; ignores --rank/--sparsity), GoDec (q = 2), "
        "RPCA GD.",
        choices=METHODS,
    )
    rank: int = option(2, "int", "Rank r of the background.", low=1)
    sparsity: float = option(
        0.1,
        "float",
        "Sparsity alpha of the foreground: fraction of non-zeros per row/column.",
        low=0,
        high=1,
        low_open=True,
        high_open=True,
    )
    gamma: float = option(1.1, "float", "Step size gamma of the APG.", low=0, high=2, low_open=True)
    a: float = option(
        0.5, "float", "Inertia a_k of the APG.", low=0, high=1, high_open=True, flag="--inertia-a"
    )
    b: float = option(
        0.5, "float", "Inertia b_k of the APG.", low=0, high=1, high_open=True, flag="--inertia-b"
    )
    max_iter: int = option(100, "int", "Iteration limit.", low=1)
    tol: float = option(1e-3, "float", "Tolerance on relative change and residual.", low=0)
    init: str = option(
        "robust",
        "str",
        "Starting point: robust (S0 = T(A - median), L0 = H_r(A - S0)), zeros (the paper), "
        "or the per-pixel median.",
        choices=INITS,
    )
    sweeps: int = option(
        1,
        "int",
        "Subspace sweeps per iteration of H_r after the first 3 (bestpair, ncf); 0 = exact "
        "H_r (sweeps to convergence). 1 is an approximation, see README Performance.",
        low=0,
    )
    solve_scale: float | str = option(
        "auto",
        "scale",
        "Solve on frames downscaled by this factor (INTER_AREA); the background is upsampled "
        "back and masks and outputs are computed at full resolution. auto = 0.25 for frames of "
        "320x240 pixels or more, else 1 (full resolution).",
        low=0,
        high=1,
        low_open=True,
        metavar="F|auto",
    )
    # --- foreground masks ----------------------------------------------------------------
    mask_rule: str = option(
        "residual",
        "str",
        "Foreground rule: threshold |A - L| (residual) or the support of S.",
        choices=MASK_RULES,
    )
    threshold: float | str = option(
        "auto",
        "threshold",
        "Threshold on |A - L| in grey levels (0-255), or 'auto' from the residual's noise level.",
        low=0,
        low_open=True,
        metavar="T|auto",
    )
    threshold_k: float = option(
        5.0,
        "float",
        "With --threshold auto: multiple of the robust noise level.",
        low=0,
        low_open=True,
    )
    open_radius: int = option(1, "int", "Morphological opening radius in pixels (0 = off).", low=0)
    close_radius: int = option(3, "int", "Morphological closing radius in pixels (0 = off).", low=0)
    min_area: int = option(
        25, "int", "Drop foreground blobs smaller than this many pixels (0 = off).", low=0
    )
    # --- outputs -------------------------------------------------------------------------
    lossless: bool = option(False, "bool", "Write FFV1 .mkv videos instead of H.264 .mp4.")
    preview: bool = option(
        False,
        "bool",
        "Also write preview.png: input, background, foreground, mask of a few frames.",
    )
    groundtruth: str | None = option(
        None,
        "path",
        "Score the masks against this ground truth (changedetection.net groundtruth/ folder or "
        "one Wallflower frame); scores go to summary.json and evaluation.csv.",
        optional=True,
        metavar="DIR",
    )
    overwrite: bool = option(False, "bool", "Replace the outputs of an earlier run.")
    masks_to: str | None = option(
        None,
        "path",
        "Also write the masks as raw gray frames (0/255, WxH bytes each) to this file, or to "
        "stdout with '-' (stdout then carries only those bytes).",
        optional=True,
        metavar="PATH|-",
    )

    def validate(self) -> SeparateSettings:
        """Check and coerce every field in place; return self."""
        for f in fields(self):
            setattr(self, f.name, check_value(f.name, f.metadata["spec"], getattr(self, f.name)))
        if self.mask is not None and self.observe is not None:
            raise InputError("--mask and --observe cannot be combined: choose one")
        if isinstance(self.window, int) and 0 < self.window <= self.overlap:
            raise InputError(
                f"overlap ({self.overlap}) must be < window ({self.window}): lower --overlap"
            )
        if self.size is not None:
            parse_size(self.size)
        return self

    @classmethod
    def from_mapping(cls, values: dict[str, Any]) -> SeparateSettings:
        """Build validated settings from a mapping (unknown keys are an error)."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise InputError(f"unknown option(s): {', '.join(unknown)}")
        return cls(**values).validate()

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of every setting (JSON-able)."""
        return dataclasses.asdict(self)

    def solver_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of the solver function for :attr:`method`."""
        kwargs: dict[str, Any] = {"max_iter": self.max_iter, "tol": self.tol}
        if self.method in INIT_METHODS:
            kwargs["init"] = self.init
        if self.method == "bestpair":
            kwargs.update(gamma=self.gamma, a=self.a, b=self.b)
        if self.method in ("bestpair", "ncf"):
            kwargs["sweeps"] = self.sweeps
        if self.method == "godec":
            kwargs["seed"] = self.seed
        return kwargs

    def solver_args(self) -> tuple[Any, ...]:
        """Positional arguments after ``A`` of the solver for :attr:`method`."""
        return () if self.method == "ialm" else (self.rank, self.sparsity)


def parse_size(text: str) -> tuple[int, int]:
    """``(width, height)`` from ``"WxH"``; raise :class:`InputError` when malformed."""
    parts = text.lower().replace(" ", "").split("x")
    try:
        w, h = (int(p) for p in parts)
    except ValueError:
        raise InputError(f"size ({text!r}) must be WxH, e.g. --size 320x240") from None
    if w < 1 or h < 1:
        raise InputError(f"size ({text!r}) must be positive, e.g. --size 320x240")
    return w, h


def option_specs() -> list[tuple[str, Any, Spec]]:
    """``(name, default, spec)`` of every field of :class:`SeparateSettings`, in order."""
    return [(f.name, f.default, f.metadata["spec"]) for f in fields(SeparateSettings)]
