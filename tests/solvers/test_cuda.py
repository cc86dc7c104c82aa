"""The CUDA backend: its code (the array-module kernels) on numpy in every run, the device
option and its errors with CuPy or a GPU faked away, and the same cases on a real GPU
(marked ``gpu``: skipped without CuPy or a GPU)."""

from __future__ import annotations

import json
import sys
import types

import numpy as np
import pytest

import bpvideo
from bpvideo.errors import InputError
from bpvideo.solvers import backends as backends_module
from bpvideo.solvers import best_pair, project_rank, project_sparse
from bpvideo.solvers.backends import array as array_module
from bpvideo.solvers.backends import cuda as cuda_module
from bpvideo.solvers.backends import get_backend, resolve_device, to_host
from bpvideo.solvers.backends.array import ArrayBackend, kth_largest
from bpvideo.synthetic import make_rpca_problem
from tests.conftest import output_files, street_frames


def ties_and_zeros(rng: np.random.Generator, m: int, n: int, dtype: type) -> np.ndarray:
    """A matrix with many tied magnitudes and many exact zeros."""
    M = np.rint(rng.standard_normal((m, n)) * 2).astype(dtype)
    M[rng.random(M.shape) < 0.4] = 0
    return M


def assert_same_thresholds(got, want) -> None:
    """Thresholds equal; cut-offs equal where the threshold is not 0 (a zero threshold
    passes zeros, whichever pass: the array backend reports the full length)."""
    rt, rc, ct, cc = (to_host(t) for t in got)
    np.testing.assert_array_equal(rt, want[0])
    np.testing.assert_array_equal(ct, want[2])
    np.testing.assert_array_equal(rc[want[0] > 0], want[1][want[0] > 0])
    np.testing.assert_array_equal(cc[want[2] > 0], want[3][want[2] > 0])


# --- the CUDA backend's code, on numpy --------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("guess", [None, "close", "far"])
def test_selection_is_exact_with_ties_zeros_and_any_guess(dtype: type, guess: str | None) -> None:
    rng = np.random.default_rng(11)
    numpy_kernels, kernels = get_backend("numpy"), ArrayBackend()
    for _ in range(12):
        m, n = int(rng.integers(2, 200)), int(rng.integers(2, 50))
        M = (
            ties_and_zeros(rng, m, n, dtype)
            if rng.random() < 0.5
            else rng.standard_normal((m, n)).astype(dtype)
        )
        k_row, k_col = int(rng.integers(1, n + 1)), int(rng.integers(1, m + 1))
        want = numpy_kernels.thresholds(M, k_row, k_col)
        col_guess = None if guess is None else want[2] * (1.01 if guess == "close" else 4)
        got = kernels.thresholds(M, k_row, k_col, col_guess=col_guess)
        assert_same_thresholds(got, want)
        P, Q = M.copy(), M.copy()
        numpy_kernels.apply_thresholds(P, want)
        kernels.apply_thresholds(Q, got)
        np.testing.assert_array_equal(Q, P)


def test_long_columns_take_their_bracket_from_a_sample(monkeypatch) -> None:
    rng = np.random.default_rng(12)
    M = rng.standard_normal((3000, 9)).astype(np.float32)
    M[:, 0] = 0  # a column of zeros: threshold 0
    M[:100, 1] = 7  # ties: the first 60 pass
    monkeypatch.setattr(array_module, "SAMPLE_MIN", 8)  # 3000 rows >= 8 * 16: sampled
    want = get_backend("numpy").thresholds(M, 2, 300)
    assert_same_thresholds(ArrayBackend().thresholds(M, 2, 300), want)
    thr, cut = kth_largest(np.abs(M), 60, 0)
    assert thr[1] == 7 and cut[1] == 59
    assert thr[0] == 0 and cut[0] == 3000


