"""Every option of ``separate``: its default, bounds, help and flag, in one place.

The CLI builds its click options from :class:`SeparateSettings`, YAML configs are checked
against it, the library's keyword arguments (:func:`bpvideo.separate` ...) are its fields,
and the low-level functions take their defaults from it (:func:`default`). To add an
option, add a field here with :func:`option`; the CLI, the config loader, the library and
``summary.json`` pick it up.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from bpvideo._spec import (
    TIME_FORMS,
    Spec,
    Time,
    check_value,
    format_span,
    option,
    parse_size,
    parse_span,
    parse_time,
)
from bpvideo.errors import InputError

__all__ = [
    "DEVICES",
    "EXCLUSIVE",
    "MASK_RULES",
    "METHODS",
    "OPTION_GROUPS",
    "OVERRIDES",
    "TIME_FORMS",
    "X264_PRESETS",
    "SeparateSettings",
    "Spec",
    "Time",
    "check_value",
    "cli_flags",
    "default",
    "flag_of",
    "format_span",
    "merge_options",
    "option",
    "option_group",
    "option_name",
    "option_specs",
    "parse_size",
    "parse_span",
    "parse_time",
]

METHODS = ("bestpair", "ncf", "ialm", "godec", "rpca_gd")
#: Methods that take ``init`` (a starting point); the baselines start their own way.
INIT_METHODS = ("bestpair", "ncf")
MASK_RULES = ("residual", "support")
INITS = ("robust", "zeros", "median")
#: The paper's alpha: what ``sparsity="auto"`` means for a solve without a reference
#: background (``background_from="none"``, the support rule).
PAPER_SPARSITY = 0.1
NOISES = ("local", "global")
SHADOWS = ("remove", "keep")
PIX_FMTS = ("gray", "bgr24")
#: x264's presets, fastest first.
X264_PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow",
                "slower", "veryslow", "placebo")  # fmt: skip
#: Where the solver runs (:func:`bpvideo.solvers.backends.resolve_device`).
DEVICES = ("auto", "cpu", "cuda")

# --- bounds -----------------------------------------------------------------------------
# What an option or an input may ask for, checked before any work: the options' own
# bounds (``low``, ``high`` and ``limit`` below) and what a file or a stream announces
# (frame sizes, rates, header lengths), so that a small input never costs more than its
# own memory estimate.

#: Frame indices and counts (``start``, ``frames``, ``step``, ``learn``).
MAX_FRAMES = 2**31 - 1
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
#: Smallest width or height of a frame after ``scale`` (smaller frames hold no scene).
MIN_SIDE = 4
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
#: Paths a glob may match (inputs of ``separate`` or of one batch job).
MAX_GLOB_MATCHES = 100_000
#: The batch report beside a config ``night.yaml``: ``night`` + this suffix.
REPORT_SUFFIX = ".report.json"


@dataclass
class SeparateSettings:
    """Settings of one ``separate`` job. Defaults here are the tool's defaults.

    Every field carries a :class:`Spec` (type, bounds, help). Construct with keywords and
    call :meth:`validate`, or use :meth:`from_mapping` for untrusted input.
    """

    # --- input ---------------------------------------------------------------------------
    start: int | str = option(
        0,
        "time",
        "First frame to read: a frame number (0-based), seconds (90s) or HH:MM:SS[.ms].",
        low=0,
        limit=MAX_FRAMES,
        metavar="N|TIME",
    )
    frames: int | None = option(
        None,
        "int",
        "Number of frames to read (default: all).",
        low=1,
        limit=MAX_FRAMES,
        optional=True,
        metavar="N",
    )
    end: int | str | None = option(
        None,
        "time",
        "Stop before this frame or time (excluded): a frame number (0-based), seconds or "
        "HH:MM:SS[.ms]; instead of --frames.",
        low=0,
        low_open=True,
        limit=MAX_FRAMES,
        optional=True,
        metavar="N|TIME",
    )
    duration: int | str | None = option(
        None,
        "time",
        "Read this much of the input from --start: frames, seconds (10s) or HH:MM:SS[.ms]; "
        "instead of --frames.",
        low=0,
        low_open=True,
        limit=MAX_FRAMES,
        optional=True,
        metavar="N|TIME",
    )
    step: int = option(
        1,
        "int",
        "Read every K-th frame (temporal subsampling).",
        low=1,
        limit=MAX_FRAMES,
        metavar="K",
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
        low=FPS_RANGE[0],
        high=FPS_RANGE[1],
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
        limit=MAX_WINDOW,
        metavar="N|auto",
    )
    overlap: int = option(
        20,
        "int",
        "Frames shared by consecutive windows (re-solved, not re-written).",
        low=0,
        limit=MAX_WINDOW,
    )
    allow_partial: bool = option(
        False,
        "bool",
        "Keep the frames read from a truncated or damaged video instead of failing "
        '(summary.json then says "partial": true).',
    )
    allow_references: bool = option(
        False,
        "bool",
        "Read an input that names other files (an HLS playlist, an ffconcat list...): "
        "ffmpeg then reads the local files it names.",
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
    seed: int = option(0, "int", "Random seed for --observe.", low=0, limit=2**32 - 1)
    # --- solver --------------------------------------------------------------------------
    method: str = option(
        "bestpair",
        "str",
        "Solver: best-pair APG; NCF (alternating projections); or the paper's comparison "
        "methods iEALM (convex PCP, inexact ALM; ignores --rank/--sparsity), GoDec (q = 2), "
        "RPCA GD.",
        choices=METHODS,
    )
    rank: int = option(2, "int", "Rank r of the background.", low=1, limit=1000)
    sparsity: float | str = option(
        "auto",
        "threshold",
        "Sparsity alpha of the foreground: fraction of non-zeros per row/column of S; auto = "
        "from the data (the foreground the reference background finds, see "
        "docs/method.md), a number keeps the paper's T_alpha exactly.",
        low=0,
        high=1,
        low_open=True,
        high_open=True,
        metavar="ALPHA|auto",
    )
    gamma: float = option(1.1, "float", "Step size gamma of the APG.", low=0, high=2, low_open=True)
    a: float = option(
        0.5, "float", "Inertia a_k of the APG.", low=0, high=1, high_open=True, flag="--inertia-a"
    )
    b: float = option(
        0.5, "float", "Inertia b_k of the APG.", low=0, high=1, high_open=True, flag="--inertia-b"
    )
    max_iter: int = option(100, "int", "Iteration limit.", low=1, limit=1_000_000)
    tol: float = option(1e-3, "float", "Tolerance on relative change and residual.", low=0, high=1)
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
        "H_r (sweeps to convergence). 1 is an approximation, see docs/performance.md.",
        low=0,
        limit=100,
    )
    device: str = option(
        "auto",
        "str",
        "Where the solver runs: cuda = an NVIDIA GPU (bestpair and ncf; needs CuPy: pip "
        'install "bpvideo[cuda]"), cpu, or auto = cuda when CuPy sees a GPU, else cpu.',
        choices=DEVICES,
    )
    solve_scale: float | str = option(
        "auto",
        "scale",
        "Solve on frames downscaled by this factor (INTER_AREA); the background is upsampled "
        "back and masks and outputs are computed at full resolution. auto = 0.25 for frames of "
        "320x240 pixels or more (at most 180x120 solved pixels: 0.15 at 720p, 0.10 at 1080p), "
        "else 1 (full resolution).",
        low=0,
        high=1,
        low_open=True,
        metavar="F|auto",
    )
    # --- reference background ------------------------------------------------------------
    background_from: str = option(
        "auto",
        "reference",
        "The empty scene the solver compares frames with: auto = each pixel's stillest frames "
        "(people who linger are not taken for background), IMAGE = a picture of the empty "
        "scene, START:END = frames of the input where the scene is empty, none = plain robust "
        "PCA (every entry observed).",
        metavar="auto|IMAGE|START:END|none",
    )
    absorb: float = option(
        60.0,
        "float",
        "Seconds after which a lasting change (a parked car, a moved chair) becomes "
        "background, across windows; 0 = never.",
        low=0,
        high=MAX_SECONDS,
        metavar="SECONDS",
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
        "Threshold on |A - L| in grey levels (0-255), or 'auto': per pixel, from the camera's "
        "noise and each pixel's own spread (see --noise).",
        low=0,
        high=255,
        low_open=True,
        metavar="T|auto",
    )
    threshold_k: float = option(
        6.0,
        "float",
        "With --threshold auto: noise levels a foreground pixel is away from the background.",
        low=0,
        limit=1000,
        low_open=True,
    )
    noise: str = option(
        "local",
        "str",
        "With --threshold auto: local = each pixel also gets k x its own spread about the "
        "background (leaves, water, flicker), global = the camera's noise only.",
        choices=NOISES,
    )
    shadows: str = option(
        "remove",
        "str",
        "Cast shadows (darker, same colour and texture as the background): remove them from "
        "the masks, or keep them as foreground.",
        choices=SHADOWS,
    )
    open_radius: int = option(
        1,
        "int",
        "Morphological opening radius in pixels (0 = off).",
        low=0,
        limit=MAX_RADIUS,
    )
    close_radius: int = option(
        3,
        "int",
        "Morphological closing radius in pixels (0 = off).",
        low=0,
        limit=MAX_RADIUS,
    )
    min_area: int = option(
        25,
        "int",
        "Drop foreground blobs smaller than this many pixels (0 = off).",
        low=0,
        limit=MAX_PIXELS,
    )
    # --- a learned background ------------------------------------------------------------
    learn: str | None = option(
        None,
        "span",
        "Learn the background on frames START:END of the input (0-based, END excluded; or of "
        "--learn-from), then apply it to every frame without solving again (decode speed).",
        optional=True,
        metavar="START:END",
    )
    learn_from: str | None = option(
        None,
        "path",
        "Learn the background on this other clip of the same camera (all its frames, or "
        "--learn START:END of them), then apply it to INPUT.",
        optional=True,
        metavar="FILE",
    )
    # --- outputs -------------------------------------------------------------------------
    lossless: bool = option(False, "bool", "Write FFV1 .mkv videos instead of H.264 .mp4.")
    crf: int = option(
        18,
        "int",
        "H.264 quality: constant rate factor, 0 (lossless) to 51 (worst); 18 looks "
        "transparent, +6 halves the size.",
        low=0,
        high=51,
    )
    preset: str = option(
        "veryfast",
        "str",
        "x264 preset, ultrafast (fastest, largest) to veryslow: speed against size at the "
        "same quality (see docs/performance.md).",
        choices=X264_PRESETS,
        metavar="NAME",
    )
    no_video: bool = option(
        False,
        "bool",
        "Write no videos (masks, background.png and summary.json only): starts no encoder, "
        "so folders of frames need no ffmpeg.",
    )
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
        """Check and coerce every field in place; return self.

        Raises
        ------
        InputError
            The first invalid value, or options that cannot be combined.
        """
        for f in fields(self):
            setattr(self, f.name, check_value(f.name, f.metadata["spec"], getattr(self, f.name)))
        if self.mask is not None and self.observe is not None:
            raise InputError(
                "{mask} and {observe} cannot be combined: choose one",
                option=("observe", self.observe),
            )
        if isinstance(self.window, int) and 0 < self.window <= self.overlap:
            raise InputError(
                f"{{overlap=}} must be < {{window}} ({self.window}): lower {{overlap}}",
                option=("overlap", self.overlap),
            )
        if self.device == "cuda" and self.method not in INIT_METHODS:
            raise InputError(
                f"{{device='cuda'}} runs the bestpair and ncf methods, not {self.method}: use "
                "{device='cpu'} or {method='bestpair'}",
                option=("device", self.device),
            )
        if self.size is not None:
            parse_size(self.size)
        self._check_selection()
        self._check_encoder()
        if self.learn is not None or self.learn_from is not None:
            self._check_learned()
        return self

    def _check_selection(self) -> None:
        """One way to say where reading stops; an ``end`` after ``start`` (same units)."""
        stops = [name for name in ("frames", "end", "duration") if getattr(self, name) is not None]
        if len(stops) > 1:
            raise InputError(
                f"{{{stops[0]}}} and {{{stops[1]}}} both say where to stop reading: give one",
                option=(stops[1], getattr(self, stops[1])),
            )
        if self.end is not None:
            start, end = parse_time(self.start, "start"), parse_time(self.end, "end")
            same = (start.frames is None) == (end.frames is None)
            if same and end.to_frames(1.0) <= start.to_frames(1.0):  # frames, or seconds
                raise InputError(
                    f"{{end=}} must come after {{start}} ({self.start}): give a later {{end}}",
                    option=("end", self.end),
                )

    def _check_encoder(self) -> None:
        """``crf`` and ``preset`` set the H.264 encoder: refused when no H.264 is written."""
        for name in ("lossless", "no_video"):
            if not getattr(self, name):
                continue
            if name == "lossless" and self.no_video:
                raise InputError(
                    "{lossless} and {no_video} cannot be combined: {no_video} writes no video",
                    option=("lossless", True),
                )
            for setting in ("crf", "preset"):
                if getattr(self, setting) != _DEFAULTS[setting]:
                    raise InputError(
                        f"{{{setting}=}} sets the H.264 encoder, but {{{name}}} writes "
                        f"{'FFV1' if name == 'lossless' else 'no video'}: drop one",
                        option=(setting, getattr(self, setting)),
                    )

    def selection(self) -> dict[str, Any]:
        """``start``, ``frames``, ``end``, ``duration``, ``step``: which frames to read, as
        :func:`~bpvideo.io.sources.open_source` takes them."""
        return {name: getattr(self, name) for name in ("start", "frames", "end", "duration",
                                                       "step")}  # fmt: skip

    def _check_learned(self) -> None:
        """Options that a learned background (``learn``, ``learn_from``) cannot honour."""
        for name in ("mask", "observe"):
            if getattr(self, name) is not None:
                raise InputError(
                    f"{{{name}}} cannot be combined with {{learn}} or {{learn_from}}: the "
                    "learned background is applied to every pixel; drop one",
                    option=(name, getattr(self, name)),
                )
        if self.mask_rule == "support":
            raise InputError(
                "{mask_rule=} needs the solved sparse part, which a learned background does "
                "not have: use {mask_rule='residual'}",
                option=("mask_rule", self.mask_rule),
            )

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> SeparateSettings:
        """Build validated settings from a mapping of options.

        Keys are option names, or their flags' spellings (``inertia_a``, ``max-iter``).

        Raises
        ------
        InputError
            Unknown keys (all listed), the same option twice, or an invalid value.
        """
        given: dict[str, Any] = {}
        unknown = []
        for key, value in values.items():
            name = option_name(key)
            if name is None:
                unknown.append(str(key))
            elif name in given:
                raise InputError(f"{{{name}}} is given twice ({key!r}): give it once",
                                 option=(name, value))  # fmt: skip
            else:
                given[name] = value
        if unknown:
            hints = "".join(_did_you_mean(key) for key in sorted(unknown))
            raise InputError(
                f"unknown option(s): {', '.join(sorted(unknown))}{hints}: the options are the "
                "fields of bpvideo.settings.SeparateSettings"
            )
        return cls(**given).validate()

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
        return () if self.method == "ialm" else (self.rank, self.solver_sparsity)

    @property
    def solver_sparsity(self) -> float:
        """``sparsity`` as a number: "auto" is :data:`PAPER_SPARSITY` here (a solve with a
        reference background estimates it instead, see
        :func:`bpvideo.pipeline.reference.auto_sparsity`)."""
        return PAPER_SPARSITY if self.sparsity == "auto" else float(self.sparsity)

    def mask_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`bpvideo.masks.foreground_masks` (rule and clean-up)."""
        return {
            "rule": self.mask_rule,
            "threshold": self.threshold,
            "threshold_k": self.threshold_k,
            "noise": self.noise,
            "shadows": self.shadows,
            "open_radius": self.open_radius,
            "close_radius": self.close_radius,
            "min_area": self.min_area,
        }


