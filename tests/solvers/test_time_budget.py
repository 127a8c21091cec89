"""One time budget per solve, honest incumbents / bounds / gaps, the CLI's exit codes, and the
stable ``Solution.extra`` keys. Time-outs are driven deterministically: a fake clock injected into
the budget, or HiGHS' node limit (``mip_max_nodes``), never a short wall-clock limit."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairplace
from fairplace.core.solution import AUCTION_EXTRA, PLACEMENT_EXTRA, ROUTE_EXTRA
from fairplace.formulations.placement import PlacementProgram, slowdowns
from fairplace.formulations.program import lexicographic_bound
from fairplace.instances.generators import random_auction, random_placement
from fairplace.solvers import auction
from fairplace.solvers.budget import MIN_SOLVE, Budget
from fairplace.solvers.options import SolveOptions
from fairplace.solvers.placement import pal_placement, solve_placement


class Clock:
    """A fake clock: ``now`` seconds until the test moves it."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


# --- the budget -------------------------------------------------------------------------------------


@given(
    limit=st.floats(0.01, 1000.0),
    elapsed=st.floats(0.0, 2000.0),
)
def test_budget_gives_what_is_left_minus_the_margin(limit, elapsed):
    clock = Clock()
    b = Budget.begin(limit, clock)
    clock.now = elapsed
    o = b.options(SolveOptions())
    left = limit - b.margin - elapsed
    assert 0.0 <= b.margin <= 0.1 * limit
    if left < MIN_SOLVE:
        assert o is None  # spent: no new solve starts
    else:
        assert o.time_limit == pytest.approx(left) and o.time_limit <= limit - elapsed


def test_no_limit_means_no_sub_solve_limit():
    b = Budget.begin(None, Clock())
    assert b.left() is None and b.options(SolveOptions(time_limit=None)).time_limit is None


# --- reading a lexicographic bound ------------------------------------------------------------------


@settings(max_examples=200)
@given(
    sols=st.lists(
        st.tuples(st.integers(0, 5), st.floats(-10.0, 10.0)), min_size=1, max_size=12, unique=True
    ),
    slack=st.floats(0.0, 60.0),
    pick=st.integers(0, 11),
)
def test_lexicographic_bound_is_sound(sols, slack, pick):
    # max weight * n + v over a finite set of solutions (n, v), |v| <= spread < weight / 2: the
    # optimum is the lexicographic maximum (most items first)
    spread, weight = 10.0, 25.0
    n_opt, v_opt = max(sols)
    bound = weight * n_opt + v_opt + slack  # any proven bound is >= the optimum
    n_inc, _ = sols[pick % len(sols)]
    v_bound, n_max = lexicographic_bound(bound, weight, n_inc, spread)
    assert n_max >= n_opt
    if v_bound is not None:  # stated only when the incumbent's count is proven optimal
        assert n_opt == n_inc and v_bound >= v_opt - 1e-9


# --- explicit-bid auctions ---------------------------------------------------------------------------


def _contended(**kw):
    return random_auction(
        gpus_per_machine=4, bids_per_app=20, sensitive_fraction=1.0, contention=3.0, **kw
    )


def test_budget_spent_after_the_pf_marks_every_unsolved_payment(monkeypatch):
    inst = random_auction(apps=8, machines=4, gpus_per_machine=4, bids_per_app=6, seed=3)
    full = fairplace.solve(inst)
    clock = Clock()
    budget = Budget.begin(1000.0, clock)
    run = auction.backends.run

    def pf_then_spent(*args, **kw):  # the first solve is the PF; then the budget is gone
        res = run(*args, **kw)
        clock.now = 1e9
        return res

    monkeypatch.setattr(auction.backends, "run", pf_then_spent)
    sol = fairplace.solve(inst, budget=budget)
    assert set(sol.extra) == AUCTION_EXTRA | ROUTE_EXTRA
    assert sol.status == "time_limit" and sol.extra["pf_status"] == "optimal"
    assert sol.objective == pytest.approx(full.objective)
    assert sol.bound == sol.objective and sol.gap == 0.0
    assert sol.extra["milp_solves"] == 1 and sol.extra["loo_solves"] > 0
    inexact = sol.extra["payments_inexact"]
    assert len(inexact) == sol.extra["loo_solves"]
    assert all(sol.payments[a] == 1.0 for a in inexact)  # the rule for payments never solved
    assert all(sol.payments[a] >= full.payments[a] - 1e-9 for a in sol.payments)  # upper bounds
    assert {a for a, c in full.payments.items() if c < 1.0} <= set(inexact)


