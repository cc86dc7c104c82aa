"""The paper's random RPCA instances with known answers (:func:`make_rpca_problem`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bpvideo.solvers.projections import project_sparse

__all__ = ["RPCAProblem", "make_rpca_problem"]


@dataclass
class RPCAProblem:
    """A synthetic robust-PCA instance ``A = L + S`` with known parts.

    Attributes
    ----------
    A, L, S : (m, n) ndarray
        Data, low-rank part and sparse part (float64).
    mask : (m, n) bool ndarray or None
        Observation mask (True = observed), or None when fully observed.
    """

    A: np.ndarray
    L: np.ndarray
    S: np.ndarray
    mask: np.ndarray | None = None

    def error(self, L: np.ndarray) -> float:
        """Relative error ``||L - self.L||_F / ||self.L||_F`` of a recovered background."""
        return float(np.linalg.norm(L - self.L) / np.linalg.norm(self.L))


def make_rpca_problem(
    m: int = 200,
    n: int = 200,
    *,
    rank: int = 5,
    sparsity: float = 0.05,
    magnitude: float = 500.0,
    observed: float | None = None,
    seed: int | None = 0,
) -> RPCAProblem:
    """The paper's synthetic instance (Section 4, after Wright et al.).

    ``L = U V^T`` with ``U`` (m x r) and ``V`` (n x r) i.i.d. N(0, 1); ``S`` supported on a
    ``T_alpha`` pattern (the sparse projection of an i.i.d. N(0, 1) matrix) with values
    uniform in ``[-magnitude, magnitude]``; ``A = L + S``.

    Parameters
    ----------
    m, n : int
        Shape.
    rank : int
        Rank of ``L``.
    sparsity : float
        The alpha of the support pattern.
    magnitude : float, default 500
        Half-width of the uniform distribution of the sparse values.
    observed : float, optional
        Fraction of entries observed, in (0, 1]; a uniform random mask is drawn.
    seed : int or None
        Random seed.

    Returns
    -------
    RPCAProblem
    """
    rng = np.random.default_rng(seed)
    L = rng.standard_normal((m, rank)) @ rng.standard_normal((rank, n))
    support = project_sparse(rng.standard_normal((m, n)), sparsity) != 0
    S = np.where(support, rng.uniform(-magnitude, magnitude, (m, n)), 0.0)
    mask = None
    if observed is not None and observed < 1.0:
        mask = rng.random((m, n)) < observed
    return RPCAProblem(A=L + S, L=L, S=S, mask=mask)


# --------------------------------------------------------------------------------------
# A synthetic fixed-camera street scene with ground truth
# --------------------------------------------------------------------------------------

#: BGR weights of the grey level (ITU-R BT.601, as ``cv2.COLOR_BGR2GRAY``).