def option_specs() -> list[tuple[str, Any, Spec]]:
    """``(name, default, spec)`` of every field of :class:`SeparateSettings`, in order."""
    return [(f.name, f.default, f.metadata["spec"]) for f in fields(SeparateSettings)]


#: The sections of ``bpvideo separate --help``: every option is in one, in this order.
OPTION_GROUPS: dict[str, tuple[str, ...]] = {
    "Input": ("start", "frames", "end", "duration", "step", "scale", "gray", "fps", "size",
              "pix_fmt", "allow_partial", "allow_references"),
    "Solver": ("method", "rank", "sparsity", "max_iter", "tol", "solve_scale", "window",
               "overlap", "gamma", "a", "b", "init", "sweeps", "mask", "observe", "seed",
               "learn", "learn_from", "background_from", "absorb", "device"),
    "Masks": ("mask_rule", "threshold", "threshold_k", "noise", "shadows", "open_radius",
              "close_radius", "min_area"),
    "Output": ("overwrite", "lossless", "crf", "preset", "no_video", "preview", "masks_to",
               "groundtruth"),
}  # fmt: skip


#: Options that say one thing in different ways: where one is given over another source
#: of options (a flag over a defaults file, a job over its batch's ``defaults:``), the
#: others of its group are dropped from that source (``--frames`` drops a file's ``end``).
EXCLUSIVE = (("frames", "end", "duration"), ("mask", "observe"))

