"""The background of several appearances: samples from the whole window, matched within
the global threshold in a 3 x 3 neighbourhood, frames near the tested one left out."""

from __future__ import annotations

import numpy as np
import pytest

from bpvideo import separate
from bpvideo.masks import appearances as ap
from bpvideo.masks.appearances import build_appearances, sample_times
from bpvideo.synthetic.hard import make_hard_scene


def _one_pixel(values: list[float], times: list[int], n: int = 100) -> ap.Appearances:
    """The appearances of a 1 x 1 grey frame that showed ``values`` at ``times``."""
    frames = np.asarray(values, dtype=np.uint8).reshape(-1, 1, 1)
    return build_appearances(frames, np.zeros(frames.shape, bool), np.asarray(times), n, 10.0)


@pytest.fixture(params=["numpy", "compiled"])
def path(request, monkeypatch):
    """Both matching paths (the compiled one needs numba: the tests' extras have it)."""
    if request.param == "compiled":
        pytest.importorskip("numba")
        monkeypatch.setattr(ap, "COMPILED_FROM", 0)
    else:
        monkeypatch.setattr(ap, "_KERNEL", [None])  # as without numba
    return request.param


def test_a_recurring_appearance_is_background_a_new_one_is_not(path):
    modes = _one_pixel([50, 52, 120, 121, 200], [0, 10, 20, 30, 40])
    grey = np.array([51, 119, 200, 85], dtype=np.uint8).reshape(4, 1, 1)
    out = modes.unexplained(grey, np.ones(grey.shape, dtype=bool), first=60)
    # 51 and 119 are each matched by two samples; 200 by one; 85 by none
    assert out.ravel().tolist() == [False, False, True, True]


def test_only_candidates_are_tested(path):
    modes = _one_pixel([50, 52], [0, 10])
    grey = np.full((2, 1, 1), 200, dtype=np.uint8)
    candidates = np.array([True, False]).reshape(2, 1, 1)
    assert modes.unexplained(grey, candidates, first=50).ravel().tolist() == [True, False]


def test_samples_near_the_tested_frame_do_not_explain_it(path):
    modes = _one_pixel([90, 90, 20, 20], [0, 1, 50, 60], n=50)  # exclude: 5 frames
    grey = np.full((1, 1, 1), 90, dtype=np.uint8)
    ones = np.ones((1, 1, 1), dtype=bool)
    assert modes.unexplained(grey, ones, first=0).all()  # its own frames are left out
    assert not modes.unexplained(grey, ones, first=30).any()


def test_neighbours_samples_count_and_foreground_samples_do_not(path):
    frames = np.zeros((2, 3, 3), dtype=np.uint8)
    frames[:, 0, 2] = 70  # the upper right neighbour of the centre showed 70 twice
    foreground = np.zeros(frames.shape, dtype=bool)
    modes = build_appearances(frames, foreground, np.array([0, 10]), 100, 5.0)
    grey = np.zeros((1, 3, 3), dtype=np.uint8)
    grey[0, 1, 1] = 72
    centre = np.zeros((1, 3, 3), dtype=bool)
    centre[0, 1, 1] = True
    assert not modes.unexplained(grey, centre, first=50).any()
    # the same samples, called foreground in their frames, explain nothing
    foreground[:] = True
    modes = build_appearances(frames, foreground, np.array([0, 10]), 100, 5.0)
    assert modes.unexplained(grey, centre, first=50)[0, 1, 1]


def test_colour_must_match_in_every_channel(path):
    frames = np.zeros((3, 1, 1, 3), dtype=np.uint8)
    frames[..., 2] = 200  # red background
    modes = build_appearances(frames, np.zeros((3, 1, 1), bool), np.array([0, 40, 80]), 100, 10.0)
    same_grey_other_colour = np.array([0, 200, 0], dtype=np.uint8).reshape(1, 1, 1, 3)
    red = np.array([4, 3, 195], dtype=np.uint8).reshape(1, 1, 1, 3)
    ones = np.ones((1, 1, 1), dtype=bool)
    assert modes.unexplained(same_grey_other_colour, ones, first=20).all()
    assert not modes.unexplained(red, ones, first=20).any()


