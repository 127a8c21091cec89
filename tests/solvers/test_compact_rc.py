"""Leave-one-out PF_{-i} by reduced-cost fixing (``solvers/compact/rc.py``): the bound
is valid for any prices, fixing keeps every better point, and PF_{-i} and the payments equal those
of full MILPs."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_compact_shortcuts import _full_path_payments

from fairplace.formulations.agents import free_gpus
from fairplace.formulations.compact import CompactProgram, compact_apps
from fairplace.instances.generators import random_agent_auction
from fairplace.solvers.backends import highs
from fairplace.solvers.budget import Budget
from fairplace.solvers.compact import rc as compact_rc
from fairplace.solvers.compact.lp import lp_cells
from fairplace.solvers.options import SolveOptions

EXACT = SolveOptions(presolve=False)  # HiGHS 1.16 presolve can stop short on these programs


def _pf(seed: int = 1, apps: int = 16, machines: int = 16, machines_per_rack: int = 4, **kw):
    inst = random_agent_auction(
        apps=apps, machines=machines, machines_per_rack=machines_per_rack, seed=seed, **kw
    )
    apps_, offer = compact_apps(inst), tuple(int(g) for g in free_gpus(inst))
    return CompactProgram(inst.cluster, offer, apps_, reduced=False, aggregate=True)


def _loo_lp(pf: CompactProgram, milp, i: int):
    """The live leave-one-out LP (PF with i's gains set to 0) at its optimum."""
    lp_model = milp.relaxed()
    h = highs.build(lp_model, SolveOptions())
    e = next(e for e in pf.layout[1] if e["i"] == i)
    cols = np.arange(e["z"], e["z"] + len(e["cells"]), dtype=np.int32)
    h.changeColsCost(cols.size, cols, np.zeros(cols.size))
    h.run()
    return h, lp_model


@pytest.fixture(scope="module")
def pf_case():
    """PF_{-0} of 20 apps on 48 GPUs: a program whose LP optimum is above its MILP optimum."""
    pf = replace(_pf(1, apps=20, machines=12), exclude=frozenset({0}))
    milp = pf.to_milp()
    res = highs.solve(milp, EXACT)
    lp = highs.solve(milp.relaxed(), SolveOptions())
    assert lp.objective > res.objective + 1e-4  # an integrality gap to close
    return pf, milp, res


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1), st.floats(0.0, 3.0))
def test_lagrangian_bound_holds_for_any_prices(pf_case, seed, scale):
    """UB(y) >= the MILP optimum for random prices y, and = the LP optimum at the LP's duals."""
    _, milp, res = pf_case
    y = np.random.default_rng(seed).normal(0.0, scale, milp.n_rows)
    assert compact_rc.lagrangian_bound(milp, y)[0] >= res.objective - 1e-9
    h = highs.build(milp.relaxed(), SolveOptions())
    h.run()
    lp = highs.read(h, milp.relaxed(), 0.0)
    duals = np.asarray(h.getSolution().row_dual)
    assert abs(compact_rc.lagrangian_bound(milp, duals)[0] - lp.objective) < 1e-6


@settings(max_examples=6, deadline=None)
@given(st.floats(0.0, 0.2))
def test_fixing_and_restricting_keep_the_optimum(pf_case, below):
    """Fixing by reduced cost for an incumbent at or below the optimum, then forcing rows and
    dropping fixed columns, leaves a MILP with the same optimum (mapped back: a feasible point)."""
    _, milp, res = pf_case
    h = highs.build(milp.relaxed(), SolveOptions())
    h.run()
    y = np.asarray(h.getSolution().row_dual)
    lb, ub, _ = compact_rc.fix_by_reduced_cost(milp, y, res.objective - below)
    assert (lb == ub).sum() > 0  # something is fixed
    lb, ub = compact_rc.forcing_rows(milp, lb, ub)
    small, free = compact_rc.restrict(milp, lb, ub)
    assert small.n_cols < milp.n_cols
    got = highs.solve(small, EXACT)
    assert got.status == "optimal"
    assert abs(got.objective - res.objective) < 1e-7
    x = lb.copy()
    x[free] = np.round(got.x)
    assert milp.is_feasible(x) and abs(milp.value(x) - res.objective) < 1e-7


@pytest.mark.parametrize("target_gap", [1.0, 1e-9])
def test_leave_one_out_equals_the_full_milp(target_gap, monkeypatch):
    """PF_{-i} from the fixed MILP, for every i whose leave-one-out LP splits apps, with PF minus
    i as the only start and with a ``swap_in`` start from another app's PF_{-j} (20 apps on 48
    GPUs: 19 of the 20 leave-one-out LPs split). The poor starts (PF minus i) go through the
    target MILP: with a target gap of 1 (the integrality gaps here lie between 0.01 and 1) it reaches the
    target; with 1e-9 it never does, and the dive must find the incumbent."""
    monkeypatch.setattr(compact_rc, "TARGET_GAP", target_gap)
    calls = {"target": 0, "dive": 0}
    fixed, dive = compact_rc._fixed_milp, compact_rc._dive

    def spy_fixed(prog, loo, y, floor, best, *a):
        calls["target"] += best is None
        return fixed(prog, loo, y, floor, best, *a)

    def spy_dive(*a):
        calls["dive"] += 1
        return dive(*a)

    monkeypatch.setattr(compact_rc, "_fixed_milp", spy_fixed)
    monkeypatch.setattr(compact_rc, "_dive", spy_dive)
    pf = _pf(1, apps=20, machines=12)
    milp = pf.to_milp()
    res = highs.solve(milp, EXACT)
    pf_choice = pf.decode(res.x)
    split, solved = 0, {}
    for i in sorted(pf_choice):
        truth = highs.solve(replace(pf, exclude=frozenset({i})).to_milp(), EXACT)
        assert truth.status == "optimal"
        h, lp_model = _loo_lp(pf, milp, i)
        x = highs.read(h, lp_model, 0.0).x
        if lp_cells(pf, x, i) is not None:
            continue
        split += 1
        minus_i = {j: v for j, v in pf_choice.items() if j != i}
        starts = [(minus_i,)]
        for j, sol in solved.items():
            s = compact_rc.swap_in(pf_choice, sol, j, i, pf.apps[j], pf.cluster)
            assert s is not None and i not in s
            starts.append((minus_i, s))
        for st_ in starts[:2]:
            h, lp_model = _loo_lp(pf, milp, i)
            hit = compact_rc.leave_one_out(
                pf, milp, h, lp_model, SolveOptions(), Budget.begin(None), i, st_
            )
            assert hit is not None
            got, choice = hit
            assert i not in choice
            value = replace(pf, exclude=frozenset({i})).value(choice).log_sum
            assert abs(value - truth.objective) < 1e-7
        solved[i] = choice
    assert split >= 10  # the instance does exercise the split case
    assert calls["target"] > 0
    assert calls["dive"] == (0 if target_gap == 1.0 else calls["target"]), calls


