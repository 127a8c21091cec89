"""The compact arbiter's enumeration route (``solvers/compact/enumeration.py``) on auctions captured from
THEMIS simulations: how many it takes, how many it leaves to the LP / MILP route, disagreements
(must be 0) and time per auction of both routes.

    python papers/themis/experiments/themis_measure_enumeration.py OUT.json 0,1,2 [--sim-milp]

Per seed: simulate THEMIS Workload 2 (small scale, 8 apps; ``packed-sticky``) with every auction
captured, then replay each captured auction through ``auction_on_offer`` twice (default
route, and ``enum_limit=0``: the LP / MILP route), timing each. Disagreement: a different PF
objective or number of unbounded apps served (rel. 1e-9), or a payment c_i of the MILP route
that differs from its PF's others' value over the enumeration's PF_{-i} (``pa.payment``,
rel. 1e-9: the same c_i when both routes pick the same PF, and exact between tied PF optima),
or a different c_i when both PFs give every app the same rho. ``--sim-milp`` also times each
simulation with the LP / MILP route forced. Writes a JSON summary to OUT.json and prints it.
"""

import json
import sys
import time

import numpy as np

import fairplace
import fairplace.solvers.compact as compact
from fairplace.formulations import pa
from fairplace.formulations.compact import CompactProgram
from fairplace.instances.workloads import themis_workload
from fairplace.solvers.compact.enumeration import enumerate_auction

REL = 1e-9


def workload(seed: int):
    try:
        return themis_workload(2, scale="small", n_apps=8, seed=seed)
    except TypeError:  # a checkout without the ``scale`` presets
        return themis_workload(2, n_apps=8, base_gpus=32, seed=seed)


def simulate(seed: int, enum_limit: int | None = None):
    """(seconds, captured auctions) of one simulation (``enum_limit``: forced on every auction)."""
    real, seen = compact.auction_on_offer, []

    def wrap(cluster, offer, apps, opts=compact.SolveOptions(), config=None, *args, **kw):
        config = compact.CompactAuctionOptions() if config is None else config
        seen.append((cluster, offer, apps, opts, config))
        if enum_limit is not None:
            config = config.with_(enum_limit=enum_limit)
        return real(cluster, offer, apps, opts, config, *args, **kw)

    compact.auction_on_offer = wrap  # the arbiter imports it from the module on each call
    try:
        t = time.perf_counter()
        fairplace.simulate(workload(seed), "themis", "packed-sticky", progress=False)
        return time.perf_counter() - t, seen
    finally:
        compact.auction_on_offer = real


def close(a, b):
    return abs(a - b) <= REL * (1 + abs(b))


def replay(auction):
    """(route, seconds default, seconds MILP route, disagreement or None)."""
    cl, offer, apps, opts, config = auction
    ids = [a.table.app_id for a in apps]
    t = time.perf_counter()
    en = compact.auction_on_offer(cl, offer, apps, opts, config).solution(cl, ids, "compact")
    t_en = time.perf_counter() - t
    t = time.perf_counter()
    lp = config.with_(enum_limit=0)
    mi = compact.auction_on_offer(cl, offer, apps, opts, lp).solution(cl, ids, "compact")
    t_mi = time.perf_counter() - t
    route = en.extra["pf_route"]
    if route != "enumeration":
        return route, t_en, t_mi, None
    prog = CompactProgram(cl, tuple(int(g) for g in offer), apps, reduced=False)
    e = enumerate_auction(prog, 10**9)
    why = []
    if en.extra["unserved_unbounded"] != mi.extra["unserved_unbounded"]:
        why.append("unbounded apps served")
    if not close(en.objective, mi.objective):
        why.append(f"PF {en.objective!r} vs {mi.objective!r}")
    milp_pf = {ids.index(a): (tuple(c), ()) for a, c in mi.extra["cells"].items()}
    for i in milp_pf:
        c = pa.payment(compact._others(prog, milp_pf, i), e.loo[i])
        if not close(mi.payments[ids[i]], c):
            why.append(f"c_{ids[i]} {mi.payments[ids[i]]!r} vs {c!r}")
    if en.extra["rho"] == mi.extra["rho"]:
        why += [f"c_{a}" for a, c in mi.payments.items() if not close(en.payments[a], c)]
    return route, t_en, t_mi, ("; ".join(why) or None)


def stats(xs):
    xs = np.asarray(xs) * 1e3
    if not xs.size:
        return None
    return {"median_ms": float(np.median(xs)), "p95_ms": float(np.quantile(xs, 0.95))}


def main():
    out, seeds = sys.argv[1], [int(s) for s in sys.argv[2].split(",")]
    summary = {"seeds": {}}
    t_en, t_mi, t_en_all, t_mi_all = [], [], [], []
    for seed in seeds:
        sim_s, auctions = simulate(seed)
        row = {"auctions": len(auctions), "sim_seconds": round(sim_s, 1)}
        if "--sim-milp" in sys.argv:
            row["sim_seconds_milp_route"] = round(simulate(seed, enum_limit=0)[0], 1)
        routes, bad = {}, []
        for a in auctions:
            route, te, tm, why = replay(a)
            routes[route] = routes.get(route, 0) + 1
            t_en_all.append(te)
            t_mi_all.append(tm)
            if route == "enumeration":
                t_en.append(te)
                t_mi.append(tm)
            if why:
                bad.append(why)
        row.update(routes=routes, disagreements=len(bad), examples=bad[:5])
        summary["seeds"][seed] = row
        print(seed, json.dumps(row), flush=True)
    summary["enumerated_auctions"] = {"enumeration": stats(t_en), "milp_route": stats(t_mi)}
    summary["all_auctions"] = {"default": stats(t_en_all), "milp_route": stats(t_mi_all)}
    print(json.dumps(summary, indent=1))
    with open(out, "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