def test_node_limited_pf_reports_incumbent_bound_and_gap():
    inst = _contended(apps=24, machines=8, seed=1)
    exact = fairplace.solve(inst, payments=False, tie_break=False)
    sol = fairplace.solve(inst, mip_max_nodes=1)
    assert set(sol.extra) == AUCTION_EXTRA | ROUTE_EXTRA
    assert sol.status == "time_limit" and sol.extra["pf_status"] == "time_limit"
    assert sol.objective <= exact.objective + 1e-9 <= sol.bound + 2e-9
    assert sol.gap == pytest.approx(sol.bound - sol.objective) and sol.gap > 0
    # every c_i is relative to a non-optimal PF: all are marked, and all stay shares
    assert sol.extra["payments_inexact"] == sorted(a.id for a in inst.apps)
    assert all(0.0 <= c <= 1.0 for c in sol.payments.values())


def test_bound_is_withheld_when_more_unbounded_apps_might_be_served():
    inst = _contended(apps=12, machines=4, seed=1, rho_empty="null")
    exact = fairplace.solve(inst, payments=False, tie_break=False)
    sol = fairplace.solve(inst, mip_max_nodes=1, payments=False, tie_break=False)
    assert sol.status == "time_limit"
    served = len(inst.apps) - len(sol.extra["unserved_unbounded"])
    served_opt = len(inst.apps) - len(exact.extra["unserved_unbounded"])
    assert sol.extra["unbounded_served_bound"] >= served_opt
    if sol.bound is None:  # the program's bound mixes both levels: not a log-sum bound
        assert sol.gap is None and sol.extra["unbounded_served_bound"] > served
    else:
        assert served == served_opt and sol.bound >= exact.objective - 1e-9


def test_auction_without_a_pf_point_has_the_same_extra_keys():
    clock = Clock()
    budget = Budget.begin(1.0, clock)
    clock.now = 5.0
    inst = random_auction(apps=4, machines=2, seed=0)
    sol = fairplace.solve(inst, budget=budget)
    assert sol.status == "time_limit" and sol.objective is None and sol.allocation == {}
    assert set(sol.extra) == AUCTION_EXTRA | ROUTE_EXTRA and sol.bound is None and sol.gap is None


# --- placements ------------------------------------------------------------------------------------


def _feasible(inst, alloc):
    used = [g for ids in alloc.values() for g in ids]
    assert len(used) == len(set(used))
    demand = {j.id: j.gpus for j in inst.jobs}
    assert all(len(ids) == demand[j] for j, ids in alloc.items())


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), jobs=st.integers(1, 14), md=st.integers(1, 6))
def test_pal_start_is_a_feasible_point_of_the_program(seed, jobs, md):
    inst = random_placement(jobs=jobs, machines=4, gpus_per_machine=4, seed=seed, max_demand=md)
    prog = PlacementProgram(inst)
    pal = pal_placement(prog)
    milp = prog.to_milp()
    x = prog.start_vector(pal)
    assert milp.is_feasible(x)
    # the point's objective is PAL's: weighted slowdown sum - big * placed
    S = slowdowns(inst, pal)
    assert milp.value(x) == pytest.approx(sum(S.values()) - prog.big * len(pal))
    decoded = prog.decode(x)
    assert len(decoded) == len(pal)
    assert sum(slowdowns(inst, decoded).values()) == pytest.approx(sum(S.values()))


def test_placement_with_spent_budget_returns_pal():
    inst = random_placement(jobs=16, machines=4, gpus_per_machine=4, seed=0, max_demand=8)
    clock = Clock()
    budget = Budget.begin(1.0, clock)
    clock.now = 5.0  # spent before the MILP starts
    sol = solve_placement(inst, budget=budget)
    pal = pal_placement(PlacementProgram(inst))
    assert set(sol.extra) == PLACEMENT_EXTRA
    assert sol.status == "time_limit" and sol.extra["incumbent"] == "pal"
    assert sol.allocation == {j: list(g) for j, g in pal.items()}
    assert sol.objective == pytest.approx(sum(slowdowns(inst, pal).values()))
    assert sol.bound is None and sol.gap is None
    _feasible(inst, sol.allocation)