def test_solver_on_the_array_backend_equals_the_numpy_one() -> None:
    """The paper's synthetic instance (float32): the same iterates as the numpy backend,
    so the CUDA backend computes Algorithm 1 as the CPU does."""
    p = make_rpca_problem(300, 200, rank=3, sparsity=0.05, observed=0.9, seed=2)
    A = p.A.astype(np.float32)
    kw = {"mask": p.mask, "tol": 1e-7, "max_iter": 500}
    cpu = best_pair(A, 3, 0.05, backend="numpy", **kw)
    xp = best_pair(A, 3, 0.05, backend=ArrayBackend(), **kw)
    assert xp.converged and xp.iterations == cpu.iterations
    assert np.linalg.norm(xp.L - cpu.L) / np.linalg.norm(cpu.L) < 1e-6
    assert np.linalg.norm(xp.L - p.L) / np.linalg.norm(p.L) < 1e-5


def test_a_gpu_result_moves_L_and_S_to_the_host_once_and_only_when_read() -> None:
    from bpvideo.solvers._common import DeviceResult, History

    class OnDevice:  # stands for a CuPy array
        copies = 0

        def __init__(self, a: np.ndarray) -> None:
            self.a = a

        def get(self) -> np.ndarray:
            OnDevice.copies += 1
            return self.a

    L, S = np.ones((3, 2)), np.zeros((3, 2))
    result = History("bestpair", None).result(
        OnDevice(L), OnDevice(S), 1, True, max_iter=1, tol=0.0, factors=(L[:, :1], L[:2, :1])
    )
    assert isinstance(result, DeviceResult) and OnDevice.copies == 0
    assert result.factors[1].shape == (2, 1) and OnDevice.copies == 0
    assert result.L is result.L and np.array_equal(result.S, S) and OnDevice.copies == 2


# --- the device option --------------------------------------------------------------------


@pytest.fixture
def cupy_as(monkeypatch):
    """Put a stand-in for CuPy in its place (None: it cannot be imported), for the probe."""

    def install(module: object) -> None:
        monkeypatch.setitem(sys.modules, "cupy", module)
        monkeypatch.delenv("BPVIDEO_CUDA", raising=False)
        cuda_module._probe.cache_clear()

    yield install
    cuda_module._probe.cache_clear()


def no_driver() -> types.SimpleNamespace:
    """A CuPy whose CUDA runtime finds no driver."""

    def fail() -> int:
        raise RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")

    runtime = types.SimpleNamespace(getDeviceCount=fail)
    return types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime))


@pytest.fixture
def fake_gpu(monkeypatch):
    """A "GPU" that is the CUDA backend's code on numpy."""
    monkeypatch.setattr(cuda_module, "cuda_problem", lambda: None)
    monkeypatch.setattr(cuda_module, "device_name", lambda: "numpy standing in for a GPU")
    monkeypatch.setitem(backends_module._INSTANCES, "cuda", ArrayBackend())


def test_cuda_without_cupy_says_what_to_install(cupy_as) -> None:
    cupy_as(None)
    assert resolve_device("auto") == "cpu"
    with pytest.raises(InputError, match=r'needs CuPy.*pip install "bpvideo\[cuda\]"') as info:
        resolve_device("cuda")
    assert "cupy-cuda11x" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(InputError, match="needs CuPy"):
        get_backend("cuda")
    assert "cuda" not in backends_module.available_backends()


def test_cuda_without_a_gpu_names_the_driver(cupy_as) -> None:
    cupy_as(no_driver())
    assert resolve_device("auto") == "cpu"
    with pytest.raises(InputError, match=r"no usable GPU .*InsufficientDriver.*driver"):
        resolve_device("cuda")
    with pytest.raises(InputError, match="must be one of: auto, cpu, cuda"):
        resolve_device("tpu")


def test_cli_device_cuda_fails_before_any_work(cupy_as, run_cli, tiny_clip, tmp_path) -> None:
    cupy_as(None)
    out = tmp_path / "out"
    res = run_cli("separate", tiny_clip, "-o", out, "--device", "cuda")
    assert res.code == 2
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and "--device cuda needs CuPy" in lines[0]
    assert 'pip install "bpvideo[cuda]"' in lines[0] and "Traceback" not in res.err
    assert output_files(out) == []


