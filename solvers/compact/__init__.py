"""Solve the compact arbiter: PF and the full partial-allocation auction without bid enumeration.

The pieces: ``compact.pf`` (PF: LP first, then the MILP), ``compact.lp`` (placing an LP's integral
cells: greedy pack, placement MILP), ``compact.pa_payments`` (leave-one-out payments c_i), ``compact.packing``
(greedy placements, ``floor`` rounding). This module runs the whole auction and keeps the public
names importable from ``fairplace.solvers.compact``.

``time_limit`` is the budget of the whole auction, as in ``solvers/auction.py`` (``solvers/budget.py``):
every LP / MILP gets what is left, none starts once it is spent; apps whose PF_{-i} was not solved
to optimality are listed in ``extra['payments_inexact']`` (c_i from the best incumbent, else 1).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass, field
from dataclasses import replace as dc_replace
from typing import Any

import numpy as np

from fairplace.core.domain import AuctionInstance
from fairplace.core.errors import OptionError
from fairplace.core.solution import Solution
from fairplace.formulations import pa
from fairplace.formulations.agents import free_gpus
from fairplace.formulations.compact import CompactApp, CompactProgram, compact_apps
from fairplace.formulations.compact_milp import Choice
from fairplace.solvers.compact.packing import best_subbundle, pack

from ..auction import auction_gap, pf_bound, unsolved
from ..budget import Budget, budget_for
from ..options import SolveOptions
from .dp import dp_suits, solve_dp
from .enumeration import ENUM_LIMIT, enumerate_auction
from .enumeration import leave_one_out as enum_loo
from .pa_payments import NOT_RUN, _others, _without_solve, payments
from .pf import REDUCED_MAX_MACHINES, solve_compact_pf

#: most joint choices of one leave-one-out problem enumerated for the payments of a PF solved by
#: the LP / MILP route (``_enum_payments``); above it every PF_{-i} takes the LP route
LOO_ENUM_LIMIT = 60000
#: ``solve_compact_auction(route=...)``: ``auto`` (the DP where it suits), ``dp``, ``compact``
ROUTES = ("auto", "dp", "compact")

__all__ = [
    "NOT_RUN",
    "REDUCED_MAX_MACHINES",
    "Choice",
    "CompactApp",
    "CompactProgram",
    "pack",
    "payments",
    "round_compact",
    "solve_compact",
    "solve_compact_auction",
    "solve_compact_pf",
]


def round_compact(
    prog: CompactProgram, choice: Choice, c: dict[int, float], rule: str = "floor", seed: int = 0
) -> dict[int, tuple[int, ...]]:
    """Final GPU indices per app under a PA rounding rule (``formulations/pa.py`` semantics)."""

    def floor_pick(i: int, gpus: tuple[int, ...], cap: int) -> tuple[int, ...] | None:
        sub = best_subbundle(prog.apps[i], prog.cluster, gpus, cap)
        return None if sub is None else sub[1]

    return pa.round_shares({i: gpus for i, (_, gpus) in choice.items()}, c, rule, seed, floor_pick)


def solve_compact_auction(
    inst: AuctionInstance,
    opts: SolveOptions = SolveOptions(),
    rounding: str = "floor",
    seed: int = 0,
    payments_: bool = True,
    name: str = "compact",
    offer=None,
    apps: tuple[CompactApp, ...] | None = None,
    ids: list[str] | None = None,
    reduced: bool | None = None,
    budget: Budget | None = None,
    aggregate: bool = True,
    enum_limit: int = ENUM_LIMIT,
    exact_payments: bool = True,
    route: str = "auto",
) -> Solution:
    """PF + PA over the agent-form apps of ``inst`` (or the given compact ``apps``) on ``offer``.
    ``reduced``: formulation of full-MILP fallbacks (None: by offer size, see :func:`solve_compact_pf`;
    True / False force the tightened / plain one; the optima are the same). ``aggregate``: spread-0
    cells over machine kinds and patterns (``formulations/compact_agg.py``; False: per machine,
    the formulation before it; same optima). ``budget`` (default:
    ``opts.time_limit`` from now) bounds the whole auction (module docstring). ``enum_limit``:
    small auctions (at most that many joint choices) are solved by enumeration, PF and payments
    (``compact.enumeration``; ``extra['pf_route']``); 0 forces the LP / MILP route (with
    ``route="auto"``: no DP either).
    ``exact_payments=False`` with the ``lottery`` rounding (a simulator that reads only the
    allocation): a PF_{-i} of the LP route is solved only as far as app i's draw needs it; where
    its bounds already put c_i above the draw (:func:`.pa_payments.lottery_floor`, route
    ``lottery``: i keeps its bundle) or at most the draw (:func:`.pa_payments.lottery_ceiling`,
    ``lottery_drop``: it loses it), the outcome is that of the exact c_i and the payment is
    reported as NaN. The allocation is the exact payments' allocation. Every other rule
    (``partial``, THEMIS' default, reads every c_i) gets every c_i exact whatever
    ``exact_payments`` says: only the lottery's draws let a PF_{-i} stay open. ``route``:
    ``auto`` = PF and every PF_{-i} by the DP (``compact.dp``) where ``dp_suits`` (a small
    homogeneous offer) and ``enum_limit`` > 0, else as ``compact``: enumeration or LP / MILP;
    ``dp`` = the DP on any homogeneous offer (else as ``compact``)."""
    if route not in ROUTES:
        raise OptionError("route", f"expected one of {ROUTES}, got {route!r}")
    t0 = time.perf_counter()
    budget = budget_for(opts, budget)
    if opts.mip_allow_restart is None:  # as in solvers/auction.py (see SolveOptions)
        opts = opts.with_(mip_allow_restart=False)
    cl = inst.cluster
    if apps is None:
        apps = compact_apps(inst, offer)
        ids = [a.id for a in inst.agents]
    if offer is None:
        offer = free_gpus(inst)
    ids = ids or [a.table.app_id for a in apps]
    log: dict = {}
    pf_ = _compact_pf(cl, offer, apps, opts, reduced, budget, aggregate, enum_limit, log, route)
    res, choice, prog, enum, plain = pf_
    if choice is None:
        sol = unsolved(
            name, res, time.perf_counter() - t0, rounding, ids if payments_ else [], True
        )
        extra = {"cells": {}, "loo_routes": {}, "pf_route": log["route"]}
        return dc_replace(sol, extra={**sol.extra, **extra})
    pay = _PA(res.status, {i: 1.0 for i in range(len(apps))}, int(enum is None))
    if payments_ and enum is not None:  # every PF_{-i} from the same enumeration
        pay.c.update(enum.payments())
        pay.k = len(choice)
        pay.routes = dict.fromkeys(choice, log["route"])  # "enumeration" or "dp"
    elif payments_ and not (
        plain is not None and _enum_payments(pay, plain, choice, ids, res.status)
    ):
        draws = None
        if not exact_payments and rounding == "lottery":
            draws = pa.lottery_draws(choice, seed)
        _lp_payments(
            pay, prog, choice, opts, reduced, budget, ids, res.status, log.get("live_lp"), draws
        )
    # NaN (``exact_payments=False``): the lottery keeps / drops the bundle whatever c_i is
    shares = {
        i: (0.0 if pay.routes.get(i) == "lottery_drop" else 1.0) if math.isnan(c) else c
        for i, c in pay.c.items()
    }
    final = round_compact(prog, choice, shares, rounding, seed)
    used = {g for i in final for g in final[i]}
    pf_gpus = [g for i in sorted(choice) for g in choice[i][1]]
    val = prog.value(choice)
    bound, served_max = pf_bound(prog, res, val)
    return Solution(
        kind="auction",
        status=pay.status,
        solver=name,
        seconds=time.perf_counter() - t0,
        objective=val.log_sum,
        bound=bound,
        gap=auction_gap(val.log_sum, bound),
        allocation={ids[i]: cl.ids(g) for i, g in final.items()},
        pf_allocation={ids[i]: cl.ids(choice[i][1]) for i in sorted(choice)},
        payments={ids[i]: pay.c[i] for i in range(len(apps))} if payments_ else None,
        leftover=cl.ids(sorted(g for g in pf_gpus if g not in used)),
        message=res.message,
        extra=_extra(
            apps, ids, choice, res.status, served_max, log["route"], pay, payments_, rounding
        ),
    )


def _extra(
    apps, ids, choice, pf_status, served_max, pf_route, pay: _PA, payments_, rounding
) -> dict:
    """The compact auction's ``Solution.extra`` (``fairplace.core.solution.COMPACT_EXTRA``)."""
    return {
        "rounding": rounding,
        "unserved_unbounded": [
            ids[i] for i, a in enumerate(apps) if a.w_empty is None and i not in choice
        ],
        "rho": {ids[i]: float(apps[i].table.rho[choice[i][0]]) for i in choice},
        "pf_status": pf_status,
        "unbounded_served_bound": served_max,
        "cells": {ids[i]: list(choice[i][0]) for i in choice},
        # how the PF was settled (``compact.pf.PF_ROUTES``; "full" after an LP failure too)
        "pf_route": pf_route,
        "loo_solves": pay.k if payments_ else 0,
        "milp_solves": pay.n_solves,
        # how each PF_{-i} was settled, counted per route (``compact.pa_payments.ROUTES``)
        "loo_routes": dict(sorted(Counter(pay.routes.values()).items())),
        # c_i of these apps rests on a PF_{-i} not solved to optimality (time limit: the best
        # incumbent; no point at all: c_i = 1)
        "payments_inexact": pay.inexact,
    }


def _compact_pf(
    cl, offer, apps, opts, reduced, budget, aggregate, enum_limit, log: dict, route="auto"
):
    """(raw result, PF choice or None, program, the DP / enumeration or None, the enumerated
    program or None): by the DP where ``route`` takes it, else by enumeration when the auction
    is small enough, else the LP / MILP route (``log``: how, and why a faster one failed). The
    enumerated program (built when ``enum_limit`` > 0) serves the leave-one-out enumeration of
    an LP / MILP route PF."""
    enum = plain = None
    try_dp = route == "dp" or (route == "auto" and enum_limit > 0)
    if try_dp and budget.options(opts) is not None:
        offer = tuple(np.asarray(offer).tolist())
        plain = CompactProgram(cl, offer, tuple(apps), reduced=False, aggregate=aggregate)
        if dp_suits(plain) if route == "auto" else len(plain.types) == 1:
            dp = solve_dp(plain)
            if dp is not None:
                log["route"] = "dp"
                return dp.result(), dp.choice, plain, dp, plain
        if enum_limit <= 0:  # the LP / MILP route's payments as before: no enumeration
            plain = None
    if enum_limit > 0 and budget.options(opts) is not None:
        offer = tuple(int(g) for g in offer)
        if plain is None:
            plain = CompactProgram(cl, offer, tuple(apps), reduced=False, aggregate=aggregate)
        enum = enumerate_auction(plain, enum_limit)
    if enum is not None:
        log["route"] = "enumeration"
        return enum.result(), enum.choice, enum.prog, enum, plain
    res, choice, prog = solve_compact_pf(
        cl, offer, apps, opts, reduced=reduced, budget=budget, aggregate=aggregate, log=log,
        program=plain,
    )  # fmt: skip
    if log["route"] == "full" and log["why"]:  # a faster route failed: say why
        res = dc_replace(res, message=f"{res.message} (full MILP: {'; '.join(log['why'])})")
    return res, choice, prog, None, plain


@dataclass
class _PA:
    """The payments of one auction: status, c_i, MILP solves, leave-one-out problems, their
    routes and the apps whose c_i rests on a non-optimal solve."""

    status: str
    c: dict[int, float]
    n_solves: int
    k: int = 0
    routes: dict[int, str] = field(default_factory=dict)
    inexact: list[str] = field(default_factory=list)


def _enum_payments(pay: _PA, plain: CompactProgram, choice, ids, pf_status: str) -> bool:
    """Every PF_{-i} by enumerating the auction without i (``compact.enumeration.leave_one_out``)
    when each has at most :data:`LOO_ENUM_LIMIT` joint choices, after the c_i = 1 checks that need
    no solve; False (``pay`` untouched) when one is larger. c_i are the LP / MILP route's (the
    same optima), without a HiGHS model."""
    c: dict[int, float] = {}
    routes: dict[int, str] = {}
    value_with = {i: _others(plain, choice, i) for i in choice}
    todo = _without_solve(plain, choice, value_with, c, {}, routes)
    loo = enum_loo(plain, todo, LOO_ENUM_LIMIT)
    if loo is None:
        return False
    c.update({i: pa.payment(value_with[i], loo[i]) for i in todo})
    pay.c.update(c)
    pay.k = len(todo)  # leave-one-out problems, as the LP route counts them
    pay.routes = routes | dict.fromkeys(todo, "enumeration")
    if pf_status != "optimal":  # every c_i is relative to a non-optimal PF
        pay.inexact = list(ids)
    return True


def _lp_payments(
    pay: _PA, prog, choice, opts, reduced, budget, ids, pf_status: str, live=None, draws=None
) -> None:
    """Every PF_{-i} on the PF's formulation (``prog.aggregate``; :func:`.pa_payments.payments`;
    ``live``: the PF's solved LP model; ``draws``: the lottery's draws, see there)."""
    ci, st, pay.k = payments(
        prog,
        choice,
        opts,
        parallel=opts.parallel,
        reduced=reduced,
        budget=budget,
        routes=pay.routes,
        live=live,
        draws=draws,
    )
    pay.n_solves += pay.k - sum(s == NOT_RUN for s in st.values())
    pay.c.update(ci)
    pay.inexact = [ids[i] for i, s in sorted(st.items()) if s != "optimal"]
    if pf_status != "optimal":  # every c_i is relative to a non-optimal PF
        pay.inexact = list(ids)
    for s in st.values():
        if s != "optimal":
            pay.status = "time_limit" if s in ("time_limit", NOT_RUN) else s


def solve_compact(inst: AuctionInstance, opts: SolveOptions, **kw) -> Solution:
    """Registry entry ``compact``: the compact arbiter on an agent-form auction."""
    if inst.apps:
        raise OptionError(
            "solver", "solver 'compact' needs every app in agent form (found apps with 'bids')"
        )
    kw.pop("name", None)
    known: dict[str, Any] = {k: kw[k] for k in ("rounding", "seed", "budget") if k in kw}
    if "payments" in kw:
        known["payments_"] = kw["payments"]
    return solve_compact_auction(inst, opts, name="compact", **known)
