"""Benchmark of the exact auction on captured THEMIS auctions (``fairplace bench``).

* ``auction_dp_captured``: every auction of the stored sample ``tests/data/auction_dp_sample.json.gz``
  (160 auctions captured from THEMIS Workload 2 runs, small scale x1 / x2 / x4 and paper scale
  x4, by ``papers/themis/experiments/auction_exactness.py``: 2-7 bidders on homogeneous offers of 1-18 GPUs) solved by ``auction_on_offer`` with the DP route
  (``route="auto"``, ``solvers/compact/dp.py``) and with the route before it (``route="compact"``:
  enumeration or LP / MILP); ``seconds`` is the DP route's total, ``speedup`` the ratio of the two
  totals (best of 3 repetitions each, interleaved; ``--quick``: 2), each auction on new app
  objects (nothing cached from another route). Needs a source checkout (the sample sits with
  the tests).

``load_captured`` reads the sample's format (written by the docs script's ``dump``; the tests
read it too).
"""

from __future__ import annotations

import gzip
import json
import logging
import time
from pathlib import Path

import numpy as np

from fairplace.core.domain import GPU, Cluster
from fairplace.formulations.agents import RhoTable
from fairplace.formulations.compact import CompactApp
from fairplace.formulations.compact_cache import OfferCache
from fairplace.solvers.compact import CompactAuctionOptions, auction_on_offer
from fairplace.solvers.options import SolveOptions

from . import Case, cases

log = logging.getLogger(__name__)
SAMPLE = Path(__file__).resolve().parents[2] / "tests" / "data" / "auction_dp_sample.json.gz"
#: as THEMIS' arbiter calls the auction (``fairplace/sim/themis/arbiter.py``)
OPTS = SolveOptions(parallel=False, mip_allow_restart=False)


def load_captured(path: Path | str = SAMPLE) -> list[dict]:
    """Captured auctions: per auction the cluster, offer (GPU indices), compact apps, ids,
    rounding, seed, payments / exact_payments flags (and ``ref``: the full MILP route's
    results, where stored); each distinct cluster is stored once, floats exactly."""
    with gzip.open(path, "rt") as f:
        data = json.load(f)
    clusters = [
        Cluster(
            tuple(
                GPU(i, m, r, pm)
                for i, m, r, pm in zip(c["ids"], c["machine"], c["rack"], c["pm"], strict=True)
            )
        )
        for c in data["clusters"]
    ]
    out = []
    for row in data["auctions"]:
        apps = tuple(
            CompactApp(
                RhoTable(
                    x["id"],
                    np.array(x["levels"], dtype=float),
                    np.array(x["rho"], dtype=float).reshape(x["shape"]),
                    *x["held"],
                ),
                x["cls"],
                *x["place"],
            )
            for x in row["apps"]
        )
        out.append({**row, "cluster": clusters[row["cluster"]], "apps": apps})
    return out


def fresh(apps: tuple[CompactApp, ...]) -> tuple[CompactApp, ...]:
    """New app objects on the same arrays: nothing cached on them (cells, levels), as the
    simulator's bidders come to each auction (so one route does not time another's caches)."""
    return tuple(
        CompactApp(
            RhoTable(t.app_id, t.levels, t.rho, t.held_count, t.held_spread, t.held_level),
            a.cls,
            a.held_machine,
            a.held_rack,
        )  # fmt: skip
        for a in apps
        for t in (a.table,)
    )


def solve_captured(a: dict, cache: OfferCache | None = None, **kw):
    """The Solution of a captured auction solved as the simulator solves it
    (:func:`~fairplace.solvers.compact.auction_on_offer`), on :func:`fresh` app objects (``kw``:
    the route's options; ``cache``: the offers' shared views, kept over a run)."""
    config = CompactAuctionOptions(
        rounding=a["rounding"], seed=a["seed"], payments=a["payments"],
        exact_payments=a["exact_payments"], **kw,
    )  # fmt: skip
    offer = np.asarray(a["offer"], dtype=np.int64)
    res = auction_on_offer(a["cluster"], offer, fresh(a["apps"]), OPTS, config, cache=cache)
    return res.solution(a["cluster"], a["ids"], config.name)


def _captured(quick: bool) -> dict:
    if not SAMPLE.exists():
        raise FileNotFoundError(f"{SAMPLE} (the captured sample ships with a source checkout)")
    auctions = load_captured()
    routes = {"dp": {"route": "auto"}, "compact": {"route": "compact"}}
    best = dict.fromkeys(routes, float("inf"))
    used: dict[str, int] = {}
    cache = OfferCache()  # the offers' shared views, as over a simulation
    for rep in range(2 if quick else 3):  # the first warms the offers' shared views
        for name, kw in routes.items():
            t0 = time.perf_counter()
            for a in auctions:
                sol = solve_captured(a, cache, **kw)
                if rep == 0 and name == "dp":
                    r = sol.extra["pf_route"]
                    used[r] = used.get(r, 0) + 1
            best[name] = min(best[name], time.perf_counter() - t0)
    speedup = best["compact"] / best["dp"]
    log.info("auction_dp_captured: DP route %.3f s, before %.3f s: %.1fx", best["dp"],
             best["compact"], speedup)  # fmt: skip
    return {
        "seconds": best["dp"],
        "sizes": {"auctions": len(auctions)},
        "compact_seconds": best["compact"],
        "speedup": speedup,
        "pf_routes": used,
    }


CASES = cases(
    __name__,
    {
        "auction_dp_captured": Case(_captured, None, {"auctions": 160}),
    },
)
