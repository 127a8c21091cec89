"""One validation path: hand-built Python objects given to ``fairplace.solve`` /
``fairplace.simulate`` are checked exactly as their JSON is — the same error class, the same
field (JSON path) and the same message — and every seed and numeric option raises
:class:`OptionError` naming it. The JSON side of each case is edited independently (on
``io.to_dict``'s document), so the two paths are compared, not assumed equal."""

from __future__ import annotations

import copy
import json
import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairplace
from fairplace.core.domain import AgentApp, AgentJob, AuctionInstance
from fairplace.core.errors import DataError, InstanceError, OptionError
from fairplace.instances import io, objects
from fairplace.instances.generators import grid_cluster, random_auction, random_placement


def _auction():
    return random_auction(apps=3, machines=2, gpus_per_machine=2, bids_per_app=3, seed=1)


def _agents():
    cl = grid_cluster(2, 2)
    jobs = (AgentJob(50.0, 1.0),)
    apps = (AgentApp("X", jobs, d_max=2, t_now=5.0), AgentApp("Y", jobs, d_max=1))
    return AuctionInstance(cl, (), agents=apps)


def _error(fn):
    with pytest.raises(DataError) as exc:
        fn()
    return type(exc.value), exc.value.path, exc.value.problem


def _same_error(obj, edit_doc):
    """The object's error from ``fairplace.solve`` equals the one of its edited JSON text."""
    doc = io.to_dict(obj if edit_doc is None else edit_doc[0])
    if edit_doc is not None:
        edit_doc[1](doc)
    text = json.dumps(doc, allow_nan=True)
    from_object = _error(lambda: fairplace.solve(obj))
    from_json = _error(lambda: io.loads(text))
    assert from_object == from_json
    assert from_object[0] is InstanceError and from_object[1].startswith("$")
    return from_object


def _bid(inst, i, b, **kw):
    apps = list(inst.apps)
    bids = list(apps[i].bids)
    bids[b] = replace(bids[b], **kw)
    apps[i] = replace(apps[i], bids=tuple(bids))
    return replace(inst, apps=tuple(apps))


def _set(path, value):
    def edit(doc):
        node = doc
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = value

    return edit


@pytest.mark.parametrize("rho", [0.0, -1.0, math.nan, math.inf, 1e300])
def test_bad_rho_of_a_hand_built_bid_is_the_json_error(rho):
    base = _auction()
    obj = _bid(base, 1, 2, rho=rho)
    _, path, _ = _same_error(obj, (base, _set(("apps", 1, "bids", 2, "rho"), rho)))
    assert path == "$.apps[1].bids[2].rho"


def test_duplicate_app_ids_are_rejected_not_merged():
    base = _auction()
    obj = replace(base, apps=(base.apps[0], replace(base.apps[1], id=base.apps[0].id)))
    doc_base = replace(base, apps=base.apps[:2])
    _, path, problem = _same_error(obj, (doc_base, _set(("apps", 1, "id"), base.apps[0].id)))
    assert path == "$.apps[1].id" and "duplicate" in problem


def test_bid_naming_a_missing_gpu():
    base = _auction()
    obj = _bid(base, 0, 0, gpus=("nowhere",))
    _, path, _ = _same_error(obj, (base, _set(("apps", 0, "bids", 0, "gpus"), ["nowhere"])))
    assert path == "$.apps[0].bids[0].gpus[0]"


@pytest.mark.parametrize("where", ["app", "gpu", "job"])
def test_control_characters_in_ids(where):
    if where == "app":
        base = _auction()
        obj = replace(base, apps=(replace(base.apps[0], id="a\0b"), *base.apps[1:]))
        path = ("apps", 0, "id")
    elif where == "gpu":
        base = random_placement(jobs=2, machines=2, gpus_per_machine=2)
        gpus = (replace(base.cluster.gpus[0], id="g\nx"), *base.cluster.gpus[1:])
        obj = replace(base, cluster=type(base.cluster)(gpus))
        path = ("gpus", 0, "id")
    else:
        base = random_placement(jobs=2, machines=2, gpus_per_machine=2)
        obj = replace(base, jobs=(replace(base.jobs[0], id="j\0"), *base.jobs[1:]))
        path = ("jobs", 0, "id")
    value = {"app": "a\0b", "gpu": "g\nx", "job": "j\0"}[where]
    _, got, problem = _same_error(obj, (base, _set(path, value)))
    assert "control characters" in problem and got.endswith(".id")


def test_perf_curve_without_forecasts():
    base = _agents()
    obj = replace(base, agents=(replace(base.agents[0], stopping="perf-curve"), base.agents[1]))
    _, path, _ = _same_error(obj, (base, _set(("apps", 0, "stopping"), "perf-curve")))
    assert path == "$.apps[0].jobs[0].forecasts"


def test_work_that_underflows_is_rejected_not_a_zero_division():
    base = _agents()
    tiny = (AgentJob(1e-300, 1e-300),)
    obj = replace(base, agents=(replace(base.agents[0], jobs=tiny), base.agents[1]))

    def edit(doc):
        doc["apps"][0]["jobs"][0].update(iters_left=1e-300, t_iter=1e-300)

    _, path, problem = _same_error(obj, (base, edit))
    assert path == "$.apps[0].jobs[0]" and "work" in problem


@pytest.mark.parametrize("gpus", [0, 2.5, 10**7, "2", True])
def test_job_demand_of_a_hand_built_placement(gpus):
    base = random_placement(jobs=2, machines=2, gpus_per_machine=2)
    obj = replace(base, jobs=(replace(base.jobs[0], gpus=gpus), base.jobs[1]))
    _, path, _ = _same_error(obj, (base, _set(("jobs", 0, "gpus"), gpus)))
    assert path == "$.jobs[0].gpus"


