"""The package face: ``load`` and ``solve``."""

from __future__ import annotations

from pathlib import Path

from fairplace.core.domain import Instance
from fairplace.core.errors import OptionError
from fairplace.core.solution import Solution
from fairplace.instances import io
from fairplace.solvers import registry
from fairplace.solvers.options import SolveOptions


def load(path: str | Path) -> Instance:
    """Load and validate an instance JSON file (raises :class:`~fairplace.core.errors.InstanceError`)."""
    return io.load(path)


def solve(
    instance: Instance | str | Path | dict,
    solver: str = "exact",
    time_limit: float | None = None,
    **options,
) -> Solution:
    """Solve one auction or placement instance.

    ``solver``: ``exact`` (HiGHS via highspy), ``highs``, ``pyomo``, ``cvxpy`` and the heuristics and
    policies listed by ``fairplace.solvers.registry.solver_table()``. Options: the fields of
    :class:`~fairplace.solvers.options.SolveOptions` (``mip_rel_gap``, ``threads``, ``random_seed``,
    ``presolve``, ...) and solver-specific ones (auctions: ``rounding='floor'|'lottery'|'fractional'``,
    ``seed``, ``payments``, ``tie_break``).
    """
    if isinstance(instance, (str, Path)):
        instance = io.load(instance)
    elif isinstance(instance, dict):
        instance = io.from_dict(instance)
    elif not isinstance(instance, Instance.__args__):
        raise OptionError(
            "instance",
            "expected an AuctionInstance, a PlacementInstance, a dict or a JSON file path, "
            f"got {type(instance).__name__}",
        )
    if not isinstance(solver, str):
        raise OptionError("solver", f"expected a solver name, got {type(solver).__name__}")
    fn = registry.get(solver, instance.kind)
    opt_fields = set(SolveOptions.__dataclass_fields__)
    opts = SolveOptions.from_kwargs(
        time_limit=time_limit, **{k: v for k, v in options.items() if k in opt_fields}
    )
    rest = {k: v for k, v in options.items() if k not in opt_fields}
    if getattr(instance, "agents", ()):  # agent-form apps: bids (small offers) or the compact model
        from fairplace.solvers.compact import solve_agent_form

        return solve_agent_form(instance, solver, fn, opts, **rest)
    try:
        return fn(instance, opts, name=solver, **rest)
    except TypeError as exc:  # an option this solver does not take -> a clear OptionError
        bad = [k for k in rest if f"'{k}'" in str(exc) and "unexpected keyword" in str(exc)]
        if bad:
            raise OptionError(bad[0], f"not an option of solver {solver!r}") from None
        raise
