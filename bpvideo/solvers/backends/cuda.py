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
import os
from typing import Any

import numpy as np

from bpvideo.solvers.backends.array import ArrayBackend

__all__ = ["INSTALL", "CudaBackend", "cuda_problem", "device_name"]

#: What to install, as the errors say it.
INSTALL = (
    'pip install "bpvideo[cuda]" (CuPy for CUDA 12; for another CUDA runtime the matching '
    "wheel, e.g. pip install cupy-cuda11x)"
)


def cuda_problem() -> str | None:
    """Why the CUDA backend cannot run here (one clause naming the fix), None when it can.

    Probed once per process: CuPy imported and asked for its GPUs; ``BPVIDEO_CUDA=0`` turns
    the GPU off (``device="auto"`` then means the CPU; the test suite sets it for tests
    not marked ``gpu``, so that they give the same results on every machine).
    """
    if os.environ.get("BPVIDEO_CUDA", "1") == "0":
        return "is turned off by BPVIDEO_CUDA=0: unset it, or use {device='cpu'}"
    return _probe()


@functools.cache
def _probe() -> str | None:
    """:func:`cuda_problem` of the machine (once per process)."""
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


#: The gradient step of :meth:`Backend.fused_step` in one pass over the m x n buffers (the
#: numpy backend's ``_np_fused_rows`` with ``T_alpha`` applied first is the reference;
#: ``tests/solvers/test_cuda.py`` compares the two on the GPU). One block of threads runs
#: along a row (consecutive columns: coalesced), blocks stride over the rows; ``L_k`` and
#: ``L_{k-1}`` are formed from their factors in registers; the five squared norms are
#: summed in double per thread, per warp, then added to ``sums`` once per warp.
_FUSED_SOURCE = r"""
__device__ __forceinline__ double warp_sum(double v) {
    for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffff, v, d);
    return v;
}

extern "C" __global__ void fused_step(
    float* W, float* Sp, float* Wl, const float* A, const bool* mask, const int has_mask,
    const float* rt, const long long* rc, const float* ct, const long long* cc,
    const int has_thr,
    const float* Lk, const float* U, const float* VT, const int rk, const int dense_k,
    const float* Lp, const float* Up, const float* VpT, const int rp, const int dense_p,
    const float a, const float b, const float h, const long long m, const long long n,
    double* sums)
{
    const long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    double s_ds = 0.0, s_dl = 0.0, s_s = 0.0, s_l = 0.0, s_e = 0.0;
    if (j < n) {
        for (long long i = blockIdx.y; i < m; i += gridDim.y) {
            const long long at = i * n + j;
            float s = W[at];
            if (has_thr) {
                const float x = fabsf(s);
                const bool by_row = x > rt[i] || (x == rt[i] && j <= rc[i]);
                const bool by_col = x > ct[j] || (x == ct[j] && i <= cc[j]);
                if (!(by_row && by_col)) s = 0.0f;
                W[at] = s;
            }
            float lk = 0.0f, lp = 0.0f;
            if (dense_k) lk = Lk[at];
            else for (int q = 0; q < rk; ++q) lk += U[i * rk + q] * VT[q * n + j];
            if (dense_p) lp = Lp[at];
            else for (int q = 0; q < rp; ++q) lp += Up[i * rp + q] * VpT[q * n + j];
            const float sp = Sp[at];
            const float ds = s - sp, dl = lk - lp;
            float e = (A[at] - lk) - s;
            float r = (ds + dl) * b - e;
            if (has_mask && !mask[at]) { e = 0.0f; r = 0.0f; }
            s_s += (double)sp * sp;  s_l += (double)lp * lp;
            s_ds += (double)ds * ds; s_dl += (double)dl * dl; s_e += (double)e * e;
            r *= h;
            Sp[at] = (ds * a + s) - r;
            Wl[at] = (dl * a + lk) - r;
        }
    }
    s_ds = warp_sum(s_ds); s_dl = warp_sum(s_dl); s_s = warp_sum(s_s);
    s_l = warp_sum(s_l); s_e = warp_sum(s_e);
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(sums + 0, s_ds); atomicAdd(sums + 1, s_dl); atomicAdd(sums + 2, s_s);
        atomicAdd(sums + 3, s_l); atomicAdd(sums + 4, s_e);
    }
}
"""

#: The counting pass of ``T_alpha``'s bracketed selection
#: (:meth:`~bpvideo.solvers.backends.array.ArrayBackend.bracket_counts`: its array-module
#: version is the reference): per row and per column, the entries above the bracket and
#: inside it, in one read of the matrix. Row counts are summed per warp, column counts per
#: thread over the rows it visits, then added to the totals.
_COUNTS_SOURCE = r"""
__device__ __forceinline__ int warp_isum(int v) {
    for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffff, v, d);
    return v;
}

extern "C" __global__ void bracket_counts(
    const float* M, const long long m, const long long n,
    const float* rlo, const float* rhi, const float* clo, const float* chi,
    int* r_above, int* r_in, int* c_above, int* c_in)
{
    const long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const bool live = j < n;
    const float cl = live ? clo[j] : 0.0f, ch = live ? chi[j] : 0.0f;
    int ca = 0, ci = 0;
    for (long long i = blockIdx.y; i < m; i += gridDim.y) {
        int ra = 0, ri = 0;
        if (live) {
            const float x = fabsf(M[i * n + j]);
            ra = x > rhi[i];
            ri = x > rlo[i] && x <= rhi[i];
            ca += x > ch;
            ci += x > cl && x <= ch;
        }
        ra = warp_isum(ra);
        ri = warp_isum(ri);
        if ((threadIdx.x & 31) == 0 && (ra | ri)) {
            atomicAdd(r_above + i, ra);
            atomicAdd(r_in + i, ri);
        }
    }
    if (live && (ca | ci)) {
        atomicAdd(c_above + j, ca);
        atomicAdd(c_in + j, ci);
    }
}
"""