def test_device_cuda_refuses_the_baselines(run_cli, tiny_clip, tmp_path) -> None:
    with pytest.raises(InputError, match="runs the bestpair and ncf methods"):
        bpvideo.separate(np.zeros((4, 8, 8), np.uint8), device="cuda", method="godec")
    res = run_cli("separate", tiny_clip, "-o", tmp_path / "o", "--device", "cuda",
                  "--method", "ialm")  # fmt: skip
    assert res.code == 2 and "--device cuda runs the bestpair and ncf methods" in res.err


def test_auto_runs_on_the_gpu_when_there_is_one(fake_gpu, run_cli, tiny_clip, tmp_path) -> None:
    """The whole pipeline through the device option, with the CUDA backend's code on
    numpy: the masks equal the CPU's, and the summary says where it ran."""
    frames, _ = street_frames(n=60, seed=2)
    gpu = bpvideo.separate(frames)  # auto
    cpu = bpvideo.separate(frames, device="cpu")
    assert gpu.report["solver"]["device"] == "cuda" and cpu.report["solver"]["device"] == "cpu"
    assert np.count_nonzero(gpu.masks != cpu.masks) <= 10
    gpu, cpu = (bpvideo.separate(frames, window=25, overlap=5, device=d) for d in ("cuda", "cpu"))
    assert gpu.report["windows"]["count"] == 3  # backgrounds from the factors, joined
    assert np.count_nonzero(gpu.masks != cpu.masks) <= 10
    res = run_cli("separate", tiny_clip, "-o", tmp_path / "o", "--device", "cuda")
    assert res.code == 0 and "solving on the GPU: numpy standing in" in res.err
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["solver"]["device"] == "cuda" and summary["settings"]["device"] == "cuda"


def test_the_gpu_can_be_turned_off(monkeypatch) -> None:
    monkeypatch.setenv("BPVIDEO_CUDA", "0")
    assert resolve_device("auto") == "cpu"
    with pytest.raises(InputError, match="turned off by BPVIDEO_CUDA=0"):
        resolve_device("cuda")


def test_nothing_on_the_cuda_path_imports_imageio_ffmpeg() -> None:
    """A GPU machine may have no ffmpeg: the solver and the library on arrays do not need
    it."""
    code = (
        "import sys, numpy as np, bpvideo, bpvideo.solvers.backends.cuda; "
        "frames = np.random.default_rng(0).integers(0, 255, (12, 24, 32), dtype=np.uint8); "
        "bpvideo.separate(frames, rank=1); sys.exit('imageio_ffmpeg' in sys.modules)"
    )
    import subprocess

    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


# --- on a GPU -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpu():
    """The CUDA backend (skips without CuPy or a GPU)."""
    problem = cuda_module.cuda_problem()
    if problem is not None:
        pytest.skip(InputError("{device='cuda'} " + problem, option=("device", "cuda")).message)
    return get_backend("cuda")


@pytest.mark.gpu
def test_gpu_thresholds_are_exact(gpu) -> None:
    rng = np.random.default_rng(21)
    for M in (ties_and_zeros(rng, 700, 90, np.float32),
              rng.standard_normal((5000, 40)).astype(np.float32)):  # fmt: skip
        want = get_backend("numpy").thresholds(M, 9, 70)
        got = gpu.thresholds(gpu.xp.asarray(M), 9, 70)
        assert_same_thresholds(got, want)
        np.testing.assert_array_equal(
            project_sparse(M, 0.1, backend=gpu), project_sparse(M, 0.1, backend="numpy")
        )


@pytest.mark.gpu
@pytest.mark.parametrize("sweeps", [0, 1])
def test_gpu_solve_agrees_with_the_cpu_on_the_paper_instance(gpu, sweeps: int) -> None:
    """Done-when: relative difference of L < 1e-4 in float32 on the paper's instance."""
    p = make_rpca_problem(1000, 300, rank=5, sparsity=0.05, seed=0)
    A = p.A.astype(np.float32)
    kw = {"tol": 1e-6, "max_iter": 500, "sweeps": sweeps}
    cpu = best_pair(A, 5, 0.05, backend="numpy", **kw)
    on_gpu = best_pair(A, 5, 0.05, backend="cuda", **kw)
    assert isinstance(on_gpu.L, np.ndarray) and on_gpu.L.dtype == np.float32
    assert on_gpu.converged
    assert np.linalg.norm(on_gpu.L - cpu.L) / np.linalg.norm(cpu.L) < 1e-4
    assert np.linalg.norm(on_gpu.L - p.L) / np.linalg.norm(p.L) < 1e-4
    L64 = best_pair(p.A, 5, 0.05, backend="cuda", **kw).L  # float64 in, float64 out
    assert L64.dtype == np.float64
    np.testing.assert_allclose(
        project_rank(A, 5, backend=gpu), project_rank(A, 5, backend="numpy"), atol=1e-2
    )


