"""Solve the compact arbiter: PF and the full partial-allocation auction without bid enumeration.

The pieces: ``compact.pf`` (PF: LP first, then the MILP), ``compact.lp`` (placing an LP's integral
cells: greedy pack, placement MILP), ``compact.pa_payments`` (leave-one-out payments c_i), ``compact.packing``
(greedy placements, ``floor`` rounding), ``compact.config`` (the settings, one spec each). This
module runs the whole auction at the index level (:func:`auction_on_offer`: bidders by position,
GPUs by cluster index; what the simulator's arbiter calls) and names bidders and GPUs only at the
``Solution`` boundary (:func:`solve_compact_auction`, the registry's ``compact``).

``time_limit`` is the budget of the whole auction, as in ``solvers/auction.py`` (``solvers/budget.py``):
every LP / MILP gets what is left, none starts once it is spent; apps whose PF_{-i} was not solved
to optimality are listed in ``extra['payments_inexact']`` (c_i from the best incumbent, else 1).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from dataclasses import replace as dc_replace
from typing import Any

import numpy as np

from fairplace.core.domain import AuctionInstance, Cluster
from fairplace.core.errors import OptionError
from fairplace.core.solution import Solution
from fairplace.formulations import pa
from fairplace.formulations.agents import free_gpus
from fairplace.formulations.compact import CompactApp, CompactProgram, compact_apps
from fairplace.formulations.compact_cache import OfferCache
from fairplace.formulations.compact_milp import Choice
from fairplace.solvers.compact.packing import best_subbundle, pack

from ..auction import auction_gap, pf_bound
from ..budget import Budget, budget_for
from ..options import SolveOptions
from .config import ROUTES, CompactAuctionOptions
from .dp import DPResult, dp_suits, solve_dp
from .enumeration import enumerate_auction
from .enumeration import leave_one_out as enum_loo
from .pa_payments import NOT_RUN, _without_solve, payments, values_without
from .pa_payments import _others as _others  # papers/themis/experiments read it here
from .pf import REDUCED_MAX_MACHINES, solve_compact_pf

#: most joint choices of one leave-one-out problem enumerated for the payments of a PF solved by
#: the LP / MILP route (``_enum_payments``); above it every PF_{-i} takes the LP route
LOO_ENUM_LIMIT = 60000

__all__ = [
    "NOT_RUN",
    "REDUCED_MAX_MACHINES",
    "ROUTES",
    "Choice",
    "CompactApp",
    "CompactAuctionOptions",
    "CompactAuctionResult",
    "CompactProgram",
    "OfferCache",
    "auction_on_offer",
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


@dataclass(frozen=True)
class CompactAuctionResult:
    """One compact auction at the index level: bidders by their position in ``apps``, GPUs by
    cluster index (int64 arrays, ascending). ``allocation``: PA's final GPUs per bidder;
    ``pf_allocation`` / ``payments`` / ``leftover``: the PF bundles, c_i and the PF GPUs PA left
    (None when no PF point was found); ``extra``: ``Solution.extra`` with bidders by position.
    :meth:`solution` names them (the :class:`~fairplace.core.solution.Solution` boundary)."""

    status: str
    seconds: float
    objective: float | None
    bound: float | None
    message: str
    allocation: dict[int, np.ndarray]
    pf_allocation: dict[int, np.ndarray] | None
    payments: dict[int, float] | None
    leftover: np.ndarray | None
    extra: dict[str, Any]

    def solution(self, cluster: Cluster, ids: Sequence[str], name: str) -> Solution:
        """The auction ``Solution``: bidder i named ``ids[i]``, GPU indices as ``cluster``'s ids."""
        x = self.extra
        listed = [ids[i] for i in x["payments_inexact"]]
        extra = x | {
            "unserved_unbounded": [ids[i] for i in x["unserved_unbounded"]],
            "rho": {ids[i]: r for i, r in x["rho"].items()},
            "cells": {ids[i]: c for i, c in x["cells"].items()},
            "payments_inexact": listed if self.pf_allocation is not None else sorted(listed),
        }
        pf, pay, left = self.pf_allocation, self.payments, self.leftover
        return Solution(
            kind="auction",
            status=self.status,
            solver=name,
            seconds=self.seconds,
            objective=self.objective,
            bound=self.bound,
            gap=None if self.objective is None else auction_gap(self.objective, self.bound),
            allocation={ids[i]: cluster.ids(g) for i, g in self.allocation.items()},
            pf_allocation=None if pf is None else {ids[i]: cluster.ids(g) for i, g in pf.items()},
            payments=None if pay is None else {ids[i]: c for i, c in pay.items()},
            leftover=None if left is None else cluster.ids(left),
            message=self.message,
            extra=extra,
        )


