"""Synthetic scenes of the adverse classes of issue 40, with known masks.

Each class reproduces one kind of real footage on which bpvideo failed while the online
peers did not:

- ``near_lens``: foliage close to the lens (large, defocused, swaying by many pixels)
  swings into the view in bursts and covers about 70 % of it, leaving a still street
  visible between the bursts;
- ``near_lens_print``: the same over a flat printed surface (a poster), half the view
  covered while the foliage is in;
- ``sitter``: a person walks in and sits down, then stays (all but still) for the rest of
  the clip, about 80 % of it;
- ``snow``: falling snow (many small, bright, short-lived specks) over a road that a car
  drives slowly into (a short clip, 40 frames);
- ``fog``: a street in dense fog, the cars that cross it a few grey levels from the road
  (a short clip, 40 frames);
- ``shadows``: people walking over a textured, partly shaded floor under a low sun, each
  casting a hard shadow; shadow pixels are background in the truth (changedetection.net's
  label 50) and listed in :attr:`~bpvideo.synthetic.hard.HardScene.shadows`.

The foliage is foreground in the truth wherever it hides more than half of a pixel; the
snow is background. Every scene is deterministic for a seed.
"""

from __future__ import annotations

import cv2
import numpy as np

from bpvideo.synthetic.hard import HardScene, _Body, _draw, _person, _plain, _sway
from bpvideo.synthetic.street import grey_levels, street_background

__all__ = ["ADVERSE_CLASSES", "ADVERSE_FRAMES", "make_adverse_scene"]

#: The classes :func:`make_adverse_scene` draws.
ADVERSE_CLASSES = ("near_lens", "near_lens_print", "sitter", "snow", "fog", "shadows")

#: Each class's clip length at full size: the short real clips of snow, fog and shadows
#: had 14-42 frames, the near-lens and sitter footage hundreds.
ADVERSE_FRAMES = {"near_lens": 160, "near_lens_print": 160, "sitter": 150, "snow": 40,
                  "fog": 40, "shadows": 60}  # fmt: skip


def _bursts(rng: np.random.Generator, frames: int) -> np.ndarray:
    """How far in (0 out .. 1 fully in) a branch is in each frame: alternating stretches
    out (12-25 frames) and in (15-35 frames), each entry and exit taking 3 frames; the
    clip starts with the branch out."""
    level = np.zeros(frames)
    t, inside = int(rng.integers(10, 20)), True
    while t < frames:
        length = int(rng.integers(15, 36) if inside else rng.integers(12, 26))
        if inside:
            ramp = np.minimum(np.minimum(np.arange(length) + 1, length - np.arange(length)), 3)
            level[t : t + length] = (ramp / 3.0)[: frames - t]
        t, inside = t + length, not inside
    return level


def _foliage(rng: np.random.Generator, width: int, height: int) -> tuple[np.ndarray, ...]:
    """A defocused branch twice the frame's width: its (H, 2W, 3) colour and (H, 2W)
    opacity (dense leaves with a few holes, soft edges)."""
    shape = (height, 2 * width)
    blot = cv2.GaussianBlur(rng.normal(0.0, 1.0, shape), (0, 0), max(2.0, width / 40))
    blot /= blot.std()
    ragged = cv2.GaussianBlur(rng.normal(0.0, 1.0, (height, 1)), (0, 0), height / 12)
    ragged = 0.12 * width * ragged[:, 0] / max(ragged.std(), 1e-9)
    inside = np.arange(2 * width)[None, :] < 2 * width - 0.12 * width + ragged[:, None]
    opacity = cv2.GaussianBlur(np.clip(2.0 * (blot + 1.5), 0.0, 1.0) * inside, (0, 0), 1.5)
    light = np.clip(0.5 + 0.35 * cv2.GaussianBlur(rng.normal(0, 1, shape), (0, 0), 2.5) * 4,
                    0.0, 1.0)[..., None]  # fmt: skip
    colour = (1 - light) * np.array([20.0, 55.0, 25.0]) + light * np.array([70.0, 170.0, 95.0])
    return colour, opacity


