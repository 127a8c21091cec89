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
from fairplace.solvers import highs
from fairplace.solvers.compact import solve_compact_auction
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
    "seed", [1, 2, pytest.param(0, marks=pytest.mark.slow)], ids=["s1", "s2", "s0"]
)
def test_aggregated_auction_equals_per_machine_auction(seed):
    """PF objective and every payment c_i equal, with many identical machines (2 levels, 80% of
    GPUs at the better one: most machines share one of five profiles)."""
    inst = random_agent_auction(apps=10, machines=12, machines_per_rack=4, seed=seed)
    a = solve_compact_auction(inst)
    b = solve_compact_auction(inst, aggregate=False)
    assert a.status == b.status == "optimal"
    assert abs(a.objective - b.objective) < 1e-8
    assert np.allclose([a.payments[k] for k in b.payments], list(b.payments.values()), atol=1e-8)
