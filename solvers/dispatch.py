"""Which solver entry runs an instance, decided from the instance's kind and form (no trial and
error): ``fairplace.solve`` calls :func:`solve`.

* placement instances and auctions whose apps all have bid tables: the solver's own entry;
* ``compact``: the compact arbiter (agent-form apps only);
* agent-form apps (THEMIS AGENT, ``formulations/agents.py``) whose offer is small enough to list
  every subset (:func:`too_large` is None): their exact subset bid tables, then the solver's entry;
* larger offers: ``exact`` / ``highs`` use the compact arbiter when every app is in agent form;
  other solvers need bid tables and raise ``OptionError('offer')``;
* no solver named (``solver=None``): ``exact``, except that an all-agent-form auction whose subset
  bids would number more than :data:`AUTO_COMPACT_BIDS` goes to the compact arbiter;
* the same for ``exact`` / ``highs`` under a time limit (the route tries the cheapest
  exact PF it can finish): the compact arbiter has the same optimum and payments, and listing and
  solving that many subset bids costs more than its whole solve — on a7 (21,762 subset bids) the
  listing and pruning take ~0.2 s and HiGHS' first LP, which it cannot interrupt, ~0.5 s more,
  against 0.1-0.2 s for the compact PF + PA. Without a time limit the named solver lists the bids.

One time budget (``solvers/budget.py``) starts here, so listing the agents' bids counts against
``time_limit`` too. One honest clock: the one-time set-up (:func:`setup`: the back end's
modelling layer, the compact arbiter's modules; imports of ~0.3-0.7 s on a first call) runs before
it starts and is reported apart in ``Solution.setup_seconds``; everything after it (routing, listing
bids, pruning, building, every solve, payments, rounding) is in ``Solution.seconds``. Auction solutions say which route ran in ``extra['route']`` (``bids``,
``subset-bids`` or ``compact``) and, for agent-form apps, how many subset bids that route had to
consider in ``extra['subset_bids']`` (docs/solutions.md). Options are checked against the entry
that runs (``SolverEntry.reject_unknown``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace

from fairplace.core.errors import OptionError
from fairplace.core.solution import Solution
from fairplace.formulations import agents
from fairplace.formulations.program import RawResult

from . import backends, registry
from .auction import unsolved
from .budget import Budget
from .options import COMMON_OPTIONS, SolveOptions

#: solvers that fall back to the compact arbiter for agent-form offers too large to enumerate
COMPACT_FALLBACK = ("exact", "highs")
#: with no solver named, an all-agent-form auction whose subset bids (``agents.subset_counts``,
#: summed over the apps) exceed this goes to the compact arbiter instead of its subset bids.
#: Measured (docs/solutions.md, "Which route": ``fairplace bench``'s ``auction_route_*`` cases):
#: full PF + PA on 200 subset bids takes 0.15-0.26 s either way; from ~700 bids the subset-bid
#: route takes 0.5-1.5 s against 0.05-0.4 s, from ~3,000 bids up to 10 s and from ~10,000 bids
#: 5-130 s, while the compact arbiter stays under 1 s with the same optimum and payments.
AUTO_COMPACT_BIDS = 1_000


def too_large(inst) -> tuple[str, int] | None:
    """(app id, subset count) of the first agent-form app whose offer has more than
    ``agents.MAX_SUBSETS`` subsets of at most n_max GPUs (n_max = what the app can use on top of the
    GPUs it holds, as in ``agents.rho_table``), or None when every app's bids can be listed."""
    for app, count in agents.subset_counts(inst):
        if count > agents.MAX_SUBSETS:
            return app, count
    return None


def _routed(sol: Solution, route: str, subset_bids: int | None) -> Solution:
    if sol.kind != "auction":
        return sol
    return replace(sol, extra={**sol.extra, "route": route, "subset_bids": subset_bids})


def setup(inst, solver: str | None, options: Mapping) -> None:
    """The one-time set-up of a solve, before its clock starts: the exact back end's modelling
    layer (``backends.preload``) and, for agent-form auctions that may take the compact route, the
    compact arbiter's modules. Each is an import: free once done."""
    name = "exact" if solver is None else solver
    if name in registry.EXACT_SOLVERS:
        backends.preload(registry.EXACT_SOLVERS[name] or options.get("backend", "highs"))
    if inst.kind == "auction" and inst.agents and (solver is None or name in COMPACT_ROUTES):
        from . import compact  # heavy: imported on use (set-up, before the clock)  # noqa: F401


