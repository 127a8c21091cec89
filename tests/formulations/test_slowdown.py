"""One slowdown S = L(spread) * max V (fairplace.core.domain.slowdown): the vectorised form equals the
scalar form, and the joint-placement formulation's per-job S uses it."""

from __future__ import annotations

import numpy as np
from conftest import tiny_placement
from hypothesis import given, settings
from hypothesis import strategies as st

from fairplace.core.domain import slowdown, spread
from fairplace.formulations.placement import slowdowns


@settings(max_examples=50, deadline=None)
@given(
    st.integers(0, 4).flatmap(
        lambda k: st.lists(
            st.tuples(
                st.floats(1.0, 3.0),
                st.floats(1.0, 3.0),
                st.integers(0, 2),
                st.lists(st.floats(0.5, 2.0), min_size=k, max_size=k),
            ),
            min_size=1,
            max_size=8,
        )
    )
)
def test_slowdown_vectorised_equals_one_bundle_at_a_time(rows):
    """(n,)-array form == scalar form row by row, per-row and shared locality; empty bundle max V = 1."""
    loc = np.array([(1.0, a, b) for a, b, _, _ in rows])
    lev = np.array([s for _, _, s, _ in rows])
    V = np.array([v for *_, v in rows], dtype=float).reshape(len(rows), -1)
    one = [slowdown(tuple(loc[k]), int(lev[k]), V[k]) for k in range(len(rows))]
    np.testing.assert_array_equal(slowdown(loc, lev, V), one)
    shared = [slowdown(tuple(loc[0]), int(lev[k]), V[k]) for k in range(len(rows))]
    np.testing.assert_array_equal(slowdown(loc[0], lev, V), shared)
    expected = [loc[k][lev[k]] * (max(V[k]) if V.shape[1] else 1.0) for k in range(len(rows))]
    np.testing.assert_array_equal(one, expected)


def test_placement_slowdowns_are_L_of_spread_times_max_V():
    inst = tiny_placement(3, jobs=3, machines=2, gpm=2, penalty=1.7)
    cl = inst.cluster
    alloc = {"j0": (cl.gpus[0].id,), "j1": (cl.gpus[1].id, cl.gpus[2].id)}  # j1 spans two machines
    S = slowdowns(inst, alloc)
    assert set(S) == {"j0", "j1"}
    for jid, ids in alloc.items():
        job = next(j for j in inst.jobs if j.id == jid)
        V = cl.pm_vector(job.cls)[cl.indices(ids)]
        L = 1.0 if len({cl.gpus[cl.index[g]].machine for g in ids}) == 1 else 1.7
        assert S[jid] == L * V.max()


MODELS = ["bert", "BERT", "resnet50", "ResNet50", "vgg19", None]


@settings(max_examples=100, deadline=None)
@given(
    table=st.dictionaries(st.sampled_from(MODELS[:-1]), st.floats(1.0, 5.0), max_size=3),
    default=st.floats(1.0, 5.0),
    model=st.sampled_from(MODELS),
)
def test_one_locality_lookup_for_instances_policies_and_the_simulator(table, default, model):
    """L_across of a job is the same number wherever it is asked: a placement instance, a policy
    (whose compiled kernel asks the policy) and the simulator's workload; the table first (the name
    as written, else lower-cased), then the constant."""
    import pandas as pd

    from fairplace.core.domain import GPU, Cluster, Job, PlacementInstance, locality
    from fairplace.sim.workload import workload_from_trace
    from fairplace.solvers.placement.policies import make_policy

    L = locality(model, table, default)
    want = table.get(model, table.get((model or "").lower(), default)) if model else default
    assert L == want
    job = Job("j", 2, "A", model=model)
    cl = Cluster((GPU("g", "m"),))
    assert PlacementInstance(cl, (job,), default, table).locality(job) == L
    assert make_policy("pal", locality_penalty=default, locality_by_model=table).locality(job) == L
    if model is not None:
        frame = pd.DataFrame(
            {"job_id": ["j"], "num_gpus": [2], "submit_time": [0.0], "duration": [1.0],
             "model": [model], "t_iter": [1.0], "cls": ["A"]}
        )  # fmt: skip
        w = workload_from_trace(frame, None, default, table)
        assert w.l_machine[0] == L and w.l_rack[0] == L


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 8), st.integers(1, 4), st.lists(st.integers(0, 10_000), max_size=80))
def test_spread_is_one_machine_one_rack_or_several(machines_per_rack, per, picks):
    """spread(G) = 0 / 1 / 2 for one machine / one rack / several racks, for bundles of any size
    (small ones take a set-based path, large ones NumPy's)."""
    racks = 3
    G = racks * machines_per_rack * per
    machine = np.arange(G) // per
    rack = machine // machines_per_rack
    idx = np.array([p % G for p in picks], np.int64)
    want = 0 if len(set(machine[idx])) <= 1 else 1 if len(set(rack[idx])) == 1 else 2
    assert spread(machine, rack, idx) == want