def test_payments_equal_full_milps_when_leave_one_out_lps_split():
    """The whole auction: every c_i equals c_i of PF_{-i} solved as its own full MILP, and the
    dive / fixing path did run."""
    from fairplace.solvers.compact import CompactAuctionOptions, solve_compact_auction
    from fairplace.solvers.compact import pa_payments as compact_pa

    inst = random_agent_auction(apps=20, machines=12, machines_per_rack=4, seed=1)
    calls = []
    run = compact_pa.leave_one_out

    def spy(*a, **k):
        calls.append(a[6])
        return run(*a, **k)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(compact_pa, "leave_one_out", spy)
        sol = solve_compact_auction(inst, config=CompactAuctionOptions(enum_limit=0))  # LP / MILP
    assert sol.status == "optimal" and calls
    routes = sol.extra["loo_routes"]  # every PF app's PF_{-i}, counted by how it was settled
    assert sum(routes.values()) == len(sol.pf_allocation)
    assert set(routes) <= set(compact_pa.ROUTES) and routes.get("fixing", 0) >= 1
    want = _full_path_payments(inst, sol)
    for a, c in want.items():
        assert abs(sol.payments[a] - c) < 1e-7, (a, sol.payments[a], c)


def test_chains_on_threads_are_deterministic_and_equal_one_chain():
    """The leave-one-out chains (two here, on 2 threads) give the same payments on every run,
    and those of a single chain (parallel=False) up to float noise."""
    from fairplace.solvers.compact import CompactAuctionOptions, solve_compact_auction

    inst = random_agent_auction(apps=20, machines=12, machines_per_rack=4, seed=2)
    lp = CompactAuctionOptions(enum_limit=0)  # the LP / MILP route
    a, b = solve_compact_auction(inst, config=lp), solve_compact_auction(inst, config=lp)
    one = solve_compact_auction(inst, SolveOptions(parallel=False), lp)
    assert a.status == b.status == one.status == "optimal"
    assert a.payments == b.payments
    assert all(abs(a.payments[k] - one.payments[k]) < 1e-9 for k in one.payments)
    assert sum(c < 1 - 1e-9 for c in a.payments.values()) >= 5  # payments that are not trivial


def test_enumeration_after_fixing_equals_full_milps(monkeypatch):
    """PF_{-i} from the enumeration of the cells that survive fixing at the start's value
    (``rc._enumerated``) equals PF_{-i} solved as its own full MILP and the fixed-MILP path's
    value (the enumeration switched off), on auctions small enough for it to run."""
    enumerated, run = [], compact_rc._enumerated

    def spy(*a):
        hit = run(*a)
        enumerated.append(hit is not None)
        return hit

    checked = 0
    for seed in range(8):  # small demands: a few cells per app, so the survivors are enumerable
        pf = _pf(seed, apps=5, machines=3, machines_per_rack=2, demands=(2, 4, 8))
        milp = pf.to_milp()
        pf_choice = pf.decode(highs.solve(milp, EXACT).x)
        for i in sorted(pf_choice):
            truth = highs.solve(replace(pf, exclude=frozenset({i})).to_milp(), EXACT)
            minus_i = ({j: v for j, v in pf_choice.items() if j != i},)
            values = []
            for route in (spy, lambda *a: None):  # enumeration on, then off
                monkeypatch.setattr(compact_rc, "_enumerated", route)
                h, lp_model = _loo_lp(pf, milp, i)
                hit = compact_rc.leave_one_out(
                    pf, milp, h, lp_model, SolveOptions(), Budget.begin(None), i, minus_i
                )
                assert hit is not None and i not in hit[1]
                values.append(pf.value_without(hit[1], i))
            assert abs(values[0].log_sum - truth.objective) < 1e-7
            assert values[0] == values[1]
            checked += 1
    assert checked == 40 and sum(enumerated) >= 5, (checked, enumerated)


def test_best_within_names_a_mask_of_the_wrong_length():
    """The allowed cells are a mask over ``feasible_cells(j)``: any other length is an error,
    not a silent misreading of which cells survive."""
    from fairplace.solvers.compact.enumeration import best_within

    pf = _pf(0, apps=3, machines=2, machines_per_rack=2, demands=(2, 4))
    allowed = {j: np.ones(len(pf.feasible_cells(j)), bool) for j in pf.active}
    assert best_within(pf, allowed) is not None
    allowed[pf.active[-1]] = np.ones(len(pf.feasible_cells(pf.active[-1])) + 1, bool)
    with pytest.raises(ValueError, match="cells, not"):
        best_within(pf, allowed)
