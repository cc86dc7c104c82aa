"""What every solver shares: the result type, the callback's iterate, checks of the data.

Solvers are plain functions of the data matrix ``A`` (m x n, one column per frame) that
return a :class:`SolverResult`; none of them reads or writes files.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bpvideo.errors import ConvergenceWarning, InputError

__all__ = [
    "Callback",
    "DeviceResult",
    "History",
    "Iterate",
    "SolverResult",
    "array_module",
    "as_float",
    "check_mask",
    "check_positive",
    "check_problem",
    "check_start",
    "relative_change",
    "relative_residual",
    "to_host",
    "warn_max_iter",
]


@dataclass
class SolverResult:
    """What a robust-PCA solver returns.

    Attributes
    ----------
    L : (m, n) ndarray
        Low-rank part (the background), same dtype as the data.
    S : (m, n) ndarray
        Sparse part (the foreground).
    iterations : int
        Iterations run.
    converged : bool
        True when a stopping tolerance was met before ``max_iter``.
    residuals : list of float
        Relative residual ``||P_Omega(A - L - S)||_F / ||P_Omega(A)||_F`` after each
        iteration.
    changes : list of float
        Relative change ``||Y_{k+1} - Y_k||_F / ||Y_k||_F`` after each iteration.
    method : str
        Name of the method that produced the result.
    seconds : float
        Wall time of the solve.
    factors : tuple of ndarray or None
        ``(U, V)`` with ``L = U @ V.T`` (``U`` m x r, ``V`` n x r), when the solver keeps
        ``L`` in factored form (best pair and NCF do); None otherwise. Linear maps of the
        frames (resizing) can then act on the r columns of ``U`` instead of all of ``L``.
    """

    L: np.ndarray
    S: np.ndarray
    iterations: int
    converged: bool
    residuals: list[float] = field(default_factory=list)
    changes: list[float] = field(default_factory=list)
    method: str = "bestpair"
    seconds: float = 0.0
    factors: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def residual(self) -> float:
        """Final relative residual (``nan`` when no iteration ran)."""
        return self.residuals[-1] if self.residuals else float("nan")


def array_module(x: Any) -> Any:
    """The array module of ``x``: numpy, or CuPy for an array on the GPU."""
    if isinstance(x, np.ndarray):
        return np
    import cupy  # only a CuPy array gets here

    return cupy


def to_host(x: Any) -> np.ndarray:
    """``x`` as a numpy array: as it is, or copied from the GPU (a CuPy array)."""
    return x if isinstance(x, np.ndarray) else x.get()


class _HostOnRead:
    """An attribute kept as it is given and copied to the host, once, when first read."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        value = to_host(getattr(obj, self.slot))
        setattr(obj, self.slot, value)
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        setattr(obj, self.slot, value)


class DeviceResult(SolverResult):
    """A :class:`SolverResult` of a GPU solve: ``L`` and ``S`` stay on the GPU until read
    (then copied to the host, once). A caller that needs only ``factors`` (the pipeline at
    full resolution, with the default mask rule) never moves the m x n matrices."""

    L = _HostOnRead()
    S = _HostOnRead()


class Iterate:
    """The state handed to a solver's ``callback`` after each iteration.

    Attributes
    ----------
    iteration : int
        1-based iteration number.
    L : ndarray
        Current low-rank iterate (formed on first access when the solver keeps it in
        factored form; a view or a new array: copy it to keep it).
    S : ndarray
        Current sparse iterate (a view: copy it to keep it).

    Both are numpy arrays; a solve on the GPU copies them to the host on first access.
    residual : float
        Relative residual after this iteration.
    change : float
        Relative change of ``[S; L]`` in this iteration.
    """

    def __init__(
        self,
        iteration: int,
        L: np.ndarray | tuple[np.ndarray, np.ndarray],
        S: np.ndarray,
        residual: float,
        change: float,
    ) -> None:
        self.iteration = iteration
        self._L = L
        self._S = S
        self.residual = residual
        self.change = change

    @property
    def L(self) -> np.ndarray:
        if isinstance(self._L, tuple):
            U, V = (to_host(f) for f in self._L)
            self._L = U @ V.T
        return to_host(self._L)

    @property
    def S(self) -> np.ndarray:
        return to_host(self._S)

    def __repr__(self) -> str:
        return (
            f"Iterate(iteration={self.iteration}, residual={self.residual:.3g}, "
            f"change={self.change:.3g})"
        )


#: A solver's ``callback``: called with the :class:`Iterate` after every iteration.
Callback = Callable[[Iterate], None]


def as_float(A: Any) -> np.ndarray:
    """float32 and float64 stay as they are; anything else becomes float32.

    Raises
    ------
    InputError
        Entries that are not real numbers (strings, complex), or NaN or infinite (LAPACK
        failed on them with a LinAlgError).
    """
    A = np.asarray(A)
    if A.dtype.kind not in "biuf":
        raise InputError(f"the data are of dtype {A.dtype}: give a real-valued matrix "
                         "(pixels x frames), uint8 or float")  # fmt: skip
    if A.dtype not in (np.float32, np.float64):
        A = A.astype(np.float32)
    if not np.isfinite(A.sum()) and not np.isfinite(A).all():  # the sum: no copy
        raise InputError("the data hold NaN or infinite entries: give finite numbers (set "
                         "missing entries to 0 and mark them unobserved in {mask})",
                         option=("mask", None))  # fmt: skip
    return A


