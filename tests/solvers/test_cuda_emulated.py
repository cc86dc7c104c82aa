"""The CUDA backend's compiled passes, run on the CPU: their CUDA C source compiled by g++
against a few stand-ins for CUDA's built-ins and launched over a serial grid, compared
with their array-module references. Checks indexing, thresholds, the step's arithmetic
and the counts where there is no GPU; the warp sums are not emulated (each thread adds
its own share instead), so the ``gpu`` tests still decide on a GPU. Skipped without g++.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from bpvideo.solvers.backends import cuda, get_backend
from bpvideo.solvers.backends.array import ArrayBackend

SHIM = """
#include <cmath>
struct Dim { unsigned x, y, z; };
static Dim blockIdx, threadIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
template <class T> static inline T __shfl_down_sync(unsigned, T, int) { return T(0); }
template <class T> static inline T atomicAdd(T* p, T v) { T o = *p; *p += v; return o; }
"""

P, I32, I64, F32 = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong, ctypes.c_float


def compile_kernel(tmp: Path, source: str, name: str, params: str, call: str) -> ctypes.CDLL:
    """A shared library with ``launch(gx, gy, bx, ...)``: the kernel over a serial grid."""
    code = (
        SHIM
        + source.replace("(threadIdx.x & 31) == 0", "true")
        + f"""
extern "C" void launch(int gx, int gy, int bx, {params}) {{
    gridDim.x = gx; gridDim.y = gy; blockDim.x = bx;
    for (int y = 0; y < gy; ++y) for (int x = 0; x < gx; ++x) for (int t = 0; t < bx; ++t) {{
        blockIdx.x = x; blockIdx.y = y; threadIdx.x = t; {name}({call});
    }}
}}"""
    )
    (tmp / f"{name}.cpp").write_text(code)
    lib = tmp / f"{name}.so"
    subprocess.run(["g++", "-O1", "-shared", "-fPIC", "-o", lib, tmp / f"{name}.cpp"], check=True)
    return ctypes.CDLL(str(lib))


def ptr(a: np.ndarray) -> ctypes.c_void_p:
    return a.ctypes.data_as(P)


pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


@pytest.fixture(scope="module")
def fused(tmp_path_factory: pytest.TempPathFactory):
    names = "W Sp Wl A mask hm rt rc ct cc ht Lk U VT rk dk Lp Up VpT rp dp a b h m n sums"
    types = ["float*"] * 3 + ["const float*", "const bool*", "int"] + [
        "const float*", "const long long*", "const float*", "const long long*", "int"
    ] + ["const float*"] * 3 + ["int", "int"] + ["const float*"] * 3 + ["int", "int"] + [
        "float", "float", "float", "long long", "long long", "double*"
    ]  # fmt: skip
    params = ", ".join(f"{t} {n}" for t, n in zip(types, names.split(), strict=True))
    lib = compile_kernel(tmp_path_factory.mktemp("fused"), cuda._FUSED_SOURCE, "fused_step",
                         params, ", ".join(names.split()))  # fmt: skip
    lib.launch.argtypes = [I32] * 3 + [P, P, P, P, P, I32, P, P, P, P, I32]
    lib.launch.argtypes += [P, P, P, I32, I32] * 2 + [F32, F32, F32, I64, I64, P]
    return lib.launch


def factor_args(L, keep: list) -> list:
    """Kernel arguments of ``L``: dense, U, V^T, rank, is dense."""
    none = np.zeros(1, np.float32)
    keep.append(none)
    if not isinstance(L, tuple):
        return [ptr(L), ptr(none), ptr(none), 0, 1]
    U, VT = np.ascontiguousarray(L[0]), np.ascontiguousarray(L[1].T)
    keep += [U, VT]
    return [ptr(none), ptr(U), ptr(VT), U.shape[1], 0]


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("thresholded", [False, True])
def test_fused_step_kernel(fused, masked: bool, dense: bool, thresholded: bool) -> None:
    rng = np.random.default_rng(7)
    m, n, r = 150, 70, 2
    W = np.rint(rng.standard_normal((m, n)) * 2).astype(np.float32)  # ties at thresholds
    Sp, A = (rng.standard_normal((m, n)).astype(np.float32) for _ in range(2))
    U, V, Up, Vp = (rng.standard_normal((d, r)).astype(np.float32) for d in (m, n, m, n))
    L, Lp = (U @ V.T, Up @ Vp.T) if dense else ((U, V), (Up, Vp))
    mask = rng.random((m, n)) < 0.7 if masked else None
    thr = get_backend("numpy").thresholds(W, 9, 40) if thresholded else None
    want = [W.copy(), Sp.copy(), np.empty_like(W), A]
    sq = ArrayBackend()._step(*want, mask, thr, L, Lp, 0.5, 0.3, 0.55, None)[0]
    got, keep, sums = [W.copy(), Sp.copy(), np.empty_like(W), A], [], np.zeros(5)
    if thr is None:
        t_args = [ptr(np.zeros(1, np.float32)), ptr(np.zeros(1, np.int64))] * 2 + [0]
    else:
        keep += [t.astype(d) for t, d in zip(thr, (np.float32, np.int64) * 2, strict=True)]
        t_args = [ptr(t) for t in keep[-4:]] + [1]
    m_arg = mask if mask is not None else np.zeros(1, bool)
    factors = [*factor_args(L, keep), *factor_args(Lp, keep)]
    fused((n + 31) // 32, 64, 32, *map(ptr, got), ptr(m_arg), int(masked), *t_args,
          *factors, 0.5, 0.3, 0.55, m, n, ptr(sums))  # fmt: skip
    np.testing.assert_array_equal(got[0], want[0])  # S_k = T_alpha(W)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-5, atol=1e-5)
    for key, value in zip(("dS", "dL", "S", "L", "E"), sums, strict=True):
        assert value == pytest.approx(sq[key], rel=1e-4)


def test_bracket_counts_kernel(tmp_path: Path) -> None:
    params = ("const float* M, long long m, long long n, const float* rlo, const float* rhi, "
              "const float* clo, const float* chi, int* ra, int* ri, int* ca, int* ci")  # fmt: skip
    lib = compile_kernel(tmp_path, cuda._COUNTS_SOURCE, "bracket_counts", params,
                         "M, m, n, rlo, rhi, clo, chi, ra, ri, ca, ci")  # fmt: skip
    lib.launch.argtypes = [I32] * 3 + [P, I64, I64] + [P] * 8
    rng = np.random.default_rng(8)
    for m, n in ((300, 70), (7, 33), (65, 1)):
        M = np.rint(rng.standard_normal((m, n)) * 3).astype(np.float32)
        rlo, rhi = np.sort(rng.random((2, m)) * 4, axis=0).astype(np.float32)
        clo, chi = np.sort(rng.random((2, n)) * 4, axis=0).astype(np.float32)
        got = [np.zeros(size, np.int32) for size in (m, m, n, n)]
        lib.launch((n + 31) // 32, min(m, 50), 32, ptr(M), m, n,
                   *map(ptr, (rlo, rhi, clo, chi)), *map(ptr, got))  # fmt: skip
        want = ArrayBackend().bracket_counts(M, rlo, rhi, clo, chi)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
