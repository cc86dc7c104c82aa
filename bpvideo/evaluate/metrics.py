"""The scores: the seven changedetection.net metrics, SSIM and epsilon-proximity.

References
----------
.. [1] Y. Wang, P.-M. Jodoin, F. Porikli, J. Konrad, Y. Benezeth and P. Ishwar,
   "CDnet 2014: an expanded change detection benchmark dataset", CVPR Workshops, 2014.
.. [2] Z. Wang, A. C. Bovik, H. R. Sheikh and E. P. Simoncelli, "Image quality assessment:
   from error visibility to structural similarity", IEEE Trans. Image Processing 13(4),
   2004.
.. [3] A. Dutta, F. Hanzely and P. Richtárik, "A nonconvex projection method for robust
   PCA", AAAI 2019 (arXiv:1805.07962).
"""

from __future__ import annotations

import numpy as np

__all__ = ["DEFAULT_EPSILON", "confusion_metrics", "epsilon_proximity", "ssim"]

DEFAULT_EPSILON = 0.5
"""Default tolerance of :func:`epsilon_proximity`: half the 0/1 step of a binary mask."""


def _ratio(num: float, den: float) -> float:
    return float(num) / float(den) if den else 0.0


def confusion_metrics(tp: int, fp: int, tn: int, fn: int) -> dict[str, float]:
    """The seven changedetection.net metrics from pixel counts.

    Parameters
    ----------
    tp, fp, tn, fn : int
        True positives, false positives, true negatives, false negatives.

    Returns
    -------
    dict of str to float
        ``recall`` = TP/(TP+FN), ``specificity`` = TN/(TN+FP), ``fpr`` = FP/(FP+TN),
        ``fnr`` = FN/(TP+FN), ``pwc`` = 100 (FN+FP)/(TP+FN+FP+TN) (percentage of wrong
        classifications), ``precision`` = TP/(TP+FP) and ``f_measure`` =
        2 precision recall / (precision + recall).

    Notes
    -----
    A ratio whose denominator is 0 is defined as 0.0 (for example precision of a mask with
    no foreground pixel, recall of a frame without ground-truth foreground), so every value
    is finite and JSON-able. F-measure is computed from precision and recall after that
    rule, and is 0.0 when both are 0.
    """
    recall = _ratio(tp, tp + fn)
    precision = _ratio(tp, tp + fp)
    return {
        "recall": recall,
        "specificity": _ratio(tn, tn + fp),
        "fpr": _ratio(fp, fp + tn),
        "fnr": _ratio(fn, tp + fn),
        "pwc": 100.0 * _ratio(fn + fp, tp + fn + fp + tn),
        "precision": precision,
        "f_measure": _ratio(2.0 * precision * recall, precision + recall),
    }


def ssim(
    x: np.ndarray,
    y: np.ndarray,
    *,
    data_range: float = 1.0,
    sigma: float = 1.5,
    k1: float = 0.01,
    k2: float = 0.03,
) -> float:
    """Mean structural similarity index of two images (Wang et al. 2004).

    Local means, variances and covariance are Gaussian-weighted (standard deviation
    ``sigma``, truncated at 3.5 sigma: an 11x11 window for sigma 1.5, reflected at the
    borders) and use population (not sample) statistics, as in the paper and
    ``skimage.metrics.structural_similarity(..., gaussian_weights=True, sigma=1.5,
    use_sample_covariance=False)``. The SSIM map is averaged after cropping the half
    window at each border; an image smaller than the window is averaged whole.

    Parameters
    ----------
    x, y : (H, W) array_like
        Images of the same shape, e.g. binary masks as 0/1.
    data_range : float, optional
        Dynamic range of the values (1 for 0/1 masks).
    sigma : float, optional
        Standard deviation of the Gaussian window.
    k1, k2 : float, optional
        Stabilising constants; ``C1 = (k1 L)^2``, ``C2 = (k2 L)^2`` with ``L = data_range``.

    Returns
    -------
    float
        Mean SSIM, in [-1, 1]; 1 for identical images.

    Raises
    ------
    ValueError
        The shapes differ or the images are not 2-D.
    """
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"ssim needs two 2-D images of one shape, got {a.shape} and {b.shape}")
    truncate = 3.5
    half = int(truncate * sigma + 0.5)

    from scipy import ndimage  # here: importing scipy.ndimage takes ~0.4 s

    def smooth(image: np.ndarray) -> np.ndarray:
        return ndimage.gaussian_filter(image, sigma=sigma, truncate=truncate, mode="reflect")

    mu_a, mu_b = smooth(a), smooth(b)
    var_a = smooth(a * a) - mu_a * mu_a
    var_b = smooth(b * b) - mu_b * mu_b
    cov = smooth(a * b) - mu_a * mu_b
    c1 = (k1 * data_range) ** 2
    c2 = (k2 * data_range) ** 2
    num = (2.0 * mu_a * mu_b + c1) * (2.0 * cov + c2)
    den = (mu_a * mu_a + mu_b * mu_b + c1) * (var_a + var_b + c2)
    index = num / den
    if min(a.shape) > 2 * half:
        index = index[half:-half, half:-half]
    return float(index.mean())


def epsilon_proximity(
    x: np.ndarray,
    y: np.ndarray,
    *,
    epsilon: float = DEFAULT_EPSILON,
    valid: np.ndarray | None = None,
) -> float:
    """Epsilon-proximity ``d_eps(X, Y)`` of Dutta, Hanzely and Richtárik.

    The share of entries where the two images agree up to ``epsilon``::

        d_eps(X, Y) = #{(i, j) : |X_ij - Y_ij| <= eps} / #{(i, j)}

    The best-pair RPCA paper reports it (with SSIM) for the recovered foreground against
    the ground truth, citing its definition in Dutta, Hanzely & Richtárik (2019); 1 means
    every pixel agrees. For 0/1 masks and any ``0 < epsilon < 1`` it is the fraction of
    pixels classified correctly, i.e. ``(TP + TN) / (TP + FP + TN + FN)`` when ``valid``
    excludes the ignored pixels, which is ``1 - PWC / 100``.

    Parameters
    ----------
    x, y : array_like
        Arrays of the same shape, e.g. a mask and the ground truth as 0/1.
    epsilon : float, optional
        Tolerance, >= 0.
    valid : array_like of bool, optional
        Entries to count (True); all when None.

    Returns
    -------
    float
        In [0, 1]; 0.0 when no entry is counted.

    Raises
    ------
    ValueError
        Shapes differ or ``epsilon`` is negative.
    """
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"epsilon_proximity needs one shape, got {a.shape} and {b.shape}")
    if not epsilon >= 0:
        raise ValueError(f"epsilon ({epsilon}) must be >= 0")
    close = np.abs(a - b) <= epsilon
    if valid is None:
        return _ratio(int(close.sum()), close.size)
    keep = np.asarray(valid, dtype=bool)
    if keep.shape != a.shape:
        raise ValueError(f"valid has shape {keep.shape}, images {a.shape}")
    return _ratio(int(np.count_nonzero(close & keep)), int(np.count_nonzero(keep)))
