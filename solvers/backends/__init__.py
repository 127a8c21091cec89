"""Solver back ends: one module each (``highs``, ``pyomo``, ``cvxpy``), the :class:`Backend` protocol
with its :class:`Capabilities` (``base.py``), and :func:`get_backend` / :func:`run`.

Every exact path (PF and PA auctions, placements, the relaxation and heuristic LPs, Gavel's
bisection LPs) reaches a solver through here. A back end is named (``"highs"``) or given as an
object satisfying :class:`Backend` (docs/extending.md, "A solver back end"); there is no global
registration. All three built-in back ends run HiGHS underneath; only ``highs`` takes a warm start
and is safe on a thread pool.
"""

from __future__ import annotations

import inspect

from fairplace.core.errors import UnknownName
from fairplace.core.registry import Entry, Registry
from fairplace.formulations.program import RawResult

from ..options import SolveOptions
from .base import Backend, Capabilities, CapabilityError, as_milp, is_mip, require
from .cvxpy import CvxpyBackend
from .highs import HighsBackend
from .pyomo import PyomoBackend

#: built-in back ends: name -> entry (the class; its modelling layer is imported when it solves or
#: is preloaded). What a back end can do is its
#: own :class:`Capabilities` (the ``capabilities`` attribute every back end has, built-in or not). A
#: user's object satisfying :class:`Backend` takes the same path (``BACKEND_REGISTRY.resolve``);
#: there is no global registration.
BACKEND_REGISTRY = Registry(
    "back end",
    {
        "highs": Entry(
            HighsBackend,
            doc="highspy: HiGHS in process (warm starts; safe on a thread pool)",
        ),
        "pyomo": Entry(
            PyomoBackend,
            doc="Pyomo model solved by HiGHS",
        ),
        "cvxpy": Entry(
            CvxpyBackend,
            doc="CVXPY problem solved by HiGHS",
        ),
    },
    where="backend",
    protocols=(Backend,),
    shape="name, capabilities (a Capabilities) and solve(problem, opts, start=None)",
)
BACKENDS = BACKEND_REGISTRY.names()

__all__ = [
    "BACKENDS",
    "BACKEND_REGISTRY",
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
    back end is made here, its modelling layer (Pyomo, CVXPY) only when it solves."""
    if isinstance(backend, type):
        raise UnknownName(
            "backend",
            f"expected a back-end object, got the class {backend.__name__}: pass {backend.__name__}()",
        )
    be = BACKEND_REGISTRY.resolve(backend)
    if not isinstance(getattr(be, "capabilities", None), Capabilities):
        raise UnknownName(
            BACKEND_REGISTRY.where,
            f"expected a back-end name or an object with {BACKEND_REGISTRY.shape}; the "
            f"capabilities of {type(be).__name__} are not a Capabilities",
        )
    return be


def preload(backend: str | Backend) -> None:
    """Import ``backend``'s modelling layer now, so that one-time imports (Pyomo, CVXPY: seconds)
    are not counted in a solve's ``seconds`` (a back end object may offer ``preload()``)."""
    be = get_backend(backend)
    if isinstance(backend, str):
        module = inspect.getmodule(BACKEND_REGISTRY.get(backend).factory)
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
