"""A synthetic street scene with exact foreground masks (:func:`make_scene`): the bundled
sample, the tests' clips and the speed benchmarks' scene."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bpvideo.limits import DEFAULT_FPS

__all__ = ["GREY_WEIGHTS", "Scene", "grey_levels", "make_scene", "street_background"]


GREY_WEIGHTS = np.array([0.114, 0.587, 0.299])

# Object colours (BGR): light ones (grey >= 205) for dark backgrounds, dark ones
# (grey <= 65) for light backgrounds, so every object stands out from what it covers.
_LIGHT_COLOURS = np.array(
    [[235, 235, 235], [60, 220, 250], [240, 230, 150], [200, 190, 250]], dtype=float
)
_DARK_COLOURS = np.array([[30, 28, 25], [120, 40, 25], [30, 30, 140], [40, 85, 30]], dtype=float)


@dataclass
class Scene:
    """A synthetic fixed-camera clip with its ground-truth foreground.

    Attributes
    ----------
    frames : (T, H, W, 3) uint8 ndarray
        The clip, BGR colour: background and objects under a slow global illumination
        drift, plus Gaussian sensor noise.
    masks : (T, H, W) bool ndarray
        Ground-truth foreground: True exactly where an object covers the background.
    background : (H, W, 3) uint8 ndarray
        The clean background (no objects, no drift, no noise), BGR.
    fps : float, default 25
        Nominal frame rate.
    labels : (T, H, W) uint8 ndarray or None
        Which object covers each pixel (0 = background, ``k`` = the ``k``-th object of
        :attr:`objects`); ``masks == (labels > 0)``.
    objects : tuple of str
        Names of the objects, in label order (label ``k`` is ``objects[k - 1]``).
    stop_frames : (int, int)
        Half-open frame range ``[first, last)`` during which the stopping object stands
        still (its label is ``objects.index("parked car") + 1``).
    gain : (T,) float64 ndarray or None
        The multiplicative illumination gain of each frame.
    """

    frames: np.ndarray
    masks: np.ndarray
    background: np.ndarray
    fps: float = DEFAULT_FPS
    labels: np.ndarray | None = None
    objects: tuple[str, ...] = ()
    stop_frames: tuple[int, int] = (0, 0)
    gain: np.ndarray | None = None


@dataclass
class _Sprite:
    """One moving object: its texture, its shape and its path (internal)."""

    name: str
    texture: np.ndarray  # (h, w, 3) float BGR
    shape: np.ndarray  # (h, w) bool, the object's silhouette in its bounding box
    times: np.ndarray  # key times, fractions of the clip in [0, 1], increasing
    xs: np.ndarray  # centre x at the key times (pixels)
    ys: np.ndarray  # centre y at the key times (pixels)
    eased: bool = False  # smoothstep between key times (accelerate / brake)
    bob: float = 0.0  # amplitude of a vertical sine wobble (pixels)


def grey_levels(image: np.ndarray) -> np.ndarray:
    """Grey level of a BGR image (float)."""
    return np.asarray(image, dtype=float) @ GREY_WEIGHTS


def _layout(height: int) -> dict[str, int]:
    """Row boundaries of the scene's bands (sky, pavement, road, verge)."""
    return {
        "horizon": round(0.34 * height),
        "road_top": round(0.56 * height),
        "lane_line": round(0.72 * height),
        "road_bottom": round(0.90 * height),
    }


def _blobs(rng: np.random.Generator, width: int, height: int, count: int) -> np.ndarray:
    """Sum of ``count`` smooth Gaussian colour blobs, zero-mean-ish, (H, W, 3) float."""
    yy, xx = np.mgrid[0:height, 0:width].astype(float)
    out = np.zeros((height, width, 3))
    for _ in range(count):
        cx, cy = rng.uniform(-0.1, 1.1) * width, rng.uniform(-0.1, 1.1) * height
        sigma = rng.uniform(0.08, 0.3) * max(width, height)
        amplitude = rng.normal(0.0, 8.0) + rng.normal(0.0, 3.0, 3)
        bump = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2.0 * sigma**2))
        out += bump[:, :, None] * amplitude
    return out


