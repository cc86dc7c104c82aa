"""Synthetic scenes of the classes where a one-image background fails, with known masks.

Each class reproduces one kind of real footage on which the reference background of
:mod:`bpvideo.background.reference` and a rank-2 background collapse (issue 26):

- ``cover30``, ``cover50``, ``cover70``: a crowd standing in place (each person sways and
  stays for 50-90 % of the clip), covering 30, 50 or 70 % of the frame on average, so
  most covered pixels are covered most of the time;
- ``ripples``: water whose surface moves in every frame (travelling waves), a boat
  crossing it and a walker on the bank;
- ``leaves``: foliage swaying by a few pixels over a third of the view, a walker passing
  in front of it;
- ``stayer``: a person who walks in, stands (swaying) for 80 % of the clip, walks out;
- ``slow_large``: a large, plain object drifting slowly over a finely textured background.

The moving water and leaves are background in the truth: only the drawn objects are
foreground. Every scene is deterministic for a seed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import cv2
import numpy as np

from bpvideo.synthetic.street import Scene, grey_levels, street_background

__all__ = ["HARD_CLASSES", "HardScene", "make_hard_scene"]

#: The classes :func:`make_hard_scene` draws.
HARD_CLASSES = ("cover30", "cover50", "cover70", "ripples", "leaves", "stayer", "slow_large")


@dataclass
class HardScene(Scene):
    """A :class:`~bpvideo.synthetic.Scene` whose background may move.

    Attributes
    ----------
    backgrounds : (T, H, W, 3) uint8 ndarray or None
        The background of every frame without objects and without noise (moving water and
        leaves included).
    dynamic : (H, W) bool ndarray or None
        Pixels whose background moves (water, leaves); background in :attr:`masks`.
    kind : str
        The class (one of :data:`HARD_CLASSES` or
        :data:`~bpvideo.synthetic.adverse.ADVERSE_CLASSES`).
    shadows : (T, H, W) bool ndarray or None
        Where a cast shadow falls (background in :attr:`masks`, changedetection.net's
        label 50); None when the class casts none.
    """

    backgrounds: np.ndarray | None = None
    dynamic: np.ndarray | None = None
    kind: str = ""
    shadows: np.ndarray | None = None


@dataclass
class _Body:
    """One object: texture and silhouette, and its centre (x, y) in each frame (NaN when
    absent)."""

    texture: np.ndarray  # (h, w, 3) float BGR
    shape: np.ndarray  # (h, w) bool
    path: np.ndarray  # (T, 2) float


def _person(rng: np.random.Generator, w: int, h: int, under: float) -> tuple[np.ndarray, ...]:
    """A person's texture and silhouette (a head over a body), coloured to stand out from
    ground of mean grey ``under``."""
    yy, xx = np.mgrid[0:h, 0:w].astype(float)
    head = (xx + 0.5 - w / 2) ** 2 + (yy + 0.5 - h * 0.12) ** 2 <= (0.22 * w + 1) ** 2
    body = ((xx + 0.5 - w / 2) / (w / 2)) ** 2 + ((yy + 0.5 - h * 0.6) / (h * 0.42)) ** 2 <= 1
    return _plain(rng, w, h, under), head | body


def _plain(rng: np.random.Generator, w: int, h: int, under: float) -> np.ndarray:
    """A plain object's texture: a colour far in grey from ``under``, a little grain."""
    grey = rng.uniform(200, 240) if under < 128 else rng.uniform(20, 60)
    tint = rng.normal(0.0, 20.0, 3)
    colour = grey + tint - grey_levels(tint)
    tex = np.broadcast_to(colour, (h, w, 3)).copy() + rng.normal(0.0, 5.0, (h, w, 1))
    tex[: max(1, h // 4)] += 25.0 if under >= 128 else -25.0  # a lighter/darker top
    return np.clip(tex, 0.0, 255.0)


def _sway(t: np.ndarray, amp: float, period: float, phase: float) -> np.ndarray:
    return amp * np.sin(2.0 * np.pi * t / period + phase)


def _crowd(rng, bg, frames: int, cover: float) -> list[_Body]:
    """People standing in place, each for 50-90 % of the clip (absent at its start or its
    end), added until they cover ``cover`` of the frame on average; a person who would
    leave more than 5 % of the view never uncovered is not added (no method could know
    the background there)."""
    height, width = bg.shape[:2]
    t = np.arange(frames, dtype=float)
    bodies: list[_Body] = []
    covered = np.zeros((frames, height, width), dtype=bool)
    for _ in range(2000):
        if covered.mean() >= cover - 0.01:
            break
        w, h = int(rng.uniform(0.09, 0.14) * width), int(rng.uniform(0.3, 0.45) * height)
        x, y = rng.uniform(0, width), rng.uniform(h / 3, height - h / 3)
        stay = rng.uniform(0.5, 0.9) * frames
        start = 0.0 if rng.random() < 0.5 else frames - stay
        r0, r1 = int(max(0, y - h / 2)), int(min(height, y + h / 2)) + 1
        tex, shape = _person(rng, w, h, grey_levels(bg[r0:r1]).mean())
        path = np.stack(
            [
                x + _sway(t, 2.0, rng.uniform(20, 40), rng.uniform(0, 6.3)),
                y + _sway(t, 1.0, rng.uniform(15, 30), rng.uniform(0, 6.3)),
            ],
            1,
        )
        path[(t < start) | (t >= start + stay)] = np.nan
        body = _Body(tex, shape, path)
        trial = covered.copy()
        _draw(trial, None, None, body)
        if (trial.mean() > cover + 0.03 and bodies) or trial.all(axis=0).mean() > 0.05:
            continue  # too large a step, or too much never seen: try another person
        covered = trial
        bodies.append(body)
    return bodies


def _walker(rng, bg, frames: int, y: float, span: tuple[float, float], size=(0.07, 0.3)):
    """A person crossing the frame at height ``y`` during the clip fraction ``span``."""
    height, width = bg.shape[:2]
    w, h = max(3, int(size[0] * width)), max(6, int(size[1] * height))
    r0, r1 = int(max(0, y - h / 2)), int(min(height, y + h / 2)) + 1
    tex, shape = _person(rng, w, h, grey_levels(bg[r0:r1]).mean())
    u = np.arange(frames) / max(frames - 1, 1)
    s = (u - span[0]) / (span[1] - span[0])
    x = -w / 2 - 1 + s * (width + w + 2)
    path = np.stack([x, y + _sway(np.arange(frames), 1.0, 12, 0.0)], 1)
    path[(s < 0) | (s > 1)] = np.nan
    return _Body(tex, shape, path)


def _draw(mask: np.ndarray, canvas: np.ndarray | None, labels, body: _Body, k: int = 1) -> None:
    """Draw ``body`` into each frame of ``canvas`` (T, H, W, 3) and set ``mask`` (T, H, W)
    and ``labels`` where it lands."""
    height, width = mask.shape[1:]
    h, w = body.shape.shape
    for t, (cx, cy) in enumerate(body.path):
        if np.isnan(cx):
            continue
        x0, y0 = int(np.floor(cx - w / 2 + 0.5)), int(np.floor(cy - h / 2 + 0.5))
        a0, b0 = max(x0, 0), max(y0, 0)
        a1, b1 = min(x0 + w, width), min(y0 + h, height)
        if a1 <= a0 or b1 <= b0:
            continue
        sub = body.shape[b0 - y0 : b1 - y0, a0 - x0 : a1 - x0]
        mask[t, b0:b1, a0:a1] |= sub
        if canvas is not None:
            canvas[t, b0:b1, a0:a1][sub] = body.texture[b0 - y0 : b1 - y0, a0 - x0 : a1 - x0][sub]
            labels[t, b0:b1, a0:a1][sub] = k


def _ripples(rng, bg: np.ndarray, frames: int) -> tuple[np.ndarray, np.ndarray]:
    """Water over the lower 45 % of the view: a blue-grey base and three travelling waves
    (up to +-30 grey levels). Returns the (T, H, W, 3) backgrounds and the water mask."""
    height, width = bg.shape[:2]
    top = int(0.55 * height)
    yy, xx = np.mgrid[top:height, 0:width].astype(float)
    water = np.zeros((height, width), dtype=bool)
    water[top:] = True
    base = np.array([120.0, 95.0, 70.0])
    out = np.repeat(bg[None], frames, axis=0)
    waves = [(rng.uniform(0.25, 0.6), rng.uniform(0, np.pi), rng.uniform(0.5, 1.0),
              rng.uniform(0, 6.3), rng.uniform(6, 12)) for _ in range(3)]  # fmt: skip
    for t in range(frames):
        level = np.zeros_like(xx)
        for k, ang, speed, phase, amp in waves:
            level += amp * np.sin(k * (xx * np.cos(ang) + yy * np.sin(ang)) - speed * t + phase)
        out[t, top:] = base + level[..., None] * np.array([1.0, 1.0, 0.9])
    return out, water


def _leaves(rng, bg: np.ndarray, frames: int) -> tuple[np.ndarray, np.ndarray]:
    """Foliage over the left 40 % of the view, above the ground line, swaying by up to 4
    pixels (rows moving with phase lag, gusts). Returns backgrounds and the foliage mask."""
    height, width = bg.shape[:2]
    right, bottom = int(0.4 * width), int(0.8 * height)
    blot = cv2.GaussianBlur(rng.normal(0.0, 1.0, (bottom, right + 16)), (0, 0), 1.5)
    light = np.clip(0.5 + 2.5 * blot, 0.0, 1.0)[..., None]
    tex = (1 - light) * np.array([25.0, 60.0, 30.0]) + light * np.array([80.0, 190.0, 110.0])
    foliage = np.zeros((height, width), dtype=bool)
    foliage[:bottom, :right] = True
    out = np.repeat(bg[None], frames, axis=0)
    yy, xx = np.mgrid[0:bottom, 0:right].astype(np.float32)
    gust = 1.0 + 0.5 * np.sin(2 * np.pi * np.arange(frames) / 60.0)
    for t in range(frames):
        dx = 4.0 * gust[t] * np.sin(2 * np.pi * t / 17.0 + yy / 9.0) * (1 - yy / bottom / 2)
        dy = 1.5 * np.sin(2 * np.pi * t / 23.0 + xx / 11.0)
        map_x = (xx + 8 + dx).astype(np.float32)
        map_y = np.clip(yy + dy, 0, bottom - 1).astype(np.float32)
        out[t, :bottom, :right] = cv2.remap(tex, map_x, map_y, cv2.INTER_LINEAR)
    return out, foliage


def _textured(rng, bg: np.ndarray) -> np.ndarray:
    """``bg`` with a fine texture of +-25 grey levels (tiles of 2-4 pixels)."""
    height, width = bg.shape[:2]
    fine = cv2.resize(rng.uniform(-25, 25, (height // 3 + 1, width // 3 + 1)), (width, height),
                      interpolation=cv2.INTER_NEAREST)  # fmt: skip
    return np.clip(bg + fine[..., None], 0.0, 255.0)


def _bodies(kind: str, rng, bg: np.ndarray, frames: int) -> list[_Body]:
    """The objects of a class."""
    height, width = bg.shape[:2]
    if kind.startswith("cover"):
        return _crowd(rng, bg, frames, int(kind[5:]) / 100.0)
    if kind == "ripples":
        w, h = int(0.3 * width), int(0.14 * height)
        u = np.arange(frames) / max(frames - 1, 1)
        x = width + 0.16 * width - u * 1.3 * width
        path = np.stack([x, np.full(frames, 0.72 * height)], 1)
        boat = _Body(_plain(rng, w, h, 100.0), np.ones((h, w), dtype=bool), path)
        return [boat, _walker(rng, bg, frames, 0.4 * height, (0.2, 0.9), (0.06, 0.22))]
    if kind == "leaves":
        return [_walker(rng, bg, frames, 0.6 * height, (0.05, 0.95), (0.09, 0.45))]
    if kind == "stayer":
        w, h = int(0.1 * width), int(0.45 * height)
        tex, shape = _person(rng, w, h, grey_levels(bg[int(0.4 * height) :]).mean())
        u = np.arange(frames) / max(frames - 1, 1)
        x = np.interp(u, [0.0, 0.1, 0.9, 1.0], [-w, 0.55 * width, 0.55 * width, width + w])
        y = 0.62 * height + _sway(np.arange(frames), 1.0, 25, 0.0)
        x = x + np.where((u > 0.1) & (u < 0.9), _sway(np.arange(frames), 1.5, 40, 1.0), 0.0)
        walker = _walker(rng, bg, frames, 0.45 * height, (0.3, 0.7), (0.06, 0.25))
        return [_Body(tex, shape, np.stack([x, y], 1)), walker]
    if kind == "slow_large":
        w, h = int(0.45 * width), int(0.5 * height)
        u = np.arange(frames) / max(frames - 1, 1)
        path = np.stack([-w / 2 + u * 0.75 * width, np.full(frames, 0.6 * height)], 1)
        return [_Body(_plain(rng, w, h, grey_levels(bg).mean()), np.ones((h, w), bool), path)]
    raise AssertionError(kind)  # make_hard_scene checked it


_DYNAMIC: dict[str, Callable] = {"ripples": _ripples, "leaves": _leaves}


def make_hard_scene(
    kind: str,
    width: int = 160,
    height: int = 120,
    frames: int = 150,
    *,
    seed: int = 0,
    noise: float = 2.0,
) -> HardScene:
    """A clip of one hard class (:data:`HARD_CLASSES`) with exact ground truth.

    Parameters
    ----------
    kind : str
        The class, one of :data:`HARD_CLASSES` (see the module docstring).
    width, height : int, default 160, 120
        Frame size (at least 32 x 24).
    frames : int, default 150
        Number of frames (at least 10).
    seed : int, default 0
        Random seed.
    noise : float, default 2.0
        Standard deviation of the sensor noise (grey levels), new in each frame.

    Returns
    -------
    HardScene
        Frames (T, H, W, 3) uint8 BGR, masks (T, H, W) bool (True exactly where an object
        is drawn), the still background (H, W, 3), the background of every frame and the
        pixels whose background moves.

    Examples
    --------
    >>> scene = make_hard_scene("ripples", 64, 48, 20)
    >>> scene.frames.shape, bool(scene.dynamic.any()), bool(scene.masks[:, scene.dynamic].any())
    ((20, 48, 64, 3), True, True)
    """
    if width < 32 or height < 24 or frames < 10:
        raise ValueError(f"make_hard_scene: at least 32 x 24 x 10, got {width}x{height}x{frames}")
    if kind not in HARD_CLASSES:
        raise ValueError(
            f"make_hard_scene: unknown class {kind!r}; one of {', '.join(HARD_CLASSES)}"
        )
    streams = np.random.SeedSequence([seed, HARD_CLASSES.index(kind)]).spawn(3)
    rng_bg, rng_obj, rng_noise = (np.random.default_rng(s) for s in streams)
    bg = np.rint(street_background(rng_bg, width, height))
    if kind == "slow_large":
        bg = np.rint(_textured(rng_bg, bg))
    dynamic = np.zeros((height, width), dtype=bool)
    if kind in _DYNAMIC:
        backgrounds, dynamic = _DYNAMIC[kind](rng_bg, bg, frames)
    else:
        backgrounds = np.repeat(bg[None], frames, axis=0)
    backgrounds = np.clip(np.rint(backgrounds), 0.0, 255.0)
    canvas = backgrounds.copy()
    masks = np.zeros((frames, height, width), dtype=bool)
    labels = np.zeros((frames, height, width), dtype=np.uint8)
    bodies = _bodies(kind, rng_obj, bg, frames)
    for k, body in enumerate(bodies, start=1):
        _draw(masks, canvas, labels, body, min(k, 255))
    canvas += noise * rng_noise.standard_normal(canvas.shape)
    return HardScene(
        frames=np.clip(np.rint(canvas), 0, 255).astype(np.uint8),
        masks=masks,
        background=bg.astype(np.uint8),
        labels=labels,
        objects=tuple(f"{kind} {k}" for k in range(1, len(bodies) + 1)),
        backgrounds=backgrounds.astype(np.uint8),
        dynamic=dynamic,
        kind=kind,
    )