def _near_lens(rng, bg: np.ndarray, frames: int, reach: float):
    """Foliage swinging in from the left in bursts, up to ``reach`` of the width (plus a
    sway of +-8 % of the width) while in. Returns the frames (T, H, W, 3) and masks."""
    height, width = bg.shape[:2]
    colour, opacity = _foliage(rng, width, height)
    level = _bursts(rng, frames)
    t = np.arange(frames)
    edge = level * reach * width + level * 0.08 * width * np.sin(2 * np.pi * t / 11.0)
    out = np.repeat(bg[None], frames, axis=0)
    masks = np.zeros((frames, height, width), dtype=bool)
    opacity, colour = opacity.astype(np.float32), colour.astype(np.float32)
    xx = np.arange(width, dtype=np.float32)
    yy = np.arange(height, dtype=np.float32)
    for k in np.nonzero(level > 0)[0]:
        dy = 0.04 * height * np.sin(2 * np.pi * k / 17.0)  # the branch also bobs
        map_x = np.broadcast_to(xx + 2 * width - edge[k], (height, width)).astype(np.float32)
        map_y = np.broadcast_to((yy - dy)[:, None], (height, width)).astype(np.float32)
        alpha = cv2.remap(opacity, map_x, map_y, cv2.INTER_LINEAR,
                          borderMode=cv2.BORDER_CONSTANT, borderValue=0.0)  # fmt: skip
        leaf = cv2.remap(colour, map_x, map_y, cv2.INTER_LINEAR,
                         borderMode=cv2.BORDER_REFLECT)  # fmt: skip
        out[k] = alpha[..., None] * leaf + (1 - alpha[..., None]) * bg
        masks[k] = alpha > 0.5
    return out, masks