def street_background(rng: np.random.Generator, width: int, height: int) -> np.ndarray:
    """A street seen from a fixed camera: sky, buildings, pavement, a two-lane road, verge.

    Returns
    -------
    (H, W, 3) float64 ndarray
        BGR in 0..255 (not yet rounded).
    """
    rows = _layout(height)
    horizon, road_top = rows["horizon"], rows["road_top"]
    lane_line, road_bottom = rows["lane_line"], rows["road_bottom"]
    yy, xx = np.mgrid[0:height, 0:width].astype(float)
    bg = np.empty((height, width, 3))

    # Sky: pale blue, lighter towards the horizon.
    ramp = (yy[:horizon] / max(horizon, 1))[:, :, None]
    bg[:horizon] = np.array([190.0, 168.0, 140.0]) + ramp * np.array([12.0, 14.0, 18.0])

    # Buildings: rectangles standing on the horizon, muted colours, a grid of windows.
    x = int(rng.integers(-width // 10, width // 10 + 1))
    while x < width:
        bw = int(rng.integers(max(3, width // 8), max(4, width // 4) + 1))
        top = round(horizon * rng.uniform(0.15, 0.7))
        if rng.random() < 0.8 and horizon - top >= 2:
            x0, x1 = max(x, 0), min(x + bw, width)
            wall = np.array([125.0, 135.0, 150.0]) + rng.normal(0.0, 12.0, 3)
            bg[top:horizon, x0:x1] = wall
            step_x, step_y = max(3, width // 32), max(3, height // 20)
            for wy in range(top + 2, horizon - 2, step_y):
                for wx in range(x + 2, x + bw - 2, step_x):
                    sx0, sx1 = max(wx, 0), min(wx + max(1, step_x // 2), width)
                    if sx1 > sx0:
                        bg[wy : wy + max(1, step_y // 2), sx0:sx1] = wall - 40.0
            bg[top:horizon, x0 : min(x0 + 1, x1)] = wall - 25.0  # a sharp vertical edge
        x += bw + int(rng.integers(0, max(2, width // 16)))

    # Pavement: light grey flagstones with joints, a bright kerb along the road.
    bg[horizon:road_top] = np.array([150.0, 156.0, 160.0])
    joint = max(4, width // 12)
    offset = int(rng.integers(0, joint))
    joints = ((xx[horizon:road_top] + offset) % joint) < 1
    bg[horizon:road_top][joints] -= 18.0
    bg[road_top - 1 : road_top] = np.array([195.0, 198.0, 200.0])

    # Road: dark asphalt, a dashed centre line, a solid edge line.
    bg[road_top:road_bottom] = np.array([98.0, 100.0, 102.0])
    dash = max(4, width // 16)
    thick = max(1, height // 80)
    dashes = ((xx[0] + int(rng.integers(0, 2 * dash))) % (2 * dash)) < dash
    bg[lane_line : lane_line + thick, dashes] = np.array([170.0, 200.0, 212.0])
    bg[road_bottom - thick - 1 : road_bottom - 1] = np.array([200.0, 200.0, 200.0])

    # Verge: grass.
    bg[road_bottom:] = np.array([60.0, 125.0, 85.0])

    # Smooth shading and colour variation, then fine static texture (grain).
    bg += _blobs(rng, width, height, 10)
    grain = rng.normal(0.0, 5.0, (height, width, 1)) + rng.normal(0.0, 1.5, (height, width, 3))
    bg += grain
    # Headroom: the illumination gain and the noise must not saturate the background.
    return np.clip(bg, 16.0, 228.0)


def _silhouette(kind: str, w: int, h: int) -> np.ndarray:
    """Boolean silhouette of a ``"rect"`` or ``"ellipse"`` in a ``h x w`` box."""
    if kind == "rect":
        return np.ones((h, w), dtype=bool)
    yy, xx = np.mgrid[0:h, 0:w].astype(float)
    return ((xx + 0.5 - w / 2) / (w / 2)) ** 2 + ((yy + 0.5 - h / 2) / (h / 2)) ** 2 <= 1.0


def _texture(
    rng: np.random.Generator, colour: np.ndarray, w: int, h: int, light: bool, pattern: str
) -> np.ndarray:
    """An object's own texture: a base colour, grain and a pattern (windows, panels, ...)."""
    tex = np.broadcast_to(colour, (h, w, 3)).copy()
    tex += rng.normal(0.0, 6.0, (h, w, 1))
    shade = -45.0 if light else 35.0  # details go towards mid-grey, never across it
    if pattern == "car":  # windows band in the upper part
        r0, r1 = round(0.15 * h), max(round(0.4 * h), round(0.15 * h) + 1)
        c0, c1 = round(0.2 * w), max(round(0.8 * w), round(0.2 * w) + 1)
        tex[r0:r1, c0:c1] += shade
    elif pattern == "truck":  # vertical panel joints and a cab window
        step = max(3, w // 8)
        tex[:, step // 2 :: step] += shade / 2
        tex[: max(1, h // 3), : max(1, w // 5)] += shade
    elif pattern == "person":  # a lighter/darker head and torso
        tex[: max(1, h // 3)] += shade / 1.5
    return np.clip(tex, 0.0, 255.0)


def _make_sprites(
    rng: np.random.Generator, width: int, height: int, background: np.ndarray
) -> list[_Sprite]:
    """The scene's objects, in drawing order (later ones are in front)."""
    rows = _layout(height)
    lane1 = 0.5 * (rows["road_top"] + rows["lane_line"])
    lane2 = 0.5 * (rows["lane_line"] + rows["road_bottom"])
    pavement = 0.5 * (rows["horizon"] + rows["road_top"])
    light_order = rng.permutation(len(_LIGHT_COLOURS))
    dark_order = rng.permutation(len(_DARK_COLOURS))
    counters = {"light": 0, "dark": 0}
    bg_grey = grey_levels(background)

    def size(fw: float, fh: float) -> tuple[int, int]:
        return max(2, round(fw * width)), max(2, round(fh * height))

    # (name, shape, texture pattern, size, key times, centre x at the key times, centre y,
    # eased, bob). "in" / "out" are just outside the left / right edge for that width.
    specs = []
    for name, kind, pattern, (fw, fh), times, where, y, eased, bob in (
        ("car", "rect", "car", (0.20, 0.11), [0.03, 0.33], ["in", "out"], lane2, False, 0.0),
        ("pedestrian", "ellipse", "person", (0.045, 0.17), [0.10, 0.90], ["in", "out"],
         pavement, False, 0.0),
        ("parked car", "rect", "car", (0.22, 0.12), [0.10, 0.30, 0.62, 0.85],
         ["in", 0.6, 0.6, "out"], lane1, True, 0.0),
        ("bird", "ellipse", "plain", (0.05, 0.035), [0.30, 0.50], ["out", "in"],
         0.15 * height, False, 0.03 * height),
        ("truck", "rect", "truck", (0.36, 0.16), [0.50, 0.97], ["out", "in"], lane2, False, 0.0),
    ):  # fmt: skip
        w, h = size(fw, fh)
        edge = {"in": -w / 2 - 1, "out": width + w / 2 + 1}
        xs = [edge[x] if isinstance(x, str) else x * width for x in where]
        specs.append((name, kind, pattern, w, h, times, xs, y, eased, bob))

    sprites = []
    for name, kind, pattern, w, h, times, xs, y, eased, bob in specs:
        # Light objects on dark ground and dark ones on light ground: the band the object
        # travels along decides.
        r0 = int(np.clip(round(y - h / 2), 0, height - 1))
        r1 = int(np.clip(round(y + h / 2), r0 + 1, height))
        light = bool(bg_grey[r0:r1].mean() < 128.0)
        key = "light" if light else "dark"
        palette, order = (_LIGHT_COLOURS, light_order) if light else (_DARK_COLOURS, dark_order)
        if name == "bird":  # black: it crosses sky, walls and windows alike
            colour = _DARK_COLOURS[0]
        else:
            candidates = [i for i in order if not (key == "dark" and i == 0)]
            colour = palette[candidates[counters[key] % len(candidates)]]
            counters[key] += 1
        sprites.append(
            _Sprite(
                name=name,
                texture=_texture(rng, colour, w, h, light, pattern),
                shape=_silhouette(kind, w, h),
                times=np.asarray(times, dtype=float),
                xs=np.asarray(xs, dtype=float),
                ys=np.full(len(times), float(y)),
                eased=eased,
                bob=bob,
            )
        )
    return sprites


def _position(sprite: _Sprite, u: float) -> tuple[float, float] | None:
    """Centre of ``sprite`` at clip fraction ``u``, or None when it is not in the scene."""
    times = sprite.times
    if u < times[0] or u > times[-1]:
        return None
    k = int(np.clip(np.searchsorted(times, u, side="right") - 1, 0, len(times) - 2))
    s = (u - times[k]) / (times[k + 1] - times[k])
    if sprite.eased:
        s = s * s * (3.0 - 2.0 * s)
    x = sprite.xs[k] + s * (sprite.xs[k + 1] - sprite.xs[k])
    y = sprite.ys[k] + s * (sprite.ys[k + 1] - sprite.ys[k])
    if sprite.bob:
        y += sprite.bob * np.sin(2.0 * np.pi * 3.0 * (u - times[0]) / (times[-1] - times[0]))
    return float(x), float(y)


def _paste(
    canvas: np.ndarray, labels: np.ndarray, sprite: _Sprite, centre: tuple[float, float], k: int
) -> None:
    """Draw ``sprite`` centred at ``centre`` (clipped to the frame), label its pixels ``k``."""
    height, width = labels.shape
    h, w = sprite.shape.shape
    x0 = int(np.floor(centre[0] - w / 2 + 0.5))
    y0 = int(np.floor(centre[1] - h / 2 + 0.5))
    cx0, cy0 = max(x0, 0), max(y0, 0)
    cx1, cy1 = min(x0 + w, width), min(y0 + h, height)
    if cx1 <= cx0 or cy1 <= cy0:
        return
    sub = sprite.shape[cy0 - y0 : cy1 - y0, cx0 - x0 : cx1 - x0]
    tex = sprite.texture[cy0 - y0 : cy1 - y0, cx0 - x0 : cx1 - x0]
    canvas[cy0:cy1, cx0:cx1][sub] = tex[sub]
    labels[cy0:cy1, cx0:cx1][sub] = k


def _check_scene(width: int, height: int, frames: int, noise: float, drift: float) -> None:
    """Refuse what :func:`make_scene` cannot draw (a ValueError naming the argument)."""
    if int(width) < 16 or int(height) < 16:
        raise ValueError(f"make_scene: size must be at least 16 x 16, got {width} x {height}")
    if int(frames) < 1:
        raise ValueError(f"make_scene: frames must be at least 1, got {frames}")
    if not noise >= 0.0:
        raise ValueError(f"make_scene: noise must be >= 0, got {noise}")
    if not 0.0 <= drift < 0.5:
        raise ValueError(f"make_scene: drift must be in [0, 0.5), got {drift}")


def _render(
    background: np.ndarray,
    sprites: list[_Sprite],
    u: np.ndarray,
    gain: np.ndarray,
    noise: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """The frames (T, H, W, 3) uint8 and their labels (T, H, W) uint8 (0 = background,
    k = the k-th sprite): the sprites pasted at their positions at clip fractions ``u``,
    times the gain, plus sensor noise."""
    frames = len(u)
    height, width = background.shape[:2]
    out = np.empty((frames, height, width, 3), dtype=np.uint8)
    labels = np.zeros((frames, height, width), dtype=np.uint8)
    for t in range(frames):
        canvas = background.copy()
        for k, sprite in enumerate(sprites, start=1):
            centre = _position(sprite, float(u[t]))
            if centre is not None:
                _paste(canvas, labels[t], sprite, centre, k)
        canvas *= gain[t]
        if noise > 0:
            canvas += noise * rng.standard_normal(canvas.shape)
        np.clip(np.rint(canvas), 0.0, 255.0, out=canvas)
        out[t] = canvas
    return out, labels


def _stop_frames(sprites: list[_Sprite], frames: int) -> tuple[int, int]:
    """``(first, end)`` frames during which the stopping car stands still."""
    if frames <= 1:
        return (0, 0)
    stopper = next(s for s in sprites if s.eased)
    first = int(np.ceil(stopper.times[1] * (frames - 1) - 1e-9))
    last = int(np.floor(stopper.times[2] * (frames - 1) + 1e-9)) + 1
    return first, max(first, last)


def _street(
    seed: int | None, width: int, height: int
) -> tuple[np.ndarray, list[_Sprite], float, np.random.Generator]:
    """The street's background (float, rounded), its sprites, the light's phase and the
    noise's generator: independent streams, so that the background and the objects do not
    depend on the clip's length."""
    bg_seed, obj_seed, noise_seed = np.random.SeedSequence(seed).spawn(3)
    rng_bg = np.random.default_rng(bg_seed)
    rng_obj = np.random.default_rng(obj_seed)
    background = np.rint(street_background(rng_bg, width, height))
    sprites = _make_sprites(rng_obj, width, height, background)
    phase = rng_obj.uniform(0.0, 2.0 * np.pi)
    return background, sprites, phase, np.random.default_rng(noise_seed)


def make_scene(
    width: int = 160,
    height: int = 120,
    frames: int = 150,
    *,
    seed: int | None = 0,
    noise: float = 2.0,
    drift: float = 0.08,
) -> Scene:
    """A synthetic fixed-camera street clip with exact ground-truth foreground masks.

    The static background is a street (sky with buildings and windows, pavement with
    flagstone joints, a two-lane road with a dashed centre line, grass) shaded by smooth
    random colour blobs and a fine static grain. Five textured objects cross it, each
    entering and leaving the frame: a car (fast), a pedestrian (slow), a bird (very fast,
    small, wobbling), a truck (large) and a car that drives in, stops for about 30 % of the
    clip (``stop_frames``) and drives away. Objects are light on dark ground and dark on
    light ground, so they differ from what they cover by far more than 30 grey levels on
    average. Every frame is the composite times a global illumination gain
    ``1 + drift * sin(2 pi t / (T - 1) + phase)``, plus i.i.d. Gaussian noise of standard
    deviation ``noise``, rounded and clipped to uint8.

    The clip is deterministic for a given ``seed``; the background and the objects do not
    depend on ``frames`` (paths are laid out in fractions of the clip).

    Parameters
    ----------
    width, height : int, default 160, 120
        Frame size in pixels (at least 16 x 16).
    frames : int, default 150
        Number of frames (at least 1).
    seed : int or None, default 0
        Random seed (None: fresh entropy, not reproducible).
    noise : float, default 2.0
        Standard deviation of the sensor noise, in 0..255 grey levels; new in each frame.
    drift : float, default 0.08
        Amplitude of the illumination gain's swing (0 <= drift < 0.5).

    Returns
    -------
    Scene
        Frames (BGR uint8), ground-truth masks, the clean background and extras (labels,
        object names, the stopping object's still frames, the per-frame gain).

    Raises
    ------
    ValueError
        On a size below 16 x 16, fewer than one frame, negative noise or a drift outside
        ``[0, 0.5)``.

    Examples
    --------
    >>> scene = make_scene(64, 48, 20, seed=1)
    >>> scene.frames.shape, scene.masks.shape, scene.background.shape
    ((20, 48, 64, 3), (20, 48, 64), (48, 64, 3))
    """
    _check_scene(width, height, frames, noise, drift)
    width, height, frames = int(width), int(height), int(frames)

    background, sprites, phase, rng_noise = _street(seed, width, height)

    u = np.arange(frames) / max(frames - 1, 1)
    gain = 1.0 + drift * np.sin(2.0 * np.pi * u + phase)

    out, labels = _render(background, sprites, u, gain, noise, rng_noise)

    return Scene(
        frames=out,
        masks=labels > 0,
        background=background.astype(np.uint8),
        fps=DEFAULT_FPS,
        labels=labels,
        objects=tuple(s.name for s in sprites),
        stop_frames=_stop_frames(sprites, frames),
        gain=gain,
    )