def _bad(name: str, value: Any, rule: str) -> InputError:
    return InputError(f"{{{name}=}} {rule}", option=(name, value))


def _real(name: str, value: Any, rule: str) -> float:
    """``value`` as a float; a string, None or a bool is refused with ``rule`` (float()
    would raise its own message, or read a string)."""
    try:
        if isinstance(value, (str, bytes, bool)):
            raise TypeError
        return float(value)
    except (TypeError, ValueError):
        raise _bad(name, value, rule) from None


def _finite(X: Any) -> bool:
    """Whether every entry of ``X`` is finite; the sum first, which makes no copy."""
    return math.isfinite(float(X.sum())) or bool(np.isfinite(X).all())


def check_start(L0: Any, S0: Any, shape: tuple[int, int]) -> None:
    """Refuse a starting point that does not fit the data, before the solve broadcasts it.

    Parameters
    ----------
    L0 : (m, n) array, or ((m, k), (n, k)) factors, or None
    S0 : (m, n) array or None
    shape : (int, int)
        ``(m, n)``, the data's.

    Raises
    ------
    InputError
        A shape other than the data's, or entries that are NaN or infinite.
    """
    m, n = shape
    for name, value in (("L0", L0), ("S0", S0)):
        if value is None:
            continue
        if name == "L0" and isinstance(value, tuple):
            parts = [f if hasattr(f, "shape") else np.asarray(f) for f in value]
            got: Any = tuple(tuple(f.shape) for f in parts)
            fits = (
                len(parts) == 2
                and all(len(f.shape) == 2 for f in parts)
                and (parts[0].shape[0], parts[1].shape[0]) == (m, n)
                and parts[0].shape[1] == parts[1].shape[1]
            )
            want = f"factors of shapes ({m}, k) and ({n}, k)"
        else:
            parts = [value if hasattr(value, "shape") else np.asarray(value)]
            got = tuple(parts[0].shape)
            fits, want = got == (m, n), f"an array of shape {(m, n)}"
        if not fits:
            raise InputError(
                f"{name} has shape {got} but the data are {(m, n)}: give {want}, or leave "
                f"{name}=None"
            )
        if not all(_finite(f) for f in parts):
            raise InputError(f"{name} holds NaN or infinite entries: give finite numbers")


def check_problem(
    shape: tuple[int, ...],
    rank: int,
    sparsity: float,
    gamma: float = 1.1,
    a: float = 0.5,
    b: float = 0.5,
    max_iter: int = 1,
    tol: float = 0.0,
) -> None:
    """Validate solver parameters against the data shape; raise :class:`InputError`.

    Parameters
    ----------
    shape : tuple of int
        ``(m, n)``: pixels x frames.
    rank, sparsity, gamma, a, b, max_iter, tol
        As in :func:`~bpvideo.solvers.best_pair`.

    Examples
    --------
    >>> check_problem((100, 4), 5, 0.1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bpvideo.errors.InputError: rank=5 must be < number of frames (4) and pixels (100): ...
    """
    if len(shape) != 2:
        raise InputError(f"the data must be a 2-D matrix (pixels x frames), got shape {shape}")
    m, n = shape
    if n < 2:
        raise InputError(
            f"the input has {n} frame(s); robust PCA needs at least 2: give a longer clip"
        )
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 1:
        raise _bad("rank", rank, "must be a positive integer: try {rank=2}")
    if rank >= min(m, n):
        raise _bad(
            "rank",
            rank,
            f"must be < number of frames ({n}) and pixels ({m}): lower {{rank}} or give more "
            "frames",
        )
    rule = "must be in (0, 1): try {sparsity=0.1}"
    if not (0.0 < _real("sparsity", sparsity, rule) < 1.0):
        raise _bad("sparsity", sparsity, rule)
    rule = "must be in (0, 2]: the paper recommends 1.1"
    if not (0.0 < _real("gamma", gamma, rule) <= 2.0):
        raise _bad("gamma", gamma, rule)
    for name, value in (("a", a), ("b", b)):
        rule = "(inertia) must be in [0, 1): the paper uses 0.5"
        if not (0.0 <= _real(name, value, rule) < 1.0):
            raise _bad(name, value, rule)
    rule = "must be a positive integer: try {max_iter=100}"
    if not _real("max_iter", max_iter, rule).is_integer() or max_iter < 1:
        raise _bad("max_iter", max_iter, rule)
    rule = "must be a finite number >= 0: try {tol=0.001}"
    if not (_real("tol", tol, rule) >= 0.0) or not math.isfinite(float(tol)):
        raise _bad("tol", tol, rule)


