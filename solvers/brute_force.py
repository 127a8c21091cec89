"""Brute-force oracles for tiny instances: enumerate every choice straight from the instance, with no
formulation or solver code, so the exact solvers are checked against an independent ground truth.

* PF (THEMIS Pseudocode 1): max over conflict-free choices (each app: nothing or one bid, no GPU twice)
  of (#apps with unbounded rho_empty served, sum_i -log rho_i), lexicographically.
* PA payments: c_i = exp(others' log-value in the PF allocation - others' PF optimum without i),
  capped at 1; 0 when leaving i out serves more unbounded apps.
* Joint placement (PAL, exact): max #jobs placed, then min sum_j w_j S_j with
  S_j = L_j(spread) * max V (:func:`fairplace.core.domain.slowdown`).

Used by the tests (``tests/conftest.py``) and by ``fairplace.runs.small_suite`` (the stored small
suite's optima)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from fairplace.core.domain import AuctionInstance, Instance, PlacementInstance, slowdown

#: two lexicographic values closer than this are ties
TIE = 1e-12


def _value(inst: AuctionInstance, apps, combo) -> tuple[int, float]:
    """(#unbounded apps served, sum of -log rho over apps with finite rho) of one choice."""
    served, log_sum = 0, 0.0
    for i, b in zip(apps, combo, strict=True):
        app = inst.apps[i]
        if b is not None:
            log_sum -= math.log(app.bids[b].rho)
            served += app.rho_empty is None
        elif app.rho_empty is not None:
            log_sum -= math.log(app.rho_empty)
    return served, log_sum


def brute_force_pf(inst: AuctionInstance, apps=None):
    """max over all conflict-free choices of (#unbounded apps served, sum -log rho) among ``apps``
    (default: all); returns (value, every optimal choice as {app index: bid index or None})."""
    apps = list(range(len(inst.apps))) if apps is None else list(apps)
    options = [[None, *range(len(inst.apps[i].bids))] for i in apps]
    best, best_choices = None, []
    for combo in itertools.product(*options):
        used: set[str] = set()
        ok = True
        for i, b in zip(apps, combo, strict=True):
            if b is None:
                continue
            gs = set(inst.apps[i].bids[b].gpus)
            if used & gs:
                ok = False
                break
            used |= gs
        if not ok:
            continue
        val = _value(inst, apps, combo)
        if best is None or val[0] > best[0] or (val[0] == best[0] and val[1] > best[1] + TIE):
            best, best_choices = val, [dict(zip(apps, combo, strict=True))]
        elif val[0] == best[0] and abs(val[1] - best[1]) <= TIE:
            best_choices.append(dict(zip(apps, combo, strict=True)))
    return best, best_choices


def brute_force_payments(inst: AuctionInstance, choice: dict) -> dict[int, float]:
    """c_i by enumeration: others' value in ``choice`` over others' PF optimum without i
    (lexicographic: 0 when i's absence serves more unbounded apps), capped at 1."""
    n = len(inst.apps)
    out = {}
    for i in range(n):
        others = [j for j in range(n) if j != i]
        served, log_sum = _value(inst, others, [choice.get(j) for j in others])
        (s2, l2), _ = brute_force_pf(inst, others)
        out[i] = 0.0 if served < s2 else min(1.0, math.exp(log_sum - l2))
    return out


def brute_force_placement(inst: PlacementInstance) -> tuple[int, float]:
    """max (#placed, -sum w*S) over every assignment of disjoint GPU sets; returns (placed, weighted S)."""
    cl = inst.cluster
    G = len(cl)
    best: tuple[int, float] | None = None

    def rec(j, used, placed, cost):
        nonlocal best
        if j == len(inst.jobs):
            key = (placed, -cost)
            if best is None or key[0] > best[0] or (key[0] == best[0] and key[1] > best[1] + TIE):
                best = key
            return
        job = inst.jobs[j]
        rec(j + 1, used, placed, cost)
        free = [g for g in range(G) if g not in used]
        for sub in itertools.combinations(free, job.gpus):
            idx = np.array(sub)
            L = inst.locality(job)
            S = slowdown((1.0, L, L), cl.spread(idx), cl.pm_vector(job.cls)[idx])
            rec(j + 1, used | set(sub), placed + 1, cost + job.weight * S)

    rec(0, frozenset(), 0, 0.0)
    assert best is not None  # rec reaches the end once at least (every job unplaced)
    return best[0], -best[1]


def brute_force(inst: Instance) -> dict:
    """The stored-optimum record of a tiny instance: objective in the ``fairplace solve`` sense."""
    if isinstance(inst, AuctionInstance):
        (served, obj), _ = brute_force_pf(inst)
        return {"objective": obj, "n_unbounded_served": served}
    placed, obj = brute_force_placement(inst)
    return {"objective": obj, "placed": placed}
