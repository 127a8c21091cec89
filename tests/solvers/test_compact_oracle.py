"""The compact arbiter on auction rounds captured from THEMIS simulations: the round
that crashed its branch and bound, a stored sample of rounds against the full MILP (the sweep is
``papers/themis/experiments/themis_compact_oracle.py``, whose ``compare`` these tests use), and LP sub-solves that
HiGHS leaves without an optimum falling back to the full MILP."""

import importlib.util
from dataclasses import replace
from pathlib import Path

import highspy
import numpy as np
import pytest
from scipy.sparse import csr_matrix

from fairplace.formulations.program import MILP, RawResult
from fairplace.solvers.backends import highs as highs_backend
from fairplace.solvers.budget import Budget
from fairplace.solvers.compact import bb as compact_bb
from fairplace.solvers.compact import pa_payments as compact_pa
from fairplace.solvers.compact import rc as compact_rc
from fairplace.solvers.options import SolveOptions

DATA = Path(__file__).parents[1] / "data"
SCRIPT = Path(__file__).resolve().parents[2] / "papers/themis/experiments/themis_compact_oracle.py"


def _oracle():
    spec = importlib.util.spec_from_file_location("themis_compact_oracle", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


oracle = _oracle()
#: W2 x2 seed 213 of today's 30-app / 128-GPU set-up, round 73: a node LP of the rack-cell branch
#: and bound came back "Optimal" with a point missing a row by 1.9e-7 (no point read) and
#: ``x = lp.x.copy()`` raised AttributeError
CRASH = oracle.read_cases(DATA / "themis_round_crash.jsonl.gz")[0]
#: rounds of THEMIS runs (papers/themis/experiments/themis_compact_oracle.py capture) picked to cover every route
SAMPLE = oracle.read_cases(DATA / "themis_rounds_sample.jsonl.gz")


def test_the_round_that_crashed_the_branch_and_bound_is_solved_exactly():
    row = oracle.compare(CRASH, enum_limit=0)  # the LP route, where the crash was
    assert row["problems"] == []
    assert row["pf_route"] in ("branch_and_bound", "full")
    assert oracle.compare(CRASH)["problems"] == []  # and the arbiter's default route


def test_sampled_themis_rounds_agree_with_the_full_milp():
    """PF value, payments and allocations of the compact auction equal the full MILP's on every
    sampled round (``oracle.compare``: tolerance 1e-6), and the sample exercises the routes."""
    pf_routes, loo_routes = set(), set()
    for doc in SAMPLE:
        # the LP / MILP route, the enumeration where small (no DP), the default (the DP where
        # the offer is homogeneous)
        for limit, route in ((0, "auto"), (None, "compact"), (None, "auto")):
            row = oracle.compare(doc, enum_limit=limit, route=route)
            assert row["problems"] == [], (doc["source"], limit, route, row["problems"])
            pf_routes.add(row["pf_route"])
            loo_routes |= set(row["loo_routes"])
    assert {"lp_cells", "branch_and_bound", "full", "enumeration", "dp"} <= pf_routes
    assert {"lp_cells", "fixing", "enumeration"} <= loo_routes


class _FakeHighs:
    """What ``read`` sees after HiGHS 1.16 ends an LP "Optimal" with an infeasible point."""

    def getInfo(self):
        class Info:
            primal_solution_status = 1  # infeasible
            mip_dual_bound = np.inf
            objective_function_value = 191.78
            max_primal_infeasibility = 1.94e-7

        return Info()

    def getModelStatus(self):
        return highspy.HighsModelStatus.kOptimal

    def modelStatusToString(self, status):
        return "Optimal"

    def getSolution(self):
        raise AssertionError("an infeasible point is not read")


def test_optimal_without_a_feasible_point_is_read_as_an_error():
    lp = MILP(
        c=np.ones(2),
        A=csr_matrix(np.ones((1, 2))),
        row_lb=np.zeros(1),
        row_ub=np.ones(1),
        col_lb=np.zeros(2),
        col_ub=np.ones(2),
        integrality=np.zeros(2, dtype=bool),
        sense="max",
    )
    res = highs_backend.read(_FakeHighs(), lp, 0.0)
    assert res.status == "error" and res.x is None and res.objective is None
    assert res.message.startswith(highs_backend.NO_POINT) and "1.94e-07" in res.message


def _failing(calls: list, name: str):
    def rerun(h, lp_model):
        calls.append(name)
        return RawResult("error", None, None, None, 0.0, "no feasible point: (test)")

    return rerun


def test_lp_sub_solves_without_an_optimum_fall_back_to_the_full_milp(monkeypatch):
    """Every warm LP re-solve of the branch and bound and of the leave-one-out chains fails:
    the PF and every PF_{-i} are settled by full MILPs, with the same answers."""
    doc = next(d for d in SAMPLE if d["source"].get("tag") == "bb+fixing")
    calls: list[str] = []
    monkeypatch.setattr(compact_bb, "rerun", _failing(calls, "bb"))
    monkeypatch.setattr(compact_pa, "rerun", _failing(calls, "pa"))
    row = oracle.compare(doc, enum_limit=0)
    assert row["problems"] == []
    assert {"bb", "pa"} <= set(calls)
    assert row["pf_route"] == "full"
    assert set(row["loo_routes"]) <= {"best_values", "full"} and "full" in row["loo_routes"]


def test_a_dive_without_an_optimum_gives_no_incumbent(monkeypatch):
    """Leave-one-out with no start and a target no point reaches goes to the dive; its LPs fail,
    so ``leave_one_out`` returns None (the caller's full solve decides) and the live model's
    bounds are restored."""
    from test_compact_rc import _loo_lp, _pf

    from fairplace.solvers.compact.lp import lp_cells

    calls: list[str] = []
    monkeypatch.setattr(compact_rc, "TARGET_GAP", -1.0)  # target above the bound: dive
    monkeypatch.setattr(compact_rc, "rerun", _failing(calls, "dive"))
    pf = _pf(1, apps=20, machines=12)
    milp = pf.to_milp()
    for i in range(len(pf.apps)):
        h, lp_model = _loo_lp(pf, milp, i)
        lp = highs_backend.read(h, lp_model, 0.0)
        if lp_cells(pf, lp.x, i) is None:  # a split LP: the dive has work to do
            break
    lb, ub = np.asarray(h.getLp().col_lower_), np.asarray(h.getLp().col_upper_)
    hit = compact_rc.leave_one_out(pf, milp, h, lp_model, SolveOptions(), Budget.begin(None), i)
    assert hit is None and calls == ["dive"]
    assert np.array_equal(h.getLp().col_lower_, lb) and np.array_equal(h.getLp().col_upper_, ub)


def test_fixed_milp_said_infeasible_despite_its_start_proves_nothing(monkeypatch):
    """The small MILP after fixing always contains its start; "infeasible" from HiGHS is then
    not trusted: no answer (the caller's full solve decides), not the start as an optimum."""
    from test_compact_rc import _loo_lp, _pf

    class Infeasible:
        def solve(self, milp, opts, start=None):
            return RawResult("infeasible", None, None, None, 0.0, "Infeasible")

    pf = _pf(1, apps=20, machines=12)
    milp = pf.to_milp()
    choice = pf.decode(highs_backend.solve(milp, SolveOptions(presolve=False)).x)
    i = sorted(choice)[0]
    start = {j: v for j, v in choice.items() if j != i}
    h, lp_model = _loo_lp(pf, milp, i)
    y = np.asarray(h.getSolution().row_dual)
    e = next(e for e in pf.layout[1] if e["i"] == i)
    mine = np.arange(e["z"], e["z"] + len(e["cells"]))
    c, col_ub = milp.c.copy(), milp.col_ub.copy()
    c[mine] = col_ub[mine] = 0.0
    loo = replace(milp, c=c, col_ub=col_ub)  # as in compact_rc.leave_one_out
    best = compact_bb._incumbent(pf, loo, start)
    assert best is not None
    args = (pf, loo, y, best[0], best, SolveOptions(), Budget.begin(None), None)
    assert compact_rc._fixed_milp(*args) is not None  # HiGHS itself: the start or better
    monkeypatch.setattr(compact_rc, "get_backend", lambda name: Infeasible())
    assert compact_rc._fixed_milp(*args) is None


@pytest.mark.parametrize("field", ["offer", "apps"])
def test_round_documents_round_trip(field):
    """``to_doc`` / ``from_doc`` keep the compact input exactly (rho tables bit for bit)."""
    a = oracle.from_doc(CRASH)
    again = oracle.from_doc(
        oracle.to_doc(
            a["cluster"], a["offer"], a["apps"], a["ids"], a["opts"], a["rounding"], a["seed"]
        )
    )
    if field == "offer":
        assert np.array_equal(a["offer"], again["offer"]) and a["cluster"] == again["cluster"]
    else:
        for x, y in zip(a["apps"], again["apps"], strict=True):
            assert np.array_equal(x.table.rho, y.table.rho)
            assert np.array_equal(x.table.levels, y.table.levels)
            held = ("held_count", "held_spread", "held_level", "app_id")
            assert [getattr(x.table, k) for k in held] == [getattr(y.table, k) for k in held]
            assert (x.cls, x.held_machine, x.held_rack) == (y.cls, y.held_machine, y.held_rack)
