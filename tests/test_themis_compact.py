"""Compact arbiter = explicit-bid PF/PA wherever both apply (random small instances)."""

import numpy as np
from fairplace.formulations.agents import to_explicit
from fairplace.formulations.compact import CompactProgram, compact_apps
from fairplace.instances.generators import grid_cluster
from fairplace.solvers.auction import solve_auction
from fairplace.solvers.compact import solve_compact_auction, solve_pf
from hypothesis import given, settings
from hypothesis import strategies as st

from fairplace.domain import AgentApp, AgentJob, AuctionInstance


def _instance(seed: int, n_apps: int = 3, held: bool = True) -> AuctionInstance:
    rng = np.random.default_rng(seed)
    cl = grid_cluster(4, 2, 2, pm={"A": rng.choice([1.0, 1.2], 8)})
    free = list(range(8))
    agents = []
    for a in range(n_apps):
        h = ()
        if held and rng.random() < 0.4:
            g = free.pop(int(rng.integers(len(free))))
            h = (cl.gpus[g].id,)
        agents.append(
            AgentApp(
                f"A{a}",
                (AgentJob(float(rng.integers(10, 100)), 1.0, float(rng.choice([0, 1, 3]))),),
                t_now=float(rng.integers(0, 50)),
                d_max=int(rng.integers(1, 6)),
                cls=str(rng.choice(["A", "none"])).replace("none", "") or None,
                t_id={"n_avg": 3},
                rho_empty=None if rng.random() < 0.3 else 50.0,
                held=h,
            )
        )
    return AuctionInstance(cl, (), agents=tuple(agents))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_compact_equals_explicit_pf_and_payments(seed):
    inst = _instance(seed)
    exact = solve_auction(to_explicit(inst))
    compact = solve_compact_auction(inst)
    assert compact.status == exact.status == "optimal"
    assert abs(compact.objective - exact.objective) < 1e-7
    assert compact.extra["unserved_unbounded"] == exact.extra["unserved_unbounded"]
    for k, c in exact.payments.items():
        assert abs(compact.payments[k] - c) < 1e-6


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10_000))
def test_allocation_is_feasible_and_consistent(seed):
    inst = _instance(seed, n_apps=4)
    sol = solve_compact_auction(inst, rounding="floor")
    held = {g for a in inst.agents for g in a.held}
    used = [g for gs in sol.pf_allocation.values() for g in gs]
    assert len(used) == len(set(used)) and not set(used) & held
    for a, gs in sol.allocation.items():  # PA keeps a subset of the PF bundle
        assert set(gs) <= set(sol.pf_allocation[a])
    assert set(sol.leftover) == set(used) - {g for gs in sol.allocation.values() for g in gs}


def test_warm_start_is_feasible_for_leave_one_out():
    inst = _instance(7, n_apps=4, held=False)
    apps = compact_apps(inst)
    res, choice, prog = solve_pf(inst.cluster, range(8), apps)
    for i in choice:
        sub = CompactProgram(inst.cluster, prog.offer, apps, frozenset({i}))
        x = sub.start_vector({j: v for j, v in choice.items() if j != i})
        assert sub.to_milp().is_feasible(x)
