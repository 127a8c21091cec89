"""One honest budget: the one-time set-up runs before the clock starts and is
reported apart (``setup_seconds``); ``seconds`` is everything after it, on the budget's own clock;
the route tries the cheapest exact PF it can finish; no sub-solve starts that the time left cannot
cover. Fake clocks and recorded calls, never a wall-clock speed (the overrun targets are
``fairplace bench --only time_budget_a7``)."""

from __future__ import annotations

import json
import time
from dataclasses import replace

import pytest

import fairplace
from fairplace.core.domain import App, AuctionInstance, Bid
from fairplace.formulations import agents
from fairplace.instances import io, objects
from fairplace.instances.generators import grid_cluster, random_agent_auction, random_auction
from fairplace.solvers import auction, dispatch
from fairplace.solvers.budget import Budget
from fairplace.solvers.options import SolveOptions


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _fake_budgets(monkeypatch, clock: Clock) -> list[Budget]:
    """Budgets ``dispatch`` begins read ``clock``; returns the list of those begun."""
    made: list[Budget] = []

    def begin(limit, clock_=None):
        made.append(Budget(limit, clock(), clock))
        return made[-1]

    monkeypatch.setattr(dispatch.Budget, "begin", staticmethod(begin))
    return made


def test_set_up_runs_before_the_clock_starts(monkeypatch):
    clock, order = Clock(), []
    made = _fake_budgets(monkeypatch, clock)
    setup = dispatch.setup

    def slow_setup(*args):  # imports that take 10 s of the fake clock
        order.append("setup")
        clock.now += 10.0
        return setup(*args)

    monkeypatch.setattr(dispatch, "setup", slow_setup)
    inst = random_agent_auction(apps=3, machines=2, gpus_per_machine=2, seed=1)
    sol = fairplace.solve(inst, "compact", time_limit=0.5)
    assert order == ["setup"] and made and made[0].start == 10.0  # the clock starts after it
    assert sol.status == "optimal" and sol.objective is not None  # nothing of 0.5 s was spent
    assert sol.seconds == 0.0  # the fake clock did not move after the set-up


def test_seconds_counts_listing_the_bids_on_the_budget_clock(monkeypatch):
    clock = Clock()
    _fake_budgets(monkeypatch, clock)
    subset_bids = agents.subset_bids

    def slow(*args, **kw):  # each app's bids take 3 s of the fake clock
        clock.now += 3.0
        return subset_bids(*args, **kw)

    monkeypatch.setattr(agents, "subset_bids", slow)
    inst = random_agent_auction(apps=2, machines=1, gpus_per_machine=4, seed=0)
    sol = fairplace.solve(inst, "exact")
    assert sol.extra["route"] == "subset-bids"
    assert sol.seconds == pytest.approx(3.0 * len(inst.agents))  # the listing is in seconds


@pytest.mark.parametrize("solver", [None, "exact", "compact", "greedy-rho"])
def test_seconds_and_set_up_add_up_to_at_most_the_call(solver):
    inst = random_agent_auction(apps=2, machines=1, gpus_per_machine=4, seed=0)
    if solver == "greedy-rho":
        inst = agents.to_explicit(inst)
    t0 = time.perf_counter()
    sol = fairplace.solve(inst, solver, time_limit=30)
    wall = time.perf_counter() - t0
    assert sol.seconds >= 0 and sol.setup_seconds >= 0
    assert sol.seconds + sol.setup_seconds <= wall  # two consecutive stretches of the call


def test_set_up_preloads_the_back_end_the_solve_will_use(monkeypatch):
    seen = []
    monkeypatch.setattr(dispatch.backends, "preload", seen.append)
    inst = random_auction(apps=2, machines=1, gpus_per_machine=2, bids_per_app=2, seed=0)
    dispatch.setup(inst, "pyomo", {})
    dispatch.setup(inst, "exact", {"backend": "cvxpy"})
    dispatch.setup(inst, None, {})
    dispatch.setup(inst, "greedy-rho", {})
    assert seen == ["pyomo", "cvxpy", "highs"]


