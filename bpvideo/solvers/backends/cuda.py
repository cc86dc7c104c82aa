"""The CUDA backend: the kernels of :mod:`.array` on CuPy, on an NVIDIA GPU (optional).

``pip install "bpvideo[cuda]"`` installs CuPy for CUDA 12 (``cupy-cuda12x``); another CUDA
runtime needs its own wheel (``cupy-cuda11x``). A solve on this backend moves the data
(and the observation mask) to the GPU once, keeps the four m x n buffers of the solver
there in float32, and returns ``L``, ``S`` and the factors to the host once; only the
small problems of ``H_r`` (p x p and p x n, p = rank + 5) cross over each iteration.

Nothing here imports CuPy before a CUDA solve is asked for, and nothing on this path
imports imageio-ffmpeg: a GPU machine without ffmpeg solves frame folders.
"""

from __future__ import annotations

import functools

import numpy as np

from bpvideo.solvers.backends.array import ArrayBackend

__all__ = ["INSTALL", "CudaBackend", "cuda_problem", "device_name"]

#: What to install, as the errors say it.
INSTALL = (
    'pip install "bpvideo[cuda]" (CuPy for CUDA 12; for another CUDA runtime the matching '
    "wheel, e.g. pip install cupy-cuda11x)"
)


@functools.cache
def cuda_problem() -> str | None:
    """Why the CUDA backend cannot run here (one clause naming the fix), None when it can.

    Probed once per process: CuPy imported and asked for its GPUs.
    """
    try:
        import cupy
    except ImportError:
        return f"needs CuPy, which is not installed: {INSTALL}, or use {{device='cpu'}}"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError, a missing driver library
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return (
            f"found no usable GPU (CuPy: {reason}): install the NVIDIA driver and the CuPy "
            f"wheel that matches its CUDA version ({INSTALL}), or use {{device='cpu'}}"
        )
    if count < 1:
        return "found no GPU (CuPy sees none): run on a machine with one, or use {device='cpu'}"
    return None


def device_name() -> str:
    """The name of the GPU a CUDA solve runs on (``"NVIDIA H100 80GB HBM3"``)."""
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


class CudaBackend(ArrayBackend):
    """:class:`~bpvideo.solvers.backends.array.ArrayBackend` on CuPy, in float32."""

    name = "cuda"
    dtype = np.float32

    def __init__(self) -> None:
        import cupy

        super().__init__(cupy)
