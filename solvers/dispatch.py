"""Which solver entry runs an instance, decided from the instance's kind and form (no trial and
error): ``fairplace.solve`` calls :func:`solve`.

* placement instances and auctions whose apps all have bid tables: the solver's own entry;
* ``compact``: the compact arbiter (agent-form apps only);
* agent-form apps (THEMIS AGENT, ``formulations/agents.py``) whose offer is small enough to list
  every subset (:func:`too_large` is None): their exact subset bid tables, then the solver's entry;
* larger offers: ``exact`` / ``highs`` use the compact arbiter when every app is in agent form;
  other solvers need bid tables and raise ``OptionError('offer')``.

Options are checked against the entry that runs (``SolverEntry.check``).
"""

from __future__ import annotations

from collections.abc import Mapping

from fairplace.core.errors import OptionError
from fairplace.core.solution import Solution
from fairplace.formulations import agents

from . import registry
from .options import COMMON_OPTIONS, SolveOptions

#: solvers that fall back to the compact arbiter for agent-form offers too large to enumerate
COMPACT_FALLBACK = ("exact", "highs")


def too_large(inst) -> tuple[str, int] | None:
    """(app id, subset count) of the first agent-form app whose offer has more than
    ``agents.MAX_SUBSETS`` subsets of at most n_max GPUs (n_max = what the app can use on top of the
    GPUs it holds, as in ``agents.rho_table``), or None when every app's bids can be listed."""
    offer = len(agents.free_gpus(inst))
    for a in inst.agents:
        need = agents.ftf_model(a, inst.cluster).app_demand_max - len(set(a.held))
        count = agents.n_subsets(offer, min(offer, max(need, 0)))
        if count > agents.MAX_SUBSETS:
            return a.id, count
    return None


def solve(inst, solver: str, opts: SolveOptions, options: Mapping) -> Solution:
    """Run ``solver`` on ``inst`` with ``opts`` and the solver-specific ``options`` (module
    docstring)."""
    kind = inst.kind
    entry = registry.get(solver, kind)
    agent_form = kind == "auction" and bool(inst.agents)
    if solver == "compact" or not agent_form:
        entry.check(options, solver, kind)
        return entry(inst, opts, name=solver, **options)
    big = too_large(inst)
    if big is None:
        entry.check(options, solver, kind)
        return entry(agents.to_explicit(inst), opts, name=solver, **options)
    app, count = big
    if solver in COMPACT_FALLBACK and not inst.apps:
        compact = registry.get("compact", kind)
        bad = sorted(set(options) - set(compact.options) - set(COMMON_OPTIONS))
        if bad:
            raise OptionError(
                bad[0],
                f"not an option of the compact arbiter, which solver {solver!r} runs on this "
                f"agent-form auction (app {app!r}'s offer is too large to list its bids); "
                f"its options: {', '.join(compact.options)}",
            )
        return compact(inst, opts, name="compact", **options)
    raise OptionError(
        "offer",
        f"app {app!r}: {count} subsets exceed max_subsets={agents.MAX_SUBSETS}; solver {solver!r} "
        "needs bid tables: use solver 'exact' or 'compact' on agent-form apps",
    )