def test_json_output_keeps_the_contract_and_adds_setup_seconds(tmp_path, capsys):
    from fairplace.cli import main

    f = io.save(
        random_agent_auction(apps=2, machines=1, gpus_per_machine=4, seed=0), tmp_path / "a.json"
    )
    assert main(["solve", str(f), "--time-limit", "30", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    contract = {"status", "solver", "seconds", "allocation", "objective"}
    assert contract | {"pf_allocation", "payments", "leftover", "setup_seconds"} <= set(d)
    assert d["setup_seconds"] >= 0 and d["seconds"] >= 0


# --- the cheapest exact route under a time limit ---------------------------------------------------


def test_exact_under_a_time_limit_takes_the_compact_route_on_many_subset_bids(monkeypatch):
    inst = random_agent_auction(apps=2, machines=1, gpus_per_machine=4, seed=0)
    size = sum(c for _, c in agents.subset_counts(inst))
    monkeypatch.setattr(dispatch, "AUTO_COMPACT_BIDS", size - 1)  # "many" for this instance
    timed = fairplace.solve(inst, "exact", time_limit=60)
    untimed = fairplace.solve(inst, "exact")
    assert timed.extra["route"] == "compact" and timed.status == "optimal"
    assert untimed.extra["route"] == "subset-bids"  # no limit: the named route lists the bids
    assert timed.objective == pytest.approx(untimed.objective, rel=1e-9)
    assert timed.payments == pytest.approx(untimed.payments, rel=1e-6)
    monkeypatch.setattr(dispatch, "AUTO_COMPACT_BIDS", size)  # few: the bids are listed
    assert fairplace.solve(inst, "exact", time_limit=60).extra["route"] == "subset-bids"


# --- no sub-solve the time left cannot cover -------------------------------------------------------


def test_budget_options_need_the_seconds_asked_for():
    clock = Clock()
    budget = Budget.begin(10.0, clock)  # margin 0.5: 9.5 s for sub-solves
    clock.now = 6.0
    opts = SolveOptions()
    assert budget.options(opts, need=3.5).time_limit == pytest.approx(3.5)
    assert budget.options(opts, need=3.6) is None
    assert Budget.begin(None, clock).options(opts, need=1e9).time_limit is None  # no limit


def _pf_takes(monkeypatch, clock: Clock, seconds: float) -> list:
    """The first solve (the PF) takes ``seconds`` of the fake clock; records every later one."""
    run, later = auction.backends.run, []

    def fake(problem, be, o, start=None):
        res = run(problem, be, o.with_(time_limit=None), start=start)
        if not later and not hasattr(fake, "pf_done"):
            fake.pf_done = True
            clock.now += seconds
            return replace(res, seconds=seconds)
        later.append(o.time_limit)
        return res

    monkeypatch.setattr(auction.backends, "run", fake)
    return later


def _contended():
    cl = grid_cluster(1, 2)
    a, b = ("m0/0",), ("m0/0", "m0/1")
    apps = (
        App("x", (Bid(a, 2.0), Bid(b, 1.5)), 5.0),
        App("y", (Bid(a, 2.5), Bid(("m0/1",), 3.0)), 6.0),
    )
    return AuctionInstance(cl, apps)


@pytest.mark.parametrize("pf_seconds,started", [(7.0, False), (4.0, True)])
def test_leave_one_out_solves_start_only_with_time_for_them(monkeypatch, pf_seconds, started):
    clock = Clock()
    budget = Budget.begin(10.0, clock)  # 9.5 s for solves; a PF_{-i} needs half the PF's seconds
    later = _pf_takes(monkeypatch, clock, pf_seconds)
    sol = fairplace.solve(_contended(), budget=budget, parallel=False)
    assert sol.objective is not None and sol.extra["pf_status"] == "optimal"
    if started:  # 5.5 s left >= 2 s needed
        assert later and not sol.extra["payments_inexact"]
    else:  # 2.5 s left < 3.5 s needed: not started, the PF is returned with inexact payments
        assert not later and sol.status == "time_limit"
        assert sol.extra["payments_inexact"] and sol.extra["loo_solves"] > 0


def test_wide_programs_run_without_feasibility_jump(monkeypatch):
    inst = agents.to_explicit(random_agent_auction(apps=3, machines=2, gpus_per_machine=4, seed=2))
    seen = []
    run = auction.backends.run

    def record(problem, be, o, start=None):
        seen.append(o.mip_feasibility_jump)
        return run(problem, be, o, start=start)

    monkeypatch.setattr(auction.backends, "run", record)
    auction.solve_auction(inst)
    assert seen and all(v is False for v in seen)


# --- a loaded instance is validated once ---------------------------------------------------------


def test_a_loaded_instance_is_not_validated_again(tmp_path, monkeypatch):
    f = io.save(
        random_agent_auction(apps=2, machines=1, gpus_per_machine=2, seed=0), tmp_path / "a.json"
    )
    inst = fairplace.load(f)
    assert io.checked(inst)
    calls = []
    monkeypatch.setattr(objects, "from_dict", lambda doc: calls.append(doc))
    objects.check(inst)
    assert not calls  # built by the loader: checked already
    copy = replace(inst, name="copy")  # any other object: checked as a document
    objects.check(copy)
    assert len(calls) == 1 and not io.checked(copy)