#: An option set (not None, not False) in a higher layer drops these of a lower layer,
#: which cannot go with it: a flag wins over a defaults file, a job over its defaults.
OVERRIDES: dict[str, tuple[str, ...]] = {
    "no_video": ("crf", "preset", "lossless"),
    "lossless": ("crf", "preset", "no_video"),
    "crf": ("no_video", "lossless"),
    "preset": ("no_video", "lossless"),
    "learn": ("mask", "observe"),
    "learn_from": ("mask", "observe"),
}


def merge_options(low: Mapping[str, Any], high: Mapping[str, Any]) -> dict[str, Any]:
    """Options of ``high`` over those of ``low`` (keys are option names; see
    :data:`EXCLUSIVE` and :data:`OVERRIDES`).

    Examples
    --------
    >>> merge_options({"rank": 1, "end": "10s", "tol": 0.01}, {"rank": 3, "frames": 50})
    {'rank': 3, 'tol': 0.01, 'frames': 50}
    >>> merge_options({"crf": 18, "preset": "slow"}, {"no_video": True})
    {'no_video': True}
    """
    merged = dict(low)
    for group in EXCLUSIVE:
        if any(high.get(name) is not None for name in group):
            for name in group:
                merged.pop(name, None)
    for name, dropped in OVERRIDES.items():
        if high.get(name) not in (None, False):
            for other in dropped:
                if other not in high:
                    merged.pop(other, None)
    merged.update(high)
    return merged


