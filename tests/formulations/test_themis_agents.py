"""THEMIS AGENT: offers -> bids, symmetry-reduced bundles, agent-form instance JSON."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

import fairplace
from fairplace.core.domain import AgentApp, AgentJob, AuctionInstance
from fairplace.core.errors import InstanceError, OptionError
from fairplace.formulations.agents import (
    count_bundles,
    gpus_by_machine,
    groups,
    rho_table,
    subset_bids,
    to_explicit,
)
from fairplace.instances import io
from fairplace.instances.generators import grid_cluster

CL = grid_cluster(3, 2, 2, pm={"A": np.array([1.0, 1.2, 1.0, 1.0, 1.2, 1.2])})
APP = AgentApp("A", (AgentJob(100, 1.0),), t_now=20, d_max=4, cls="A", t_id={"n_avg": 2})


def test_subset_bids_are_all_useful_subsets():
    bids, table = subset_bids(APP, CL, range(6))
    assert len(bids) == sum(math.comb(6, k) for k in range(1, 5))  # n_max = d_max = 4
    b = next(b for b in bids if b.gpus == ("m0/0", "m1/0"))
    # headline T_id: W / min(R_C / N, d_max) with R_C = |CL|, N = 2
    assert b.rho == pytest.approx((20 + 100 * 1.1 / 2) / (100 / min(len(CL) / 2, 4)))


def test_count_bundles_match_subsets():
    bids, _ = subset_bids(APP, CL, range(6))
    cb, grps, _ = count_bundles(APP, CL, range(6))
    assert len(cb) < len(bids)
    best_sub = min(b.rho for b in bids)
    assert min(c.rho for c in cb) == pytest.approx(best_sub)
    # every count bundle's rho equals the rho of its concrete representative subset
    rho_of = {frozenset(b.gpus): b.rho for b in bids}
    for c in cb:
        assert rho_of[frozenset(c.gpus(grps, CL))] == pytest.approx(c.rho)


def test_table_never_exponential():
    big = grid_cluster(64, 4, 16)
    app = AgentApp("B", (AgentJob(1000, 1.0),), d_max=256)
    t = rho_table(app, big, range(256))
    assert t.rho.shape == (257, 3, 1)
    with pytest.raises(OptionError):
        subset_bids(app, big, range(256))


def _doc():
    return {
        "kind": "auction",
        "gpus": [
            {"id": g.id, "machine": g.machine, "rack": g.rack, "pm": dict(g.pm)} for g in CL.gpus
        ],
        "apps": [
            {"id": "X", "rho_empty": 9.0, "bids": [{"gpus": ["m0/0"], "rho": 3.0}]},
            {
                "id": "H",
                "jobs": [{"iters_left": 8, "t_iter": t} for t in (80, 100, 100, 120)],
                "stopping": "successive-halving",
                "phases": [
                    {"jobs": 4, "iters": 8},
                    {"jobs": 2, "iters": 16},
                    {"jobs": 1, "iters": 36},
                ],
                "d_max": 8,
                "t_id": {"variant": "themis", "n_avg": 4, "cluster_gpus": 16},
                "class": "A",
            },
        ],
    }


def test_agent_form_roundtrip_and_solve():
    inst = io.from_dict(_doc())
    assert [a.id for a in inst.apps] == ["X"] and [a.id for a in inst.agents] == ["H"]
    again = io.from_dict(json.loads(json.dumps(io.to_dict(inst))))
    assert again.agents == inst.agents
    ex = to_explicit(inst)
    assert {a.id for a in ex.apps} == {"X", "H"} and not ex.agents
    sol = fairplace.solve(inst)
    assert sol.status == "optimal" and "H" in sol.pf_allocation


@pytest.mark.parametrize(
    "patch, path",
    [
        ({"d_max": 0}, "$.apps[1].d_max"),
        ({"locality": [1.3, 1.1, 1.0]}, "$.apps[1].locality"),
        ({"class": "Z"}, "$.apps[1].class"),
        ({"held": ["nope"]}, "$.apps[1].held[0]"),
        ({"current_phase": 5}, "$.apps[1].current_phase"),
        ({"t_id": {"variant": "x"}}, "$.apps[1].t_id.variant"),
        ({"bids": []}, "$.apps[1]"),
    ],
)
def test_bad_agent_input_names_the_path(patch, path):
    doc = _doc()
    doc["apps"][1].update(patch)
    with pytest.raises(InstanceError) as e:
        io.from_dict(doc)
    assert e.value.path == path


def test_bad_job_field_path():
    doc = _doc()
    doc["apps"][1]["jobs"][2]["t_iter"] = -1
    with pytest.raises(InstanceError) as e:
        io.from_dict(doc)
    assert e.value.path == "$.apps[1].jobs[2].t_iter"


def test_cli_schema_shows_agent_form():
    out = subprocess.run(
        [sys.executable, "-m", "fairplace.cli", "schema", "auction"], capture_output=True, text=True
    )
    props = json.loads(out.stdout)["properties"]["apps"]["items"]["properties"]
    assert {"jobs", "t_start", "t_now", "d_max", "t_id", "phases"} <= set(props)


def test_large_agent_offer_uses_compact():
    big = grid_cluster(8, 4, 4)
    agents = tuple(
        AgentApp(f"A{k}", (AgentJob(100, 1.0),), d_max=8, t_id={"n_avg": 2}, rho_empty=50.0)
        for k in range(2)
    )
    sol = fairplace.solve(AuctionInstance(big, (), agents=agents))
    assert sol.solver == "compact" and sum(map(len, sol.pf_allocation.values())) == 16


def test_agent_jobs_built_in_bulk_equal_the_constructor():
    """``AgentJob.many`` (the simulator's fast path) gives the same jobs as ``AgentJob(r, x)``:
    equal, with the same hash, fields and defaults, and still frozen."""
    left, t_iter = [3.0, 0.5, 1e6], [2.0, 0.25, 7.0]
    bulk = AgentJob.many(left, t_iter)
    one = tuple(AgentJob(r, x) for r, x in zip(left, t_iter, strict=True))
    assert bulk == one and [hash(j) for j in bulk] == [hash(j) for j in one]
    assert [(j.iters_left, j.t_iter, j.locality_sensitivity, j.forecasts) for j in bulk] == [
        (3.0, 2.0, 1.0, ()), (0.5, 0.25, 1.0, ()), (1e6, 7.0, 1.0, ())
    ]  # fmt: skip
    assert bulk[0].work == 6.0 and repr(bulk[0]) == repr(one[0])
    with pytest.raises(AttributeError):
        bulk[0].iters_left = 1.0  # type: ignore[misc]
    assert AgentJob.many([], []) == ()


@pytest.mark.parametrize("seed", range(4))
def test_gpus_by_machine_groups_the_offer_by_machine_with_its_rack(seed):
    """m -> the offered GPUs of machine m (ascending), m -> its rack, machines ascending; a
    one-type cluster's groups are these, one per machine."""
    cl = grid_cluster(6, 4, machines_per_rack=2)
    rng = np.random.default_rng(seed)
    offer = rng.permutation(len(cl))[: rng.integers(1, len(cl) + 1)]
    on, rack = gpus_by_machine(cl, offer)
    mi, ri = cl.machine_index, cl.rack_index
    expected = {
        m: tuple(sorted(int(g) for g in offer if mi[g] == m)) for m in sorted(set(mi[offer]))
    }
    assert on == expected and list(on) == list(rack) == sorted(expected)
    assert rack == {m: int(ri[on[m][0]]) for m in on}
    grps = groups(cl, offer, [None])
    assert [(q.machine, q.rack, q.gpus) for q in grps] == [(m, rack[m], on[m]) for m in on]
