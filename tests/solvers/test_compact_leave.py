"""The who-leaves route of the compact PA (``solvers/compact/pa_leave.py``): its c_i equal those of
every PF_{-i} solved as its own MILP, on seeded auctions where every app pays, where some apps get
nothing, and where the route settles only part of the apps; its program's optimum is
PF + max_j D_j."""

import math

import pytest

from fairplace.formulations.agents import free_gpus
from fairplace.formulations.compact import CompactApp, CompactProgram, compact_apps
from fairplace.formulations.compact_leave import bundle_keys, leave_program
from fairplace.instances.generators import random_agent_auction
from fairplace.solvers import compact
from fairplace.solvers.backends import get_backend
from fairplace.solvers.compact import (
    CompactAuctionOptions,
    pa_payments,
    solve_compact_auction,
    solve_compact_pf,
)
from fairplace.solvers.options import SolveOptions

LP_ROUTE = CompactAuctionOptions(enum_limit=0)  # the LP / MILP route (no enumeration, no DP)
OPTS = SolveOptions(parallel=False)

#: (apps, machines, machines per rack, seed): every app holds a PF bundle and pays (the first
#: two), more apps than GPUs (some get nothing), and one where the route settles 15 of 16 apps
CASES = [(24, 8, 4, 0), (32, 16, 4, 1), (48, 8, 4, 2), (16, 8, 4, 1)]


def _who_leaves(inst):
    """The auction with the who-leaves route wherever it applies: ``pa_payments`` uses it only
    when the PF's LP split apps (no live LP), rare at these sizes, so the live LP is withheld."""
    mp = pytest.MonkeyPatch()
    mp.setattr(
        compact, "payments", lambda *a, **k: pa_payments.payments(*a, **(k | {"live": None}))
    )
    try:
        return solve_compact_auction(inst, OPTS, LP_ROUTE)
    finally:
        mp.undo()


def _per_app(inst):
    """The auction with every PF_{-i} solved as its own MILP (no who-leaves MILP, no LP chain)."""
    mp = pytest.MonkeyPatch()
    mp.setattr(pa_payments, "leave_max", lambda *a, **k: {})
    mp.setattr(pa_payments._LeaveOneOut, "lp_chains", lambda self, todo, par: [
        (i, None, "full") for i in todo
    ])  # fmt: skip
    try:
        return solve_compact_auction(inst, OPTS, LP_ROUTE)
    finally:
        mp.undo()


@pytest.mark.parametrize("apps,machines,per_rack,seed", CASES)
def test_who_leaves_payments_equal_each_leave_one_out_milp(apps, machines, per_rack, seed):
    inst = random_agent_auction(apps=apps, machines=machines, machines_per_rack=per_rack, seed=seed)
    fast = _who_leaves(inst)
    assert fast.extra["loo_routes"].get("leave_max", 0) >= 0.9 * len(fast.pf_allocation)
    full = _per_app(inst)
    assert "leave_max" not in full.extra["loo_routes"]
    assert abs(fast.objective - full.objective) <= 1e-9
    assert fast.payments.keys() == full.payments.keys()
    for a, c in full.payments.items():
        assert abs(fast.payments[a] - c) <= 1e-9, (a, fast.extra["loo_routes"])
    paying = [a for a in fast.pf_allocation if fast.payments[a] < 1 - 1e-6]
    assert len(paying) == len(fast.pf_allocation)  # every PF app pays in these auctions
    if apps > machines * 4:  # more apps than GPUs: some get nothing and keep c_i = 1
        left = set(fast.payments) - set(fast.pf_allocation)
        assert left and all(fast.payments[a] == 1.0 for a in left)


def test_who_leaves_program_optimum_is_pf_plus_the_largest_gain():
    """max of the who-leaves MILP over S = PF + max_{j in S} D_j, D_j from each PF_{-j}'s MILP."""
    inst = random_agent_auction(apps=10, machines=4, machines_per_rack=2, seed=3)
    offer = tuple(int(g) for g in free_gpus(inst))
    apps = compact_apps(inst, offer)
    res, choice, prog = solve_compact_pf(inst.cluster, offer, apps, OPTS)
    pf = prog.value(choice).log_sum
    gains = {}
    for j in choice:
        sub = prog.excluding({j})
        r = get_backend("highs").solve(sub.milp, SolveOptions())
        gains[j] = r.objective - prog.value_without(choice, j).log_sum
    assert min(gains.values()) >= -1e-9
    S = sorted(choice)[: max(2, len(choice) // 2)]
    r = get_backend("highs").solve(leave_program(prog, choice, S), SolveOptions())
    assert r.status == "optimal"
    assert math.isclose(r.objective, pf + max(gains[j] for j in S), abs_tol=1e-7)


def test_bundle_keys_leave_out_apps_holding_gpus():
    inst = random_agent_auction(apps=6, machines=4, machines_per_rack=2, seed=0)
    offer = tuple(int(g) for g in free_gpus(inst))
    apps = list(compact_apps(inst, offer))
    apps[0] = CompactApp(apps[0].table, apps[0].cls, held_machine=1, held_rack=0)
    prog = CompactProgram(inst.cluster, offer, tuple(apps), reduced=False)
    keys = bundle_keys(prog)
    assert keys[0] is None
    assert all(isinstance(keys[i], tuple) for i in range(1, 6))
