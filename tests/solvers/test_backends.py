"""The solver backends: numba, numpy and array-module (the CUDA backend's code, on numpy)
kernels agree, and agree with Algorithm 1; one is chosen per solve by size."""

from __future__ import annotations

import numpy as np
import pytest

from bpvideo.errors import InputError
from bpvideo.solvers import best_pair, project_sparse, sparse_counts
from bpvideo.solvers.backends import (
    HAVE_NUMBA,
    Backend,
    available_backends,
    get_backend,
)
from bpvideo.solvers.backends import numpy as numpy_backend
from bpvideo.solvers.backends.array import ArrayBackend
from bpvideo.synthetic import make_rpca_problem

BOTH = ["numpy", "numba"]


@pytest.fixture(params=[*BOTH, "array"])
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each backend (numba skips when it is not installed; "array" is the CUDA backend's
    code on numpy)."""
    if request.param == "numba" and not HAVE_NUMBA:
        pytest.skip("numba is not installed")
    if request.param == "array":
        return ArrayBackend()
    return get_backend(request.param)


def backends() -> dict[str, Backend]:
    return {name: get_backend(name) for name in available_backends()}


def reference_step(S, Sp, L, Lp, A, mask, a, b, h):
    """One gradient step of Algorithm 1, written out with temporaries."""
    Sa, La = S + a * (S - Sp), L + a * (L - Lp)
    Sb, Lb = S + b * (S - Sp), L + b * (L - Lp)
    R = Sb + Lb - A
    if mask is not None:
        R = R * mask
    return Sa - h * R, La - h * R


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize(("a", "b"), [(0.5, 0.5), (0.3, 0.7), (0.0, 0.0)])
@pytest.mark.parametrize("dense", [False, True])
def test_fused_step_matches_reference(
    backend: Backend, masked: bool, a: float, b: float, dense: bool
) -> None:
    rng = np.random.default_rng(0)
    m, n, r = 40, 30, 2
    W, Sp, A = (rng.standard_normal((m, n)) for _ in range(3))
    U, V, Up, Vp = (rng.standard_normal((d, r)) for d in (m, n, m, n))
    L, Lp = U @ V.T, Up @ Vp.T
    mask = rng.random((m, n)) < 0.7 if masked else None
    k_row, k_col = sparse_counts(W.shape, 0.2)
    thr = backend.thresholds(W, k_row, k_col)
    S = project_sparse(W, 0.2, backend=backend)  # T_alpha(W)
    want_s, want_l = reference_step(S, Sp, L, Lp, A, mask, a, b, 0.55)
    block = np.linalg.qr(rng.standard_normal((n, 5)))[0]
    W2, Sp2, Wl = W.copy(), Sp.copy(), np.empty_like(W)
    factors = (L, Lp) if dense else ((U, V), (Up, Vp))
    sq, Y, rows = backend.fused_step(
        W2, Sp2, Wl, A, mask, thr, *factors, a, b, 0.55, k_row, block=block
    )
    assert np.array_equal(W2, S)  # S_k written over W
    np.testing.assert_allclose(Sp2, want_s, atol=1e-12)
    np.testing.assert_allclose(Wl, want_l, atol=1e-12)
    np.testing.assert_allclose(Y, want_l @ block, atol=1e-10)
    E = (A - L - S) if mask is None else (A - L - S) * mask
    want = {"dS": S - Sp, "dL": L - Lp, "S": Sp, "L": Lp, "E": E}
    for key, X in want.items():
        assert sq[key] == pytest.approx(float(np.sum(X * X)), rel=1e-10)
    if rows is not None:  # numba, array: row thresholds are the k-th largest magnitudes
        want_t = -np.sort(-np.abs(Sp2), axis=1)[:, k_row - 1]
        assert np.array_equal(rows[0], want_t)


@pytest.mark.parametrize("guess", [None, "good", "bad"])
def test_thresholds_exact_whatever_the_guess(backend: Backend, guess: str | None) -> None:
    rng = np.random.default_rng(3)
    M = rng.standard_normal((1200, 50)).astype(np.float32)
    k_row, k_col = 5, 120
    want = -np.sort(-np.abs(M), axis=0)[k_col - 1]
    col_guess = {None: None, "good": want * 1.01, "bad": want * 5}[guess]
    thr = backend.thresholds(M, k_row, k_col, col_guess=col_guess)
    assert np.array_equal(thr[2], want)
    assert np.array_equal(thr[0], -np.sort(-np.abs(M), axis=1)[:, k_row - 1])


def test_row_median_matches_numpy(backend: Backend) -> None:
    rng = np.random.default_rng(4)
    A = rng.integers(0, 9, size=(70, 31)).astype(np.float32)  # ties
    np.testing.assert_array_equal(backend.row_median(A), np.median(A, axis=1))
    B = A[:, :30]  # even count: mean of the two middle values
    B = np.ascontiguousarray(B)
    np.testing.assert_array_equal(backend.row_median(B), np.median(B, axis=1))
    mask = rng.random(A.shape) < 0.6
    mask[0] = False  # no observed entry: 0
    want = np.array([np.median(a[k]) if k.any() else 0.0 for a, k in zip(A, mask, strict=True)])
    np.testing.assert_array_equal(backend.row_median(A, mask), want)


def test_row_medians_of_a_large_matrix_are_each_rows_own() -> None:
    """Above NP_SPLIT_SIZE the numpy backend takes blocks of rows side by side: each row's
    median, and the dtype, are those of one call over the whole matrix."""
    from bpvideo.robust import masked_median
    from bpvideo.solvers.backends.numpy import NP_SPLIT_SIZE

    rng = np.random.default_rng(9)
    A = rng.integers(0, 40, size=(NP_SPLIT_SIZE // 100 + 7, 101)).astype(np.float32)
    mask = rng.random(A.shape) < 0.5
    mask[3] = False
    numpy_backend = get_backend("numpy")
    whole = numpy_backend.row_median(A)
    assert whole.dtype == np.float32
    np.testing.assert_array_equal(whole, np.median(A, axis=1))
    np.testing.assert_array_equal(numpy_backend.row_median(A, mask), masked_median(A, mask, 0.0))


def test_numpy_blocks_run_in_the_callers_thread_with_one_thread(monkeypatch) -> None:
    """``--threads 1``: the numpy backend's row blocks run one after the other in the
    calling thread (no thread of its own), with the bits of two threads side by side."""
    import threading

    from bpvideo import cores
    from bpvideo.solvers.backends import numpy as npb

    monkeypatch.setattr(cores, "_STATE", dict(cores._STATE))
    monkeypatch.setattr(npb, "NP_SPLIT_SIZE", 0)  # split even this small matrix
    rng = np.random.default_rng(12)
    A = rng.standard_normal((301, 47)).astype(np.float32)
    mask = rng.random(A.shape) > 0.1
    U, V = rng.standard_normal((301, 2)).astype(np.float32), rng.standard_normal((47, 2))
    backend = get_backend("numpy")
    answers, ran_in = [], []
    original = npb._np_fused_rows

    def spy(*args, **kwargs):
        ran_in.append(threading.current_thread())
        return original(*args, **kwargs)

    monkeypatch.setattr(npb, "_np_fused_rows", spy)
    for threads in (2, 1):
        cores.use(threads)
        ran_in.clear()
        W, Sp, Wl = A.copy(), 0.5 * A, 0.3 * A
        thr = backend.thresholds(W, 5, 30)
        sq, _, _ = backend.fused_step(W, Sp, Wl, A, mask, thr, (U, V), (U, V), 0.4, 0.3, 0.2, 5)
        got = [*thr, W, Sp, Wl, np.array(list(sq.values())), backend.row_median(A, mask)]
        answers.append([np.ascontiguousarray(g).tobytes() for g in got])
        assert len(ran_in) == 2  # two row blocks either way
        own = {t is threading.current_thread() for t in ran_in}
        assert own == ({True} if threads == 1 else {True, False})
    assert answers[0] == answers[1]


def test_products(backend: Backend) -> None:
    rng = np.random.default_rng(5)
    M = rng.standard_normal((500, 40))
    V = rng.standard_normal((40, 6))
    Q = rng.standard_normal((500, 6))
    np.testing.assert_allclose(backend.matmul(M, V), M @ V, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(backend.t_matmul(M, Q), M.T @ Q, rtol=1e-12, atol=1e-10)


def test_projection_same_on_both_paths_with_ties() -> None:
    rng = np.random.default_rng(1)
    M = rng.integers(-3, 4, size=(60, 45)).astype(np.float64)  # many ties
    out = {name: project_sparse(M, 0.2, backend=b) for name, b in backends().items()}
    k_row, k_col = sparse_counts(M.shape, 0.2)
    for P in out.values():
        nz = P != 0
        assert (nz.sum(axis=1) <= k_row).all() and (nz.sum(axis=0) <= k_col).all()
    if len(out) == 2:
        assert np.array_equal(out["numpy"], out["numba"])


def test_solver_same_on_both_paths(backend: Backend) -> None:
    p = make_rpca_problem(120, 90, rank=3, sparsity=0.05, observed=0.9, seed=2)
    result = best_pair(
        p.A, 3, 0.05, mask=p.mask, tol=1e-12, max_iter=1000, sweeps=0, backend=backend
    )
    assert result.converged
    assert np.linalg.norm(result.L - p.L) / np.linalg.norm(p.L) < 1e-6


def test_paths_give_same_iterates_on_video_like_data() -> None:
    if not HAVE_NUMBA:
        pytest.skip("numba is not installed")
    from bpvideo.synthetic import make_scene

    scene = make_scene(48, 36, 40, seed=3)
    A = scene.frames[..., 1].reshape(40, -1).T.astype(np.float32).copy()
    np_res, nb_res = (
        best_pair(A, 2, 0.1, tol=1e-3, max_iter=100, sweeps=0, backend=name) for name in BOTH
    )
    assert np_res.iterations == nb_res.iterations
    rel = np.linalg.norm(np_res.L - nb_res.L) / np.linalg.norm(np_res.L)
    assert rel < 1e-4


def test_split_numpy_kernels_equal_the_whole_matrix_ones(monkeypatch) -> None:
    rng = np.random.default_rng(8)
    A = (rng.random((600, 80)) * 50).astype(np.float32)
    A[rng.random(A.shape) < 0.05] += 120
    kw = {"tol": 1e-6, "sweeps": 0, "backend": "numpy"}
    monkeypatch.setattr(numpy_backend, "NP_SPLIT_SIZE", 1 << 40)  # one block
    whole = best_pair(A, 2, 0.1, **kw)
    whole_p = project_sparse(np.rint(A), 0.1, backend="numpy")  # integer ties
    monkeypatch.setattr(numpy_backend, "NP_SPLIT_SIZE", 0)  # row and column blocks
    split = best_pair(A, 2, 0.1, **kw)
    split_p = project_sparse(np.rint(A), 0.1, backend="numpy")
    np.testing.assert_array_equal(split_p, whole_p)
    assert split.iterations == whole.iterations
    np.testing.assert_allclose(split.L, whole.L, rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(split.S != 0, whole.S != 0)


def test_auto_is_numpy_and_numba_is_chosen_by_name(monkeypatch) -> None:
    if not HAVE_NUMBA:
        pytest.skip("numba is not installed")
    # the same kernels whatever the size: a solve gives the same bits with or without a
    # compiled cache, and with or without numba installed
    assert get_backend("auto").name == "numpy"
    assert get_backend(None).name == "numpy"
    assert get_backend("numba").name == "numba"
    assert get_backend("numpy").name == "numpy"
    backend = get_backend("numpy")
    assert get_backend(backend) is backend  # a Backend is used as it is
    with pytest.raises(InputError, match="backend='sometimes' must be one of"):
        get_backend("sometimes")
    with pytest.raises(ValueError):  # InputError is a ValueError
        get_backend("sometimes")


def test_numba_off_by_environment_means_numpy(monkeypatch) -> None:
    from bpvideo.solvers import backends as module

    monkeypatch.setattr(module, "HAVE_NUMBA", False)  # BPVIDEO_NUMBA=0, or not installed
    assert get_backend("auto").name == "numpy"
    assert module.available_backends() == ["numpy"]
    with pytest.raises(InputError, match="needs numba"):
        get_backend("numba")


def test_backends_are_chosen_once_per_solve(backend: Backend) -> None:
    """A solve runs on the backend it is given: forcing each gives the same result."""
    p = make_rpca_problem(60, 40, rank=2, sparsity=0.05, seed=4)
    result = best_pair(p.A, 2, 0.05, backend=backend, tol=1e-8, sweeps=0, max_iter=300)
    assert np.linalg.norm(result.L - p.L) / np.linalg.norm(p.L) < 1e-5
    assert backend.xp is np and isinstance(backend.name, str)


def test_numba_kernels_are_serial_and_any_split_gives_the_same_bits(monkeypatch) -> None:
    """The kernels are compiled serial (``parallel=True`` compiles three times longer: the
    first run after an install, issue 39); the backend splits their rows among threads,
    and every split gives the same bits as one thread."""
    if not HAVE_NUMBA:
        pytest.skip("numba is not installed")
    from bpvideo import cores
    from bpvideo.solvers.backends import _numba_kernels as kernels
    from bpvideo.solvers.backends import numba as nb

    dispatchers = [v for v in vars(kernels).values() if hasattr(v, "targetoptions")]
    assert len(dispatchers) >= 7
    assert not any(d.targetoptions.get("parallel") for d in dispatchers)
    monkeypatch.setattr(cores, "_STATE", dict(cores._STATE))
    monkeypatch.setattr(nb, "PARALLEL_MIN_SIZE", 0)  # split even this small matrix
    monkeypatch.setattr(kernels.numba.config, "NUMBA_NUM_THREADS", 8)
    rng = np.random.default_rng(11)
    A = rng.standard_normal((997, 61)).astype(np.float32)
    A[rng.random(A.shape) < 0.2] = 0  # ties at zero
    mask = rng.random(A.shape) > 0.1
    U, V = rng.standard_normal((997, 2)).astype(np.float32), rng.standard_normal((61, 2))
    block = rng.standard_normal((61, 4)).astype(np.float32)
    backend = get_backend("numba")
    answers = []
    for threads in (1, 3, 8):
        cores.use(threads)
        W, Sp, Wl = A.copy(), 0.5 * A, 0.3 * A
        thr = backend.thresholds(W, 12, 150)
        sq, Y, rows = backend.fused_step(
            W, Sp, Wl, A, mask, thr, (U, V), (U, V), 0.4, 0.3, 0.2, 12, block=block
        )
        backend.apply_thresholds(Sp, backend.thresholds(Sp, 12, 150, rows=rows))
        got = [*thr, W, Sp, Wl, Y, *rows, np.array(list(sq.values()))]
        got += [backend.matmul(A, block), backend.t_matmul(A, U), backend.row_median(A, mask)]
        answers.append([np.ascontiguousarray(g).tobytes() for g in got])
    assert answers[0] == answers[1] == answers[2]