def test_the_compiled_and_numpy_paths_agree(monkeypatch):
    pytest.importorskip("numba")
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (16, 30, 40, 3), dtype=np.uint8)
    modes = build_appearances(frames, rng.random((16, 30, 40)) < 0.2, np.arange(16) * 6, 96, 40.0)
    tested = frames[:6].copy()
    tested[3:] = rng.integers(0, 256, tested[3:].shape, dtype=np.uint8)
    candidates = rng.random((6, 30, 40)) < 0.6
    with monkeypatch.context() as numpy_only:
        numpy_only.setattr(ap, "_KERNEL", [None])
        slow = modes.unexplained(tested, candidates, first=10)
    monkeypatch.setattr(ap, "COMPILED_FROM", 0)
    fast = modes.unexplained(tested, candidates, first=10)
    assert np.array_equal(slow, fast) and 0.05 < slow.mean() < candidates.mean()


def test_sample_times_span_the_window_within_the_memory_bound():
    times = sample_times(600, 320 * 240, 3, 24)  # one per second (25 frames), at most 24
    assert len(times) == 24 and times[0] == 0 and times[-1] == 599
    assert len(sample_times(450, 320 * 240, 3, 24)) == 18
    assert len(sample_times(100, 320 * 240, 3, 24)) == 12  # at least 12
    assert len(sample_times(100, 320 * 240, 3, 8)) == 8  # at most what was asked
    hd = sample_times(600, 1280 * 720, 3, 24)
    assert len(hd) >= 10 and len(hd) * 1280 * 720 * 4 <= ap.SAMPLE_BYTES
    assert len(sample_times(600, 1920 * 1080, 3, 24)) == 0  # 1080p: the one-image model
    assert len(sample_times(4, 100, 1, 24)) == 0  # too few frames: one background image


def _f(masks, truth):
    return 2 * np.count_nonzero(masks & truth) / (np.count_nonzero(masks) + np.count_nonzero(truth))


@pytest.mark.slow
def test_swaying_leaves_are_background():
    scene = make_hard_scene("leaves", 96, 72, 80)
    with_them = separate(scene.frames).masks
    without = separate(scene.frames, appearances=0).masks
    assert _f(with_them, scene.masks) > 0.7
    assert _f(with_them, scene.masks) > _f(without, scene.masks) + 0.03
    far = scene.dynamic & ~scene.masks.any(axis=0)  # the leaves, away from the walker
    assert with_them[:, far].mean() < 0.7 * without[:, far].mean()


@pytest.mark.slow
def test_a_scene_without_moving_background_keeps_its_quality():
    scene = make_hard_scene("stayer")
    with_them = separate(scene.frames).masks
    without = separate(scene.frames, appearances=0).masks
    assert abs(_f(with_them, scene.masks) - _f(without, scene.masks)) < 0.02


def test_untested_speckle_changes_no_mask(monkeypatch):
    """Pixels the clean-up's opening would clear are not tested: the masks are the same."""
    from bpvideo.masks import rule

    scene = make_hard_scene("leaves", 96, 72, 60)
    rng = np.random.default_rng(4)
    frames = scene.frames.copy()
    frames[rng.random(frames.shape[:3]) < 0.02] = 255  # speckle everywhere
    with_drop = separate(frames).masks
    monkeypatch.setattr(rule, "_drop_speckle", lambda out, radius, faint=None: None)
    without = separate(frames).masks
    assert with_drop.any() and np.array_equal(with_drop, without)


def test_frames_spread_over_the_window_are_judged_at_their_own_times(path):
    # samples at 0, 10, 20, 30 (exclude: 5 frames); the tested frames at 0 and 30 show the
    # appearance of the samples at 0 and 10: only the frame at 30 is explained by two
    modes = _one_pixel([90, 91, 20, 20], [0, 10, 20, 30], n=50)
    grey = np.full((2, 1, 1), 90, dtype=np.uint8)
    ones = np.ones((2, 1, 1), dtype=bool)
    out = modes.unexplained(grey, ones, times=np.array([0, 30]))
    assert out.ravel().tolist() == [True, False]
    # one match is enough when asked for one
    assert not modes.unexplained(grey, ones, times=np.array([0, 30]), need=1).any()


