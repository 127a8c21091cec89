"""Benchmarks of the THEMIS agents and the compact arbiter (``fairplace bench``).

* ``auction_pf_compact_1024``: compact PF, 1,024 GPUs (256 machines x 4, racks of 16) x 64 apps, target 10 s;
* ``auction_pa_compact_1024``: full PA on the same instance (PF + leave-one-out), target 30 s;
* ``auction_pa_compact_1024x128``: the same with 128 apps (contended: every app pays), target 30 s;
* ``auction_pa_compact_1024x{16,32,256}``: full PA, 1,024 GPUs x 16 / 32 / 256 apps (light to heavy
  contention), target 30 s each, 5 s at 256 apps (the scale goal; 64 and 128 apps are the two cases above);
  at 256 apps the per-machine LP (~140k columns) took minutes and its integral cells could not be
  placed (106 apps need a whole machine of good GPUs, 98 exist); the machine-aggregated LP
  (~29k columns) takes ~1 s and the PF closes in ~11 branch-and-bound LPs; the 256 PF_{-i} fall
  into 19 classes of alike apps with one payment each, settled by 19 *who leaves* MILPs
  (``solvers/compact/pa_leave.py``: ~6 s CPU in all, of which PF ~1.6 s, LPs ~1.1 s, the
  MILPs ~2.8 s) instead of one reduced-cost-fixed MILP per app (~26-30 s CPU);
* ``auction_pa_compact_4096x64``: full PA, 4,096 GPUs (1,024 machines x 4) x 64 apps, target 60 s;
* ``auction_pa_compact_4096x256``: the same with 256 apps, target 60 s: every PF_{-i} LP has
  integral cells that the greedy places at its bound (``lp_cells``), so the time is the PF (~5 s
  CPU), 256 warm LP re-solves (~90 ms CPU each) and 256 greedy placements (~40 ms each);
* ``auction_pa_compact_contended_32``: full PA, 12 apps on 32 GPUs (8 machines x 4, racks of 4): the
  LP shortcut fails and PF and every PF_{-i} are MILPs (``formulations/compact_sym.py``), target 30 s;
  full mode only (~18 s on 2 cores), as are 1024x256 (~6 s CPU), 4096x64 (~20 s) and 4096x256
  (~43 s CPU, 2 threads);
* ``bid_generation``: subset enumeration vs symmetry-reduced count bundles vs the rho table, per
  offer size (bundles and seconds); ``--quick`` times the offers of 4-12 GPUs only.

Each case is one solve, so ``--quick`` runs the same instances (there are no repetitions to drop).
"""

from __future__ import annotations

import time
from dataclasses import replace

from fairplace.formulations.agents import count_bundles, rho_table, subset_bids
from fairplace.instances.generators import random_agent_auction
from fairplace.solvers.compact import CompactAuctionOptions, solve_compact_auction

from . import Case, cases


def sizes_of(inst) -> dict:
    """The sizes of an auction as its benchmark records them."""
    return {"gpus": len(inst.cluster), "apps": len(inst.agents or inst.apps)}


def _pf(quick: bool) -> dict:
    inst = random_agent_auction()
    t0 = time.perf_counter()
    sol = solve_compact_auction(inst, config=CompactAuctionOptions(payments=False))
    return {
        "seconds": time.perf_counter() - t0,
        "sizes": sizes_of(inst),
        "status": sol.status,
        "objective": sol.objective,
    }


def _timed_pa(inst) -> dict:
    t0, c0 = time.perf_counter(), time.process_time()
    sol = solve_compact_auction(inst)
    return {
        "seconds": time.perf_counter() - t0,
        "cpu_seconds": time.process_time() - c0,  # both threads of the payments
        "sizes": sizes_of(inst),
        "status": sol.status,
        "objective": sol.objective,
        "milp_solves": sol.extra["milp_solves"],
        "loo_routes": sol.extra["loo_routes"],
        "leftover": len(sol.leftover or []),
    }


def _pa(apps: int, machines: int = 256, **kw):
    def run(quick: bool) -> dict:
        return _timed_pa(random_agent_auction(apps=apps, machines=machines, **kw))

    return run


def _bids(quick: bool) -> dict:

    inst = random_agent_auction(apps=1, machines=64, seed=3)
    app = replace(inst.agents[0], d_max=64, cls="A")
    offers = (4, 8, 12) if quick else (4, 8, 12, 16, 32, 64, 256)
    rows = []
    t_all = time.perf_counter()
    for size in offers:
        offer = list(range(size))
        row: dict[str, float] = {"offer": size}
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
    return {
        "seconds": time.perf_counter() - t_all,
        "sizes": {"gpus": len(inst.cluster), "offers": list(offers)},
        "rows": rows,
    }


CASES = cases(
    __name__,
    {
        "auction_pf_compact_1024": Case(_pf, 10.0, {"gpus": 1024, "apps": 64}),
        "auction_pa_compact_1024": Case(_pa(64), 30.0, {"gpus": 1024, "apps": 64}),
        "auction_pa_compact_1024x16": Case(_pa(16), 30.0, {"gpus": 1024, "apps": 16}),
        "auction_pa_compact_1024x32": Case(_pa(32), 30.0, {"gpus": 1024, "apps": 32}),
        "auction_pa_compact_1024x128": Case(_pa(128), 30.0, {"gpus": 1024, "apps": 128}),
        "auction_pa_compact_1024x256": Case(  # the scale goal: 5 s
            _pa(256), 5.0, {"gpus": 1024, "apps": 256}, full_only="~6 s CPU"
        ),
        "auction_pa_compact_4096x64": Case(
            _pa(64, 1024), 60.0, {"gpus": 4096, "apps": 64}, full_only="~20 s on 2 cores"
        ),
        "auction_pa_compact_4096x256": Case(
            _pa(256, 1024), 60.0, {"gpus": 4096, "apps": 256}, full_only="~43 s CPU on 2 threads"
        ),
        "auction_pa_compact_contended_32": Case(
            _pa(12, 8, machines_per_rack=4),
            30.0,
            {"gpus": 32, "apps": 12},
            full_only="one ~18 s MILP-bound PA on 2 cores",
        ),
        "bid_generation": Case(_bids, 30.0, {"gpus": 256}),
    },
)
