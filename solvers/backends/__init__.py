"""Solver back ends: one module each (``highs``, ``pyomo``, ``cvxpy``), the :class:`Backend` protocol
with its :class:`Capabilities` (``base.py``), and :func:`get_backend` / :func:`run`.

Every exact path (PF and PA auctions, placements, the relaxation and heuristic LPs, Gavel's
bisection LPs) reaches a solver through here. A back end is named (``"highs"``) or given as an
object satisfying :class:`Backend` (docs/extending.md, "A solver back end"); there is no global
registration. All three built-in back ends run HiGHS underneath; only ``highs`` takes a warm start
and is safe on a thread pool.
"""

from __future__ import annotations

import importlib

from fairplace.core.errors import UnknownName
from fairplace.formulations.program import RawResult

from ..options import SolveOptions
from .base import Backend, Capabilities, CapabilityError, as_milp, is_mip, require

#: built-in back ends: name -> (module, class)
BUILTIN = {
    "highs": ("highs", "HighsBackend"),
    "pyomo": ("pyomo", "PyomoBackend"),
    "cvxpy": ("cvxpy", "CvxpyBackend"),
}
BACKENDS = tuple(BUILTIN)

__all__ = [
    "BACKENDS",
    "Backend",
    "CapabilityError",
    "Capabilities",
    "as_milp",
    "get_backend",
    "is_mip",
    "preload",
    "require",
    "run",
]


def get_backend(backend: str | Backend) -> Backend:
    """The back end named ``backend`` (``highs``, ``pyomo``, ``cvxpy``), or ``backend`` itself when it
    is an object satisfying :class:`Backend` (``UnknownName`` otherwise). The module of a named
    back end is imported here, its modelling layer (Pyomo, CVXPY) only when it solves."""
    if isinstance(backend, str):
        if backend not in BUILTIN:
            raise UnknownName(
                "backend", f"unknown back end {backend!r}; expected one of {list(BACKENDS)}"
            )
        module, cls = BUILTIN[backend]
        return getattr(importlib.import_module(f"{__name__}.{module}"), cls)()
    if isinstance(backend, type):
        raise UnknownName(
            "backend",
            f"expected a back-end object, got the class {backend.__name__}: pass {backend.__name__}()",
        )
    if not isinstance(backend, Backend) or not isinstance(
        getattr(backend, "capabilities", None), Capabilities
    ):
        raise UnknownName(
            "backend",
            f"expected a back-end name {list(BACKENDS)} or an object with name, capabilities "
            f"(a Capabilities) and solve(problem, opts, start=None); got {type(backend).__name__}",
        )
    return backend


def preload(backend: str | Backend) -> None:
    """Import ``backend``'s modelling layer now, so that one-time imports (Pyomo, CVXPY: seconds)
    are not counted in a solve's ``seconds`` (a back end object may offer ``preload()``)."""
    be = get_backend(backend)
    if isinstance(backend, str):
        module = importlib.import_module(f"{__name__}.{BUILTIN[backend][0]}")
        getattr(module, "preload", lambda: None)()
    elif callable(hook := getattr(be, "preload", None)):
        hook()


def run(
    problem, backend: str | Backend = "highs", opts: SolveOptions = SolveOptions(), start=None
) -> RawResult:
    """Solve ``problem`` (a MILP or a formulation) on ``backend`` after checking its capabilities
    (:class:`CapabilityError` names what is missing)."""
    be = get_backend(backend)
    require(be, problem, opts, start)
    return be.solve(problem, opts, start=start)
