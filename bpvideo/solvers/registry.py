"""The solvers by ``--method`` name, with the options each takes (:data:`REGISTRY`).

A solver's own signature is the one home of its parameters' defaults: the option table
(:mod:`bpvideo.settings`) reads them from here (:func:`parameter_default`), and the
pipeline calls a solver with exactly the options its entry names (:func:`solver_call`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bpvideo.errors import InputError
from bpvideo.solvers._common import SolverResult
from bpvideo.solvers.baselines import godec, ialm
from bpvideo.solvers.best_pair import best_pair, ncf
from bpvideo.solvers.rpca_gd import rpca_gd

__all__ = [
    "REGISTRY",
    "SOLVERS",
    "SolverEntry",
    "get_solver",
    "on_backend",
    "parameter_default",
    "solver_call",
]


@dataclass(frozen=True)
class SolverEntry:
    """One solver: its function and the options it takes.

    Attributes
    ----------
    function : callable
        ``function(A, *positional, **keywords)`` -> :class:`SolverResult`.
    positional : tuple of str
        Options passed after ``A`` in this order (``rank``, ``sparsity``).
    keywords : tuple of str
        Options passed as keywords (``max_iter``, ``tol``, ``gamma`` ...).
    on_backend : bool
        Whether its iterations run on a :mod:`~bpvideo.solvers.backends` backend (numba's
        compiled kernels, a CUDA GPU); the others run numpy on the CPU. Every solver takes
        an observation mask (``mask=``).
    """

    function: Callable[..., SolverResult]
    positional: tuple[str, ...]
    keywords: tuple[str, ...]
    on_backend: bool = False


_ITERATION = ("max_iter", "tol")
#: ``--method`` name -> its :class:`SolverEntry`.
REGISTRY: dict[str, SolverEntry] = {
    "bestpair": SolverEntry(best_pair, ("rank", "sparsity"),
                            (*_ITERATION, "init", "gamma", "a", "b", "sweeps"), on_backend=True),
    "ncf": SolverEntry(ncf, ("rank", "sparsity"), (*_ITERATION, "init", "sweeps"),
                       on_backend=True),
    "ialm": SolverEntry(ialm, (), _ITERATION),
    "godec": SolverEntry(godec, ("rank", "sparsity"), (*_ITERATION, "seed")),
    "rpca_gd": SolverEntry(rpca_gd, ("rank", "sparsity"), _ITERATION),
}  # fmt: skip
#: ``--method`` name -> solver function.
SOLVERS: dict[str, Callable[..., SolverResult]] = {k: e.function for k, e in REGISTRY.items()}


def get_solver(method: str) -> Callable[..., SolverResult]:
    """The solver function of a ``--method`` name (see :data:`REGISTRY`)."""
    try:
        return REGISTRY[method].function
    except KeyError:
        raise InputError(
            f"{{method=}} must be one of: {', '.join(REGISTRY)}", option=("method", method)
        ) from None


def on_backend(method: str) -> bool:
    """Whether ``method``'s iterations run on a backend (numba, CUDA): see
    :class:`SolverEntry`."""
    return REGISTRY[method].on_backend


def parameter_default(name: str, method: str = "bestpair") -> Any:
    """The default of parameter ``name`` in the signature of ``method``'s solver.

    Examples
    --------
    >>> parameter_default("gamma"), parameter_default("max_iter")
    (1.1, 100)
    """
    return inspect.signature(REGISTRY[method].function).parameters[name].default


def solver_call(
    method: str, options: Mapping[str, Any]
) -> tuple[Callable[..., SolverResult], tuple[Any, ...], dict[str, Any]]:
    """The function, positional and keyword arguments (after ``A``) of ``method``, taken
    from ``options`` (any mapping of option names: the settings' ``solver`` section)."""
    entry = REGISTRY[method]
    args = tuple(options[name] for name in entry.positional)
    return entry.function, args, {name: options[name] for name in entry.keywords}
