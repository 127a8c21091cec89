"""Heuristic PF allocations over explicit bid tables: ``greedy-rho``, ``greedy-log``, ``lp-round``.

All return status ``heuristic``, an allocation that uses at most one bid per app and every GPU at most
once, and ``objective`` = the PF log-sum of :func:`~fairplace.formulations.pf.pf_value` (comparable with the
exact solver's). No payments (PA needs the exact leave-one-out optima). Gap reporting: pass
``exact_objective=`` (a float, the exact log-sum; assumes the same number of unbounded apps served) or
``exact=`` (an exact :class:`Solution`), or ``compute_exact=True``; then ``Solution.gap`` =
``extra['gap']`` = exact - heuristic log-sum (absolute, in log units; ``inf`` if the heuristic serves fewer
apps with unbounded ``rho_empty`` than the exact optimum).

* ``greedy-rho`` — THEMIS §3.3's straw-man: apps sorted by their current rho (``rho_empty``, unbounded
  first), worst first; each takes its best (lowest-rho) bid whose GPUs are still free, if it beats
  ``rho_empty``.
* ``greedy-log`` — repeatedly take the (app, bid) with the largest marginal gain in sum -log rho,
  -log rho_ib + log rho_empty_i (serving an unbounded app first: max-Nash-welfare convention of pf.py).
* ``lp-round`` — LP relaxation (HiGHS), then columns by decreasing LP value (ties: larger gain) are
  accepted when compatible, then a ``greedy-log`` repair on the remaining apps and GPUs.
"""

from __future__ import annotations

import math
import time

import numpy as np

from fairplace.core.domain import AuctionInstance
from fairplace.core.registry import Entry, Registry
from fairplace.core.solution import Solution
from fairplace.formulations.pf import PFProgram, PFValue, pf_value

from . import backends
from .auction import solve_pf
from .options import SolveOptions
from .solver_params import BACKEND, COMPUTE_EXACT, EXACT, EXACT_OBJECTIVE


def _gain(inst: AuctionInstance, i: int, b: int, big_m: float) -> float:
    app = inst.apps[i]
    w = -math.log(app.bids[b].rho)
    return w + math.log(app.rho_empty) if app.rho_empty is not None else w + big_m


def _fits(inst: AuctionInstance, i: int, b: int, used: set[str]) -> bool:
    return not used.intersection(inst.apps[i].bids[b].gpus)


def greedy_rho_choice(inst: AuctionInstance) -> dict[int, int]:
    """{app index: bid index} of the straw-man (see module docstring)."""
    prog = PFProgram(inst)
    by_app: dict[int, list[int]] = {}
    for i, b in prog.columns:
        by_app.setdefault(i, []).append(b)

    def current(i: int) -> float:
        e = inst.apps[i].rho_empty
        return math.inf if e is None else e

    order = sorted(range(len(inst.apps)), key=lambda i: (-current(i), i))
    used: set[str] = set()
    choice: dict[int, int] = {}
    for i in order:
        ok = [b for b in by_app.get(i, []) if _fits(inst, i, b, used)]
        if ok:
            b = min(ok, key=lambda b: (inst.apps[i].bids[b].rho, len(inst.apps[i].bids[b].gpus), b))
            choice[i] = b
            used.update(inst.apps[i].bids[b].gpus)
    return choice


def greedy_log_choice(
    inst: AuctionInstance, start: dict[int, int] | None = None, prog: PFProgram | None = None
) -> dict[int, int]:
    """Largest-marginal-gain greedy, extending ``start`` (see module docstring)."""
    prog = prog or PFProgram(inst)
    choice = dict(start or {})
    used = {g for i, b in choice.items() for g in inst.apps[i].bids[b].gpus}
    cands = [
        (-_gain(inst, i, b, prog.big_m), len(inst.apps[i].bids[b].gpus), i, b)
        for i, b in prog.columns
        if i not in choice
    ]
    cands.sort()
    for neg_gain, _, i, b in cands:  # sorted once: gains do not change as others are served
        if neg_gain >= 0:
            break
        if i not in choice and _fits(inst, i, b, used):
            choice[i] = b
            used.update(inst.apps[i].bids[b].gpus)
    return choice