def test_a_doubtful_blob_the_other_samples_never_show_is_refused():
    # 20 samples (every 10th frame of 200) of a 12 x 12 grey 100 background; samples 5 and
    # 6 show a plain square of 160 within the pixels' (wide) limit but far from L:
    # doubtful. It is solid, and no sample far from them shows it: no appearance. A
    # doubtful single pixel is speckle: it stays a sample.
    frames = np.full((20, 12, 12), 100, dtype=np.uint8)
    frames[5:7, 3:8, 3:8] = 160
    frames[9, 10, 10] = 40
    beyond = np.zeros(frames.shape, dtype=bool)
    doubtful = frames != 100
    times = np.arange(20) * 10
    drawn = ap.draw_appearances(frames, beyond, doubtful, times, 200, 10.0)
    plain = ap.build_appearances(frames, beyond, times, 200, 10.0)
    tested = np.full((1, 12, 12), 160, dtype=np.uint8)
    square = np.zeros((1, 12, 12), dtype=bool)
    square[:, 3:8, 3:8] = True
    assert not plain.unexplained(tested, square, first=150).any()  # two samples show it
    assert np.array_equal(drawn.unexplained(tested, square, first=150), square)
    assert drawn.valid.reshape(14, 14, 20)[11, 11, 9]  # the speckle
    assert not drawn.valid.reshape(14, 14, 20)[6, 6, 5]  # the square


def test_blinking_pixels_switch_often_an_object_once():
    beyond = np.zeros((12, 2, 2), dtype=bool)
    beyond[1::2, 0, 0] = True  # every other sample: 11 switches of 11
    beyond[4:8, 0, 1] = True  # an object for four samples: 2 switches
    beyond[::3, 1, 0] = True  # every third: 7 switches
    blinking = ap.blinks(beyond)
    assert blinking.tolist() == [[True, False], [True, False]]
    assert not ap.blinks(beyond[:1]).any()


def test_leaves_that_blink_beyond_the_limit_stay_samples_an_object_does_not(monkeypatch):
    # 20 samples (every 10th frame of 200) of a 12 x 12 grey 100 background; a patch of
    # leaves shows 170 (beyond the limit) in every other sample, an object (40) stands
    # in samples 8 to 11. The leaves recur, so their samples are kept; the object's are
    # not. Without the blinking rule both are refused.
    frames = np.full((20, 12, 12), 100, dtype=np.uint8)
    frames[1::2, 2:6, 2:6] = 170
    frames[8:12, 7:11, 7:11] = 40
    beyond = frames != 100
    doubtful = np.zeros(frames.shape, dtype=bool)
    times = np.arange(20) * 10
    valid = ap.draw_appearances(frames, beyond, doubtful, times, 200, 10.0).valid
    valid = valid.reshape(14, 14, 20)[1:-1, 1:-1]
    assert valid[3, 3, 1::2].all() and not valid[8, 8, 8:12].any()
    monkeypatch.setattr(ap, "BLINK", None)
    valid = ap.draw_appearances(frames, beyond, doubtful, times, 200, 10.0).valid
    assert not valid.reshape(14, 14, 20)[4, 4, 1::2].any()


def test_an_object_half_beyond_half_doubtful_is_judged_whole(monkeypatch):
    # an object whose pixels are beyond the limit and far from L within it in a
    # checkerboard: neither part is solid alone (speckle), together they are a solid
    # square that no other sample shows: refused. Judged apart, it becomes a sample.
    frames = np.full((20, 12, 12), 100, dtype=np.uint8)
    frames[5, 3:9, 3:9] = 160
    board = (np.add.outer(np.arange(12), np.arange(12)) % 2).astype(bool)
    beyond = np.zeros(frames.shape, dtype=bool)
    doubtful = np.zeros(frames.shape, dtype=bool)
    beyond[5, 3:9, 3:9] = board[3:9, 3:9]
    doubtful[5, 3:9, 3:9] = ~board[3:9, 3:9]
    times = np.arange(20) * 10
    valid = ap.draw_appearances(frames, beyond, doubtful, times, 200, 10.0).valid
    assert not valid.reshape(14, 14, 20)[4:10, 4:10, 5].any()
    monkeypatch.setattr(ap, "WITH_FOREGROUND", False)
    valid = ap.draw_appearances(frames, beyond, doubtful, times, 200, 10.0).valid
    assert valid.reshape(14, 14, 20)[4:10, 4:10, 5].any()