@pytest.mark.gpu
def test_gpu_masks_agree_with_the_cpu(gpu) -> None:
    frames, _ = street_frames(n=120, seed=3)
    on_gpu = bpvideo.separate(frames, device="cuda")
    cpu = bpvideo.separate(frames, device="cpu")
    assert on_gpu.report["solver"]["device"] == "cuda"
    assert np.count_nonzero(on_gpu.masks != cpu.masks) <= 5 * len(frames)


@pytest.mark.gpu
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("dense", [False, True])
def test_gpu_compiled_step_matches_the_array_step(gpu, masked: bool, dense: bool) -> None:
    """The compiled pass of the CUDA backend against its array-module reference."""
    xp = gpu.xp
    rng = np.random.default_rng(31)
    m, n, r = 3000, 300, 2
    W, Sp, A = (rng.standard_normal((m, n)).astype(np.float32) for _ in range(3))
    U, V, Up, Vp = (rng.standard_normal((d, r)).astype(np.float32) for d in (m, n, m, n))
    L, Lp = (U @ V.T, Up @ Vp.T) if dense else ((U, V), (Up, Vp))
    mask = rng.random((m, n)) < 0.7 if masked else None
    thr = get_backend("numpy").thresholds(W, 30, 300)
    block = np.linalg.qr(rng.standard_normal((n, 7)))[0]
    out = {}
    for name, kernels in (("compiled", gpu), ("array", ArrayBackend(xp))):
        bufs = [xp.asarray(X) for X in (W, Sp, np.empty_like(W), A)]
        dev = lambda X: tuple(xp.asarray(f) for f in X) if isinstance(X, tuple) else xp.asarray(X)  # noqa: E731
        sq, Y, _ = kernels.fused_step(
            *bufs, None if mask is None else xp.asarray(mask), thr, dev(L), dev(Lp),
            0.5, 0.5, 0.55, 30, block=block, row_guess=thr[0],
        )  # fmt: skip
        out[name] = ([to_host(B) for B in bufs[:3]], sq, to_host(Y))
    (got, sq, Y), (want, sq_want, Y_want) = out["compiled"], out["array"]
    np.testing.assert_array_equal(got[0], want[0])  # S_k = T_alpha(W)
    for G, X in zip(got[1:], want[1:], strict=True):
        np.testing.assert_allclose(G, X, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(Y, Y_want, rtol=1e-4, atol=1e-2)
    for key, value in sq_want.items():
        assert sq[key] == pytest.approx(value, rel=1e-5)


@pytest.mark.gpu
def test_gpu_compiled_bracket_passes_match_the_array_ones(gpu) -> None:
    xp = gpu.xp
    rng = np.random.default_rng(32)
    M = xp.asarray(np.rint(rng.standard_normal((5000, 300)) * 3).astype(np.float32))
    rlo, rhi = (xp.asarray(b) for b in np.sort(rng.random((2, 5000)) * 4, axis=0))
    clo, chi = (xp.asarray(b) for b in np.sort(rng.random((2, 300)) * 4, axis=0))
    bounds = [b.astype(np.float32) for b in (rlo, rhi, clo, chi)]
    reference = ArrayBackend(xp)
    for got, want in zip(gpu.bracket_counts(M, *bounds), reference.bracket_counts(M, *bounds),
                         strict=True):  # fmt: skip
        np.testing.assert_array_equal(to_host(got), to_host(want))
    np.testing.assert_array_equal(
        to_host(gpu.bracket_flags(M, *bounds)), to_host(reference.bracket_flags(M, *bounds))
    )
