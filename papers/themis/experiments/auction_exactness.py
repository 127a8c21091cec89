"""The compact auction's DP route (``solvers/compact/dp.py``) against the full MILP route on
auctions captured from THEMIS simulations: mismatches of the PF objective and of every c_i
(tolerance 1e-9) and time per route.

    python papers/themis/experiments/auction_exactness.py capture OUT.json.gz small:1:0,1,2 small:2:0 paper:4:0 ...
    python papers/themis/experiments/auction_exactness.py replay A.json.gz[,B.json.gz] [--max N] [--sample N SAMPLE.json.gz]
        [--json R.json]

``capture``: per ``scale:contention:seeds`` simulate THEMIS Workload 2 (``themis-2``, ``themis``,
``packed-sticky``) and keep the inputs of every ``auction_on_offer`` call with two bidders
or more (a monkeypatch in this script only), serialised (``dump``; read by ``benchmarks.auction_dp.load_captured``: the cluster once,
rho tables as exact floats). ``replay``: re-solve each captured auction three times —
``route="auto"`` (the DP where it suits), today's solver (``route="compact"``: enumeration or
LP / MILP as before the DP), and the full MILP (``enum_limit=0``, no DP) — and compare the DP
route with the full MILP. A mismatch: PF objective or unbounded apps served differ (rel.
1e-9), or some c_i differs. Where the two PFs are tied optima that give some app a different
rho (so c_i = value of the others in PF / PF_{-i} has another numerator), the MILP's c_i is
recomputed from the MILP's PF and the DP's PF_{-i}: equal is a *tie*, not a mismatch (reported
apart). ``--sample N`` stores N auctions (every route and size class represented) for
``tests/solvers/test_auction_dp.py``.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import time

import numpy as np

import fairplace
import fairplace.solvers.compact as compact
from fairplace.benchmarks.auction_dp import load_captured, solve_captured
from fairplace.core.domain import Cluster
from fairplace.formulations import pa
from fairplace.formulations.compact import CompactApp, CompactProgram
from fairplace.solvers.compact.dp import solve_dp

REL = 1e-9


# --- capture --------------------------------------------------------------------------------------
def capture(
    scale: str, contention: int, seed: int, seen: list, path: str | None = None
) -> tuple[float, list[dict]]:
    """(seconds, captured auctions) of one THEMIS simulation; ``seen`` gains them, and is
    written to ``path`` every 1,000 auctions (a long run stopped keeps what it captured)."""
    real, start = compact.auction_on_offer, len(seen)

    sim_seed = seed

    def wrap(cluster, offer, apps, opts=compact.SolveOptions(), config=None, *args, **kw):
        config = compact.CompactAuctionOptions() if config is None else config
        if len(apps) >= 2:
            seen.append(
                {
                    "cluster": cluster,
                    "offer": [int(g) for g in offer],
                    "apps": apps,
                    "ids": [a.table.app_id for a in apps],
                    "rounding": config.rounding,
                    "seed": config.seed,
                    "payments": config.payments,
                    "exact_payments": config.exact_payments,
                    "time_limit": opts.time_limit,
                    "where": f"{scale}:x{contention}:s{sim_seed}",
                }
            )
            if path is not None and len(seen) % 1000 == 0:
                dump(seen, path)
        return real(cluster, offer, apps, opts, config, *args, **kw)

    compact.auction_on_offer = wrap  # the arbiter imports it from the module on each call
    try:
        t = time.perf_counter()
        fairplace.simulate(
            "themis-2", "themis", "packed-sticky", seed=seed, progress=False,
            trace_options={"scale": scale, "contention": contention},
        )  # fmt: skip
        return time.perf_counter() - t, seen[start:]
    finally:
        compact.auction_on_offer = real


def dump(auctions: list[dict], path: str) -> None:
    """Write captured auctions as gzipped JSON: each distinct cluster once, floats exact."""
    clusters: list[Cluster] = []
    rows = []
    for a in auctions:
        cl = a["cluster"]
        k = next((k for k, c in enumerate(clusters) if c is cl), None)
        if k is None:
            k = len(clusters)
            clusters.append(cl)
        row = {key: v for key, v in a.items() if key not in ("cluster", "apps")}
        row["cluster"] = k
        row["apps"] = [_app_json(x) for x in a["apps"]]
        rows.append(row)
    out = {"clusters": [_cluster_json(c) for c in clusters], "auctions": rows}
    with gzip.open(f"{path}.part", "wt") as f:  # then renamed: a stopped run leaves a whole file
        json.dump(out, f, separators=(",", ":"))
    os.replace(f"{path}.part", path)


def _cluster_json(cl: Cluster) -> dict:
    return {
        "ids": [g.id for g in cl.gpus],
        "machine": [g.machine for g in cl.gpus],
        "rack": [g.rack for g in cl.gpus],
        "pm": [dict(g.pm) for g in cl.gpus],
    }


def _app_json(a: CompactApp) -> dict:
    t = a.table
    return {
        "id": t.app_id,
        "levels": t.levels.tolist(),
        "shape": list(t.rho.shape),
        "rho": [float(x) for x in t.rho.ravel()],
        "held": [t.held_count, t.held_spread, t.held_level],
        "cls": a.cls,
        "place": [a.held_machine, a.held_rack],
    }


# --- replay ---------------------------------------------------------------------------------------
def close(x: float, y: float) -> bool:
    if x == y:
        return True
    return abs(x - y) <= REL * (1 + abs(y))


def compare(a: dict, dp, ref) -> str | None:
    """None when ``dp`` and ``ref`` agree (PF objective, served, every c_i); "tie" when they
    differ only through tied PF optima; else what differs."""
    if not close(dp.objective, ref.objective):
        return f"objective {dp.objective!r} vs {ref.objective!r}"
    if len(dp.extra["unserved_unbounded"]) != len(ref.extra["unserved_unbounded"]):
        return "unbounded apps served"
    bad = [i for i in a["ids"] if not close(dp.payments[i], ref.payments[i])]
    if not bad:
        return None
    if dp.extra["rho"] != ref.extra["rho"]:  # tied PF optima: c_i of the MILP's PF, DP's PF_{-i}
        c = tied_payments(a, ref)
        if all(close(c[i], ref.payments[i]) for i in bad):
            return "tie"
    return "c_i of " + ", ".join(f"{i}: {dp.payments[i]!r} vs {ref.payments[i]!r}" for i in bad)


def tied_payments(a: dict, ref) -> dict[str, float]:
    """c_i of the PF in ``ref`` (its cells) over the DP's PF_{-i} of every app."""
    prog = CompactProgram(a["cluster"], tuple(a["offer"]), a["apps"], reduced=False)
    res = solve_dp(prog, limit=10**9, every=True)
    pos = {x: k for k, x in enumerate(a["ids"])}
    choice = {pos[x]: (tuple(cell), ()) for x, cell in ref.extra["cells"].items()}
    return {
        a["ids"][i]: pa.payment(prog.value_without(choice, i), res.loo[i]) if i in choice else 1.0
        for i in range(len(a["ids"]))
    }


