"""The compact PA's fast paths against plain routes on seeded auctions: the PF and leave-one-out
LPs with ``pack`` (offer-level room, machine positions), ``lp_cells`` (all selectors at once) and
the fixed leave-one-out MILPs' small cut pool give the PF objective of HiGHS on the whole program
and the c_i of every PF_{-i} solved from scratch as its own MILP, to 1e-9."""

import numpy as np
import pytest

from fairplace.formulations.agents import free_gpus
from fairplace.formulations.compact import CompactProgram, compact_apps
from fairplace.instances.generators import random_agent_auction
from fairplace.solvers.backends import get_backend
from fairplace.solvers.compact import CompactAuctionOptions, pa_payments, solve_compact_auction
from fairplace.solvers.compact.lp import lp_cells
from fairplace.solvers.compact.packing import PACK_RULES, pack
from fairplace.solvers.options import SolveOptions

LP_ROUTE = CompactAuctionOptions(enum_limit=0)  # the LP / MILP route


@pytest.mark.parametrize("seed", range(6))
def test_lp_route_payments_equal_full_milps(seed, monkeypatch):
    """PF objective = HiGHS on the whole (per-machine) program; c_i = those of every PF_{-i}
    solved from scratch as its own MILP."""
    inst = random_agent_auction(apps=8, machines=4, machines_per_rack=2, seed=seed)
    fast = solve_compact_auction(inst, config=LP_ROUTE)  # PF LP, leave-one-out LPs, rc fixing
    offer = tuple(int(g) for g in free_gpus(inst))
    plain = CompactProgram(inst.cluster, offer, compact_apps(inst, offer), reduced=False)
    opt = get_backend("highs").solve(plain.milp, SolveOptions())
    assert opt.status == "optimal" and abs(fast.objective - opt.objective) <= 1e-9
    monkeypatch.setattr(pa_payments._LeaveOneOut, "lp_chains", lambda self, todo, par: [
        (i, None, "full") for i in todo
    ])  # fmt: skip
    monkeypatch.setattr(pa_payments, "leave_max", lambda *a, **k: {})  # each PF_{-i} alone
    full = solve_compact_auction(inst, config=LP_ROUTE)
    assert set(full.extra["loo_routes"]) <= {"full", "best_values"}
    for a, c in full.payments.items():
        assert abs(fast.payments[a] - c) <= 1e-9, (a, fast.extra["loo_routes"])


@pytest.mark.parametrize("seed", range(6))
def test_pack_places_valid_points_and_lp_cells_reads_each_app(seed):
    """``pack``'s placements are points of the program (every rule, seeded orders) and
    ``lp_cells`` reads them back; a split selector makes ``lp_cells`` None."""
    rng = np.random.default_rng(seed)
    inst = random_agent_auction(apps=int(rng.integers(4, 16)), machines=8, machines_per_rack=4,
                                seed=seed)  # fmt: skip
    offer = tuple(int(g) for g in free_gpus(inst))
    prog = CompactProgram(inst.cluster, offer, compact_apps(inst, offer), aggregate=bool(seed % 2))
    cells = {}
    for i in prog.active:
        fc = prog.feasible_cells(i)
        if fc and rng.random() < 0.5:
            cells[i] = fc[int(rng.integers(len(fc)))]
    placed_any = False
    while not placed_any and cells:
        for rule in PACK_RULES:
            for order_seed in (None, 1):
                placed = pack(prog, cells, rule, order_seed)
                if placed is None:
                    continue
                placed_any = True
                assert {i: c for i, (c, _) in placed.items()} == cells
                gpus = [g for _, gs in placed.values() for g in gs]
                assert len(gpus) == len(set(gpus)) and set(gpus) <= set(offer)
                x = prog.start_vector(placed)
                assert prog.milp.is_feasible(x)
                assert lp_cells(prog, x) == {i: cells[i] for i in sorted(cells)}
                skip = next(iter(cells))
                assert skip not in lp_cells(prog, x, skip)
        if not placed_any:  # fewer apps until the greedy places them
            del cells[sorted(cells)[int(rng.integers(len(cells)))]]
    assert placed_any or not cells
    _, meta = prog.layout
    e = next(e for e in meta if len(e["cells"]) > 1)
    x = np.zeros(prog.layout[0])
    x[e["z"]] = x[e["z"] + 1] = 0.5
    assert lp_cells(prog, x) is None
    assert lp_cells(prog, x, e["i"]) == {}