#: The gathering pass: entries inside their row's or their column's bracket.
_FLAGS_OPERATION = (
    "const float a = fabsf(x); flag = (a > rlo && a <= rhi) || (a > clo && a <= chi);"
)

#: Threads per block (along a row) and the most blocks along the rows of the fused step.
BLOCK = 256
ROW_BLOCKS = 8192

#: ``BPVIDEO_CUDA_KERNELS=0``: run the array-module kernels only (the reference), without
#: the compiled passes.
USE_KERNELS = os.environ.get("BPVIDEO_CUDA_KERNELS", "1") != "0"


class CudaBackend(ArrayBackend):
    """:class:`~bpvideo.solvers.backends.array.ArrayBackend` on CuPy, in float32, with the
    gradient step and the counting and gathering passes of the selection compiled
    (:data:`_FUSED_SOURCE`, :data:`_COUNTS_SOURCE`, :data:`_FLAGS_OPERATION`; with
    ``BPVIDEO_CUDA_KERNELS=0``, or for other dtypes, the array-module versions)."""

    name = "cuda"
    dtype = np.float32

    def __init__(self) -> None:
        import cupy

        super().__init__(cupy)
        self._fused = self._counts = self._flags = None
        if USE_KERNELS:
            self._fused = cupy.RawKernel(_FUSED_SOURCE, "fused_step")
            self._counts = cupy.RawKernel(_COUNTS_SOURCE, "bracket_counts")
            self._flags = cupy.ElementwiseKernel(
                "float32 x, float32 rlo, float32 rhi, float32 clo, float32 chi",
                "bool flag",
                _FLAGS_OPERATION,
                "bpvideo_bracket_flags",
            )

    def bracket_counts(self, M, rlo, rhi, clo, chi):
        """See :meth:`ArrayBackend.bracket_counts` (one compiled pass)."""
        if self._counts is None or M.dtype != np.float32 or not M.flags.c_contiguous:
            return super().bracket_counts(M, rlo, rhi, clo, chi)
        xp = self.xp
        m, n = M.shape
        counts = [xp.zeros(size, dtype=np.int32) for size in (m, m, n, n)]
        bounds = (xp.ascontiguousarray(v, dtype=np.float32) for v in (rlo, rhi, clo, chi))
        grid = ((n + BLOCK - 1) // BLOCK, min(m, ROW_BLOCKS))
        self._counts(grid, (BLOCK,), (M, np.int64(m), np.int64(n), *bounds, *counts))
        return tuple(c.astype(np.int64) for c in counts)

    def bracket_flags(self, M, rlo, rhi, clo, chi):
        """See :meth:`ArrayBackend.bracket_flags` (one compiled pass)."""
        if self._flags is None or M.dtype != np.float32:
            return super().bracket_flags(M, rlo, rhi, clo, chi)
        f32 = np.float32
        return self._flags(
            M, rlo.astype(f32)[:, None], rhi.astype(f32)[:, None],
            clo.astype(f32)[None, :], chi.astype(f32)[None, :],
        )  # fmt: skip

    def _step(self, W, Sp, Wl, A, mask, thr, L, Lp, a, b, h, block):
        """``T_alpha`` and the gradient step in one compiled pass (float32, C-contiguous
        buffers; otherwise the array-module step)."""
        if (
            self._fused is None
            or W.dtype != np.float32
            or not all(X.flags.c_contiguous for X in (W, Sp, Wl, A))
        ):
            return super()._step(W, Sp, Wl, A, mask, thr, L, Lp, a, b, h, block)
        xp = self.xp
        m, n = W.shape
        f32, i64 = np.float32, np.int64
        none_f, none_i = xp.zeros(1, dtype=f32), xp.zeros(1, dtype=i64)
        if thr is None:
            thr_args = (none_f, none_i, none_f, none_i, np.int32(0))
        else:
            rt, rc, ct, cc = (xp.asarray(t) for t in thr)
            thr_args = (rt.astype(f32), rc.astype(i64), ct.astype(f32), cc.astype(i64),
                        np.int32(1))  # fmt: skip
        if mask is not None:
            mask = xp.ascontiguousarray(mask, dtype=bool)
        sums = xp.zeros(5, dtype=np.float64)
        grid = ((n + BLOCK - 1) // BLOCK, min(m, ROW_BLOCKS))
        self._fused(grid, (BLOCK,), (
            W, Sp, Wl, A, xp.zeros(1, dtype=bool) if mask is None else mask,
            np.int32(mask is not None), *thr_args,
            *self._l_args(L, none_f), *self._l_args(Lp, none_f),
            f32(a), f32(b), f32(h), i64(m), i64(n), sums,
        ))  # fmt: skip
        ds2, dl2, s2, l2, e2 = (float(v) for v in sums.get())
        Y = None if block is None else Wl @ xp.asarray(block, dtype=f32)
        return {"dS": ds2, "dL": dl2, "S": s2, "L": l2, "E": e2}, Y

    def _l_args(self, L: Any, none: Any) -> tuple[Any, ...]:
        """Kernel arguments of ``L``: (dense, U, V^T, rank, is dense)."""
        xp = self.xp
        if not isinstance(L, tuple):
            return (xp.ascontiguousarray(L, dtype=np.float32), none, none, np.int32(0),
                    np.int32(1))  # fmt: skip
        U = xp.ascontiguousarray(xp.asarray(L[0]), dtype=np.float32)
        VT = xp.ascontiguousarray(xp.asarray(L[1]).T, dtype=np.float32)
        return (none, U, VT, np.int32(U.shape[1]), np.int32(0))