#: solver names that may run the compact arbiter (:func:`solve`)
COMPACT_ROUTES = ("compact", *COMPACT_FALLBACK)


def solve(inst, solver: str | None, opts: SolveOptions, options: Mapping) -> Solution:
    """Run ``solver`` (None: chosen as in the module docstring) on ``inst`` with ``opts`` and the
    solver-specific ``options``; ``seconds`` counts from the end of :func:`setup` (or from the
    start of a ``budget`` given in ``options``) to the return."""
    t0 = time.perf_counter()
    entry = registry.get("exact" if solver is None else solver, inst.kind)
    setup(inst, solver, options)
    t1 = time.perf_counter()
    options = dict(options)
    if "budget" in entry.options and options.get("budget") is None:
        options["budget"] = Budget.begin(opts.time_limit)
    budget = options["budget"] if "budget" in entry.options else None  # else not an option
    start = budget.start if budget is not None else t1
    sol = _solve(inst, solver, entry, opts, options, budget)
    clock = budget.clock if budget is not None else time.perf_counter
    return replace(sol, seconds=clock() - start, setup_seconds=t1 - t0)


def _solve(inst, solver, entry, opts: SolveOptions, options: dict, budget) -> Solution:
    auto = solver is None
    solver = "exact" if solver is None else solver
    kind = inst.kind
    agent_form = kind == "auction" and bool(inst.agents)
    if solver == "compact" or not agent_form:
        entry.reject_unknown(options, solver, kind)
        route = "compact" if solver == "compact" else "bids"
        return _routed(entry(inst, opts, name=solver, **options), route, None)
    counts = agents.subset_counts(inst)
    size = sum(c for _, c in counts)
    big = next(((a, c) for a, c in counts if c > agents.MAX_SUBSETS), None)
    # the cheapest exact route first: many subset bids go to the compact arbiter when no solver
    # is named, and under a time limit for exact / highs too (module docstring)
    cheap = auto or (opts.time_limit is not None and solver in COMPACT_FALLBACK)
    if big is None and not (cheap and size > AUTO_COMPACT_BIDS and not inst.apps):
        entry.reject_unknown(options, solver, kind)
        t0 = time.perf_counter()
        stop = budget.spent if budget is not None else None
        explicit = agents.to_explicit(inst, stop=stop)
        if explicit is None:  # the budget ran out while listing the bids
            raw = RawResult(
                "time_limit",
                None,
                None,
                None,
                0.0,
                "time limit reached while listing the agents' subset bids",
            )
            ids = [a.id for a in (*inst.apps, *inst.agents)]
            rounding = options.get("rounding", "floor")
            sol = unsolved(solver, raw, time.perf_counter() - t0, rounding, ids, False)
            return _routed(sol, "subset-bids", size)
        return _routed(entry(explicit, opts, name=solver, **options), "subset-bids", size)
    if (auto or solver in COMPACT_FALLBACK) and not inst.apps:
        compact = registry.get("compact", kind)
        bad = sorted(set(options) - set(compact.options) - set(COMMON_OPTIONS))
        if bad:
            why = (
                f"its {size} subset bids exceed {AUTO_COMPACT_BIDS}"
                if big is None
                else f"app {big[0]!r}'s offer is too large to list its bids"
            )
            raise OptionError(
                bad[0],
                f"not an option of the compact arbiter, which solver {solver!r} runs on this "
                f"agent-form auction ({why}); its options: {', '.join(compact.options)}",
            )
        return _routed(compact(inst, opts, name="compact", **options), "compact", size)
    assert big is not None  # else the bids were listed above
    app, count = big
    raise OptionError(
        "offer",
        f"app {app!r}: {count} subsets exceed max_subsets={agents.MAX_SUBSETS}; solver {solver!r} "
        "needs bid tables: use solver 'exact' or 'compact' on agent-form apps",
    )
