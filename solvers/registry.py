"""Solver names (the CLI contract, README / docs/solutions.md) as a
:class:`~fairplace.core.registry.Registry` (the type of every set of names): each name's entry has
the capability ``kinds``, its :class:`~.options.SolverEntry` per instance kind (the callable
``f(instance, opts, name=..., **options) -> Solution`` and the specs of the solver-specific options
it takes, ``solvers/solver_params.py``).

:data:`SOLVER_REGISTRY` is built once, at import, from the entries of every solver: the exact
ones, the compact arbiter, the heuristics (``heuristics.CHOOSERS``), the placement policies
(``policies.POLICY_NAMES``) and the relaxations (``relaxation.RELAXATION_ENTRY``, ``GAVEL_ENTRY``).
``solver_table()`` is the same as ``{name: {kind: SolverEntry}}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from fairplace.core.errors import UnknownName
from fairplace.core.registry import Entry, Registry

from . import auction, backends, heuristics, placement, relaxation
from .options import PAYMENTS, ROUNDING, SEED, SolveOptions, SolverEntry
from .placement import policies
from .solver_params import (
    BACKEND,
    BACKFILL,
    BIN,
    BUDGET,
    SCORES,
    TIE_BREAK,
    WARM_START,
)

#: option specs of the exact PF + PA auction (``solvers/auction.py``)
AUCTION_OPTIONS = (ROUNDING, SEED, PAYMENTS, TIE_BREAK, BUDGET)
#: option specs of the exact joint placement (``solvers/placement/__init__.py``); ``seed`` only with
#: ``bin``, ``backfill`` is accepted for symmetry with the policies (the program places as many
#: jobs as it can)
PLACEMENT_OPTIONS = (SEED, BIN, BACKFILL, SCORES, BUDGET, WARM_START)
#: option specs of the compact THEMIS arbiter (``solvers/compact/__init__.py``)
COMPACT_OPTIONS = (ROUNDING, SEED, PAYMENTS, BUDGET)
#: option specs of the PAL placement policies (``solvers/placement/policies.py``)
POLICY_OPTIONS = (SEED, BIN, BACKFILL)
#: solver names bound to one back end; ``exact`` takes ``backend=`` (a name or a Backend object)
EXACT_SOLVERS = {"exact": None, "highs": "highs", "pyomo": "pyomo", "cvxpy": "cvxpy"}


def _bind(fixed: str | None, backend, kw: dict):
    """(back end, solution name) of an exact entry: ``fixed`` wins; ``exact`` on another back end
    is named after it; the back end's imports are loaded outside the solve's timed region."""
    name = kw.pop("name", None)
    if fixed is None and backend != "highs":
        name = None
    backend = fixed or backend
    backends.preload(backend)
    return backend, name


def _auction(fixed: str | None):
    def run(inst, opts: SolveOptions, backend="highs", **kw):

        backend, name = _bind(fixed, backend, kw)
        return auction.solve_auction(inst, backend=backend, opts=opts, name=name, **kw)

    return run


def _placement(fixed: str | None):
    def run(inst, opts: SolveOptions, backend="highs", **kw):

        backend, name = _bind(fixed, backend, kw)
        seed = kw.pop("seed", None)  # the exact program has no randomness; bin=True uses it
        kw.pop("backfill", None)  # a policy option; the exact program places as many jobs as it can
        if kw.pop("bin", False):
            kw["scores"] = policies.instance_scores(inst, bin=True, seed=seed or 0)
        return placement.solve_placement(inst, backend=backend, opts=opts, name=name, **kw)

    return run


def _compact(inst, opts: SolveOptions, **kw):
    """The compact THEMIS arbiter (agent-form auctions; ``fairplace.solvers.compact``)."""
    from .compact import (
        solve_compact,
    )  # heavy: imported on use (the compact arbiter pulls the AGENT/FTF stack, ~0.15 s)

    return solve_compact(inst, opts, **kw)


def _table() -> dict[str, dict[str, SolverEntry]]:
    """{solver name: {instance kind: SolverEntry}}, in the order the CLI help lists them."""
    table: dict[str, dict[str, SolverEntry]] = {}
    for name, fixed in EXACT_SOLVERS.items():
        extra = (BACKEND,) if fixed is None else ()
        how = f"exact, back end {fixed}" if fixed else "exact, HiGHS or the back end given"
        table[name] = {
            "auction": SolverEntry(
                _auction(fixed), doc=f"PF + PA ({how})", params=AUCTION_OPTIONS + extra
            ),
            "placement": SolverEntry(
                _placement(fixed),
                doc=f"joint placement IP ({how})",
                params=PLACEMENT_OPTIONS + extra,
            ),
        }
    table["compact"] = {
        "auction": SolverEntry(
            _compact, doc="compact arbiter (agent-form apps)", params=COMPACT_OPTIONS
        )
    }
    for name in heuristics.CHOOSERS:
        solve = heuristics.heuristic_solver(name)
        table[name] = {
            "auction": SolverEntry(solve, doc=f"{name} heuristic", params=heuristics.OPTIONS)
        }
    for name in policies.POLICY_NAMES:
        solve = policies.policy_solver(name)
        table[name] = {"placement": SolverEntry(solve, doc=f"{name} policy", params=POLICY_OPTIONS)}
    table["relaxation"] = {"auction": relaxation.RELAXATION_ENTRY}
    table["gavel-ftf"] = {"auction": relaxation.GAVEL_ENTRY}
    return table


def _by_kind(kinds: Mapping[str, SolverEntry]):
    """The solve of a name: the entry of the instance's kind."""

    def solve(inst, opts: SolveOptions, **options):
        return kinds[inst.kind](inst, opts, **options)

    return solve


def _registry() -> Registry:
    entries = {}
    for name, kinds in _table().items():
        # the union of its kinds' option specs (one per name: the same spec on every kind)
        params = tuple({p.name: p for e in kinds.values() for p in e.params}.values())
        doc = "; ".join(f"{k}: {e.doc}" for k, e in kinds.items())
        caps = {"kinds": MappingProxyType(kinds)}
        entries[name] = Entry(_by_kind(kinds), (), doc, params, caps)
    return Registry("solver", entries, where="solver")


#: every solver name -> :class:`~fairplace.core.registry.Entry`: ``factory`` solves an instance
#: of any kind it takes, ``options`` the union of its kinds', ``capabilities["kinds"]`` its
#: :class:`SolverEntry` per instance kind
SOLVER_REGISTRY = _registry()


def solver_registry() -> Registry:
    """:data:`SOLVER_REGISTRY`."""
    return SOLVER_REGISTRY


def solver_table() -> dict[str, dict[str, SolverEntry]]:
    """{solver name: {instance kind: SolverEntry}} (:func:`solver_registry`'s ``kinds``)."""
    return {n: dict(e.capabilities["kinds"]) for n, e in SOLVER_REGISTRY.items()}


def get(name: str, kind: str) -> SolverEntry:
    """The entry of solver ``name`` for ``kind`` instances (``UnknownName`` naming the known ones)."""
    reg = SOLVER_REGISTRY
    kinds = reg.get(name).capabilities["kinds"]
    if kind not in kinds:
        ok = sorted(n for n, e in reg.items() if kind in e.capabilities["kinds"])
        raise UnknownName(
            "solver",
            f"solver {name!r} does not solve {kind} instances; use one of: {', '.join(ok)}",
        )
    return kinds[kind]
