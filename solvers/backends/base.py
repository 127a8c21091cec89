"""The solver back-end interface (in the manner of CVXPY's solver interface: a name, capability
flags, one ``solve``).

A back end solves one linear program in solver-neutral form — a
:class:`~fairplace.formulations.program.MILP`, or a formulation object offering ``to_milp()`` (and,
for the algebraic back ends, ``to_pyomo()`` / ``from_pyomo(model)`` / ``to_cvxpy()``) — and returns
a :class:`~fairplace.formulations.program.RawResult` (status ``optimal`` | ``time_limit`` |
``infeasible`` | ``error``, point, objective, proven bound, seconds, message).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from fairplace.core.errors import OptionError
from fairplace.formulations.program import MILP, RawResult

from ..options import SolveOptions


@dataclass(frozen=True)
class Capabilities:
    """What a back end can do. ``mip``: integer columns; ``warm_start``: a feasible point given as
    the first incumbent (``start=``); ``time_limit``: ``SolveOptions.time_limit`` is honoured;
    ``thread_safe``: several solves may run at once on a thread pool (PA's leave-one-out solves)."""

    mip: bool = True
    warm_start: bool = False
    time_limit: bool = True
    thread_safe: bool = False


@runtime_checkable
class Backend(Protocol):
    """A solver back end: ``name``, ``capabilities`` and ``solve(problem, opts, start=None)``."""

    @property
    def name(self) -> str: ...

    @property
    def capabilities(self) -> Capabilities: ...

    def solve(
        self, problem, opts: SolveOptions = SolveOptions(), start: np.ndarray | None = None
    ) -> RawResult:
        """Solve ``problem`` (a MILP or a formulation with ``to_milp()``); ``start``: a feasible
        point as the first incumbent (only with ``capabilities.warm_start``)."""
        ...


class CapabilityError(OptionError):
    """A solve asked a back end for something it cannot do (a warm start, integer columns, ...)."""


def as_milp(problem) -> MILP:
    """The matrix form of ``problem`` (a MILP already, or a formulation's ``to_milp()``)."""
    return problem if isinstance(problem, MILP) else problem.to_milp()


def is_mip(problem) -> bool:
    return bool(as_milp(problem).integrality.any())


def require(backend: Backend, problem, opts: SolveOptions, start=None) -> None:
    """Raise :class:`CapabilityError` (naming the back end and the capability) when the solve asks
    for something ``backend`` lacks. The MIP check builds the matrix form only for back ends
    without MIP support."""
    caps, name = backend.capabilities, backend.name
    if start is not None and not caps.warm_start:
        raise CapabilityError("start", f"back end {name!r} does not take a warm start")
    if opts.time_limit is not None and not caps.time_limit:
        raise CapabilityError("time_limit", f"back end {name!r} does not honour a time limit")
    if not caps.mip and is_mip(problem):
        raise CapabilityError(
            "backend", f"back end {name!r} solves LPs only; this program has integer columns"
        )
