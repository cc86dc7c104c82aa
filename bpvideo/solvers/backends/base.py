"""The interface every backend implements (:class:`Backend`), and helpers on any backend.

A module of its own, below the backends themselves, so that they import it without
importing the registry of backends (:mod:`bpvideo.solvers.backends`).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

__all__ = ["Backend", "Thresholds", "exercise", "keep_all"]

Thresholds = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class Backend(Protocol):
    """The kernels a solve runs on; see the module docstring for what each computes.

    Arrays are of the backend's array module :attr:`xp` (numpy for the CPU backends).
    ``L`` arguments are factors ``(U, V)`` with ``L = U V^T`` (U m x r, V n x r), or a dense
    m x n array (an explicit starting point, only read).
    """

    #: Name (``"numpy"``, ``"numba"``, ``"cuda"``).
    name: str
    #: Array module of the buffers (``numpy``; CuPy for ``"cuda"``, whose solves move the
    #: data to the device once and their results back once).
    xp: Any

    def fused_step(
        self,
        W: np.ndarray,
        Sp: np.ndarray,
        Wl: np.ndarray,
        A: np.ndarray,
        mask: np.ndarray | None,
        thr: Thresholds | None,
        L: Any,
        Lp: Any,
        a: float,
        b: float,
        h: float,
        k_row: int,
        block: np.ndarray | None = None,
        row_guess: np.ndarray | None = None,
        Y: np.ndarray | None = None,
    ) -> tuple[dict[str, float], np.ndarray | None, tuple[np.ndarray, np.ndarray] | None]:
        """Finish iteration k and take the gradient step of k + 1.

        Parameters
        ----------
        W, Sp, Wl, A : (m, n) ndarray
            ``W_s`` of iteration k (becomes ``S_k``), ``S_{k-1}`` (becomes the new
            ``W_s``), the buffer of ``W_l`` and the data.
        mask : (m, n) bool ndarray or None
            Observation mask.
        thr : tuple of ndarray or None
            Row and column thresholds of ``T_alpha`` on ``W`` (None: keep every entry).
        L, Lp : (U, V) or (m, n) ndarray
            ``L_k`` and ``L_{k-1}``.
        a, b, h : float
            Inertia and half step ``gamma / 2``.
        k_row : int
            Entries per row of ``T_alpha`` (for the row thresholds of the new ``W_s``).
        block : (n, p) ndarray, optional
            Warm block of the rank-r projection: the product ``W_l V`` is returned.
        row_guess : (m,) ndarray, optional
            Guess of the row thresholds (speeds up their selection; the result is exact).
        Y : (m, p) float64 ndarray, optional
            Where to write ``W_l V`` (reused between iterations).

        Returns
        -------
        sq : dict
            Squared norms ``dS`` (``S_k - S_{k-1}``), ``dL``, ``S`` (``S_{k-1}``), ``L``
            (``L_{k-1}``) and ``E`` (``P_Omega(A - L_k - S_k)``).
        Y : (m, p) ndarray or None
            ``W_l V`` when ``block`` is given.
        rows : (row_thr, row_cut) or None
            Row thresholds of ``T_alpha`` on the new ``W_s``, when the backend forms them.
        """
        ...

    def thresholds(
        self,
        W: np.ndarray,
        k_row: int,
        k_col: int,
        rows: tuple[np.ndarray, np.ndarray] | None = None,
        col_guess: np.ndarray | None = None,
    ) -> Thresholds:
        """Row and column thresholds of ``T_alpha``: ``(row_thr, row_cut, col_thr, col_cut)``.

        Entry ``(i, j)`` is among the ``k_row`` largest magnitudes of its row when
        ``|W_ij| > row_thr[i]``, or ``|W_ij| == row_thr[i]`` and ``j <= row_cut[i]`` (ties
        broken by index, so exactly ``k_row`` entries pass); the same for columns.
        ``rows`` reuses row thresholds already computed; ``col_guess`` is a guess of the
        column thresholds that may speed up the selection without changing its result.
        """
        ...

    def apply_thresholds(self, W: np.ndarray, thr: Thresholds) -> None:
        """``W <- T_alpha(W)`` in place, from :meth:`thresholds`."""
        ...

    def matmul(self, M: np.ndarray, V: np.ndarray) -> np.ndarray:
        """``M @ V`` for a tall ``M`` (m x n) and a thin ``V`` (n x p), in float64."""
        ...

    def t_matmul(self, M: np.ndarray, Q: np.ndarray) -> np.ndarray:
        """``M.T @ Q`` for a tall ``M`` (m x n) and a thin ``Q`` (m x p), in float64."""
        ...

    def row_median(self, A: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Median of every row of ``A`` over its observed entries (0 where none is)."""
        ...

    def warm_up(self, dtype: type = np.float32) -> None:
        """Load (or compile) the kernels for ``dtype`` now; nothing when there is nothing
        to load."""
        ...


def keep_all(shape: tuple[int, int], dtype: Any) -> Thresholds:
    """Thresholds under which every entry passes (``T_alpha`` is the identity)."""
    m, n = shape
    return (
        np.full(m, -1.0, dtype=dtype),
        np.full(m, n, dtype=np.int64),
        np.full(n, -1.0, dtype=dtype),
        np.full(n, m, dtype=np.int64),
    )


def exercise(backend: Backend, dtype: type = np.float32) -> None:
    """Run every kernel of ``backend`` once on a tiny problem (loads compiled kernels)."""
    xp = backend.xp
    z = xp.zeros((4, 4), dtype=dtype)
    W, Sp, Wl, A = (z.copy() for _ in range(4))
    f = (xp.zeros((4, 1), dtype=dtype), xp.zeros((4, 1), dtype=dtype))
    _, Y, rows = backend.fused_step(W, Sp, Wl, A, None, None, f, f, 0.5, 0.5, 0.5, 1, block=f[1])
    thr = backend.thresholds(Sp, 1, 1, rows=rows)
    backend.thresholds(Sp, 1, 1)
    backend.apply_thresholds(W, thr)
    backend.t_matmul(Wl, Y)
    backend.matmul(Wl, f[1])
    backend.row_median(A)
    backend.fused_step(W, Sp, Wl, A, xp.ones((4, 4), dtype=bool), thr, A, A, 0.5, 0.5, 0.5, 1)
    backend.row_median(A, xp.ones((4, 4), dtype=bool))
