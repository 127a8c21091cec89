"""``packing._best_one_level`` (PA ``floor`` rounding and a lone bidder's bundle on a one-level
cluster) against the rule it implements, step by step: cells by (rho, order), each tried on the
lowest place (its held one, when held) that holds n GPUs of the bundle."""

from __future__ import annotations

import numpy as np
import pytest

from fairplace.core.domain import GPU, Cluster
from fairplace.formulations.agents import RhoTable
from fairplace.formulations.compact import CompactApp
from fairplace.solvers.compact.packing import _best_one_level, best_subbundle


def _reference(app: CompactApp, cluster: Cluster, bundle, cap: int, lev: int):
    """The first cell of the (rho, order) ranking with n <= cap, v >= lev and rho below the held
    bundle's that fits on a place, and the first n GPUs of the bundle on the lowest such place."""
    t = app.table
    best_rho = float(t.rho[0, t.held_spread, max(t.held_level, 0)])
    order = sorted(
        (k for k, c in enumerate(app.cells) if c[0] <= cap and c[2] >= lev),
        key=lambda k: (float(t.rho[app.cells[k]]), k),
    )
    held = (app.held_machine, app.held_rack, -1)
    for k in order:
        n, s, _ = app.cells[k]
        if not float(t.rho[app.cells[k]]) < best_rho:
            continue
        where = [(cluster.machine_index, cluster.rack_index)[s][g] if s < 2 else 0 for g in bundle]
        places = sorted({p for p in where if held[s] < 0 or p == held[s]})
        for p in places:
            on = [g for g, q in zip(bundle, where, strict=True) if q == p]
            if len(on) >= n:
                return app.cells[k], tuple(on[:n])
    return None


def _cluster(machines: int, per: int, racks_of: int) -> Cluster:
    return Cluster(
        tuple(
            GPU(f"g{m}-{k}", f"m{m}", f"r{m // racks_of}", {"A": 1.0})
            for m in range(machines)
            for k in range(per)
        )
    )


@pytest.mark.parametrize("seed", range(40))
def test_best_one_level_follows_the_rule(seed):
    rng = np.random.default_rng(seed)
    cl = _cluster(int(rng.integers(2, 9)), int(rng.choice([2, 4, 8])), int(rng.integers(1, 4)))
    n_max = int(rng.integers(1, 20))
    levels = np.array([1.0, 1.25])[: int(rng.integers(1, 3))]
    # rho falls with n, rises with spread and level, sometimes flat (ties, dominated cells)
    base = np.maximum.accumulate(np.round(rng.random(n_max + 1), 1)[::-1])[::-1] + 0.5
    rho = base[:, None, None] * (1 + 0.2 * np.arange(3))[None, :, None]
    rho = rho * (1 + 0.1 * np.arange(levels.size))[None, None, :]
    if seed % 5 == 4:  # a few undefined entries (NaN): no order along n
        rho[1:][rng.random(rho[1:].shape) < 0.2] = np.nan
    held = int(rng.integers(0, 3))
    hm = hr = -1
    if held:
        g0 = int(rng.integers(0, len(cl)))
        hm = int(cl.machine_index[g0]) if held == 1 else -1
        hr = int(cl.rack_index[g0])
    table = RhoTable("a", levels, rho, held, 0 if held == 1 else int(held > 0), 0 if held else -1)
    app = CompactApp(table, "A", hm, hr)
    size = int(rng.integers(1, len(cl) + 1))
    bundle = tuple(sorted(rng.choice(len(cl), size, replace=False).tolist()))
    cap = int(rng.integers(1, size + 3))
    got = _best_one_level(app, cl, bundle, cap, 1.0)
    assert got == _reference(app, cl, bundle, cap, table.level(1.0))
    assert got == best_subbundle(CompactApp(table, "A", hm, hr), cl, bundle, cap)
