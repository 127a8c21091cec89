"""Machine aggregation (``formulations/compact_agg.py``) keeps the optima of the per-machine
compact program: PF and every PF_{-i} as full MILPs, decoded placements, and the PA payments."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_themis_compact import _instance, cell_filter_instance

from fairplace.formulations.agents import free_gpus
from fairplace.formulations.compact import CompactProgram, compact_apps
from fairplace.instances.generators import random_agent_auction
from fairplace.solvers.backends import highs
from fairplace.solvers.compact import CompactAuctionOptions, solve_compact_auction
from fairplace.solvers.options import SolveOptions


def _programs(inst):
    apps, offer = compact_apps(inst), tuple(int(g) for g in free_gpus(inst))
    for exclude in [frozenset(), *(frozenset({i}) for i in range(len(apps)))]:
        yield CompactProgram(inst.cluster, offer, apps, exclude, reduced=False)


def _check_same_optima(inst):
    for base in _programs(inst):
        # presolve off: HiGHS 1.16 presolve can return sub-optimal "optimal" points here
        ref = highs.solve(base.to_milp(), SolveOptions(presolve=False))
        assert ref.status == "optimal"
        for prog in (
            replace(base, aggregate=True),
            replace(base, aggregate=True, rack_cells=True),
            replace(base, aggregate=True, reduced=True),
        ):
            assert prog.agg is not None
            milp = prog.to_milp()
            res = highs.solve(milp, SolveOptions(presolve=False))
            assert res.status == "optimal"
            assert abs(res.objective - ref.objective) < 1e-7
            choice = prog.decode(res.x)  # a real placement, valid in the per-machine program
            assert base.to_milp().is_feasible(base.start_vector(choice))
            assert abs(base.value(choice).log_sum - prog.value(choice).log_sum) < 1e-12
            x = prog.start_vector(choice)  # and back
            assert milp.is_feasible(x) and abs(milp.value(x) - res.objective) < 1e-7


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 10_000))
def test_aggregation_keeps_every_optimum_with_held_gpus(seed):
    """Apps holding GPUs (their held machine is a kind of its own), unbounded rho(nothing)."""
    _check_same_optima(_instance(seed, n_apps=4))


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 10_000))
def test_aggregation_keeps_every_optimum_two_levels(seed):
    _check_same_optima(cell_filter_instance(seed))


def test_aggregation_groups_identical_machines():
    """8 machines of 4 GPUs, one PM level for all: one kind, patterns = partitions of <= 4."""
    inst = random_agent_auction(apps=6, machines=8, machines_per_rack=4, levels=(1.0, 1.0), seed=1)
    prog = CompactProgram(inst.cluster, tuple(free_gpus(inst)), compact_apps(inst), aggregate=True)
    (kind,) = prog.agg.kinds
    assert sum(len(ms) for ms in kind.racks.values()) == 8
    assert all(sum(sum(kind.slots[s]) for s in p) <= 4 for p in kind.patterns)
    _check_same_optima(inst)


@pytest.mark.parametrize(
    "seed, machines, pf_route",
    [
        (1, 12, "lp_cells"),
        (2, 12, "branch_and_bound"),
        # the full MILP settles the PF (the LP's cells do not place): 8 machines in 2 racks, ~11 s;
        # 12 machines (seed 0) took ~60 s for the same route
        pytest.param(0, 8, "full", marks=pytest.mark.slow),
    ],
    ids=["s1", "s2", "s0"],
)
def test_aggregated_auction_equals_per_machine_auction(seed, machines, pf_route):
    """PF objective and every payment c_i equal, with many identical machines (2 levels, 80% of
    GPUs at the better one: most machines share one of five profiles), on each route of the
    aggregated PF: the LP's cells, the LP branch and bound, the full MILP."""
    inst = random_agent_auction(apps=10, machines=machines, machines_per_rack=4, seed=seed)
    lp_route = CompactAuctionOptions(enum_limit=0)  # the LP / MILP route
    a = solve_compact_auction(inst, config=lp_route)
    b = solve_compact_auction(inst, config=lp_route.with_(aggregate=False))
    assert a.status == b.status == "optimal"
    assert a.extra["pf_route"] == pf_route
    assert abs(a.objective - b.objective) < 1e-8
    assert np.allclose([a.payments[k] for k in b.payments], list(b.payments.values()), atol=1e-8)


def test_branch_and_bound_equals_the_full_milp():
    """The LP branch and bound (``solvers/compact/bb.py``) reaches the full MILP's optimum on PF
    and every PF_{-i} whose LP splits apps (16 apps on 64 GPUs), from a fresh LP and from the
    leave-one-out form (the PF model with i's gains set to 0)."""
    from fairplace.solvers.budget import Budget
    from fairplace.solvers.compact.bb import branch_and_bound
    from fairplace.solvers.compact.lp import lp_cells

    inst = random_agent_auction(apps=16, machines=16, machines_per_rack=4, seed=1)
    apps, offer = compact_apps(inst), tuple(int(g) for g in free_gpus(inst))
    pf = CompactProgram(inst.cluster, offer, apps, reduced=False, aggregate=True)
    pf_milp = pf.to_milp()
    branched = 0
    for i in [None, *range(len(apps))]:
        prog = pf if i is None else replace(pf, exclude=frozenset({i}))
        truth = highs.solve(prog.to_milp(), SolveOptions(presolve=False))
        assert truth.status == "optimal"
        for form in ("fresh", "leave-one-out"):
            if form == "leave-one-out" and i is None:
                continue
            p, milp, skip = (prog, prog.to_milp(), None) if form == "fresh" else (pf, pf_milp, i)
            lp_model = milp.relaxed()
            h = highs.build(lp_model, SolveOptions())
            if skip is not None:
                e = next(e for e in p.layout[1] if e["i"] == skip)
                cols = np.arange(e["z"], e["z"] + len(e["cells"]), dtype=np.int32)
                h.changeColsCost(cols.size, cols, np.zeros(cols.size))
            h.run()
            lp = highs.read(h, lp_model, 0.0)
            if lp_cells(p, lp.x, skip) is not None:
                continue
            why: list = []
            hit = branch_and_bound(
                p,
                milp,
                h,
                lp_model,
                SolveOptions(),
                Budget.begin(None),
                skip=skip,
                node_limit=10_000,
                why=why,
            )
            if hit is None:  # only when integral cells cannot be placed (the MILP then runs)
                assert why and why[0].startswith("unplaced"), why
                continue
            res, choice = hit
            branched += 1
            value = p.value(choice).log_sum
            if skip is not None:  # PF_{-i}'s value: the others, app i's w_i0 left out
                value = replace(pf, exclude=frozenset({i})).value(choice).log_sum
            assert abs(value - truth.objective) < 1e-7
    assert branched  # the instance does exercise the branching