def solve_compact_auction(
    inst: AuctionInstance,
    opts: SolveOptions = SolveOptions(),
    config: CompactAuctionOptions = CompactAuctionOptions(),
    budget: Budget | None = None,
    cache: OfferCache | None = None,
) -> Solution:
    """PF + PA over the agent-form apps of ``inst`` on its free GPUs (:func:`auction_on_offer`),
    bidders named by their app ids and GPUs by id. ``budget`` (default: ``opts.time_limit`` from
    now) counts the rho tables' set-up too."""
    t0 = time.perf_counter()
    budget = budget_for(opts, budget)
    offer = free_gpus(inst)
    apps = compact_apps(inst, offer)
    res = auction_on_offer(inst.cluster, offer, apps, opts, config, budget, cache)
    res = dc_replace(res, seconds=time.perf_counter() - t0)
    return res.solution(inst.cluster, [a.id for a in inst.agents], config.name)


def auction_on_offer(
    cluster: Cluster,
    offer: np.ndarray,
    apps: tuple[CompactApp, ...],
    opts: SolveOptions = SolveOptions(),
    config: CompactAuctionOptions = CompactAuctionOptions(),
    budget: Budget | None = None,
    cache: OfferCache | None = None,
) -> CompactAuctionResult:
    """PF + PA of the compact ``apps`` (bidders 0..n-1) on the ``offer`` GPU indices of
    ``cluster``, settled as ``config`` says (:class:`.config.CompactAuctionOptions`: the route, the
    rounding, exact or lottery-only payments). ``budget`` (default: ``opts.time_limit`` from now)
    bounds the whole auction (module docstring); ``cache``: what programs on the same offer share
    (``formulations/compact_cache.py``; a caller running many auctions keeps one; default: one
    for this auction). With the ``lottery`` rounding and ``exact_payments=False``, a PF_{-i}
    whose bounds already put c_i above app i's draw (:func:`.pa_payments.lottery_floor`, route
    ``lottery``: i keeps its bundle) or at most it (:func:`.pa_payments.lottery_ceiling`,
    ``lottery_drop``: it loses it) stays open: the allocation is the exact payments' one and the
    payment is NaN."""
    t0 = time.perf_counter()
    budget = budget_for(opts, budget)
    if opts.mip_allow_restart is None:  # as in solvers/auction.py (see SolveOptions)
        opts = opts.with_(mip_allow_restart=False)
    cache = OfferCache() if cache is None else cache
    n, rounding = len(apps), config.rounding
    log: dict = {}
    res, choice, prog, enum, plain = _compact_pf(
        cluster, offer, apps, opts, config, budget, log, cache
    )
    if choice is None:
        extra = {
            "rounding": rounding, "unserved_unbounded": [], "rho": {}, "pf_status": res.status,
            "unbounded_served_bound": None, "loo_solves": 0, "milp_solves": 1,
            "payments_inexact": list(range(n)) if config.payments else [],
            "cells": {}, "loo_routes": {}, "pf_route": log["route"],
        }  # fmt: skip
        seconds = time.perf_counter() - t0
        return CompactAuctionResult(
            res.status, seconds, None, None, res.message, {}, None, None, None, extra
        )
    pay = _PA(res.status, {i: 1.0 for i in range(n)}, int(enum is None))
    if config.payments and enum is not None:  # every PF_{-i} from the same enumeration
        pay.c.update(enum.payments())
        pay.k = len(choice)
        pay.routes = dict.fromkeys(choice, log["route"])  # "enumeration" or "dp"
    elif config.payments and not (
        plain is not None and _enum_payments(pay, plain, choice, n, res.status)
    ):
        draws = None
        if not config.exact_payments and rounding == "lottery":
            draws = pa.lottery_draws(choice, config.seed)
        live = log.get("live_lp")
        basis = log.get("lp_basis")
        _lp_payments(
            pay, prog, choice, opts, config.reduced, budget, n, res.status, live, draws, basis
        )
    # NaN (``exact_payments=False``): the lottery keeps / drops the bundle whatever c_i is
    shares = {
        i: (0.0 if pay.routes.get(i) == "lottery_drop" else 1.0) if math.isnan(c) else c
        for i, c in pay.c.items()
    }
    final = round_compact(prog, choice, shares, rounding, config.seed)
    used = {g for i in final for g in final[i]}
    pf_gpus = [g for i in sorted(choice) for g in choice[i][1]]
    val = enum.pf_value() if isinstance(enum, DPResult) else prog.value(choice)
    bound, served_max = pf_bound(prog, res, val)
    return CompactAuctionResult(
        status=pay.status,
        seconds=time.perf_counter() - t0,
        objective=val.log_sum,
        bound=bound,
        message=res.message,
        allocation={i: _gpus(g) for i, g in final.items()},
        pf_allocation={i: _gpus(choice[i][1]) for i in sorted(choice)},
        payments=dict(pay.c) if config.payments else None,
        leftover=_gpus(sorted(g for g in pf_gpus if g not in used)),
        extra=_extra(apps, choice, res.status, served_max, log["route"], pay, config),
    )