def test_placement_never_returns_nothing_and_is_never_worse_than_pal():
    inst = random_placement(jobs=16, machines=4, gpus_per_machine=4, seed=0, max_demand=8)
    pal = fairplace.solve(inst, solver="pal", backfill=True)
    for nodes in (0, 1):
        sol = fairplace.solve(inst, mip_max_nodes=nodes)
        assert set(sol.extra) == PLACEMENT_EXTRA
        assert sol.status in ("time_limit", "optimal") and sol.objective is not None
        _feasible(inst, sol.allocation)
        assert sol.extra["placed"] >= pal.extra["placed"]
        if sol.extra["placed"] == pal.extra["placed"]:
            assert sol.objective <= pal.objective + 1e-9
        if sol.bound is not None:
            assert sol.bound <= sol.objective + 1e-9
            assert sol.gap == pytest.approx((sol.objective - sol.bound) / sol.objective)
        else:  # not stated in slowdown units: fewer jobs placed than might fit
            assert sol.gap is None
            assert (
                sol.extra["placed_bound"] is None or sol.extra["placed_bound"] > sol.extra["placed"]
            )


@pytest.mark.slow
def test_node_limited_placement_bound_is_below_the_optimum():
    # 20 jobs on 6 machines: one node leaves a gap (smaller ones close at the root); ~4 s CPU,
    # 24 on 8 took ~9 s
    inst = random_placement(jobs=20, machines=6, gpus_per_machine=4, seed=0, max_demand=8)
    sol = fairplace.solve(inst, mip_max_nodes=1)
    exact = fairplace.solve(inst)
    assert sol.status == "time_limit" and exact.status == "optimal"
    assert sol.extra["placed_bound"] == exact.extra["placed"] == sol.extra["placed"]
    assert sol.bound <= exact.objective + 1e-9 <= sol.objective + 2e-9
    assert sol.gap > 0


def test_weighted_jobs_have_a_weighted_bound_only():
    from dataclasses import replace

    inst = random_placement(jobs=6, machines=4, gpus_per_machine=4, seed=2, max_demand=4)
    inst = replace(inst, jobs=tuple(replace(j, weight=1.0 + k) for k, j in enumerate(inst.jobs)))
    sol = fairplace.solve(inst)
    assert sol.status == "optimal"
    assert sol.bound is None and sol.gap is None  # the objective is the unweighted sum
    assert sol.extra["weighted_bound"] == pytest.approx(sol.extra["weighted_objective"])
    unit = fairplace.solve(random_placement(jobs=6, machines=4, gpus_per_machine=4, seed=2))
    assert unit.bound == pytest.approx(unit.objective) and unit.gap == 0.0


# --- CLI exit codes ----------------------------------------------------------------------------------


def test_cli_exit_codes_for_time_limits(tmp_path, monkeypatch, capsys):
    from fairplace.cli import main
    from fairplace.instances.io import save
    from fairplace.solvers import budget as budget_mod

    path = save(random_auction(apps=4, machines=2, seed=0), tmp_path / "a.json")
    assert main(["solve", str(path), "--time-limit", "100"]) == 0  # solved well within it

    def spent(cls, limit, clock=None):  # every budget is already spent when the solve starts
        return cls(limit, -math.inf if limit is not None else 0.0)

    monkeypatch.setattr(budget_mod.Budget, "begin", classmethod(spent))
    capsys.readouterr()
    assert main(["solve", str(path), "--time-limit", "100", "--json"]) == 3
    out = capsys.readouterr()
    assert '"status": "time_limit"' in out.out and '"objective": null' in out.out
    assert len(out.err.strip().splitlines()) == 1 and "no feasible solution" in out.err
    # a placement always has a solution (PAL's, or placing nothing): time_limit, exit 0
    ppath = save(random_placement(jobs=6, machines=2, seed=0), tmp_path / "p.json")
    assert main(["solve", str(ppath), "--time-limit", "100"]) == 0


def test_solve_help_documents_the_exit_codes(capsys):
    from fairplace.cli import main

    with pytest.raises(SystemExit):
        main(["solve", "--help"])
    out = capsys.readouterr().out
    assert "exit status" in out and "3  time limit reached with no feasible solution" in out
