"""Solver backends: the per-iteration kernels of the best-pair solver, behind one interface.

The solver keeps ``L`` in factored form ``U V^T`` (rank r) and four m x n buffers: the data
``A``, ``W`` (the unthresholded ``W_s`` of the last step), ``Sp`` (the previous ``S``) and
``Wl`` (the last ``W_l``). A :class:`Backend` provides the kernels that touch those
buffers; everything else (the small QR, SVD and eigen problems, the stopping rule) is
numpy in the solver itself:

- :meth:`~Backend.fused_step`: one pass that finishes iteration k and does the gradient
  step of iteration k + 1: ``S_k = T_alpha(W)`` (thresholds given), ``L_k = U V^T`` and
  ``L_{k-1} = U_p V_p^T`` computed on the fly, the squared norms of the stopping rule,
  then ``W_s = Sa - gamma/2 R`` over ``Sp`` and ``W_l = La - gamma/2 R`` over ``Wl``, where
  ``Sa = S_k + a (S_k - S_{k-1})``, ``Sb = S_k + b (S_k - S_{k-1})`` (same for L) and
  ``R = P_Omega(Sb + Lb - A)``; ``S_k`` is written over ``W``. A backend may also return
  the row thresholds of ``T_alpha`` on the new ``W_s`` and the first product of the rank-r
  projection, ``W_l V`` for the warm-started block ``V``.
- :meth:`~Backend.thresholds`: the ``k``-th largest magnitude of every row and column,
  with the index cut-off that breaks ties by index, so that exactly ``k`` entries pass.
- :meth:`~Backend.apply_thresholds`, :meth:`~Backend.matmul`, :meth:`~Backend.t_matmul`,
  :meth:`~Backend.row_median`: ``T_alpha`` in place, ``M V``, ``M^T Q`` and the per-row
  median (observed entries only), as used by the starting point and the subspace
  iteration of ``H_r``.
- :meth:`~Backend.warm_up`: load or compile the kernels now (before a timed solve).

Backends: ``"numpy"`` (the reference, :mod:`.numpy`), ``"numba"`` (compiled kernels,
:mod:`.numba`; optional) and ``"cuda"`` (:mod:`.cuda`: the kernels of :mod:`.array`,
written once for numpy and CuPy, on an NVIDIA GPU; optional). Every backend computes the
same thing; tests run each against the other (``tests/solvers/test_backends.py``), and
the CUDA backend's code runs on numpy in every test run. A backend is chosen once per
solve by :func:`get_backend`; :func:`resolve_device` turns ``device=`` into one.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from typing import Any, Protocol

import numpy as np

from bpvideo.errors import InputError
from bpvideo.settings import DEVICES
from bpvideo.solvers._common import to_host

__all__ = [
    "BACKENDS",
    "HAVE_NUMBA",
    "NUMBA_MIN_SIZE",
    "Backend",
    "available_backends",
    "exercise",
    "get_backend",
    "keep_all",
    "resolve_device",
    "to_host",
]

#: numba is installed (and not disabled by ``BPVIDEO_NUMBA=0``); it is imported when the
#: numba backend first runs a kernel, not with this module.
HAVE_NUMBA = (
    os.environ.get("BPVIDEO_NUMBA", "1") != "0" and importlib.util.find_spec("numba") is not None
)

#: ``get_backend("auto", size)``: matrices with fewer entries run the numpy kernels.
#: Loading numba and its cached kernels costs ~0.55 s of CPU (and holds the interpreter
#: lock while frames are read), more than numba saves on a small solve: at 4800 x 300
#: (a 320x240 clip solved at --solve-scale 0.25) 15 iterations take 0.3 s with numba and
#: 0.65 s without; from about 2**22 entries numba wins by more than it costs.
NUMBA_MIN_SIZE = 1 << 22

#: Backend name -> ``module:class`` that implements it (imported on first use).
BACKENDS = {
    "numpy": "bpvideo.solvers.backends.numpy:NumpyBackend",
    "numba": "bpvideo.solvers.backends.numba:NumbaBackend",
    "cuda": "bpvideo.solvers.backends.cuda:CudaBackend",
}


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


def available_backends() -> list[str]:
    """Names of the backends that can run here (``numba`` when it is installed, ``cuda``
    when CuPy is installed and sees a GPU)."""
    from bpvideo.solvers.backends.cuda import cuda_problem

    return [
        name
        for name in BACKENDS
        if (name != "numba" or HAVE_NUMBA) and (name != "cuda" or cuda_problem() is None)
    ]


def resolve_device(device: str | None = "auto") -> str:
    """The device a solve runs on: ``"cpu"`` or ``"cuda"``.

    Parameters
    ----------
    device : {"auto", "cpu", "cuda"}, default "auto"
        ``"auto"`` (or None): CUDA when CuPy is installed and sees a GPU, else the CPU.

    Raises
    ------
    InputError
        An unknown device, or ``"cuda"`` without CuPy or without a GPU (the message says
        what to install).
    """
    from bpvideo.solvers.backends.cuda import cuda_problem

    if device is None or device == "auto":
        return "cuda" if cuda_problem() is None else "cpu"
    if device not in DEVICES:
        raise InputError(
            f"{{device=}} must be one of: {', '.join(DEVICES)}", option=("device", device)
        )
    if device == "cuda" and (problem := cuda_problem()) is not None:
        raise InputError(f"{{device='cuda'}} {problem}", option=("device", device))
    return device


_INSTANCES: dict[str, Backend] = {}


def get_backend(name: str | Backend | None = "auto", size: int | None = None) -> Backend:
    """The backend a solve runs on.

    Parameters
    ----------
    name : {"auto", "numpy", "numba", "cuda"} or Backend, default "auto"
        ``"auto"`` (or None): numba for matrices of at least :data:`NUMBA_MIN_SIZE`
        entries when it is installed (and ``BPVIDEO_NUMBA`` is not ``0``), numpy
        otherwise (a CPU backend: ``"cuda"`` is chosen by name, see
        :func:`resolve_device`). A :class:`Backend` is returned as is.
    size : int, optional
        Entries of the data matrix (``"auto"`` only; None counts as small).

    Returns
    -------
    Backend

    Raises
    ------
    InputError
        An unknown name, ``"numba"`` when numba is not installed, ``"cuda"`` without
        CuPy or a GPU.

    Examples
    --------
    >>> get_backend("numpy").name, get_backend("auto", 100).name
    ('numpy', 'numpy')
    """
    if name is None or name == "auto":
        name = "numba" if HAVE_NUMBA and size is not None and size >= NUMBA_MIN_SIZE else "numpy"
    if not isinstance(name, str):
        return name
    if name not in BACKENDS:
        raise InputError(
            f"{{backend=}} must be one of: auto, {', '.join(BACKENDS)}", option=("backend", name)
        )
    if name == "cuda":
        resolve_device("cuda")
    elif name not in available_backends():
        raise InputError(
            "{backend=} needs numba, which is not installed (or BPVIDEO_NUMBA=0): "
            "pip install 'bpvideo[fast]', or use {backend='numpy'}",
            option=("backend", name),
        )
    if name not in _INSTANCES:
        module, _, cls = BACKENDS[name].partition(":")
        _INSTANCES[name] = getattr(importlib.import_module(module), cls)()
    return _INSTANCES[name]


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
