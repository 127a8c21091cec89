"""Solver names (the CLI contract, README / docs/solutions.md) -> callables ``f(instance, opts, **options) -> Solution``.

``solver_table()`` builds the mapping on demand (no module-level state). Later layers add heuristics
and placement policies here by name.
"""

from __future__ import annotations

from collections.abc import Callable

from fairplace.core.errors import UnknownSolver

from .options import SolveOptions


def _auction(backend: str):
    def run(inst, opts: SolveOptions, **kw):
        from .auction import solve_auction
        from .backends import preload

        preload(backend)  # imports outside the solve's timed region
        return solve_auction(inst, backend=backend, opts=opts, name=kw.pop("name", None), **kw)

    return run


def _placement(backend: str):
    def run(inst, opts: SolveOptions, **kw):
        from .backends import preload
        from .placement import solve_placement
        from .policies import instance_scores

        preload(backend)

        seed = kw.pop("seed", None)  # the exact program has no randomness; bin=True uses it
        kw.pop("backfill", None)  # a policy option; the exact program places as many jobs as it can
        if kw.pop("bin", False):
            kw["scores"] = instance_scores(inst, bin=True, seed=seed or 0)
        return solve_placement(inst, backend=backend, opts=opts, name=kw.pop("name", None), **kw)

    return run


def _compact(inst, opts: SolveOptions, **kw):
    """The compact THEMIS arbiter (agent-form auctions; ``fairplace.solvers.compact``)."""
    from .compact import solve_compact

    return solve_compact(inst, opts, **kw)


def solver_table() -> dict[str, dict[str, Callable]]:
    """{solver name: {instance kind: callable}}."""
    table: dict[str, dict[str, Callable]] = {}
    for name, backend in (
        ("exact", "highs"),
        ("highs", "highs"),
        ("pyomo", "pyomo"),
        ("cvxpy", "cvxpy"),
    ):
        table[name] = {"auction": _auction(backend), "placement": _placement(backend)}
    table["compact"] = {"auction": _compact}
    _extend(table)
    return table


def _extend(table: dict[str, dict[str, Callable]]) -> None:
    """Add the heuristics, placement policies and relaxations (each module's ``SOLVERS`` table)."""
    from . import heuristics, policies, relaxation

    for m in (heuristics, policies, relaxation):
        for name, per_kind in m.SOLVERS.items():
            table.setdefault(name, {}).update(per_kind)


def get(name: str, kind: str) -> Callable:
    table = solver_table()
    if name not in table:
        raise UnknownSolver("solver", f"unknown solver {name!r}; known: {', '.join(sorted(table))}")
    if kind not in table[name]:
        ok = sorted(n for n, t in table.items() if kind in t)
        raise UnknownSolver(
            "solver",
            f"solver {name!r} does not solve {kind} instances; use one of: {', '.join(ok)}",
        )
    return table[name][kind]
