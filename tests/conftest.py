"""Shared test helpers: tiny random instances, and the brute-force oracles (the "exact first" ground
truth, kept in ``fairplace.solvers.brute_force`` and re-exported here for the tests)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

from fairplace.core.domain import App, AuctionInstance, Bid, Job, PlacementInstance
from fairplace.instances.generators import grid_cluster
from fairplace.solvers.brute_force import (
    brute_force_payments,
    brute_force_pf,
    brute_force_placement,
)

# The tests mirror the layers (tests/core, formulations, solvers, sim, runs, analysis, papers, e2e);
# a few import another layer's test helpers by module name (`from test_themis_compact import ...`):
# every layer folder is importable, as the flat tests/ folder was.
_LAYERS = (
    "core",
    "instances",
    "formulations",
    "solvers",
    "sim",
    "runs",
    "analysis",
    "papers",
    "e2e",
)
sys.path[:0] = [str(Path(__file__).parent / layer) for layer in _LAYERS]

# The Ctrl-C tests need SIGINT delivered. A suite started in the background (`pytest &` in a
# non-interactive shell, some CI runners) inherits SIGINT ignored, and an ignored signal stays ignored
# in every child process across exec: restore Python's default so the tests see what a user's
# terminal gives them, wherever the suite was started from.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# No per-example deadline (Hypothesis' default is 200 ms): one stall of a loaded CI box (2 cores,
# garbage collection, a neighbour's build) must not fail a property test. Loaded before the test
# modules, so their own @settings(...) inherit it.
settings.register_profile("fairplace", deadline=None)
settings.load_profile("fairplace")

__all__ = [
    "brute_force_payments",
    "brute_force_pf",
    "brute_force_placement",
    "tiny_auction",
    "tiny_placement",
]


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
