"""The order of operations of one ``separate`` job: read, solve, masks, write.

Everything that can be checked is checked before the expensive work starts: options,
the output directory, the input's frames, the rank against the frame count, the mask.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bpvideo import __version__
from bpvideo.errors import ConvergenceWarning, InputError
from bpvideo.masks import foreground_masks
from bpvideo.reader import Video, load_observation_mask, probe, random_observation, read_video
from bpvideo.settings import SeparateSettings
from bpvideo.solver import Iterate, SolverResult, best_pair, check_problem, ncf
from bpvideo.writer import (
    SUMMARY,
    OutputDir,
    atomic_write_bytes,
    encode_png,
    write_json,
    write_masks,
    write_video,
)

__all__ = ["default_output", "load_video", "separate", "solve"]

logger = logging.getLogger("bpvideo")


def default_output(input_path: str) -> str:
    """Output directory used when ``-o`` is not given: ``<stem>-bpvideo`` in the cwd."""
    stem = Path(input_path.rstrip("/\\")).name
    stem = Path(stem).stem if Path(stem).suffix else stem
    return f"{stem or 'video'}-bpvideo"


def load_video(input_path: str, settings: SeparateSettings) -> Video:
    """Read the frames and the observation mask that ``settings`` select.

    Parameters
    ----------
    input_path : str
        Video file or image folder.
    settings : SeparateSettings
        Validated settings.

    Returns
    -------
    Video
        With ``mask`` set when ``--mask`` or ``--observe`` is given.
    """
    info = probe(input_path)
    video = read_video(
        input_path,
        start=settings.start,
        frames=settings.frames,
        step=settings.step,
        scale=settings.scale,
        gray=settings.gray,
        fps=settings.fps,
        allow_partial=settings.allow_partial,
    )
    if settings.mask is not None:
        video.mask = load_observation_mask(
            settings.mask,
            video,
            native_size=(info.width, info.height),
            start=settings.start,
            step=settings.step,
            scale=settings.scale,
        )
    elif settings.observe is not None and settings.observe < 1.0:
        video.mask = random_observation(video.data.shape, settings.observe, settings.seed)
    return video


def solve(
    video: Video,
    settings: SeparateSettings,
    *,
    callback: Callable[[Iterate], None] | None = None,
) -> SolverResult:
    """Run the solver that ``settings.method`` names on ``video``.

    A :class:`~bpvideo.errors.ConvergenceWarning` is logged (not raised) and recorded in
    the result's ``converged`` flag.
    """
    A = video.data
    kwargs: dict[str, Any] = dict(
        settings.solver_kwargs(), mask=video.mask, init=settings.init, callback=callback
    )
    solver = {"bestpair": best_pair, "ncf": ncf}[settings.method]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        result = solver(A, settings.rank, settings.sparsity, **kwargs)
    for w in caught:
        if issubclass(w.category, ConvergenceWarning):
            logger.warning("%s", w.message)
        else:  # pragma: no cover - re-emit anything else
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return result


def _to_uint8(x: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)


def separate(
    input_path: str,
    output: str | None,
    settings: SeparateSettings,
    *,
    callback: Callable[[Iterate], None] | None = None,
) -> dict[str, Any]:
    """Separate one clip and write the output layout; return the summary.

    Parameters
    ----------
    input_path : str
        Video file or image folder.
    output : str or None
        Output directory (default: :func:`default_output`).
    settings : SeparateSettings
        Options; validated here.
    callback : callable, optional
        Called with each solver :class:`~bpvideo.solver.Iterate`.

    Returns
    -------
    dict
        The content of ``summary.json``.

    Raises
    ------
    InputError
        Bad options or input, before any output is written.
    WorkError
        Failed work; nothing partial is left in the output directory.
    """
    t_start = time.perf_counter()
    settings.validate()
    out_path = output or default_output(input_path)
    outdir = OutputDir(out_path, overwrite=settings.overwrite)
    outdir.check()
    seconds: dict[str, float] = {}

    t = time.perf_counter()
    video = load_video(input_path, settings)
    seconds["read"] = time.perf_counter() - t
    n = video.n_frames
    try:
        check_problem(
            video.data.shape,
            settings.rank,
            settings.sparsity,
            settings.gamma,
            settings.a,
            settings.b,
            settings.max_iter,
            settings.tol,
        )
    except InputError as exc:
        raise InputError(f"{input_path}: {exc.message}") from None
    logger.info(
        "read %d frames of %dx%d from %s (%.2fs)",
        n,
        video.width,
        video.height,
        input_path,
        seconds["read"],
    )

    t = time.perf_counter()
    result = solve(video, settings, callback=callback)
    seconds["solve"] = time.perf_counter() - t
    logger.info(
        "%s: %d iterations, converged=%s, residual %.3g (%.2fs)",
        result.method,
        result.iterations,
        result.converged,
        result.residual,
        seconds["solve"],
    )

    t = time.perf_counter()
    fg = foreground_masks(
        video.data,
        result.L,
        result.S,
        video.frame_shape,
        rule=settings.mask_rule,
        threshold=settings.threshold,
        threshold_k=settings.threshold_k,
        observed=video.mask,
        open_radius=settings.open_radius,
        close_radius=settings.close_radius,
        min_area=settings.min_area,
    )
    seconds["masks"] = time.perf_counter() - t

    t = time.perf_counter()
    ext = "mkv" if settings.lossless else "mp4"
    background = _to_uint8(video.as_frames(result.L))
    foreground = np.where(fg.masks[..., None], video.frames, np.uint8(0))
    summary: dict[str, Any] = {
        "bpvideo_version": __version__,
        "input": str(input_path),
        "output": str(out_path),
        "frames": n,
        # A truncated video read with --allow-partial: the frames it should have had.
        "partial": video.partial,
        "frames_expected": video.frames_expected if video.partial else n,
        "frame_numbers": video.frame_numbers,
        "width": video.width,
        "height": video.height,
        "channels": 1 if len(video.frame_shape) == 2 else video.frame_shape[2],
        "fps": video.fps,
        "observed_fraction": 1.0 if video.mask is None else float(video.mask.mean()),
        "settings": settings.to_dict(),
        "solver": {
            "method": result.method,
            "iterations": result.iterations,
            "converged": result.converged,
            "residual": result.residual,
            "change": result.changes[-1] if result.changes else None,
        },
        "masks": {
            "rule": settings.mask_rule,
            "threshold": fg.threshold,
            "noise": fg.noise,
            "foreground_fraction": float(fg.masks.mean()),
        },
        "outputs": {
            "background_video": f"background.{ext}",
            "foreground_video": f"foreground.{ext}",
            "masks": "masks/bin%06d.png",
            "background_image": "background.png",
            "summary": SUMMARY,
        },
    }
    with outdir:
        write_video(
            outdir.stage(f"background.{ext}"), background, video.fps, lossless=settings.lossless
        )
        write_video(
            outdir.stage(f"foreground.{ext}"), foreground, video.fps, lossless=settings.lossless
        )
        write_masks(outdir.stage("masks"), fg.masks)
        still = _to_uint8(np.median(background, axis=0))
        atomic_write_bytes(outdir.stage("background.png"), encode_png(still))
        seconds["write"] = time.perf_counter() - t
        seconds["total"] = time.perf_counter() - t_start
        summary["seconds"] = {k: round(v, 4) for k, v in seconds.items()}
        write_json(outdir.stage(SUMMARY), summary)
        outdir.commit()
    logger.info("wrote %s (%.2fs in all)", out_path, seconds["total"])
    return summary