def _poster(rng: np.random.Generator, width: int, height: int) -> np.ndarray:
    """A flat printed surface filling the view: a light sheet with coloured blocks and
    dark lines of print."""
    page = np.empty((height, width, 3))
    page[:] = np.array([215.0, 222.0, 228.0])
    for _ in range(6):
        w, h = rng.integers(width // 8, width // 3), rng.integers(height // 8, height // 3)
        x, y = rng.integers(0, width - w), rng.integers(0, height - h)
        page[y : y + h, x : x + w] = rng.uniform(40, 200, 3)
    step = max(3, height // 24)
    for y in range(step, height - step, step):
        if rng.random() < 0.6:
            x0 = int(rng.integers(0, width // 2))
            x1 = int(rng.integers(x0 + 1, width))
            dash = (np.arange(x0, x1) // 3) % 4 != 3  # words and spaces
            page[y, np.arange(x0, x1)[dash]] = 35.0
    return page


def _sitter(rng, bg: np.ndarray, frames: int) -> list[_Body]:
    """A person who walks in from the left during the first 12 % of the clip, then sits
    (a shorter silhouette) at 45 % of the width until the end, moving by under a pixel."""
    height, width = bg.shape[:2]
    w, h = max(4, int(0.12 * width)), max(8, int(0.5 * height))
    under = grey_levels(bg[int(0.4 * height) :]).mean()
    tex, shape = _person(rng, w, h, under)
    t = np.arange(frames)
    arrive = max(2, int(0.12 * frames))
    x = np.interp(t, [0, arrive], [-w / 2, 0.45 * width])
    floor_y = 0.9 * height
    walking = np.stack([x, floor_y - h / 2 + _sway(t, 1.0, 6, 0.0)], 1)
    walking[t >= arrive] = np.nan
    sit_h = max(6, int(0.7 * h))
    sit_shape = cv2.resize(shape.astype(np.uint8), (w + 2, sit_h), interpolation=cv2.INTER_NEAREST)
    sit_tex = cv2.resize(tex, (w + 2, sit_h), interpolation=cv2.INTER_LINEAR)
    sitting = np.stack([0.45 * width + _sway(t, 0.6, 47, 0.5),
                        floor_y - sit_h / 2 + _sway(t, 0.4, 31, 1.0)], 1)  # fmt: skip
    sitting[t < arrive] = np.nan
    return [_Body(tex, shape, walking), _Body(sit_tex, sit_shape > 0, sitting)]


def _car(rng, bg: np.ndarray, frames: int, y: float, x0: float, x1: float, span=(0.0, 1.0)):
    """A car (a plain box with a darker roof line) moving from ``x0`` to ``x1`` at height
    ``y`` during the clip fraction ``span``, absent outside it."""
    height, width = bg.shape[:2]
    w, h = max(6, int(0.28 * width)), max(4, int(0.14 * height))
    r0, r1 = int(max(0, y - h / 2)), int(min(height, y + h / 2)) + 1
    tex = _plain(rng, w, h, grey_levels(bg[r0:r1]).mean())
    u = np.arange(frames) / max(frames - 1, 1)
    s = (u - span[0]) / (span[1] - span[0])
    path = np.stack([x0 + s * (x1 - x0), np.full(frames, y)], 1)
    path[(s < 0) | (s > 1)] = np.nan
    return _Body(tex, np.ones((h, w), dtype=bool), path)


def _snow(rng, frames: np.ndarray) -> None:
    """Falling snow drawn over ``frames`` (T, H, W, 3) in place: in every frame about
    8 % of the pixels hold a speck (1-2 pixels wide, 1-3 long as it falls, brighter than
    the scene by 30-90 % of the way to white, so many are faint), each falling 3-6 pixels
    a frame for 2-4 frames."""
    count, height, width = frames.shape[:3]
    born = max(1, int(0.08 * height * width / 8))  # each flake covers ~3 pixels, ~3 frames
    flakes: list[np.ndarray] = []
    for t in range(count):
        n = born if t else 3 * born  # the first frame shows flakes born before it
        flakes.append(np.stack([rng.uniform(0, width, n), rng.uniform(-6, height, n),
                                rng.integers(1, 3, n), rng.integers(1, 4, n),
                                rng.uniform(0.3, 0.9, n), rng.integers(2, 5, n) + t,
                                rng.uniform(3, 6, n), np.full(n, t)], 1))  # fmt: skip
        every = np.concatenate(flakes)
        flakes = [every[every[:, 5] > t]]
        x, y, wide, long, alpha, _, fall, start = every[every[:, 5] > t].T
        age = t - start
        for dx in range(2):
            for dy in range(3):
                pick = (wide > dx) & (long > dy)
                xi = (x[pick] + 0.5 * fall[pick] * age[pick]).astype(int) + dx
                yi = (y[pick] + fall[pick] * age[pick]).astype(int) + dy
                keep = (xi >= 0) & (xi < width) & (yi >= 0) & (yi < height)
                a = alpha[pick][keep, None]
                under = frames[t, yi[keep], xi[keep]]
                frames[t, yi[keep], xi[keep]] = under + a * (250.0 - under)


def _fogged(image: np.ndarray, height: int) -> np.ndarray:
    """``image`` seen through dense fog: 85-90 % of each pixel is the fog's light grey
    (denser towards the horizon), so a difference of 60 grey levels shows as 6-9."""
    rows = np.linspace(0.9, 0.85, height)[:, None, None]
    return rows * 205.0 + (1 - rows) * image


def _shadow_floor(rng, width: int, height: int) -> np.ndarray:
    """A finely textured floor (tiles of 2-4 pixels, +-30 grey levels) with a shaded band
    (half as bright) over its upper left: sunlit and shaded ground."""
    base = np.array([150.0, 170.0, 185.0])
    fine = cv2.resize(rng.uniform(-30, 30, (height // 3 + 1, width // 3 + 1)), (width, height),
                      interpolation=cv2.INTER_NEAREST)  # fmt: skip
    floor = base + fine[..., None]
    yy, xx = np.mgrid[0:height, 0:width]
    shaded = xx + 1.5 * yy < 0.55 * width
    floor[shaded] *= 0.55
    return np.clip(floor, 0.0, 255.0)


def _cast(mask: np.ndarray, shift: tuple[int, int]) -> np.ndarray:
    """The hard shadow of one silhouette ``mask`` (H, W) bool on the floor: the silhouette
    sheared sideways from its feet and flattened to two thirds of its height, moved by ``shift``
    (dx, dy)."""
    height, width = mask.shape
    rows = np.nonzero(mask.any(axis=1))[0]
    if not len(rows):
        return mask.copy()
    foot = rows.max()
    out = np.zeros_like(mask)
    for y in rows:
        up = foot - y
        ty = foot - (2 * up) // 3 + shift[1]
        dx = round(1.3 * up) + shift[0]
        xs = np.nonzero(mask[y])[0] + dx
        ok = (xs >= 0) & (xs < width)
        if 0 <= ty < height:
            out[ty, xs[ok]] = True
            if ty + 1 < height:
                out[ty + 1, xs[ok]] = True  # flattening leaves no gaps
    return out


def _still_background(kind: str, rng, width: int, height: int) -> np.ndarray:
    """The scene behind the objects, (H, W, 3) rounded: a street (in fog for ``fog``), a
    poster or a shaded floor."""
    if kind == "near_lens_print":
        return np.rint(_poster(rng, width, height))
    if kind == "shadows":
        return np.rint(_shadow_floor(rng, width, height))
    bg = np.rint(street_background(rng, width, height))
    return np.rint(_fogged(bg, height)) if kind == "fog" else bg


def _objects(kind: str, rng_obj, bg: np.ndarray, frames: int) -> list[_Body]:
    """The objects of ``sitter``, ``snow``, ``fog`` and ``shadows``."""
    height, width = bg.shape[:2]
    if kind == "sitter":
        return _sitter(rng_obj, bg, frames)
    if kind == "snow":
        car = _car(rng_obj, bg, frames, 0.75 * height, width + 0.15 * width, 0.45 * width)
        u = np.arange(frames) / max(frames - 1, 1)  # drives in, slows down, stops
        car.path[:, 0] = np.interp(
            np.minimum(u / 0.6, 1) ** 0.5, [0, 1], [1.15 * width, 0.45 * width]
        )
        grey = grey_levels(bg[int(0.68 * height) : int(0.82 * height)]).mean()
        car.texture = np.clip(car.texture - grey_levels(car.texture)[..., None] + grey + 25, 0, 255)
        return [car]  # a grey car, 25 grey levels lighter than the road
    if kind == "fog":
        road = 0.78 * height
        bodies = [_car(rng_obj, bg, frames, road, -0.15 * width, 1.15 * width, (0.0, 0.8)),
                  _car(rng_obj, bg, frames, 0.66 * height, 1.15 * width, 0.3 * width)]  # fmt: skip
        for body in bodies:  # their colour seen through the same fog as the road
            body.texture = _fogged(body.texture, body.texture.shape[0])
        return bodies
    return [_walker_body(rng_obj, bg, frames, y, span)
            for y, span in ((0.55, (0.0, 0.7)), (0.8, (0.3, 1.0)))]  # fmt: skip


def _cast_shadows(canvas: np.ndarray, bg: np.ndarray, labels: np.ndarray, count: int):
    """Darken ``canvas`` (T, H, W, 3) in place where each of ``count`` objects (``labels``
    1..count) casts its shadow (45 % of the light, from its own feet); returns where
    (T, H, W) bool, never on an object."""
    shadows = np.zeros(labels.shape, dtype=bool)
    for t in range(len(labels)):
        for k in range(1, count + 1):
            shadows[t] |= _cast(labels[t] == k, (2, 0))
        shadows[t] &= labels[t] == 0
        canvas[t][shadows[t]] = bg[shadows[t]] * 0.45
    return shadows


def make_adverse_scene(
    kind: str,
    width: int = 160,
    height: int = 120,
    frames: int | None = None,
    *,
    seed: int = 0,
    noise: float = 2.0,
) -> HardScene:
    """A clip of one adverse class (:data:`ADVERSE_CLASSES`) with exact ground truth.

    Parameters
    ----------
    kind : str
        The class, one of :data:`ADVERSE_CLASSES` (see the module docstring).
    width, height : int, default 160, 120
        Frame size (at least 32 x 24).
    frames : int or None, default None
        Number of frames (at least 10); None: the class's :data:`ADVERSE_FRAMES`.
    seed : int, default 0
        Random seed.
    noise : float, default 2.0
        Standard deviation of the sensor noise (grey levels), new in each frame.

    Returns
    -------
    HardScene
        Frames (T, H, W, 3) uint8 BGR; masks (T, H, W) bool, True where an object (or
        the foliage) is; the still background (H, W, 3); the background of every frame
        (``backgrounds``: fog included, snow, foliage and shadows not); ``shadows``
        (T, H, W) bool where a cast shadow falls (``shadows`` only, background in the
        masks).

    Examples
    --------
    >>> scene = make_adverse_scene("near_lens", 64, 48, 60)
    >>> scene.frames.shape, bool(0.5 < scene.masks[scene.masks.any(axis=(1, 2))].mean() < 0.9)
    ((60, 48, 64, 3), True)
    """
    frames = ADVERSE_FRAMES.get(kind, 0) if frames is None else frames
    if kind not in ADVERSE_CLASSES:
        raise ValueError(
            f"make_adverse_scene: unknown class {kind!r}; one of {', '.join(ADVERSE_CLASSES)}"
        )
    if width < 32 or height < 24 or frames < 10:
        raise ValueError(
            f"make_adverse_scene: at least 32 x 24 x 10, got {width}x{height}x{frames}"
        )
    streams = np.random.SeedSequence([seed, 100 + ADVERSE_CLASSES.index(kind)]).spawn(3)
    rng_bg, rng_obj, rng_noise = (np.random.default_rng(s) for s in streams)
    bg = _still_background(kind, rng_bg, width, height)
    masks = np.zeros((frames, height, width), dtype=bool)
    labels = np.zeros((frames, height, width), dtype=np.uint8)
    canvas = np.repeat(bg[None], frames, axis=0)
    if kind.startswith("near_lens"):
        reach = 0.95 if kind == "near_lens" else 0.7
        canvas, masks = _near_lens(rng_obj, bg, frames, reach)
        labels[masks] = 1
        bodies: list[_Body] = []
    else:
        bodies = _objects(kind, rng_obj, bg, frames)
    for k, body in enumerate(bodies, start=1):
        _draw(masks, canvas, labels, body, k)
    shadows = _cast_shadows(canvas, bg, labels, len(bodies)) if kind == "shadows" else None
    if kind == "snow":
        _snow(rng_obj, canvas)
    canvas += noise * rng_noise.standard_normal(canvas.shape)
    return HardScene(
        frames=np.clip(np.rint(canvas), 0, 255).astype(np.uint8),
        masks=masks,
        background=bg.astype(np.uint8),
        labels=labels,
        objects=tuple(f"{kind} {k}" for k in range(1, int(labels.max()) + 1)),
        backgrounds=np.repeat(bg[None], frames, axis=0).astype(np.uint8),
        dynamic=np.zeros((height, width), dtype=bool),
        kind=kind,
        shadows=shadows,
    )


def _walker_body(rng, bg: np.ndarray, frames: int, y: float, span: tuple[float, float]):
    """A person crossing the floor at ``y`` (fraction of the height) during ``span``."""
    height, width = bg.shape[:2]
    w, h = max(4, int(0.09 * width)), max(8, int(0.38 * height))
    tex, shape = _person(rng, w, h, grey_levels(bg).mean())
    u = np.arange(frames) / max(frames - 1, 1)
    s = (u - span[0]) / (span[1] - span[0])
    path = np.stack(
        [-w + s * (width + 2 * w), y * height - h / 2 + _sway(np.arange(frames), 1.0, 8, 0.0)], 1
    )
    path[(s < 0) | (s > 1)] = np.nan
    return _Body(tex, shape, path)
