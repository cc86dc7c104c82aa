"""The envelopes of each pixel's background samples (:mod:`bpvideo.masks.appearances`):
the least and greatest sample of each channel, over the pixel's own samples and over its
3 x 3 neighbourhood, and the test of whole frames against them (OpenCV on uint8 frames:
a test or a least per pixel over the samples' short last axis costs ten times more)."""

from __future__ import annotations

import cv2
import numpy as np

__all__ = ["envelopes", "frame_envelopes", "near_envelopes", "outside_envelope", "widen"]


def envelopes(samples: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, ...]:
    """:attr:`Appearances.own_low`, :attr:`~Appearances.own_high`,
    :attr:`~Appearances.low` and :attr:`~Appearances.high` of padded samples
    ``(C, H + 2, W + 2, K)`` and their validity ``(H + 2, W + 2, K)`` (255 and 0 where no
    valid sample is)."""
    C, Hp, Wp = samples.shape[:3]
    low = np.full((Hp, Wp, C), 255, dtype=np.uint8)
    high = np.zeros((Hp, Wp, C), dtype=np.uint8)
    for c in range(C):  # a plane at a time: temporaries of one plane, not of all
        plane = samples[c]
        low[..., c] = np.where(valid, plane, np.uint8(255)).min(axis=2)
        high[..., c] = np.where(valid, plane, np.uint8(0)).max(axis=2)
    low, high = low.reshape(-1, C), high.reshape(-1, C)
    return (low, high, *near_envelopes(low, high, (Hp - 2, Wp - 2)))


def near_envelopes(
    own_low: np.ndarray, own_high: np.ndarray, shape: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """:attr:`Appearances.low` and :attr:`~Appearances.high` (over each pixel's 3 x 3
    neighbourhood) from the padded :attr:`~Appearances.own_low` and
    :attr:`~Appearances.own_high` of frames of ``shape`` (H, W)."""
    H, W = shape
    C = own_low.shape[1]
    square = np.ones((3, 3), dtype=np.uint8)
    low = own_low.reshape(H + 2, W + 2, C)
    high = own_high.reshape(H + 2, W + 2, C)
    near_low = cv2.erode(low, square, borderType=cv2.BORDER_CONSTANT, borderValue=255)
    near_high = cv2.dilate(high, square, borderType=cv2.BORDER_CONSTANT, borderValue=0)
    return (
        near_low.reshape(H + 2, W + 2, C)[1:-1, 1:-1].reshape(-1, C),
        near_high.reshape(H + 2, W + 2, C)[1:-1, 1:-1].reshape(-1, C),
    )


def frame_envelopes(frames: np.ndarray, kept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`envelopes`' own least and greatest of the samples ``frames`` ((K, H, W, C)
    uint8) that ``kept`` ((K, H, W) bool) holds background, a frame at a time: padded
    ((H + 2) * (W + 2), C) uint8, 255 and 0 where no sample is."""
    K, H, W, C = frames.shape
    own_low = np.full((H + 2, W + 2, C), 255, dtype=np.uint8)
    own_high = np.zeros((H + 2, W + 2, C), dtype=np.uint8)
    least = np.full((H, W, C) if C > 1 else (H, W), 255, dtype=np.uint8)
    most = np.zeros_like(least)
    for k in range(K):
        hidden = np.ascontiguousarray(kept[k]).view(np.uint8) - np.uint8(1)  # 255: not kept
        if C > 1:
            hidden = cv2.merge([hidden] * C)
        frame = np.ascontiguousarray(frames[k] if C > 1 else frames[k, ..., 0])
        cv2.min(least, cv2.bitwise_or(frame, hidden), dst=least)
        cv2.max(most, cv2.bitwise_and(frame, cv2.bitwise_not(hidden)), dst=most)
    own_low[1:-1, 1:-1] = least.reshape(H, W, C)
    own_high[1:-1, 1:-1] = most.reshape(H, W, C)
    return own_low.reshape(-1, C), own_high.reshape(-1, C)


def widen(
    low: np.ndarray, high: np.ndarray, radius: float, shape: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """``low`` less and ``high`` plus ``floor(radius)`` (uint8), saturated at 0 and 255
    as uint8 values are, reshaped to ``shape`` (H, W, C)."""
    r = int(np.floor(radius))
    lo = np.clip(low.astype(np.int16) - r, 0, 255).astype(np.uint8)
    hi = np.clip(high.astype(np.int16) + r, 0, 255).astype(np.uint8)
    return lo.reshape(shape), hi.reshape(shape)


def outside_envelope(
    frames: np.ndarray, candidates: np.ndarray, low: np.ndarray, high: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The ``candidates`` ((n, H, W) bool) of ``frames`` ((n, H, W, C) uint8) outside the
    widened envelope ``[low, high]`` ((H, W, C) uint8, :func:`widen`) in some channel,
    which no sample matches, and the others: two (n, H, W) bool arrays."""
    n, H, W, C = frames.shape
    if C == 1:
        low, high = low[..., 0], high[..., 0]
    inside = np.empty((H, W), dtype=np.uint8)  # 255 within the bounds, else 0
    maybe = np.empty(candidates.shape, dtype=np.uint8)
    outside = np.empty(candidates.shape, dtype=np.uint8)
    for j in range(n):
        frame = np.ascontiguousarray(frames[j] if C > 1 else frames[j, ..., 0])
        cv2.inRange(frame, low, high, dst=inside)
        wanted = np.ascontiguousarray(candidates[j]).view(np.uint8)  # 0 or 1
        np.bitwise_and(wanted, inside, out=maybe[j])
        np.bitwise_xor(wanted, maybe[j], out=outside[j])
    return outside.view(bool), maybe.view(bool)
