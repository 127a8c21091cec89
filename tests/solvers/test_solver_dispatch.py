"""``fairplace.solve`` routing, per-solver options and solver back ends (their capabilities and
agreement)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from conftest import brute_force_pf, tiny_auction, tiny_placement
from hypothesis import given, settings
from hypothesis import strategies as st

import fairplace
from fairplace.cli import main
from fairplace.core.domain import AgentApp, AgentJob, AuctionInstance
from fairplace.core.errors import OptionError, UnknownSolver
from fairplace.formulations import agents
from fairplace.formulations.pf import PFProgram
from fairplace.formulations.placement import PlacementProgram
from fairplace.instances import io
from fairplace.instances.generators import grid_cluster
from fairplace.solvers import backends, dispatch
from fairplace.solvers.backends import Capabilities, CapabilityError, get_backend
from fairplace.solvers.options import SolveOptions
from fairplace.solvers.registry import solver_table


def _agents(seed: int, machines: int = 4, gpm: int = 2, d_max_hi: int = 6, n_apps: int = 3):
    rng = np.random.default_rng(seed)
    cl = grid_cluster(machines, gpm, 2, pm={"A": rng.choice([1.0, 1.2], machines * gpm)})
    apps = tuple(
        AgentApp(
            f"A{a}",
            (AgentJob(float(rng.integers(10, 100)), 1.0, float(rng.choice([0, 1, 3]))),),
            t_now=float(rng.integers(0, 50)),
            d_max=int(rng.integers(1, d_max_hi)),
            cls="A",
            t_id={"n_avg": 3},
            rho_empty=50.0,
        )
        for a in range(n_apps)
    )
    return AuctionInstance(cl, (), agents=apps)


# --- dispatch -----------------------------------------------------------------------------------
def test_matrix_form_goes_straight_to_the_solver():
    inst = tiny_auction(3, apps=3)
    sol = fairplace.solve(inst, "exact")
    assert sol.solver == "exact" and sol.status == "optimal"
    assert sol.objective == pytest.approx(brute_force_pf(inst)[0][1], abs=1e-9)


def test_small_agent_offer_is_solved_on_its_subset_bids():
    inst = _agents(1)
    assert dispatch.too_large(inst) is None
    explicit = agents.to_explicit(inst)
    for solver in ("exact", "greedy-log", "lp-round"):
        a, b = fairplace.solve(inst, solver), fairplace.solve(explicit, solver)
        assert a.solver == solver and a.objective == pytest.approx(b.objective, abs=1e-9)
        assert a.allocation == b.allocation


def test_large_agent_offer_goes_to_the_compact_arbiter_without_trying_the_bids(monkeypatch):
    inst = _agents(2, machines=16, gpm=4, d_max_hi=13)
    app, count = dispatch.too_large(inst)
    assert count > agents.MAX_SUBSETS and app in {a.id for a in inst.agents}

    def refuse(*a, **k):
        raise AssertionError("to_explicit must not be tried on a large offer")

    monkeypatch.setattr(agents, "to_explicit", refuse)
    sol = fairplace.solve(inst, "exact", rounding="floor")
    assert sol.solver == "compact" and sol.status == "optimal"
    with pytest.raises(OptionError, match="offer") as e:
        fairplace.solve(inst, "greedy-log")
    assert e.value.path == "offer" and "'greedy-log'" in str(e.value)
    with pytest.raises(OptionError, match="compact arbiter") as e:  # exact's option, not compact's
        fairplace.solve(inst, "exact", tie_break=False)
    assert e.value.path == "tie_break"


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 7), st.integers(1, 14))
def test_too_large_agrees_with_the_enumeration(seed, machines, d_max_hi):
    """The explicit route is taken exactly when the AGENT can list the bids."""
    inst = _agents(seed, machines=machines, gpm=2, d_max_hi=d_max_hi + 1, n_apps=2)
    try:
        agents.to_explicit(inst)
        listed = True
    except OptionError:
        listed = False
    assert (dispatch.too_large(inst) is None) == listed


def test_compact_needs_agent_form():
    with pytest.raises(OptionError, match="agent form"):
        fairplace.solve(tiny_auction(1), "compact")


def test_solver_kind_mismatch_names_the_solvers():
    with pytest.raises(UnknownSolver, match="does not solve placement") as e:
        fairplace.solve(tiny_placement(0), "greedy-log")
    assert e.value.path == "solver" and "pal" in str(e.value)


# --- per-solver options -------------------------------------------------------------------------
@pytest.mark.parametrize("solver", sorted(solver_table()))
def test_every_solver_rejects_an_unknown_option_naming_it(solver):
    for kind, entry in solver_table()[solver].items():
        inst = tiny_auction(0) if kind == "auction" else tiny_placement(0)
        with pytest.raises(OptionError) as e:
            fairplace.solve(inst, solver, bogus_option=1)
        assert e.value.path == "bogus_option"
        assert repr(solver) in str(e.value) and "bogus_option" not in entry.options


@pytest.mark.parametrize(
    ("solver", "kind", "option", "value"),
    [
        ("greedy-log", "auction", "rounding", "floor"),  # no PA: nothing to round
        ("relaxation", "auction", "rounding", "floor"),  # no allocation to round
        ("highs", "auction", "backend", "pyomo"),  # the name fixes the back end
        ("pal", "placement", "rounding", "floor"),
        ("exact", "placement", "tie_break", False),  # an auction option
    ],
)
def test_options_of_other_solvers_are_rejected(solver, kind, option, value):
    inst = tiny_auction(0) if kind == "auction" else tiny_placement(0)
    assert option not in solver_table()[solver][kind].options
    with pytest.raises(OptionError, match=f"not an option of solver '{solver}'") as e:
        fairplace.solve(inst, solver, **{option: value})
    assert e.value.path == option


def test_declared_options_are_taken():
    auction, placement = tiny_auction(2, apps=3), tiny_placement(2)
    a = fairplace.solve(auction, "exact", tie_break=False, payments=False, rounding="fractional")
    assert a.payments is None and a.extra["rounding"] == "fractional"
    assert fairplace.solve(auction, "greedy-log", compute_exact=True).gap is not None
    assert fairplace.solve(auction, "relaxation", method="lp").extra["method"] == "lp"
    p = fairplace.solve(placement, "exact", warm_start=False, backend="cvxpy")
    assert p.solver == "cvxpy" and p.status == "optimal"
    assert fairplace.solve(placement, "pal", seed=3, backfill=True).status == "heuristic"


def test_cli_names_the_flag_the_solver_does_not_take(tmp_path, capsys):
    path = tmp_path / "a.json"
    io.save(tiny_auction(0), path)
    assert main(["solve", str(path), "--solver", "greedy-log", "--rounding", "floor"]) == 2
    err = capsys.readouterr().err
    assert "--rounding" in err and "greedy-log" in err and "Traceback" not in err
    # seed is common to every solver (ignored by deterministic ones)
    assert main(["solve", str(path), "--solver", "greedy-log", "--seed", "1", "--json"]) == 0


def test_seed_is_common_and_ignored_by_deterministic_solvers():
    inst = tiny_auction(5, apps=3)
    a, b = fairplace.solve(inst, "greedy-log"), fairplace.solve(inst, "greedy-log", seed=7)
    assert a.allocation == b.allocation and a.objective == b.objective
    assert "seed" not in solver_table()["greedy-log"]["auction"].options


# --- back ends ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class LPOnly:
    """A back end that solves LPs only (HiGHS underneath)."""

    name: str = "lp-only"
    capabilities: Capabilities = Capabilities(mip=False)

    def solve(self, problem, opts=SolveOptions(), start=None):
        return get_backend("highs").solve(problem, opts)


def test_capability_errors_name_the_back_end_and_what_is_missing():
    prog = PFProgram(tiny_auction(4))
    x0 = np.zeros(len(prog.columns))
    for name in ("pyomo", "cvxpy"):
        assert not get_backend(name).capabilities.warm_start
        with pytest.raises(CapabilityError, match=f"'{name}' does not take a warm start") as e:
            backends.run(prog, name, start=x0)
        assert e.value.path == "start"
        with pytest.raises(CapabilityError):  # the back end itself refuses too
            get_backend(name).solve(prog.to_milp(), start=x0)
    with pytest.raises(CapabilityError, match="'lp-only' solves LPs only"):
        backends.run(prog, LPOnly())
    with pytest.raises(CapabilityError, match="LPs only"):  # through fairplace.solve
        fairplace.solve(tiny_auction(4), "exact", backend=LPOnly())
    lp = backends.run(prog.to_milp().relaxed(), LPOnly())  # an LP is fine
    assert lp.status == "optimal"
    r = fairplace.solve(tiny_auction(4), "relaxation", method="lp", backend=LPOnly())
    assert r.objective == pytest.approx(fairplace.solve(tiny_auction(4), "relaxation").objective)


def test_unknown_back_ends_are_named():
    with pytest.raises(UnknownSolver, match="unknown back end 'gurobi'"):
        get_backend("gurobi")
    with pytest.raises(UnknownSolver, match="expected a back-end name"):
        get_backend(object())
    with pytest.raises(UnknownSolver, match=r"pass LPOnly\(\)"):
        get_backend(LPOnly)
    with pytest.raises(UnknownSolver, match="'gurobi'"):
        fairplace.solve(tiny_auction(0), "exact", backend="gurobi")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_back_ends_agree_on_small_programs(seed):
    """Every built-in back end gives the same optimum on a PF MILP (formulation and matrix form),
    its LP relaxation and a placement MILP; the highs back end is the old highs.solve."""
    from fairplace.solvers.backends import highs

    auction, placement = tiny_auction(seed, apps=4), tiny_placement(seed, jobs=3)
    pf, pl = PFProgram(auction), PlacementProgram(placement)
    problems = [pf, pf.to_milp(), pf.to_milp().relaxed(), pl.to_milp()]
    ref = [highs.solve(p if not hasattr(p, "to_milp") else p.to_milp()) for p in problems]
    for name in backends.BACKENDS:
        for p, r in zip(problems, ref, strict=True):
            got = backends.run(p, name)
            assert got.status == r.status == "optimal"
            assert got.objective == pytest.approx(r.objective, abs=1e-6)
    sols = [fairplace.solve(auction, s) for s in ("exact", "pyomo", "cvxpy")]
    best = brute_force_pf(auction)[0][1]
    assert all(s.objective == pytest.approx(best, abs=1e-7) for s in sols)
    assert all(
        s.payments == pytest.approx(sols[0].payments, abs=1e-6) for s in sols
    )  # PA on every back end
