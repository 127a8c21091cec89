"""The compact solver's shortcuts give the answers of the full path (small random instances)."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_themis_compact import cell_filter_instance

from fairplace.formulations.compact import CompactProgram, compact_apps
from fairplace.instances.generators import random_agent_auction
from fairplace.solvers.backends import highs
from fairplace.solvers.compact.packing import pack


def _whole_machine_cells(seed: int):
    """A program on 6 machines x 4 GPUs (two PM levels) and a random set of 3- and 4-GPU
    single-machine cells {app: (n, 0, v)}: no two fit on one machine together."""
    rng = np.random.default_rng(seed)
    inst = random_agent_auction(
        apps=int(rng.integers(2, 10)), machines=6, machines_per_rack=3, demands=(4, 8), seed=seed
    )
    apps = compact_apps(inst)
    prog = CompactProgram(inst.cluster, tuple(range(24)), apps, reduced=False)
    cells = {}
    for i in range(len(apps)):
        whole = [c for c in prog.feasible_cells(i) if c[1] == 0 and c[0] >= 3]
        if whole:
            cells[i] = whole[int(rng.integers(len(whole)))]
    return prog, cells


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000))
def test_matching_places_whole_machine_cells_whenever_a_placement_exists(seed):
    """``matching`` is exact for cells that each need their own machine: it finds a placement
    exactly when the placement MILP does, and the placement is feasible."""
    prog, cells = _whole_machine_cells(seed)
    if not cells:
        return
    fixed = replace(prog, fixed=tuple(sorted(cells.items())))
    res = highs.solve(fixed.to_milp())  # z may be 0: a placement exists iff all are placed
    exists = res.status == "optimal" and set(fixed.decode(res.x)) == set(cells)
    placed = pack(prog, cells, "matching")
    assert (placed is not None) == exists
    if placed is not None:
        assert fixed.to_milp().is_feasible(fixed.start_vector(placed))
        assert {i: c for i, (c, _) in placed.items()} == cells


def _presolve_case():
    """Seed 4 of ``test_cell_filters_keep_the_optima`` (tests/solvers/test_themis_compact.py): 4 apps on
    6 machines x 4 GPUs; HiGHS 1.16 with presolve returns "optimal" -2.911 for PF_{-0} in the
    rack-cell program, whose optimum is -2.8461 (presolve off, and the plain program)."""
    return cell_filter_instance(4)


def test_full_milp_is_guarded_against_a_suboptimal_presolve_answer():
    from fairplace.solvers.compact import solve_compact_pf
    from fairplace.solvers.options import SolveOptions

    inst = _presolve_case()
    apps = compact_apps(inst)
    prog = CompactProgram(inst.cluster, tuple(range(24)), apps, frozenset({0}), reduced=False)
    truth = highs.solve(replace(prog, rack_cells=True).to_milp(), SolveOptions(presolve=False))
    assert truth.status == "optimal"
    for lp_first in (False, True):
        res, choice, p = solve_compact_pf(
            inst.cluster, range(24), apps, exclude=frozenset({0}), lp_first=lp_first, reduced=False
        )
        assert res.status == "optimal"
        assert abs(res.objective - truth.objective) < 1e-7
        assert abs(p.value(choice).log_sum - truth.objective) < 1e-7


def _full_path_payments(inst, sol):
    """c_i from PF_{-i} solved as its own full MILP (no LP step, presolve off), per PF app."""
    from fairplace.formulations import pa
    from fairplace.formulations.agents import free_gpus
    from fairplace.solvers.compact import _others, solve_compact_pf
    from fairplace.solvers.options import SolveOptions

    apps, offer = compact_apps(inst), free_gpus(inst)
    opts = SolveOptions(presolve=False)
    _, choice, prog = solve_compact_pf(inst.cluster, offer, apps, opts, lp_first=False)
    assert sorted(inst.agents[i].id for i in choice) == sorted(sol.pf_allocation)
    out = {}
    for i in choice:
        res, ch, p = solve_compact_pf(
            inst.cluster, offer, apps, opts, exclude=frozenset({i}), lp_first=False
        )
        assert res.status == "optimal"
        out[inst.agents[i].id] = pa.payment(_others(prog, choice, i), p.value(ch))
    return out


@pytest.mark.slow
@settings(max_examples=8, deadline=None)
@given(st.integers(0, 10_000))
def test_payment_shortcuts_give_the_full_path_payments(seed):
    """Every shortcut of the payments (c_i = 1 from best values or from the leave-one-out LP,
    LP cells placed greedily / by matching) gives c_i of PF_{-i} solved as a full MILP."""
    from fairplace.solvers.compact import CompactAuctionOptions, solve_compact_auction
    from fairplace.solvers.compact import pa_payments as compact_pa

    rng = np.random.default_rng(seed)
    inst = random_agent_auction(
        apps=int(rng.integers(3, 7)), machines=4, machines_per_rack=2, seed=seed
    )
    fired = []
    proves = compact_pa._lp_proves_one

    def spy(*a):
        fired.append(proves(*a))
        return fired[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(compact_pa, "_lp_proves_one", spy)
        sol = solve_compact_auction(inst, config=CompactAuctionOptions(enum_limit=0))  # LP / MILP
    assert sol.status == "optimal"
    want = _full_path_payments(inst, sol)
    for a, c in want.items():
        assert abs(sol.payments[a] - c) < 1e-7, (a, sol.payments[a], c, fired)
