"""Mechanism audits of one allocation against the apps' reported bid tables (THEMIS §3.1, Thm 3.1-3.3).

Valuations come only from the reported tables, with free disposal: app i's rho on a GPU set G is

    rho_i(G) = min { rho_ib : B_ib subset of G }   (rho_empty_i if no bid fits; None -> inf)

* sharing incentive: rho_i <= 1 (THEMIS §3.2) — :func:`sharing_incentive` counts the apps that have it;
* Pareto efficiency: no other allocation (each app one bid or nothing, no GPU twice) makes every app
  weakly better and one strictly better — :func:`pareto_check`, exact by enumeration when the product of
  weakly-improving options is at most ``exact_limit``, otherwise by ``samples`` randomised greedy
  searches (a found witness is a proof of inefficiency; "no witness" is then only evidence);
* envy-freeness: no app i has rho_i(G_j) < rho_i(G_i) — :func:`envy_check`. With indivisible GPUs and PA
  rounding envy can appear; it is reported, never hidden.

Functions take an instance and either a :class:`~fairplace.core.solution.Solution` (``which='final'`` its
``allocation``, ``'pf'`` its ``pf_allocation``) or an allocation dict {app id: [gpu ids]}.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from fairplace.core.domain import App, AuctionInstance
from fairplace.core.solution import Solution

TOL = 1e-9


def _alloc(sol_or_alloc, which: str = "final") -> dict[str, list[str]]:
    if isinstance(sol_or_alloc, Solution):
        a = sol_or_alloc.pf_allocation if which == "pf" else sol_or_alloc.allocation
        return dict(a or {})
    return dict(sol_or_alloc)


def rho_of(app: App, gpus) -> float:
    """rho_i(G) with free disposal (see module docstring)."""
    have = set(gpus)
    best = math.inf if app.rho_empty is None else float(app.rho_empty)
    for b in app.bids:
        if b.rho < best and have.issuperset(b.gpus):
            best = float(b.rho)
    return best


def allocation_rhos(inst: AuctionInstance, sol_or_alloc, which: str = "final") -> dict[str, float]:
    """{app id: rho_i(G_i)} for every app of the instance."""
    alloc = _alloc(sol_or_alloc, which)
    return {a.id: rho_of(a, alloc.get(a.id, ())) for a in inst.apps}


@dataclass(frozen=True)
class SharingIncentive:
    n_ok: int  # apps with rho <= 1
    n_apps: int
    violating: tuple[str, ...]
    rho: dict[str, float] = field(repr=False)


def sharing_incentive(
    inst: AuctionInstance, sol_or_alloc, which: str = "final"
) -> SharingIncentive:
    """How many apps have rho_i <= 1 (sharing incentive) and which do not."""
    rho = allocation_rhos(inst, sol_or_alloc, which)
    bad = tuple(a for a, r in rho.items() if r > 1 + TOL)
    return SharingIncentive(len(rho) - len(bad), len(rho), bad, rho)


@dataclass(frozen=True)
class ParetoReport:
    efficient: bool  # False only with a witness; True from "exact" is a proof
    method: str  # "exact" | "sampled"
    checked: int  # allocations examined
    witness: dict[str, list[str]] | None = None  # a Pareto-improving allocation, if found


def _options(inst: AuctionInstance, cur: dict[str, float]) -> list[list[int | None]]:
    """Per app: bids (and 'nothing') that are weakly better for it than its current rho."""
    out = []
    for a in inst.apps:
        r = cur[a.id]
        opts: list[int | None] = [b for b, bid in enumerate(a.bids) if bid.rho <= r + TOL]
        empty = math.inf if a.rho_empty is None else a.rho_empty
        if empty <= r + TOL:
            opts.append(None)
        out.append(opts)
    return out


def _improves(inst, cur, combo) -> bool:
    for a, b in zip(inst.apps, combo, strict=True):
        r = (math.inf if a.rho_empty is None else a.rho_empty) if b is None else a.bids[b].rho
        if r < cur[a.id] - TOL:
            return True
    return False


def _as_alloc(inst, combo) -> dict[str, list[str]]:
    return {
        a.id: list(a.bids[b].gpus) for a, b in zip(inst.apps, combo, strict=True) if b is not None
    }


def pareto_check(
    inst: AuctionInstance,
    sol_or_alloc,
    which: str = "pf",
    exact_limit: int = 200_000,
    samples: int = 2_000,
    seed: int = 0,
) -> ParetoReport:
    """Is there a Pareto improvement over the allocation? (see module docstring)"""
    cur = allocation_rhos(inst, sol_or_alloc, which)
    opts = _options(inst, cur)
    if any(
        not o for o in opts
    ):  # cannot happen: the current bundle (or a subset) is always an option
        return ParetoReport(True, "exact", 0)
    size = math.prod(len(o) for o in opts)
    if size <= exact_limit:
        checked = 0
        combo: list[int | None] = []

        def rec(k: int, used: frozenset) -> dict | None:
            nonlocal checked
            if k == len(inst.apps):
                checked += 1
                return _as_alloc(inst, combo) if _improves(inst, cur, combo) else None
            for b in opts[k]:
                gs = () if b is None else inst.apps[k].bids[b].gpus
                if used.intersection(gs):
                    continue
                combo.append(b)
                w = rec(k + 1, used.union(gs))
                combo.pop()
                if w is not None:
                    return w
            return None

        w = rec(0, frozenset())
        return ParetoReport(w is None, "exact", checked, w)
    rng = np.random.default_rng(seed)
    n = len(inst.apps)
    for s in range(samples):
        combo = [None] * n
        used: set[str] = set()
        first = int(rng.integers(n))  # one app tries to strictly improve, then the others fit in
        order = [first, *(int(i) for i in rng.permutation(n) if i != first)]
        ok = True
        for i in order:
            cand = [
                b for b in opts[i] if b is None or not used.intersection(inst.apps[i].bids[b].gpus)
            ]
            if i == first:
                strict: list[int | None] = [
                    b
                    for b in cand
                    if b is not None and inst.apps[i].bids[b].rho < cur[inst.apps[i].id] - TOL
                ]
                cand = strict or cand
            if not cand:
                ok = False
                break
            b = cand[int(rng.integers(len(cand)))]
            combo[i] = b
            if b is not None:
                used.update(inst.apps[i].bids[b].gpus)
        if ok and _improves(inst, cur, combo):
            return ParetoReport(False, "sampled", s + 1, _as_alloc(inst, combo))
    return ParetoReport(True, "sampled", samples)


@dataclass(frozen=True)
class EnvyReport:
    envy_free: bool
    pairs: tuple[
        tuple[str, str, float, float], ...
    ]  # (envious i, envied j, rho_i(G_i), rho_i(G_j))


def envy_check(inst: AuctionInstance, sol_or_alloc, which: str = "final") -> EnvyReport:
    """Pairs (i, j) where app i reports a strictly lower rho on j's bundle than on its own."""
    alloc = _alloc(sol_or_alloc, which)
    pairs = []
    for a in inst.apps:
        own = rho_of(a, alloc.get(a.id, ()))
        for j, gs in alloc.items():
            if j == a.id:
                continue
            other = rho_of(a, gs)
            if other < own - TOL:
                pairs.append((a.id, j, own, other))
    return EnvyReport(not pairs, tuple(pairs))


def audit(inst: AuctionInstance, sol: Solution, **pareto_kw) -> dict:
    """One row of audit results for a solved auction: SI count, PE of the PF allocation, envy."""
    si = sharing_incentive(inst, sol)
    pe = pareto_check(
        inst, sol, which="pf" if sol.pf_allocation is not None else "final", **pareto_kw
    )
    ef = envy_check(inst, sol)
    return {
        "solver": sol.solver,
        "n_apps": si.n_apps,
        "n_sharing_incentive": si.n_ok,
        "pareto_efficient": pe.efficient,
        "pareto_method": pe.method,
        "envy_free": ef.envy_free,
        "n_envy_pairs": len(ef.pairs),
    }
