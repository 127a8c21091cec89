"""Benchmarks of the THEMIS agents and the compact arbiter (``fairplace bench``).

* ``auction_pf_compact_1024``: compact PF, 1,024 GPUs (256 machines x 4, racks of 16) x 64 apps, target 10 s;
* ``auction_pa_compact_1024``: full PA on the same instance (PF + leave-one-out), target 30 s;
* ``auction_pa_compact_1024x128``: the same with 128 apps (contended: every app pays), target 30 s;
* ``auction_pa_compact_1024x{16,32,256}``: full PA, 1,024 GPUs x 16 / 32 / 256 apps (light to heavy
  contention), target 30 s each (64 and 128 apps are the two cases above);
  at 256 apps the per-machine LP (~140k columns) took minutes and its integral cells could not be
  placed (106 apps need a whole machine of good GPUs, 98 exist); the machine-aggregated LP
  (~29k columns) takes ~1 s and the PF closes in ~11 branch-and-bound LPs; ~3/4 of the
  leave-one-out LPs split a few apps (a knapsack over GPU counts): each such PF_{-i} is closed by
  reduced-cost fixing and a MILP of ~1,000 columns (``solvers/compact_rc.py``), not a ~30 s full MILP;
* ``auction_pa_compact_4096x64``: full PA, 4,096 GPUs (1,024 machines x 4) x 64 apps, target 60 s;
* ``auction_pa_compact_contended_32``: full PA, 12 apps on 32 GPUs (8 machines x 4, racks of 4): the
  LP shortcut fails and PF and every PF_{-i} are MILPs (``formulations/compact_sym.py``), target 30 s;
* ``bid_generation``: subset enumeration vs symmetry-reduced count bundles vs the rho table, per
  offer size (bundles and seconds).
"""

from __future__ import annotations

import time

import numpy as np

from fairplace.instances.generators import random_agent_auction


def _pf(quick: bool) -> dict:
    from fairplace.solvers.compact import solve_compact_auction

    inst = random_agent_auction(**({"apps": 16, "machines": 64} if quick else {}))
    t0 = time.perf_counter()
    sol = solve_compact_auction(inst, payments_=False)
    return {"seconds": time.perf_counter() - t0, "status": sol.status, "objective": sol.objective}


def _timed_pa(inst) -> dict:
    from fairplace.solvers.compact import solve_compact_auction

    t0 = time.perf_counter()
    sol = solve_compact_auction(inst)
    return {
        "seconds": time.perf_counter() - t0,
        "status": sol.status,
        "objective": sol.objective,
        "milp_solves": sol.extra["milp_solves"],
        "loo_routes": sol.extra["loo_routes"],
        "leftover": len(sol.leftover or []),
    }


def _pa(quick: bool, apps: int = 64) -> dict:
    return _timed_pa(
        random_agent_auction(**({"apps": apps // 4, "machines": 64} if quick else {"apps": apps}))
    )


def _pa_apps(apps: int):
    def run(quick: bool) -> dict:
        return _pa(quick, apps=apps) | {"gpus": 64 * 4 if quick else 1024, "apps": apps}

    return run


def _pa4096(quick: bool) -> dict:
    size = {"apps": 16, "machines": 256} if quick else {"apps": 64, "machines": 1024}
    return _timed_pa(random_agent_auction(**size)) | {"gpus": 4 * size["machines"]}


def _pa_contended(quick: bool) -> dict:
    return _timed_pa(
        random_agent_auction(apps=12, machines=8, machines_per_rack=4, seed=1 if quick else 0)
    )


def _bids(quick: bool) -> dict:
    from fairplace.formulations.agents import count_bundles, rho_table, subset_bids

    inst = random_agent_auction(apps=1, machines=64, seed=3)
    app = inst.agents[0]
    from dataclasses import replace

    app = replace(app, d_max=64, cls="A")
    rows = []
    t_all = time.perf_counter()
    for size in (4, 8, 12) if quick else (4, 8, 12, 16, 32, 64, 256):
        offer = np.arange(size)
        row = {"offer": size}
        t0 = time.perf_counter()
        if size <= 12:
            bids, _ = subset_bids(app, inst.cluster, offer)
            row["subsets"], row["subset_s"] = len(bids), time.perf_counter() - t0
        t0 = time.perf_counter()
        if size <= 16:
            cb, _, _ = count_bundles(app, inst.cluster, offer)
            row["count_bundles"], row["count_s"] = len(cb), time.perf_counter() - t0
        t0 = time.perf_counter()
        t = rho_table(app, inst.cluster, offer)
        row["table_entries"], row["table_s"] = int(t.rho.size), time.perf_counter() - t0
        rows.append(row)
    return {"seconds": time.perf_counter() - t_all, "rows": rows}


CASES = {
    "auction_pf_compact_1024": (_pf, 10.0),
    "auction_pa_compact_1024": (_pa_apps(64), 30.0),
    "auction_pa_compact_1024x16": (_pa_apps(16), 30.0),
    "auction_pa_compact_1024x32": (_pa_apps(32), 30.0),
    "auction_pa_compact_1024x128": (_pa_apps(128), 30.0),
    "auction_pa_compact_1024x256": (_pa_apps(256), 30.0),
    "auction_pa_compact_4096x64": (_pa4096, 60.0),
    "auction_pa_compact_contended_32": (_pa_contended, 30.0),
    "bid_generation": (_bids, 30.0),
}
