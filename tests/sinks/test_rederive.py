"""``bpvideo.events`` (events of masks in memory): what it refuses, and known answers."""

from __future__ import annotations

import numpy as np
import pytest

import bpvideo
from bpvideo.errors import InputError


def _masks() -> np.ndarray:
    masks = np.zeros((40, 12, 16), bool)
    masks[10:20, 2:6, 3:9] = True
    return masks


def test_events_of_masks_have_their_known_frames_and_times():
    (event,) = bpvideo.events(_masks(), fps=10, event_pad=0)
    assert (event.start_frame, event.end_frame) == (11, 20)
    assert (event.start_time, event.end_time) == ("00:00:01.000", "00:00:02.000")


@pytest.mark.parametrize("fps", [0, 0.0, -5, float("nan"), float("inf"), None])
def test_a_rate_that_is_not_positive_and_finite_is_an_input_error_naming_fps(fps):
    with pytest.raises(InputError, match=r"^fps=.* must be a finite number > 0") as error:
        bpvideo.events(_masks(), fps=fps)
    assert isinstance(error.value, ValueError)
    assert error.value.option == ("fps", fps)


@pytest.mark.parametrize("times", [np.full(40, np.nan), np.r_[np.arange(39) / 10, np.inf]])
def test_times_that_are_not_finite_are_an_input_error_naming_times(times):
    with pytest.raises(InputError, match=r"^times holds"):
        bpvideo.events(_masks(), fps=10, times=times)


def test_times_of_another_count_are_an_input_error():
    with pytest.raises(InputError, match=r"^times has 3 value"):
        bpvideo.events(_masks(), fps=10, times=[0.0, 0.1, 0.2])