def _gpus(idx) -> np.ndarray:
    return np.asarray(idx, dtype=np.int64)


def _extra(apps, choice, pf_status, served_max, pf_route, pay: _PA, config) -> dict:
    """The compact auction's ``Solution.extra`` (``fairplace.core.solution.COMPACT_EXTRA``),
    bidders by position."""
    return {
        "rounding": config.rounding,
        "unserved_unbounded": [
            i for i, a in enumerate(apps) if a.w_empty is None and i not in choice
        ],
        "rho": {i: float(apps[i].table.rho[choice[i][0]]) for i in choice},
        "pf_status": pf_status,
        "unbounded_served_bound": served_max,
        "cells": {i: list(choice[i][0]) for i in choice},
        # how the PF was settled (``compact.pf.PF_ROUTES``; "full" after an LP failure too)
        "pf_route": pf_route,
        "loo_solves": pay.k if config.payments else 0,
        "milp_solves": pay.n_solves,
        # how each PF_{-i} was settled, counted per route (``compact.pa_payments.ROUTES``)
        "loo_routes": dict(sorted(_count(pay.routes.values()).items())),
        # c_i of these apps rests on a PF_{-i} not solved to optimality (time limit: the best
        # incumbent; no point at all: c_i = 1)
        "payments_inexact": pay.inexact,
    }


def _count(values) -> dict:
    """{value: how often} (``collections.Counter``'s counts, quicker for a few values)."""
    out: dict = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


