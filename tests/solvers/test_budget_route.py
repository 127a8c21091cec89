"""Everything inside one budget: vectorised dominance pruning with the result of
the quadratic check, pruning shared by the leave-one-out programs, the bid listing and pruning
counted against ``time_limit`` (a fake clock, never a short wall-clock limit), and the route
``fairplace.solve`` takes when no solver is named. The 1-second benchmark itself is
``fairplace bench --only time_budget`` (``fairplace/benchmarks/time_budget.py``), not a test."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairplace
from fairplace.core.domain import App, AuctionInstance, Bid
from fairplace.core.solution import ROUTE_EXTRA
from fairplace.formulations import agents
from fairplace.formulations.pf import PFProgram, _drop_dominated
from fairplace.instances.generators import grid_cluster, random_agent_auction, random_auction
from fairplace.solvers import auction, dispatch
from fairplace.solvers.budget import Budget


def quadratic_keep(bundles, rhos, rho_empty):
    """The reference: every bid, in (size, rho, index) order, against every bid kept so far."""
    order = sorted(range(len(bundles)), key=lambda b: (len(bundles[b]), rhos[b], b))
    kept: list[int] = []
    for b in order:
        if rho_empty is not None and rhos[b] >= rho_empty:
            continue
        if any(bundles[k] <= bundles[b] and rhos[k] <= rhos[b] for k in kept):
            continue
        kept.append(b)
    return sorted(kept)


_bundle = st.frozensets(st.integers(0, 9), min_size=1, max_size=6)
_rho = st.sampled_from([1.0, 1.25, 1.5, 2.0, 3.0]) | st.floats(1.0, 4.0)


@settings(max_examples=300, deadline=None)
@given(
    bids=st.lists(st.tuples(_bundle, _rho), max_size=40),
    rho_empty=st.none() | st.sampled_from([1.3, 2.0, 9.0]),
)
def test_vectorised_pruning_keeps_what_the_quadratic_check_keeps(bids, rho_empty):
    bundles = [frozenset(f"g{k}" for k in b) for b, _ in bids]  # ties and duplicates included
    rhos = np.array([r for _, r in bids], dtype=float)
    assert _drop_dominated(bundles, rhos, rho_empty) == quadratic_keep(bundles, rhos, rho_empty)


def test_pruning_in_many_steps_equals_one_step(monkeypatch):
    rng = np.random.default_rng(3)
    bundles = [
        frozenset(rng.choice(12, size=rng.integers(1, 7), replace=False)) for _ in range(400)
    ]
    rhos = rng.uniform(1, 3, 400)
    ref = quadratic_keep(bundles, rhos, 2.5)
    monkeypatch.setattr("fairplace.formulations.pf.PAIRS_PER_STEP", 7)
    assert _drop_dominated(bundles, rhos, 2.5) == ref


def test_a_stop_keeps_the_untested_bids_and_the_optimum():
    from fairplace.solvers import backends

    inst = random_auction(apps=5, machines=2, gpus_per_machine=4, bids_per_app=20, seed=7)
    full, cut = PFProgram(inst), PFProgram(inst, stop=lambda: True)
    assert set(full.columns) < set(cut.columns)  # stopped at once: only duplicates dropped
    a, b = backends.run(full, "highs"), backends.run(cut, "highs")
    assert a.status == b.status == "optimal"
    assert a.objective == pytest.approx(b.objective, rel=1e-12)


def test_agent_subset_bids_prune_fast_and_like_the_reference():
    inst = agents.to_explicit(random_agent_auction(apps=3, machines=2, gpus_per_machine=4, seed=2))
    for app in inst.apps:
        bundles = [frozenset(b.gpus) for b in app.bids]
        rhos = np.array([b.rho for b in app.bids])
        assert _drop_dominated(bundles, rhos, app.rho_empty) == quadratic_keep(
            bundles, rhos, app.rho_empty
        )


@pytest.mark.parametrize("seed", range(4))
def test_leave_one_out_programs_share_the_pruning_and_equal_a_fresh_build(seed):
    inst = random_auction(
        apps=6, machines=3, gpus_per_machine=4, bids_per_app=15, seed=seed, rho_empty="null"
    )
    prog = PFProgram(inst)
    for i in range(len(inst.apps)):
        shared, fresh = prog.without(i).to_milp(), PFProgram(inst, frozenset({i})).to_milp()
        sub, alone = prog.without(i), PFProgram(inst, frozenset({i}))
        assert sub.columns == alone.columns
        assert sub.big_m == alone.big_m and sub.log_sum_range == alone.log_sum_range
        assert np.array_equal(shared.c, fresh.c) and shared.offset == fresh.offset
        assert (shared.A != fresh.A).nnz == 0


def test_pf_gains_are_minus_log_rho_per_bid():
    inst = random_auction(apps=4, machines=2, gpus_per_machine=4, bids_per_app=8, seed=1)
    prog = PFProgram(inst, prune=False)
    want = [
        -np.log(inst.apps[i].bids[b].rho) + np.log(inst.apps[i].rho_empty) for i, b in prog.columns
    ]
    assert np.array_equal(prog.gains(), np.array(want))  # bit for bit, as the scalar formula


# --- the budget covers listing and pruning ----------------------------------------------------------


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _agents_instance():
    return random_agent_auction(apps=3, machines=2, gpus_per_machine=4, seed=2)


def test_budget_spent_while_listing_bids_returns_no_solution(monkeypatch):
    inst = _agents_instance()
    clock = Clock()
    budget = Budget.begin(1.0, clock)
    subset_bids = agents.subset_bids

    def slow(*args, **kw):  # the first app's bids take the whole budget
        out = subset_bids(*args, **kw)
        clock.now = 5.0
        return out

    monkeypatch.setattr(agents, "subset_bids", slow)
    sol = fairplace.solve(inst, "exact", budget=budget)
    assert sol.status == "time_limit" and sol.objective is None and sol.allocation == {}
    assert sol.extra["route"] == "subset-bids" and sol.extra["milp_solves"] == 0
    assert sol.extra["payments_inexact"] == sorted(a.id for a in inst.agents)
    assert "listing" in sol.message


def test_budget_spent_while_pruning_starts_no_solve(monkeypatch):
    inst = random_auction(apps=4, machines=2, gpus_per_machine=4, bids_per_app=8, seed=0)
    clock = Clock()
    budget = Budget.begin(1.0, clock)
    from fairplace.formulations import pf

    real = pf.dominance_keep

    def slow(*args, **kw):
        out = real(*args, **kw)
        clock.now = 5.0
        return out

    monkeypatch.setattr(pf, "dominance_keep", slow)
    ran = []
    monkeypatch.setattr(auction.backends, "run", lambda *a, **k: ran.append(1))
    sol = fairplace.solve(inst, budget=budget)
    assert not ran  # no solver call once the budget is spent
    assert sol.status == "time_limit" and sol.objective is None
    assert sol.extra["milp_solves"] == 0


def test_leave_one_out_solves_get_what_is_left_after_building(monkeypatch):
    inst = random_auction(apps=6, machines=3, gpus_per_machine=4, bids_per_app=10, seed=4)
    clock = Clock()
    budget = Budget.begin(100.0, clock)
    limits = []
    run = auction.backends.run
    incidence = PFProgram.incidence

    def building_takes_a_second(self):
        clock.now += 1.0
        return incidence(self)

    def record(problem, be, o, start=None):
        limits.append((clock.now, o.time_limit))
        return run(problem, be, o.with_(time_limit=None), start=start)

    monkeypatch.setattr(PFProgram, "incidence", building_takes_a_second)
    monkeypatch.setattr(auction.backends, "run", record)
    sol = fairplace.solve(inst, budget=budget, parallel=False)
    assert len(limits) >= sol.extra["milp_solves"] > 2  # PF, leave-one-out (+ tie-break)
    for now, limit in limits:  # each solve got the budget left when it started
        assert limit == pytest.approx(100.0 - budget.margin - now)


# --- the route without a solver name -----------------------------------------------------------------


def test_no_solver_named_uses_compact_for_many_subset_bids():
    inst = random_agent_auction(apps=4, machines=3, gpus_per_machine=4, seed=0)
    size = sum(c for _, c in agents.subset_counts(inst))
    assert size > dispatch.AUTO_COMPACT_BIDS and dispatch.too_large(inst) is None
    sol = fairplace.solve(inst)
    assert sol.solver == "compact" and sol.status == "optimal"
    assert sol.extra["route"] == "compact" and sol.extra["subset_bids"] == size
    assert ROUTE_EXTRA <= set(sol.extra)


def test_no_solver_named_lists_a_few_subset_bids():
    inst = random_agent_auction(apps=2, machines=1, gpus_per_machine=4, seed=0)
    size = sum(c for _, c in agents.subset_counts(inst))
    assert size <= dispatch.AUTO_COMPACT_BIDS
    sol = fairplace.solve(inst)
    named = fairplace.solve(inst, "exact")
    assert sol.solver == "exact" and sol.extra["route"] == "subset-bids"
    assert sol.extra["subset_bids"] == size and sol.objective == named.objective
    assert sol.payments == named.payments


def test_bid_tables_route_is_recorded():
    cl = grid_cluster(1, 2)
    inst = AuctionInstance(cl, (App("a", (Bid(("m0/0",), 2.0),), 5.0),))
    sol = fairplace.solve(inst)
    assert sol.extra["route"] == "bids" and sol.extra["subset_bids"] is None


def test_compact_and_subset_bids_agree_where_both_run():
    inst = random_agent_auction(apps=3, machines=2, gpus_per_machine=3, seed=1)
    a, b = fairplace.solve(inst, "exact"), fairplace.solve(inst, "compact")
    assert a.objective == pytest.approx(b.objective, rel=1e-9)
    assert all(a.payments[k] == pytest.approx(b.payments[k], rel=1e-6) for k in a.payments)


def test_wide_programs_are_solved_without_presolve(monkeypatch):
    inst = agents.to_explicit(random_agent_auction(apps=3, machines=2, gpus_per_machine=4, seed=2))
    milp = PFProgram(inst).to_milp()
    assert milp.n_cols > auction.WIDE_COLUMNS_PER_ROW * milp.n_rows
    seen = []
    run = auction.backends.run

    def record(problem, be, o, start=None):
        seen.append(o.presolve)
        return run(problem, be, o, start=start)

    monkeypatch.setattr(auction.backends, "run", record)
    auction.solve_auction(inst)
    assert seen and not any(seen)
    seen.clear()
    auction.solve_auction(random_auction(apps=6, machines=4, bids_per_app=10, seed=0))
    assert seen and all(seen)  # bid tables of a few columns per row keep HiGHS' presolve


# --- the reproducer ---------------------------------------------------------------------------


def _reproducer():
    return random_agent_auction(apps=7, machines=3, gpus_per_machine=4, seed=0)


def test_reproducer_without_a_solver_name_is_solved_by_the_compact_arbiter():
    inst = _reproducer()
    # a generous limit: the route and the bid count do not depend on it, and a 1 s limit on the
    # real clock left a loaded machine no time for a solution (objective None)
    sol = fairplace.solve(inst, time_limit=120.0)
    assert sol.extra["route"] == "compact" and sol.extra["subset_bids"] == 21_762
    assert sol.objective is not None and sol.status == "optimal"


def test_reproducer_with_exact_and_a_spent_budget_starts_no_solve(monkeypatch):
    """``--solver exact --time-limit 1``: if listing the 21,762 bids took the whole second, no
    solver call starts and the CLI exits 3 (fake clock: independent of the machine's speed)."""
    from fairplace.commands.solve import EXIT_NO_SOLUTION, exit_code

    clock = Clock()
    budget = Budget.begin(1.0, clock)
    to_explicit = agents.to_explicit

    def listing_takes_a_second(*args, **kw):
        out = to_explicit(*args, **kw)
        clock.now = 1.0
        return out

    monkeypatch.setattr(agents, "to_explicit", listing_takes_a_second)
    ran = []
    monkeypatch.setattr(auction.backends, "run", lambda *a, **k: ran.append(1))
    sol = fairplace.solve(_reproducer(), "exact", budget=budget)
    assert not ran and sol.status == "time_limit" and sol.objective is None
    assert exit_code(sol) == EXIT_NO_SOLUTION


def test_highs_is_interrupted_at_its_deadline():
    """``highs.interrupt_after``: a MIP run past its wall-clock deadline stops as ``time_limit``
    (a deadline of 0 s: the first interrupt check stops it, whatever the machine's speed)."""
    import highspy

    from fairplace.solvers.backends import highs
    from fairplace.solvers.options import SolveOptions

    if not hasattr(highspy.Highs(), "cbMipInterrupt"):
        pytest.skip("highspy without MIP interrupt callbacks")
    inst = random_auction(apps=16, machines=16, gpus_per_machine=4, bids_per_app=20, seed=0,
                          contention=2.0)  # fmt: skip
    milp = PFProgram(inst).to_milp()
    h = highs.build(milp, SolveOptions(presolve=False))
    highs.interrupt_after(h, 0.0)
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kInterrupt
    assert highs.read(h, milp, 0.0).status == "time_limit"
