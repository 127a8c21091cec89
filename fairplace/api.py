"""The package face: ``load`` and ``solve``."""

from __future__ import annotations

from pathlib import Path

from fairplace.core.domain import Instance
from fairplace.core.errors import OptionError
from fairplace.core.solution import Solution
from fairplace.instances import io, objects
from fairplace.solvers import dispatch, registry
from fairplace.solvers.options import SolveOptions


def load(path: str | Path) -> Instance:
    """Load and validate an instance JSON file (raises :class:`~fairplace.core.errors.InstanceError`)."""
    return io.load(path)


def solve(
    instance: Instance | str | Path | dict,
    solver: str | None = None,
    time_limit: float | None = None,
    *,
    validate: bool = True,
    **options,
) -> Solution:
    """Solve one auction or placement instance.

    ``solver``: None (default) = ``exact``, or ``compact`` for an agent-form auction whose subset
    bids would be many (``fairplace.solvers.dispatch.AUTO_COMPACT_BIDS``; ``extra['route']`` says
    which ran); ``exact`` (HiGHS via highspy, or ``backend=`` a back-end name or a
    :class:`~fairplace.solvers.backends.Backend` object), ``highs``, ``pyomo``, ``cvxpy``, ``compact``
    and the heuristics, relaxations and policies of ``fairplace.solvers.registry.solver_table()``.
    Options: the fields of :class:`~fairplace.solvers.options.SolveOptions` (``mip_rel_gap``,
    ``threads``, ``random_seed``, ``presolve``, ...; every solver) and the options the solver
    declares (``solver_table()[solver][kind].params``, their specs; auctions: ``rounding='floor'|'lottery'|
    'fractional'|'partial'``, ``seed``, ``payments``, ``tie_break``, ...). Any other option raises
    :class:`~fairplace.core.errors.OptionError` naming it and the solver. The route (bid tables,
    agent-form bids or the compact arbiter) follows from the instance: ``fairplace.solvers.dispatch``.
    """
    if isinstance(instance, (str, Path)):
        instance = io.load(instance)
    elif isinstance(instance, dict):
        instance = io.from_dict(instance)
    elif isinstance(instance, Instance.__args__):
        if validate:
            objects.check(instance)  # a hand-built object meets the JSON contract, same errors
    else:
        raise OptionError(
            "instance",
            "expected an AuctionInstance, a PlacementInstance, a dict or a JSON file path, "
            f"got {type(instance).__name__}",
        )
    if solver is not None and not isinstance(solver, str):
        raise OptionError("solver", f"expected a solver name, got {type(solver).__name__}")
    # unknown solver / kind first, before the options
    entry = registry.get(solver or "exact", instance.kind)
    opt_fields = set(SolveOptions.__dataclass_fields__)
    opts = SolveOptions.from_kwargs(
        time_limit=time_limit, **{k: v for k, v in options.items() if k in opt_fields}
    )
    rest = {k: v for k, v in options.items() if k not in opt_fields}
    entry.check_values(rest)  # each value its spec rejects, before any solver runs
    return dispatch.solve(instance, solver, opts, rest)