def lp_round_choice(
    inst: AuctionInstance,
    opts: SolveOptions = SolveOptions(),
    backend: str | backends.Backend = "highs",
) -> dict[int, int]:
    """LP relaxation (on ``backend``), rounding by decreasing LP value, then greedy-log repair."""
    prog = PFProgram(inst)
    if not prog.columns:
        return {}
    res = backends.run(prog.to_milp().relaxed(), backend, opts.with_(time_limit=None))
    x = res.x if res.x is not None else np.zeros(len(prog.columns))
    gains = prog.gains()
    order = sorted(range(len(prog.columns)), key=lambda k: (-round(float(x[k]), 9), -gains[k], k))
    choice: dict[int, int] = {}
    used: set[str] = set()
    for k in order:
        if x[k] <= 1e-9:
            break
        i, b = prog.columns[k]
        if i not in choice and gains[k] > 0 and _fits(inst, i, b, used):
            choice[i] = b
            used.update(inst.apps[i].bids[b].gpus)
    return greedy_log_choice(inst, start=choice, prog=prog)


def _greedy_rho(inst, opts, backend) -> dict[int, int]:
    return greedy_rho_choice(inst)


def _greedy_log(inst, opts, backend) -> dict[int, int]:
    return greedy_log_choice(inst)


#: the heuristics (module docstring): name -> ``choose(instance, opts, backend) -> {app: bid}``
CHOOSERS = Registry(
    "heuristic",
    {
        "greedy-rho": Entry(_greedy_rho, (), "worst current rho first, its best free bid"),
        "greedy-log": Entry(_greedy_log, (), "largest marginal gain in sum -log rho first"),
        "lp-round": Entry(lp_round_choice, (), "LP relaxation rounded, then a greedy-log repair"),
    },
    where="solver",
)


def heuristic_gap(value: PFValue, exact: PFValue) -> float:
    """exact - heuristic log-sum; inf when fewer unbounded apps are served than by the exact optimum."""
    if value.n_unbounded_served < exact.n_unbounded_served:
        return math.inf
    return exact.log_sum - value.log_sum


def solve_heuristic(
    inst: AuctionInstance,
    opts: SolveOptions = SolveOptions(),
    name: str = "greedy-log",
    exact_objective: float | None = None,
    exact: Solution | None = None,
    compute_exact: bool = False,
    backend: str | backends.Backend = "highs",
) -> Solution:
    """Run the heuristic ``name`` and wrap it in a :class:`Solution` (see module docstring);
    ``backend`` solves lp-round's LP and the exact PF program of ``compute_exact``."""
    t0 = time.perf_counter()
    choice = CHOOSERS.get(name).factory(inst, opts, backend)
    seconds = time.perf_counter() - t0
    apps = range(len(inst.apps))
    val = pf_value(inst, choice, apps)
    ids = [a.id for a in inst.apps]
    extra: dict = {
        "rho": {ids[i]: inst.apps[i].bids[b].rho for i, b in choice.items()},
        "unserved_unbounded": [
            ids[i] for i in apps if inst.apps[i].rho_empty is None and i not in choice
        ],
        "n_unbounded_served": val.n_unbounded_served,
    }
    exact_val = None
    if exact is not None and exact.objective is not None:
        n_unb = sum(a.rho_empty is None for a in inst.apps)
        served = n_unb - len(exact.extra.get("unserved_unbounded", []))
        exact_val = PFValue(served, float(exact.objective))
    elif exact_objective is not None:
        exact_val = PFValue(val.n_unbounded_served, float(exact_objective))
    elif compute_exact:
        res, ch, prog = solve_pf(inst, backend, opts)
        if res.status == "optimal" and ch is not None:
            exact_val = prog.value(ch)
    gap = None
    if exact_val is not None:
        gap = heuristic_gap(val, exact_val)
        extra.update(gap=gap, exact_objective=exact_val.log_sum)
    alloc = {ids[i]: list(inst.apps[i].bids[b].gpus) for i, b in sorted(choice.items())}
    return Solution(
        kind="auction",
        status="heuristic",
        solver=name,
        seconds=seconds,
        objective=val.log_sum,
        allocation=alloc,
        pf_allocation=dict(alloc),
        payments=None,
        leftover=[],
        gap=gap,
        message=f"{name} heuristic (no optimality claim)",
        extra=extra,
    )


def heuristic_solver(name: str):
    """The solve of heuristic ``name`` (:data:`CHOOSERS`): ``f(instance, opts, **options)``."""

    def run(inst, opts, **kw):
        kw.pop("name", None)
        return solve_heuristic(inst, opts, name=name, **kw)

    return run


#: the option specs of every heuristic (``backend``: lp-round's LP and compute_exact's PF solve)
OPTIONS = (EXACT_OBJECTIVE, EXACT, COMPUTE_EXACT, BACKEND)