def test_wrong_object_types_name_the_field():
    base = _auction()
    obj = replace(base, apps=(base.apps[0], "not an app"))
    assert _error(lambda: fairplace.solve(obj))[:2] == (InstanceError, "$.apps[1]")
    obj = _bid(base, 0, 0, gpus="m0/0")  # a string, not a tuple of ids
    _, path, problem = _error(lambda: fairplace.solve(obj))
    assert path == "$.apps[0].bids[0].gpus" and "array" in problem


HOSTILE = [math.nan, -math.inf, -1.0, 0.0, 1e300, 10**20, "x", None, True, [1.0]]


@settings(max_examples=60, deadline=None)
@given(
    field=st.sampled_from(["rho", "rho_empty", "iters_left", "t_iter", "t_now", "d_max", "pm"]),
    value=st.sampled_from(HOSTILE),
)
def test_hostile_values_in_objects_fail_like_json(field, value):
    """Any hostile value put into an object field either passes both paths or fails both the
    same way (class, JSON path, message)."""
    if field in ("rho", "rho_empty"):
        base = _auction()
        obj = (
            _bid(base, 0, 0, rho=value)
            if field == "rho"
            else replace(base, apps=(replace(base.apps[0], rho_empty=value), *base.apps[1:]))
        )
        path = ("apps", 0, "bids", 0, "rho") if field == "rho" else ("apps", 0, "rho_empty")
    elif field == "pm":
        base = random_placement(jobs=2, machines=2, gpus_per_machine=2)
        g0 = base.cluster.gpus[0]
        gpus = (replace(g0, pm={**g0.pm, "A": value}), *base.cluster.gpus[1:])
        obj = replace(base, cluster=type(base.cluster)(gpus))
        path = ("gpus", 0, "pm", "A")
    else:
        base = _agents()
        a = base.agents[0]
        if field in ("iters_left", "t_iter"):
            a = replace(a, jobs=(replace(a.jobs[0], **{field: value}),))
            path = ("apps", 0, "jobs", 0, field)
        else:
            a = replace(a, **{field: value})
            path = ("apps", 0, field)
        obj = replace(base, agents=(a, base.agents[1]))
    doc = io.to_dict(base)
    _set(path, copy.deepcopy(value))(doc)
    text = json.dumps(doc, allow_nan=True)
    try:
        io.loads(text)
        json_error = None
    except InstanceError as exc:
        json_error = (exc.path, exc.problem)
    try:
        objects.check(obj)
        obj_error = None
    except InstanceError as exc:
        obj_error = (exc.path, exc.problem)
    assert obj_error == json_error


# --- seeds and numeric options --------------------------------------------------------------------


@pytest.mark.parametrize("seed", ["x", -5, 1.5, True, 2**64])
def test_seed_of_solve_is_an_option_error(seed):
    with pytest.raises(OptionError) as exc:
        fairplace.solve(_auction(), seed=seed)
    assert exc.value.path == "seed"
    with pytest.raises(OptionError) as exc:
        fairplace.solve(_auction(), rounding="lottery", seed=seed)
    assert exc.value.path == "seed"


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("time_limit", "x"),
        ("time_limit", -1.0),
        ("time_limit", math.nan),
        ("mip_rel_gap", -0.1),
        ("threads", 0),
        ("random_seed", -1),
        ("mip_max_nodes", 1.5),
        ("rounding", 3),
        ("rounding", "up"),
        ("payments", "yes"),
        ("tie_break", 1),
    ],
)
def test_every_numeric_and_flag_option_of_solve(option, value):
    with pytest.raises(OptionError) as exc:
        fairplace.solve(_auction(), **{option: value})
    assert exc.value.path == option


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("seed", "x"),
        ("seed", -5),
        ("round_length", "x"),
        ("round_length", -1.0),
        ("checkpoint", "x"),
        ("checkpoint", math.inf),
        ("restart", math.nan),
        ("restart", -1.0),
        ("gpus", 2.5),
        ("gpus", 0),
        ("gpus_per_machine", 0),
        ("machines_per_rack", -2),
        ("locality_penalty", "high"),
        ("debug", "yes"),
        ("profile", "nowhere"),
    ],
)
def test_every_numeric_option_of_simulate(option, value):
    with pytest.raises(OptionError) as exc:  # raised before any simulation runs
        fairplace.simulate("workload-1", "fifo", "pal", progress=False, **{option: value})
    assert exc.value.path == option


@pytest.mark.parametrize(
    ("trace", "key", "value"),
    [
        ("synergy", "n_jobs", "abc"),
        ("synergy", "n_jobs", 10**9),
        ("synergy", "jobs_per_hour", -1.0),
        ("themis-1", "n_apps", "abc"),
        ("themis-1", "n_apps", 0),
        ("themis-1", "contention", 3),
    ],
)
def test_trace_options_are_checked_like_a_sweep(trace, key, value):
    with pytest.raises(OptionError) as exc:
        fairplace.simulate(trace, "fifo", "pal", progress=False, trace_options={key: value})
    assert exc.value.path == f"trace_options.{key}"


def test_a_hand_built_cluster_of_simulate_is_checked():
    cl = grid_cluster(1, 4, pm={"A": [1.0, -1.0, 1.0, 1.0]})
    with pytest.raises(OptionError) as exc:
        fairplace.simulate("workload-1", "fifo", "pal", cluster=cl, progress=False)
    assert exc.value.path == "cluster.gpus[1].pm.A"


def test_validate_false_skips_the_check_for_loaded_instances(tmp_path):
    inst = io.load(io.save(_auction(), tmp_path / "a.json"))
    a, b = fairplace.solve(inst), fairplace.solve(inst, validate=False)
    assert a.objective == b.objective and a.allocation == b.allocation
