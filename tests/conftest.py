"""Shared test helpers: tiny random instances and brute-force oracles (the "exact first" ground truth)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from fairplace.core.domain import SPREAD_MACHINE, App, AuctionInstance, Bid, Job, PlacementInstance
from fairplace.instances.generators import grid_cluster


def tiny_auction(
    seed: int,
    apps: int = 3,
    machines: int = 2,
    gpm: int = 2,
    bids: int = 3,
    null_fraction: float = 0.3,
) -> AuctionInstance:
    """Random explicit bid tables small enough to enumerate."""
    rng = np.random.default_rng(seed)
    cl = grid_cluster(machines, gpm, machines_per_rack=1)
    G = len(cl)
    out = []
    for a in range(apps):
        table = []
        for _ in range(bids):
            k = int(rng.integers(1, G + 1))
            idx = sorted(rng.choice(G, size=k, replace=False).tolist())
            table.append(
                Bid(tuple(cl.gpus[i].id for i in idx), float(np.round(rng.uniform(0.3, 4.0), 3)))
            )
        empty = None if rng.random() < null_fraction else float(np.round(rng.uniform(2.0, 8.0), 3))
        out.append(App(f"a{a}", tuple(table), empty))
    return AuctionInstance(cl, tuple(out))


def brute_force_pf(inst: AuctionInstance, apps=None):
    """max over all conflict-free choices of (#unbounded apps served, sum -log rho); returns (value, choices)."""
    apps = list(range(len(inst.apps))) if apps is None else list(apps)
    options = [[None, *range(len(inst.apps[i].bids))] for i in apps]
    best, best_choices = None, []
    for combo in itertools.product(*options):
        used = set()
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
        served, log_sum = 0, 0.0
        for i, b in zip(apps, combo, strict=True):
            app = inst.apps[i]
            if b is not None:
                log_sum -= math.log(app.bids[b].rho)
                served += app.rho_empty is None
            elif app.rho_empty is not None:
                log_sum -= math.log(app.rho_empty)
        val = (served, log_sum)
        if best is None or val[0] > best[0] or (val[0] == best[0] and val[1] > best[1] + 1e-12):
            best, best_choices = val, [dict(zip(apps, combo, strict=True))]
        elif val[0] == best[0] and abs(val[1] - best[1]) <= 1e-12:
            best_choices.append(dict(zip(apps, combo, strict=True)))
    return best, best_choices


def brute_force_payments(inst: AuctionInstance, choice: dict) -> dict[int, float]:
    """c_i by enumeration: others' value in PF over others' optimum without i (lexicographic)."""
    n = len(inst.apps)
    out = {}
    for i in range(n):
        others = [j for j in range(n) if j != i]
        served, log_sum = 0, 0.0
        for j in others:
            app = inst.apps[j]
            if choice.get(j) is not None:
                log_sum -= math.log(app.bids[choice[j]].rho)
                served += app.rho_empty is None
            elif app.rho_empty is not None:
                log_sum -= math.log(app.rho_empty)
        (s2, l2), _ = brute_force_pf(inst, others)
        out[i] = 0.0 if served < s2 else min(1.0, math.exp(log_sum - l2))
    return out


def tiny_placement(
    seed: int, jobs: int = 3, machines: int = 2, gpm: int = 2, penalty: float = 1.5
) -> PlacementInstance:
    rng = np.random.default_rng(seed)
    G = machines * gpm
    pm = {
        "A": np.round(rng.choice([0.9, 1.0, 1.1, 2.5], G), 3),
        "B": np.round(rng.choice([0.98, 1.0, 1.02], G), 3),
    }
    cl = grid_cluster(machines, gpm, machines_per_rack=1, pm=pm)
    js = tuple(
        Job(
            f"j{j}",
            int(rng.integers(1, min(G, 3) + 1)),
            str(rng.choice(["A", "B"])),
            weight=float(rng.choice([1.0, 2.0])),
        )
        for j in range(jobs)
    )
    return PlacementInstance(cl, js, locality_penalty=penalty)


def brute_force_placement(inst: PlacementInstance):
    """max (#placed, -sum w*S) over every assignment of disjoint GPU sets; returns (placed, weighted S)."""
    cl = inst.cluster
    G = len(cl)
    best = None

    def rec(j, used, placed, cost):
        nonlocal best
        if j == len(inst.jobs):
            key = (placed, -cost)
            if best is None or key[0] > best[0] or (key[0] == best[0] and key[1] > best[1] + 1e-12):
                best = key
            return
        job = inst.jobs[j]
        rec(j + 1, used, placed, cost)
        free = [g for g in range(G) if g not in used]
        for sub in itertools.combinations(free, job.gpus):
            idx = np.array(sub)
            L = 1.0 if cl.spread(idx) == SPREAD_MACHINE else inst.locality(job)
            S = L * cl.pm_vector(job.cls)[idx].max()
            rec(j + 1, used | set(sub), placed + 1, cost + job.weight * S)

    rec(0, frozenset(), 0, 0.0)
    return best[0], -best[1]


@pytest.fixture
def fig5():
    """THEMIS Fig. 5 as bid tables. rho of a 4-GPU bundle = S(bundle) (T_id: the app alone on half the cluster).
    VGG16 is placement-sensitive (S = 1.6 across machines), Inception-v3 is not (S = 1.05)."""
    inst1 = {
        "kind": "auction",
        "gpus": [
            {"id": f"m{m}/{g}", "machine": f"m{m}", "rack": "r0"}
            for m in range(2)
            for g in range(4)
        ],
        "apps": [
            {
                "id": app,
                "rho_empty": 10.0,
                "bids": [
                    {"gpus": [f"m0/{g}" for g in range(4)], "rho": 1.0},
                    {"gpus": [f"m1/{g}" for g in range(4)], "rho": 1.0},
                    {"gpus": ["m0/0", "m0/1", "m1/0", "m1/1"], "rho": 1.6},
                    {"gpus": ["m0/2", "m0/3", "m1/2", "m1/3"], "rho": 1.6},
                ],
            }
            for app in ("A1", "A2")
        ],
    }
    gpus2 = [{"id": f"m0/{g}", "machine": "m0", "rack": "r0"} for g in range(4)]
    gpus2 += [
        {"id": f"m{m}/{g}", "machine": f"m{m}", "rack": "r0"} for m in (1, 2) for g in range(2)
    ]
    big = [f"m0/{g}" for g in range(4)]
    split = ["m1/0", "m1/1", "m2/0", "m2/1"]
    inst2 = {
        "kind": "auction",
        "gpus": gpus2,
        "apps": [
            {
                "id": "A1-inception",
                "rho_empty": 10.0,
                "bids": [{"gpus": big, "rho": 1.0}, {"gpus": split, "rho": 1.05}],
            },
            {
                "id": "A2-vgg16",
                "rho_empty": 10.0,
                "bids": [{"gpus": big, "rho": 1.0}, {"gpus": split, "rho": 1.6}],
            },
        ],
    }
    return inst1, inst2