def check_mask(
    mask: Any, shape: tuple[int, ...], *, all_true_is_none: bool = False
) -> np.ndarray | None:
    """Validate an observation mask (True on observed entries); None is fully observed.

    Parameters
    ----------
    mask : array_like of bool or None
        The mask.
    shape : tuple of int
        Shape of the data.
    all_true_is_none : bool, default False
        Return None for a mask that observes every entry.

    Returns
    -------
    (m, n) bool ndarray or None

    Raises
    ------
    InputError
        The shapes differ, or no entry is observed.
    """
    if mask is None:
        return None
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != shape:
        raise InputError(f"mask shape {mask.shape} differs from data shape {shape}")
    if not mask.any():
        raise InputError("the observation mask has no observed entry: observe some pixels")
    if all_true_is_none and mask.all():
        return None
    return mask


def check_positive(name: str, value: float, hint: str) -> None:
    """Refuse a parameter that is not a finite number > 0 (``hint``: where to start)."""
    if isinstance(value, bool) or not (math.isfinite(float(value)) and float(value) > 0.0):
        raise _bad(name, value, f"must be a finite number > 0: {hint}")


def relative_change(S_new: np.ndarray, L_new: np.ndarray, S: np.ndarray, L: np.ndarray) -> float:
    """``||[S_new; L_new] - [S; L]||_F / ||[S; L]||_F`` (inf when ``[S; L] = 0``)."""
    norm_Y = math.sqrt(float(np.vdot(S, S)) + float(np.vdot(L, L)))
    dS = S_new - S
    dL = L_new - L
    step = math.sqrt(float(np.vdot(dS, dS)) + float(np.vdot(dL, dL)))
    return step / norm_Y if norm_Y > 0 else math.inf


def relative_residual(
    A_obs: np.ndarray, L: np.ndarray, S: np.ndarray, mask: np.ndarray | None, norm_A: float
) -> float:
    """``||P_Omega(A - L - S)||_F / ||P_Omega(A)||_F``."""
    E = A_obs - L - S
    if mask is not None:
        E[~mask] = 0
    return float(np.linalg.norm(E)) / norm_A


def warn_max_iter(
    method: str, max_iter: int, what: str, value: float, tol: float, stacklevel: int = 3
) -> None:
    """Warn :class:`~bpvideo.errors.ConvergenceWarning`: ``method`` stopped at ``max_iter``."""
    warnings.warn(
        f"{method} stopped at max_iter ({max_iter}) with {what} {value:.2e} > tol ({tol:g}): "
        "raise max_iter or tol",
        ConvergenceWarning,
        stacklevel=stacklevel,
    )


class History:
    """The residual and change after each iteration of a solve, its callback, its result.

    Parameters
    ----------
    method : str
        The solver's name (``SolverResult.method``).
    callback : callable, optional
        Called with the :class:`Iterate` after each iteration (:meth:`record`).
    started : float, optional
        ``time.perf_counter()`` when the solve began (default: now).
    """

    def __init__(
        self, method: str, callback: Callback | None, started: float | None = None
    ) -> None:
        self.method = method
        self.callback = callback
        self.residuals: list[float] = []
        self.changes: list[float] = []
        self.started = time.perf_counter() if started is None else started

    def record(
        self, k: int, L: np.ndarray | tuple[np.ndarray, np.ndarray], S: np.ndarray,
        residual: float, change: float, *, notify: bool = True,
    ) -> None:  # fmt: skip
        """Keep iteration ``k``'s residual and change; hand the iterate to the callback
        (unless ``notify`` is off: an iterate that diverged)."""
        self.residuals.append(residual)
        self.changes.append(change)
        if notify and self.callback is not None:
            self.callback(Iterate(k, L, S, residual, change))

    def result(
        self,
        L: np.ndarray,
        S: np.ndarray,
        iterations: int,
        converged: bool,
        *,
        max_iter: int,
        tol: float,
        stopped_by: tuple[str, float] | None = None,
        factors: tuple[np.ndarray, np.ndarray] | None = None,
        warn: bool = True,
        stacklevel: int = 4,
    ) -> SolverResult:
        """The :class:`SolverResult` (a :class:`DeviceResult` for arrays on the GPU); warns
        :class:`ConvergenceWarning` when not converged (and ``warn``).

        ``stopped_by``: what the warning quotes against ``tol`` (default: the last relative
        residual); ``stacklevel`` points it at the public solver's caller.
        """
        if warn and not converged:
            what, value = stopped_by or ("relative residual", self.residuals[-1])
            warn_max_iter(self.method, max_iter, what, value, tol, stacklevel=stacklevel)
        on_device = not (isinstance(L, np.ndarray) and isinstance(S, np.ndarray))
        return (DeviceResult if on_device else SolverResult)(
            L=L,
            S=S,
            iterations=iterations,
            converged=converged,
            residuals=self.residuals,
            changes=self.changes,
            method=self.method,
            seconds=time.perf_counter() - self.started,
            factors=factors,
        )