def _compact_pf(cl, offer, apps, opts, config, budget, log: dict, cache):
    """(raw result, PF choice or None, program, the DP / enumeration or None, the enumerated
    program or None): by the DP where ``config.route`` takes it, else by enumeration when the
    auction is small enough, else the LP / MILP route (``log``: how, and why a faster one failed).
    The enumerated program (built when ``enum_limit`` > 0) serves the leave-one-out enumeration of
    an LP / MILP route PF."""
    enum = plain = None
    route, enum_limit, aggregate = config.route, config.enum_limit, config.aggregate
    try_dp = route == "dp" or (route == "auto" and enum_limit > 0)
    if try_dp and not budget.spent():  # (= budget.options(opts) is not None)
        offer = tuple(np.asarray(offer).tolist())
        plain = CompactProgram(
            cl, offer, tuple(apps), reduced=False, aggregate=aggregate, cache=cache
        )
        if dp_suits(plain) if route == "auto" else len(plain.types) == 1:
            dp = solve_dp(plain)
            if dp is not None:
                log["route"] = "dp"
                return dp.result(), dp.choice, plain, dp, plain
        if enum_limit <= 0:  # the LP / MILP route's payments as before: no enumeration
            plain = None
    if enum_limit > 0 and not budget.spent():
        offer = tuple(int(g) for g in offer)
        if plain is None:
            plain = CompactProgram(
                cl, offer, tuple(apps), reduced=False, aggregate=aggregate, cache=cache
            )
        enum = enumerate_auction(plain, enum_limit)
    if enum is not None:
        log["route"] = "enumeration"
        return enum.result(), enum.choice, enum.prog, enum, plain
    res, choice, prog = solve_compact_pf(
        cl, offer, apps, opts, reduced=config.reduced, budget=budget, aggregate=aggregate,
        log=log, program=plain, cache=cache,
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
    inexact: list[int] = field(default_factory=list)  # bidder positions


def _enum_payments(pay: _PA, plain: CompactProgram, choice, n: int, pf_status: str) -> bool:
    """Every PF_{-i} by enumerating the auction without i (``compact.enumeration.leave_one_out``)
    when each has at most :data:`LOO_ENUM_LIMIT` joint choices, after the c_i = 1 checks that need
    no solve; False (``pay`` untouched) when one is larger. c_i are the LP / MILP route's (the
    same optima), without a HiGHS model."""
    c: dict[int, float] = {}
    routes: dict[int, str] = {}
    value_with = values_without(plain, choice)
    todo = _without_solve(plain, choice, value_with, c, {}, routes)
    loo = enum_loo(plain, todo, LOO_ENUM_LIMIT)
    if loo is None:
        return False
    c.update({i: pa.payment(value_with[i], loo[i]) for i in todo})
    pay.c.update(c)
    pay.k = len(todo)  # leave-one-out problems, as the LP route counts them
    pay.routes = routes | dict.fromkeys(todo, "enumeration")
    if pf_status != "optimal":  # every c_i is relative to a non-optimal PF
        pay.inexact = list(range(n))
    return True


def _lp_payments(
    pay: _PA,
    prog,
    choice,
    opts,
    reduced,
    budget,
    n: int,
    pf_status: str,
    live=None,
    draws=None,
    basis=None,
) -> None:
    """Every PF_{-i} on the PF's formulation (``prog.aggregate``; :func:`.pa_payments.payments`;
    ``live``: the PF's solved LP model; ``draws``: the lottery's draws; ``basis``: the PF LP's
    optimal basis, see there)."""
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
        basis=basis,
    )
    pay.n_solves += pay.k - sum(s == NOT_RUN for s in st.values())
    pay.c.update(ci)
    pay.inexact = [i for i, s in sorted(st.items()) if s != "optimal"]
    if pf_status != "optimal":  # every c_i is relative to a non-optimal PF
        pay.inexact = list(range(n))
    for s in st.values():
        if s != "optimal":
            pay.status = "time_limit" if s in ("time_limit", NOT_RUN) else s


def solve_compact(inst: AuctionInstance, opts: SolveOptions, **kw) -> Solution:
    """Registry entry ``compact``: the compact arbiter on an agent-form auction (the options
    ``rounding``, ``seed``, ``payments``, ``budget``; ``solvers/registry.py``)."""
    if inst.apps:
        raise OptionError(
            "solver", "solver 'compact' needs every app in agent form (found apps with 'bids')"
        )
    known = {k: kw[k] for k in ("rounding", "seed", "payments") if k in kw}
    return solve_compact_auction(inst, opts, CompactAuctionOptions(**known), kw.get("budget"))
