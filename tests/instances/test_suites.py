"""Suites: stored optima agree with brute force and the exact solver; generators are deterministic."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairplace
from fairplace import cli
from fairplace.core.errors import OptionError
from fairplace.instances import generators, io, suites
from fairplace.solvers.brute_force import brute_force, brute_force_pf, brute_force_placement


def test_small_suite_stored_optima_match_brute_force_and_exact():
    items = suites.load_suite("small")
    assert len(items) == 24
    kinds = {inst.kind for inst in items.values()}
    assert kinds == {"auction", "placement"}
    for name, inst in items.items():
        opt = suites.stored_optimum(inst)
        assert opt == pytest.approx(brute_force(inst)["objective"], abs=1e-9), name
        sol = fairplace.solve(inst, "exact")  # presolve on (the stored check ran with it off)
        assert sol.status == "optimal"
        assert sol.objective == pytest.approx(opt, abs=1e-6), name
        assert inst.meta["seed"] is not None and inst.meta["generator"]


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    apps=st.integers(1, 4),
    null=st.booleans(),
)
def test_auction_oracle_agrees_with_exact(seed, apps, null):
    inst = generators.random_auction(
        apps=apps,
        machines=2,
        gpus_per_machine=2,
        bids_per_app=3,
        seed=seed,
        rho_empty="null" if null else "finite",
    )
    (served, obj), _ = brute_force_pf(inst)
    sol = fairplace.solve(inst, "exact")
    assert sol.objective == pytest.approx(obj, abs=1e-6)
    assert len(sol.extra["unserved_unbounded"]) == (apps - served if null else 0)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), jobs=st.integers(1, 3))
def test_placement_oracle_agrees_with_exact(seed, jobs):
    inst = generators.random_placement(
        jobs=jobs, machines=2, gpus_per_machine=2, max_demand=3, seed=seed
    )
    placed, obj = brute_force_placement(inst)
    sol = fairplace.solve(inst, "exact")
    assert sol.extra["placed"] == placed
    assert sol.objective == pytest.approx(obj, abs=1e-6)


@pytest.mark.parametrize("name", ["medium", pytest.param("large", marks=pytest.mark.slow)])
def test_generated_suites_are_deterministic_and_record_parameters(name):
    a, b = suites.suite_items(name), suites.suite_items(name)
    assert a == b
    names = [n for n, _ in a]
    assert len(set(names)) == len(names)
    kinds = {n.split("-")[0] for n in names}
    assert kinds == {"auction", "agents", "placement"}  # explicit, agent-form, placements
    for _, doc in a:
        meta = doc["meta"]
        assert {"generator", "seed", "machines", "gpus_per_machine"} <= set(meta)
        assert io.to_dict(io.from_dict(doc)) == doc
        if doc["meta"]["generator"] == "random_agent_auction":
            assert doc["meta"]["form"].startswith("agent") and "demands" in doc["meta"]


def test_summary_features():
    inst = generators.random_auction(apps=3, machines=2, gpus_per_machine=2, seed=1)
    f = suites.summary(inst)
    assert f["apps"] == 3 and f["gpus"] == 4 and f["machines"] == 2 and f["seed"] == 1
    assert f["contention"] == sum(max(len(b.gpus) for b in a.bids) for a in inst.apps) / 4


def test_paper_suite_holds_the_worked_examples():
    paper = suites.load_suite("paper")
    assert {
        "themis-fig5-instance1",
        "themis-fig5-instance2",
        "themis-4.3.3",
        "pal-lxv-example",
        "pal-frontera-32gpu",
    } <= set(paper)
    # THEMIS Table 3: rho(2) = 2, rho(8) = 0.5, rho(16) = 0.34 for the §4.3.3 app
    rho = {len(b.gpus): b.rho for b in paper["themis-4.3.3"].apps[0].bids}
    assert rho[2] == pytest.approx(2.0) and rho[8] == pytest.approx(0.5)
    assert rho[16] == pytest.approx(0.34, abs=0.005)
    # PAL L x V example: spread over the 0.89 / 0.94 GPUs (1.5 x 0.94) beats packing with a 2.55 GPU
    sol = fairplace.solve(paper["pal-lxv-example"], "exact")
    assert sol.objective == pytest.approx(1.41)
    assert {g.split("/")[0] for g in sol.allocation["j1"]} == {"m0", "m1"}
    frontera = paper["pal-frontera-32gpu"]
    assert len(frontera.cluster) == 32 and len(frontera.cluster.machines) == 8


def test_unknown_suite_is_a_typed_error():
    with pytest.raises(OptionError, match="unknown suite"):
        suites.suite_items("nope")


def test_instances_cli(tmp_path, capsys):
    assert cli.main(["instances", "list"]) == 0
    listing = capsys.readouterr().out
    for name in ("paper", "small", "medium", "large"):
        assert name in listing
    assert cli.main(["instances", "show", "small", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 24 and all(r["optimum"] is not None for r in rows)
    assert cli.main(["instances", "show", "small/small-03-auction"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "small-03-auction"
    assert cli.main(["instances", "generate", "medium", "--out", str(tmp_path)]) == 0
    files = sorted(tmp_path.glob("*.json"))
    assert len(files) == len(suites.suite_items("medium"))
    assert all(io.load(p).meta["seed"] is not None for p in files)
    assert cli.main(["instances", "show", "small/nope"]) == 2
    assert "nope" in capsys.readouterr().err