def option_group(name: str) -> str:
    """The section of ``--help`` that shows option ``name`` (:data:`OPTION_GROUPS`)."""
    for group, names in OPTION_GROUPS.items():
        if name in names:
            return group
    raise KeyError(f"{name} is in no OPTION_GROUPS section: add it to one")


def default(name: str) -> Any:
    """The default of option ``name`` (low-level functions take theirs from here).

    Examples
    --------
    >>> default("tol"), default("min_area")
    (0.001, 25)
    """
    return _DEFAULTS[name]


def flag_of(name: str, spec: Spec) -> str:
    """The command-line flag of an option: ``--max-iter`` for ``max_iter``."""
    return spec.flag or "--" + name.replace("_", "-")


def cli_flags() -> dict[str, str]:
    """Option name -> flag as :meth:`~bpvideo.errors.BpvideoError.render` takes it.

    Boolean pairs are ``"--gray/--color"``; ``output`` is ``-o``.
    """
    flags = {"output": "-o"}
    for name, _, spec in option_specs():
        flag = flag_of(name, spec)
        flags[name] = f"{flag}/{spec.secondary}" if spec.secondary else flag
    return flags


def _aliases() -> dict[str, str]:
    """Spelling -> option name: ``max_iter``, ``max-iter``, ``inertia-a``, ``inertia_a``."""
    aliases: dict[str, str] = {}
    for name, _, spec in option_specs():
        for spelling in (name, name.replace("_", "-"), flag_of(name, spec).lstrip("-")):
            aliases[spelling] = aliases[spelling.replace("-", "_")] = name
    return aliases


def option_name(key: Any) -> str | None:
    """The option a key names (``"inertia-a"`` -> ``"a"``), or None."""
    return _ALIASES.get(key) if isinstance(key, str) else None


def _did_you_mean(key: str) -> str:
    close = difflib.get_close_matches(key, sorted(_ALIASES), n=1, cutoff=0.75)
    return f" ({key!r}: did you mean {close[0]!r}?)" if close else ""


_DEFAULTS = {name: value for name, value, _ in option_specs()}
_ALIASES = _aliases()