def reference(sol) -> dict:
    """What the stored sample keeps of the full MILP route's solution."""
    return {
        "objective": sol.objective,
        "unserved": len(sol.extra["unserved_unbounded"]),
        "payments": sol.payments,
        "cells": sol.extra["cells"],
    }


def replay(auctions: list[dict], refs: list | None = None) -> dict:
    """Every route on every auction (module docstring); ``refs`` gains the MILP route's
    :func:`reference` of each."""
    routes = {
        "auto": {},
        "compact": {"route": "compact"},
        "milp": {"route": "compact", "enum_limit": 0},
    }
    secs = dict.fromkeys(routes, 0.0)  # wall clock
    cpu = dict.fromkeys(routes, 0.0)  # this process's CPU time (the box is shared)
    used = {}
    mismatches, ties = [], 0
    for k, a in enumerate(auctions):
        sols = {}
        order = list(routes) if k % 2 == 0 else list(routes)[::-1]  # who warms the offer's views
        for name in order:
            kw = routes[name]
            t, c = time.perf_counter(), time.process_time()
            sols[name] = solve_captured(a, **kw)
            secs[name] += time.perf_counter() - t
            cpu[name] += time.process_time() - c
        r = sols["auto"].extra["pf_route"]
        used[r] = used.get(r, 0) + 1
        if refs is not None:
            refs.append(reference(sols["milp"]))
        why = compare(a, sols["auto"], sols["milp"])
        if why == "tie":
            ties += 1
        elif why is not None:
            mismatches.append({"auction": k, "where": a["where"], "why": why})
    return {
        "auctions": len(auctions),
        "auto_routes": used,
        "mismatches": len(mismatches),
        "ties": ties,
        "first_mismatches": mismatches[:10],
        "seconds": {k: round(v, 3) for k, v in secs.items()},
        "cpu_seconds": {k: round(v, 3) for k, v in cpu.items()},
        "speedup_vs_compact": round(secs["compact"] / secs["auto"], 2),
        "speedup_vs_milp": round(secs["milp"] / secs["auto"], 2),
        "cpu_speedup_vs_compact": round(cpu["compact"] / cpu["auto"], 2),
        "cpu_speedup_vs_milp": round(cpu["milp"] / cpu["auto"], 2),
    }


def main(argv: list[str]) -> None:
    if argv[0] == "capture":
        path, specs, seen = argv[1], argv[2:], []
        for spec in specs:
            scale, c, seeds = spec.split(":")
            for s in seeds.split(","):
                t, got = capture(scale, int(c), int(s), seen, path)
                print(f"{scale} x{c} seed {s}: {len(got)} auctions, {t:.1f} s", flush=True)
        dump(seen, path)
        print(f"{len(seen)} auctions -> {path}")
    elif argv[0] == "replay":
        auctions = [a for path in argv[1].split(",") for a in load_captured(path)]
        if "--max" in argv:  # a random subset (seed 0), in capture order
            n = int(argv[argv.index("--max") + 1])
            pick = np.random.default_rng(0).choice(len(auctions), min(n, len(auctions)), False)
            auctions = [auctions[j] for j in sorted(pick.tolist())]
        refs: list = []
        rep = replay(auctions, refs)
        print(json.dumps(rep, indent=1))
        if "--json" in argv:
            with open(argv[argv.index("--json") + 1], "w") as f:
                json.dump(rep, f, indent=1)
        if "--sample" in argv:
            k = argv.index("--sample")
            n, out = int(argv[k + 1]), argv[k + 2]
            pick = np.random.default_rng(0).choice(len(auctions), min(n, len(auctions)), False)
            dump([{**auctions[j], "ref": refs[j]} for j in sorted(pick.tolist())], out)
            print(f"{len(pick)} auctions -> {out}")
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
