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

from bpvideo.errors import InputError
from bpvideo.solvers._common import to_host
from bpvideo.solvers.backends.base import Backend, Thresholds, exercise, keep_all

__all__ = [
    "BACKENDS",
    "DEVICES",
    "HAVE_NUMBA",
    "Backend",
    "Thresholds",
    "available_backends",
    "exercise",
    "get_backend",
    "keep_all",
    "resolve_device",
    "to_host",
]

#: Where a solve may run (``--device``): ``auto`` is CUDA where CuPy sees a GPU, else CPU.
DEVICES = ("auto", "cpu", "cuda")

#: numba is installed (and not disabled by ``BPVIDEO_NUMBA=0``); it is imported when the
#: numba backend first runs a kernel, not with this module.
HAVE_NUMBA = (
    os.environ.get("BPVIDEO_NUMBA", "1") != "0" and importlib.util.find_spec("numba") is not None
)

#: Backend name -> ``module:class`` that implements it (imported on first use).
BACKENDS = {
    "numpy": "bpvideo.solvers.backends.numpy:NumpyBackend",
    "numba": "bpvideo.solvers.backends.numba:NumbaBackend",
    "cuda": "bpvideo.solvers.backends.cuda:CudaBackend",
}


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


def get_backend(name: str | Backend | None = "auto") -> Backend:
    """The backend a solve runs on.

    Parameters
    ----------
    name : {"auto", "numpy", "numba", "cuda"} or Backend, default "auto"
        ``"auto"`` (or None): numpy, the reference, whatever the size and whether numba
        is installed, so that a solve gives the same bits on every install and in every
        run: numba's kernels sum in another order (its reductions are vectorized), and
        the first run after an install would wait seconds for their compilation
        (docs/performance.md, "The solver on numpy's kernels at every size").
        ``"numba"`` is chosen by name (about 1.6 times fewer CPU seconds per iteration,
        once compiled), and so is
        ``"cuda"`` (see :func:`resolve_device`). A :class:`Backend` is returned as is.

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
    >>> get_backend("numpy").name, get_backend("auto").name
    ('numpy', 'numpy')
    """
    if name is None or name == "auto":
        name = "numpy"
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
            "pip install numba (a dependency of bpvideo), or use {backend='numpy'}",
            option=("backend", name),
        )
    if name not in _INSTANCES:
        module, _, cls = BACKENDS[name].partition(":")
        _INSTANCES[name] = getattr(importlib.import_module(module), cls)()
    return _INSTANCES[name]