def test_hd_frames_take_the_compiled_kernel_with_the_same_answer(monkeypatch):
    pytest.importorskip("numba")
    rng = np.random.default_rng(1)
    frames = rng.integers(0, 256, (8, 480, 640, 3), dtype=np.uint8)
    modes = build_appearances(frames, rng.random((8, 480, 640)) < 0.1, np.arange(8) * 10, 80, 30.0)
    tested = frames[:2].copy()
    tested[1, :200] = rng.integers(0, 256, tested[1, :200].shape, dtype=np.uint8)
    candidates = rng.random((2, 480, 640)) < 0.05  # a few thousand: under COMPILED_FROM
    with monkeypatch.context() as numpy_only:
        numpy_only.setattr(ap, "_KERNEL", [None])
        slow = modes.unexplained(tested, candidates, first=40)
    monkeypatch.setattr(ap, "_KERNEL", [])
    fast = modes.unexplained(tested, candidates, first=40)
    assert ap._KERNEL and ap._KERNEL[0] is not None  # loaded for an HD frame
    assert np.array_equal(slow, fast) and slow.any()


def test_warm_up_loads_the_kernel_for_colour_and_grey(monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setattr(ap, "_KERNEL", [])
    ap.warm_up()
    assert ap._KERNEL and ap._KERNEL[0] is not None
    monkeypatch.setattr(ap, "_KERNEL", [None])  # BPVIDEO_NUMBA=0: nothing to do
    ap.warm_up()


def test_large_frames_keep_their_samples_on_a_grid_within_the_memory_bound():
    # up to 720p every pixel, as before (11 samples at 720p)
    assert ap.sample_grid(600, 240, 320, 3, 24)[1] == 1
    times, stride = ap.sample_grid(300, 720, 1280, 3, 24)
    assert stride == 1 and len(times) == len(sample_times(300, 1280 * 720, 3, 24))
    # 1080p and 4K: the samples wanted, on a grid of 960x540, within SAMPLE_BYTES
    for height, width, expected in ((1080, 1920, 2), (2160, 3840, 4)):
        times, stride = ap.sample_grid(300, height, width, 3, 24)
        assert stride == expected and len(times) == 12
        grid = -(-height // stride) * -(-width // stride)
        assert len(times) * grid * 4 <= ap.SAMPLE_BYTES
    assert len(ap.sample_grid(4, 1080, 1920, 3, 24)[0]) == 0  # too few frames: none


@pytest.mark.parametrize("colour", [False, True])
def test_a_grid_of_samples_masks_a_nearest_upscaled_video_as_every_pixel_the_original(path, colour):
    """Samples of every 2nd pixel of frames upscaled twice (nearest neighbour) are the
    original frames' samples: each upscaled pixel is explained as its original pixel."""
    rng = np.random.default_rng(3)
    shape = (20, 10, 14, 3) if colour else (20, 10, 14)
    frames = rng.integers(0, 256, shape, dtype=np.uint8)
    frames[::2] = frames[0]  # half the frames show one appearance again
    foreground = rng.random(frames.shape[:3]) < 0.05
    times = np.arange(0, 20, 2)
    native = build_appearances(frames[times], foreground[times], times, 20, 12.0)
    grid = build_appearances(frames[times], foreground[times], times, 20, 12.0, stride=2)
    big = frames.repeat(2, axis=1).repeat(2, axis=2)
    candidates = rng.random(frames.shape[:3]) < 0.6
    want = native.unexplained(frames, candidates, first=0)
    got = grid.unexplained(big, candidates.repeat(2, axis=1).repeat(2, axis=2), first=0)
    assert want.any() and not want.all()  # both answers occur
    assert np.array_equal(got, want.repeat(2, axis=1).repeat(2, axis=2))
    # an odd-sized frame: the last row and column fall in the grid's last cells
    odd = grid.unexplained(big[:, :-1, :-1], candidates.repeat(2, 1).repeat(2, 2)[:, :-1, :-1])
    assert np.array_equal(odd, want.repeat(2, axis=1).repeat(2, axis=2)[:, :-1, :-1])


def test_a_window_too_large_for_the_samples_of_every_pixel_keeps_a_grid_of_them(monkeypatch):
    """Through :func:`~bpvideo.masks.sample.sample_model`: with room for fewer than
    MIN_SAMPLES samples of every pixel, the samples are those of every 2nd pixel of the
    window's sampled frames, in colour, and the masks of the frames still come."""
    from bpvideo.masks import budget
    from bpvideo.masks.sample import sample_model

    rng = np.random.default_rng(2)
    n, H, W = 40, 24, 32
    scene = rng.integers(60, 200, (1, H // 2, W // 2, 3), dtype=np.uint8)  # 2 x 2 texture
    frames = np.repeat(scene.repeat(2, axis=1).repeat(2, axis=2), n, axis=0)
    frames = np.clip(frames + rng.integers(-3, 4, frames.shape), 0, 255).astype(np.uint8)
    grey = frames.mean(axis=3).astype(np.float32)
    L = np.broadcast_to(np.median(grey, axis=0), grey.shape).astype(np.float32)
    monkeypatch.setattr(budget, "SAMPLE_BYTES", H * W * 4 * 5)  # 5 of every pixel: too few
    model = sample_model(grey, L, (H, W), frames=frames, appearances=12)
    modes = model.appearances
    assert modes is not None and modes.stride == 2 and modes.shape == (H // 2, W // 2)
    K = len(modes.times)
    samples = modes.samples.reshape(3, H // 2 + 2, W // 2 + 2, K)[:, 1:-1, 1:-1]
    assert np.array_equal(samples, frames[modes.times][:, ::2, ::2].transpose(3, 1, 2, 0))
    # a new colour is foreground, the scene's own colours are not
    test = frames[:2].copy()
    test[0, 5:15, 5:15] = 255
    out = modes.unexplained(test, np.ones((2, H, W), bool), first=0)
    assert out[0, 6:14, 6:14].all() and not out[1].any()


def _brute_unexplained(modes: ap.Appearances, frames: np.ndarray, first: int) -> np.ndarray:
    """:meth:`~ap.Appearances.unexplained` of every pixel by its definition: fewer than
    MIN_MATCHES valid samples of the 3 x 3 neighbourhood, from frames far enough in time,
    within the radius in every channel."""
    n, H, W, C = frames.shape
    r = int(np.floor(modes.radius))
    samples = modes.samples.reshape(C, H + 2, W + 2, -1).astype(int)
    valid = modes.valid.reshape(H + 2, W + 2, -1)
    out = np.zeros((n, H, W), dtype=bool)
    for j in range(n):
        usable = np.abs(modes.times - (first + j)) > modes.exclude
        for y in range(H):
            for x in range(W):
                v = frames[j, y, x].astype(int)[:, None, None, None]
                near = samples[:, y : y + 3, x : x + 3]  # padded: the 3 x 3 around (y, x)
                close = (np.abs(near - v) <= r).all(axis=0) & valid[y : y + 3, x : x + 3]
                out[j, y, x] = np.count_nonzero(close & usable) < ap.MIN_MATCHES
    return out


def test_envelopes_and_matches_near_0_and_255_are_those_of_the_definition(path):
    # values near the ends of the uint8 range: the envelope widened by the radius
    # saturates there, never wraps around
    rng = np.random.default_rng(3)
    pick = np.array([0, 1, 3, 6, 120, 249, 252, 254, 255], dtype=np.uint8)
    frames = rng.choice(pick, size=(8, 6, 7, 3))
    foreground = rng.random((8, 6, 7)) < 0.1
    modes = build_appearances(frames, foreground, np.arange(8) * 5, 40, 4.0)
    K = len(modes.times)
    low, high, *_ = ap.envelopes(modes.samples.reshape(3, 8, 9, K), modes.valid.reshape(8, 9, K))
    assert np.array_equal(modes.own_low, low) and np.array_equal(modes.own_high, high)
    tested = rng.choice(pick, size=(3, 6, 7, 3))
    got = modes.unexplained(tested, np.ones((3, 6, 7), dtype=bool), first=30)
    assert np.array_equal(got, _brute_unexplained(modes, tested, first=30))
    assert 0 < got.sum() < got.size  # both answers occur
