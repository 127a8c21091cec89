"""Mechanism audits and Theorem 3.1 on THEMIS Fig. 5: DRF / LAS violate SI, PE, EF; the PA auction does not."""

from __future__ import annotations

import itertools

import pytest
from conftest import tiny_auction
from hypothesis import given, settings
from hypothesis import strategies as st

import fairplace
from fairplace.analysis.audits import (
    allocation_rhos,
    audit,
    envy_check,
    pareto_check,
    rho_of,
    sharing_incentive,
)
from fairplace.instances import io
from fairplace.instances.generators import random_auction
from fairplace.instances.paper import fig5_instance1, fig5_instance2
from fairplace.instances.suites import PAPER_INSTANCES
from fairplace.solvers.baselines import drf_counts, las_counts, place

FIG5 = [n for n in PAPER_INSTANCES if n.startswith("themis-fig5-")]


def _violations(inst, alloc):
    si = sharing_incentive(inst, alloc)
    pe = pareto_check(inst, alloc)
    ef = envy_check(inst, alloc)
    return {"SI": si.n_ok < si.n_apps, "PE": not pe.efficient, "EF": not ef.envy_free}


@pytest.fixture(scope="module")
def pa_solutions():
    return {k: fairplace.solve(PAPER_INSTANCES.make(k)) for k in FIG5}


def test_fig5_instance1_drf_and_las_violate_sharing_incentive():
    inst = fig5_instance1()
    for counts, seq in (drf_counts([4, 4], 8), las_counts([4, 4], 8, attained=[0.0, 0.0])):
        assert counts == [4, 4]
        alloc = place(inst, counts, seq, mode="task")  # tasks interleave: both apps spread
        si = sharing_incentive(inst, alloc)
        assert si.n_ok == 0 and si.violating == ("A1-vgg16", "A2-vgg16")
        assert all(r == pytest.approx(1.6) for r in si.rho.values())
        assert _violations(inst, alloc)[
            "PE"
        ]  # giving each app its own machine is a Pareto improvement


def test_fig5_instance2_drf_and_las_violate_pe_and_ef():
    inst = fig5_instance2()
    for counts, seq in (drf_counts([4, 4], 8), las_counts([4, 4], 8, attained=[5.0, 5.0])):
        alloc = place(inst, counts, seq, mode="gang")  # first fit: A1 takes the 4-GPU machine
        assert alloc["A1-inception"] == ["m0/0", "m0/1", "m0/2", "m0/3"]
        ef = envy_check(inst, alloc)
        assert [(i, j) for i, j, *_ in ef.pairs] == [("A2-vgg16", "A1-inception")]
        pe = pareto_check(inst, alloc)
        assert not pe.efficient and pe.method == "exact"
        better = allocation_rhos(inst, pe.witness)
        now = allocation_rhos(inst, alloc)
        assert all(better[a] <= now[a] for a in now) and any(better[a] < now[a] for a in now)
        assert sharing_incentive(inst, alloc).violating == ("A2-vgg16",)


def test_every_placement_unaware_equal_split_is_not_always_fair():
    """DRF/LAS fix only the counts (4 and 4); over all 70 placements with those counts, some violate
    each property on the instance the paper uses for it, while the PA auction's allocation is one of the
    placements that satisfies all three."""
    for build, props in ((fig5_instance1, ("SI", "PE")), (fig5_instance2, ("SI", "PE", "EF"))):
        inst = build()
        ids = [g.id for g in inst.cluster.gpus]
        seen = {p: False for p in ("SI", "PE", "EF")}
        for part in itertools.combinations(ids, 4):
            alloc = {
                inst.apps[0].id: list(part),
                inst.apps[1].id: [g for g in ids if g not in part],
            }
            for p, bad in _violations(inst, alloc).items():
                seen[p] |= bad
        assert all(seen[p] for p in props)


@pytest.mark.parametrize("name", FIG5)
def test_pa_auction_satisfies_si_pe_ef_on_fig5(pa_solutions, name):
    inst = PAPER_INSTANCES.make(name)
    sol = pa_solutions[name]
    assert sol.status == "optimal"
    assert all(c == pytest.approx(1.0) for c in sol.payments.values())
    assert not any(_violations(inst, sol.allocation).values())
    row = audit(inst, sol)
    assert row["n_sharing_incentive"] == 2 and row["pareto_efficient"] and row["envy_free"]
    if name.endswith("instance2"):
        assert sol.allocation["A2-vgg16"] == ["m0/0", "m0/1", "m0/2", "m0/3"]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), apps=st.integers(1, 4))
def test_pf_allocation_is_pareto_efficient(seed, apps):
    inst = tiny_auction(seed, apps=apps, null_fraction=0.0)
    sol = fairplace.solve(inst, payments=False)
    rep = pareto_check(inst, sol, which="pf")
    assert rep.efficient and rep.method == "exact"


def test_sampled_pareto_check_finds_a_witness_on_a_large_instance():
    inst = random_auction(apps=12, machines=8, gpus_per_machine=4, bids_per_app=12, seed=4)
    greedy = fairplace.solve(inst, solver="greedy-rho")
    exact = fairplace.solve(inst, payments=False)
    sampled = pareto_check(inst, exact, which="pf", exact_limit=10, samples=300)
    assert sampled.method == "sampled" and sampled.efficient  # PF is Pareto efficient: no witness
    rep = pareto_check(inst, greedy, which="final", exact_limit=10, samples=300)
    if not rep.efficient:  # a witness is a checked proof
        a, b = allocation_rhos(inst, greedy), allocation_rhos(inst, rep.witness)
        assert all(b[k] <= a[k] + 1e-9 for k in a) and any(b[k] < a[k] for k in a)


def test_envy_is_reported_when_indivisible_rounding_creates_it():
    # A gets one GPU under floor rounding while B holds a bundle A values more: envy must be reported
    d = {
        "kind": "auction",
        "gpus": [{"id": f"g{k}", "machine": "m"} for k in range(3)],
        "apps": [
            {
                "id": "A",
                "rho_empty": 4.0,
                "bids": [{"gpus": ["g0"], "rho": 3.0}, {"gpus": ["g1", "g2"], "rho": 1.0}],
            },
            {"id": "B", "rho_empty": 4.0, "bids": [{"gpus": ["g1", "g2"], "rho": 1.5}]},
        ],
    }
    inst = io.from_dict(d)
    rep = envy_check(inst, {"A": ["g0"], "B": ["g1", "g2"]})
    assert not rep.envy_free and rep.pairs == (("A", "B", 3.0, 1.0),)
    assert rho_of(inst.apps[0], ["g0", "g1", "g2"]) == 1.0  # free disposal
    assert rho_of(inst.apps[1], []) == 4.0
