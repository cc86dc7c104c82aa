"""Medians over masked entries (bpvideo.robust)."""

from __future__ import annotations

import numpy as np
import pytest

from bpvideo.robust import masked_median


def test_masked_median_equals_numpy_median_of_the_kept_entries() -> None:
    rng = np.random.default_rng(1)
    values = rng.normal(size=(50, 9))
    mask = rng.random((50, 9)) < 0.6
    mask[3] = False
    got = masked_median(values, mask)
    for i in range(50):
        if mask[i].any():
            assert got[i] == pytest.approx(np.median(values[i, mask[i]]))
    assert np.isnan(got[3])
    assert masked_median(values, mask, empty=-1.0)[3] == -1.0
    np.testing.assert_allclose(masked_median(values), np.median(values, axis=1))


def test_masked_median_of_uint8_equals_float():
    rng = np.random.default_rng(3)
    values = rng.integers(0, 256, (500, 33), dtype=np.uint8)
    mask = rng.random(values.shape) < 0.4
    want = masked_median(values.astype(np.float64), mask)
    np.testing.assert_array_equal(masked_median(values, mask), want)


def test_masked_median_of_float32_equals_float64() -> None:
    rng = np.random.default_rng(4)
    values = rng.normal(100.0, 30.0, (400, 32)).astype(np.float32)
    mask = rng.random(values.shape) < 0.7
    want = masked_median(values.astype(np.float64), mask)
    np.testing.assert_array_equal(masked_median(values, mask), want)


@pytest.mark.parametrize("axis", [0, 1])
def test_masked_median_equals_numpy_nanmedian(axis: int) -> None:
    # medians of rows, or of columns through the transpose, as np.nanmedian of the
    # entries left out set to NaN
    rng = np.random.default_rng(5)
    values = rng.normal(size=(60, 40))
    kept = rng.random(values.shape) >= 0.3
    if axis == 0:
        kept[:, 7] = False
    else:
        kept[7] = False
    with pytest.warns(RuntimeWarning):  # numpy warns of the all-NaN line; we do not
        want = np.nanmedian(np.where(kept, values, np.nan), axis=axis)
    got = masked_median(values.T, kept.T) if axis == 0 else masked_median(values, kept)
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)
