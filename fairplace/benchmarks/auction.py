"""Benchmarks of the THEMIS agents and the compact arbiter (``fairplace bench``).

* ``auction_pf_compact_1024``: compact PF, 1,024 GPUs (256 machines x 4, racks of 16) x 64 apps, target 10 s;
* ``auction_pa_compact_1024``: full PA on the same instance (PF + leave-one-out), target 60 s;
* ``bid_generation``: subset enumeration vs symmetry-reduced count bundles vs the rho table, per
  offer size (bundles and seconds).
"""

from __future__ import annotations

import time

import numpy as np

from fairplace.domain import AgentApp, AgentJob, AuctionInstance
from fairplace.instances.generators import grid_cluster


def random_agent_auction(
    apps: int = 64,
    machines: int = 256,
    gpus_per_machine: int = 4,
    machines_per_rack: int = 16,
    levels: tuple[float, ...] = (1.0, 1.25),
    demands: tuple[int, ...] = (4, 8, 16, 32, 64),
    seed: int = 0,
    rho_empty: str = "finite",
) -> AuctionInstance:
    """Agent-form auction: single-job apps (Eq. 1) with random demand caps, work, elapsed time,
    locality sensitivity (0, 1 or 3 x the bootstrap constants) and a PM class with two levels."""
    rng = np.random.default_rng(seed)
    G = machines * gpus_per_machine
    pm = {"A": rng.choice(levels, G, p=[0.8] + [0.2 / (len(levels) - 1)] * (len(levels) - 1))}
    cl = grid_cluster(machines, gpus_per_machine, machines_per_rack, pm=pm)
    out = []
    for a in range(apps):
        d = int(rng.choice(demands))
        t_iter = float(rng.uniform(0.1, 1.0))
        iters = float(rng.integers(1_000, 100_000))
        done = float(rng.uniform(0, 0.5)) * iters
        elapsed = done * t_iter / max(1, d // 2)
        out.append(
            AgentApp(
                id=f"A{a}",
                jobs=(AgentJob(iters - done, t_iter, float(rng.choice([0.0, 1.0, 3.0]))),),
                t_start=0.0,
                t_now=elapsed,
                d_max=d,
                cls="A" if rng.random() < 0.7 else None,
                work_total=iters * t_iter,
                t_id={"variant": "themis", "n_avg": float(apps) / 4},
                rho_empty=None if rho_empty == "null" else 1e3,
            )
        )
    meta = {"generator": "random_agent_auction", "apps": apps, "machines": machines, "seed": seed}
    return AuctionInstance(cl, (), name=f"agents-{apps}x{G}-s{seed}", meta=meta, agents=tuple(out))


def _pf(quick: bool) -> dict:
    from fairplace.solvers.compact import solve_compact_auction

    inst = random_agent_auction(**({"apps": 16, "machines": 64} if quick else {}))
    t0 = time.perf_counter()
    sol = solve_compact_auction(inst, payments_=False)
    return {"seconds": time.perf_counter() - t0, "status": sol.status, "objective": sol.objective}


def _pa(quick: bool) -> dict:
    from fairplace.solvers.compact import solve_compact_auction

    inst = random_agent_auction(**({"apps": 16, "machines": 64} if quick else {}))
    t0 = time.perf_counter()
    sol = solve_compact_auction(inst)
    return {
        "seconds": time.perf_counter() - t0,
        "status": sol.status,
        "objective": sol.objective,
        "milp_solves": sol.extra["milp_solves"],
        "leftover": len(sol.leftover or []),
    }


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
    "auction_pa_compact_1024": (_pa, 60.0),
    "bid_generation": (_bids, 30.0),
}
