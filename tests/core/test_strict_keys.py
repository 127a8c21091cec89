"""No silent typo (issue 48, item 1): an unknown key in any object of an instance, in a trace CSV's
header or in a sweep spec is an error naming its path and the nearest known key; the CLI exits 2
with that line. Free-form maps (``meta``, a GPU's ``pm``, ``locality_by_model``) stay open."""

from __future__ import annotations

import contextlib
import copy
import io
import json

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fairplace.cli import main
from fairplace.core.errors import InstanceError, OptionError, TraceError
from fairplace.core.keys import suggestion, unknown_key
from fairplace.instances import io as inst_io
from fairplace.instances.schema import SCHEMAS
from fairplace.instances.traces import load_trace
from fairplace.runs.sweep_spec import load_spec

GPUS = [
    {"id": "m0/0", "machine": "m0", "rack": "r0", "pm": {"A": 1.0}},
    {"id": "m0/1", "machine": "m0", "rack": "r0", "pm": {"A": 1.1}},
]
AUCTION = {
    "kind": "auction",
    "gpus": GPUS,
    "apps": [{"id": "A1", "rho_empty": 5.0, "bids": [{"gpus": ["m0/0"], "rho": 2.0}]}],
}
AGENT = {
    "kind": "auction",
    "gpus": GPUS,
    "apps": [
        {
            "id": "B",
            "jobs": [{"iters_left": 100.0, "t_iter": 1.0}],
            "stopping": "successive-halving",
            "phases": [{"jobs": 1, "iters": 100.0}],
            "t_id": {"variant": "themis"},
        }
    ],
}
PLACEMENT = {
    "kind": "placement",
    "gpus": GPUS,
    "jobs": [{"id": "j1", "gpus": 1, "class": "A"}],
}


def _typo(base: dict, where: list, key: str) -> dict:
    """``base`` with ``key`` (a misspelling) added to the object at ``where``."""
    doc = copy.deepcopy(base)
    node = doc
    for p in where:
        node = node[p]
    node[key] = 1
    return doc


#: (document, JSON path of the unknown key, the key the message must suggest): one per object kind
CASES = [
    (_typo(AUCTION, [], "nmae"), "$.nmae", "name"),
    (_typo(AUCTION, ["gpus", 1], "rakc"), "$.gpus[1].rakc", "rack"),
    (_typo(AUCTION, ["apps", 0], "rho_emtpy"), "$.apps[0].rho_emtpy", "rho_empty"),
    (_typo(AUCTION, ["apps", 0, "bids", 0], "rhoo"), "$.apps[0].bids[0].rhoo", "rho"),
    (_typo(AGENT, ["apps", 0], "d_mx"), "$.apps[0].d_mx", "d_max"),
    (_typo(AGENT, ["apps", 0, "jobs", 0], "t_itr"), "$.apps[0].jobs[0].t_itr", "t_iter"),
    (_typo(AGENT, ["apps", 0, "phases", 0], "iter"), "$.apps[0].phases[0].iter", "iters"),
    (_typo(AGENT, ["apps", 0, "t_id"], "n_avgg"), "$.apps[0].t_id.n_avgg", "n_avg"),
    (_typo(PLACEMENT, [], "locality_penatly"), "$.locality_penatly", "locality_penalty"),
    (_typo(PLACEMENT, ["jobs", 0], "wieght"), "$.jobs[0].wieght", "weight"),
]


def run_cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("doc,path,near", CASES, ids=[c[1] for c in CASES])
def test_a_typo_in_each_object_kind_is_an_instance_error(doc, path, near):
    with pytest.raises(InstanceError) as exc:
        inst_io.from_dict(doc)
    assert exc.value.path == path
    assert f"did you mean {near!r}?" in exc.value.problem


@pytest.mark.parametrize("doc,path,near", CASES[::3], ids=[c[1] for c in CASES[::3]])
def test_the_cli_exits_2_naming_the_key_and_the_suggestion(tmp_path, doc, path, near):
    f = tmp_path / "inst.json"
    f.write_text(json.dumps(doc))
    code, out, err = run_cli(["solve", str(f)])
    assert code == 2 and out == ""
    assert path in err and f"did you mean {near!r}?" in err and "Traceback" not in err
    code, _, err = run_cli(["solve", str(f), "--json"])
    line = json.loads(err.strip().splitlines()[-1])
    assert code == 2 and line["where"] == path and near in line["error"]


def test_a_misspelled_required_key_is_reported_as_the_misspelling():
    doc = copy.deepcopy(AUCTION)
    bid = doc["apps"][0]["bids"][0]
    bid["gpu"] = bid.pop("gpus")
    with pytest.raises(InstanceError, match=r"did you mean 'gpus'\?") as exc:
        inst_io.from_dict(doc)
    assert exc.value.path == "$.apps[0].bids[0].gpu"


def test_free_form_maps_stay_open():
    doc = copy.deepcopy(PLACEMENT)
    doc["meta"] = {"anything": {"nested": [1, 2]}, "rho_emtpy": 3}
    doc["locality_by_model"] = {"bert": 1.5, "any-model": 1.2}
    doc["gpus"][0]["pm"]["B"] = 0.9
    inst = inst_io.from_dict(doc)
    assert inst.meta["rho_emtpy"] == 3 and inst.locality_by_model["any-model"] == 1.2
    with pytest.raises(InstanceError, match="not of type 'object'"):
        inst_io.from_dict(_typo(AUCTION, [], "meta"))  # meta is an object, of any keys


def _objects(schema, where="$"):
    """(path, object schema) of every object with declared properties."""
    if isinstance(schema, dict):
        if "properties" in schema:
            yield where, schema
        for k, v in schema.items():
            yield from _objects(v, f"{where}.{k}")
    elif isinstance(schema, list):
        for v in schema:
            yield from _objects(v, where)


@pytest.mark.parametrize("kind", sorted(SCHEMAS))
def test_published_schemas_close_every_object_but_the_free_form_maps(kind):
    objects = list(_objects(SCHEMAS[kind]))
    assert len(objects) >= 3
    for where, obj in objects:
        assert obj.get("additionalProperties") is False, where
    free = SCHEMAS[kind]["properties"]["meta"]
    assert free["type"] == "object" and "additionalProperties" not in free


def test_saved_instances_round_trip_through_the_closed_schema(tmp_path):
    from fairplace.instances.generators import random_agent_auction

    inst = random_agent_auction(apps=3, machines=2, gpus_per_machine=2, seed=1)
    assert inst_io.load(inst_io.save(inst, tmp_path / "a.json")) == inst


def test_a_misspelled_trace_column_is_an_error(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("job_id,num_gpus,submit_time,duration,model,app_idd\nj,1,0,10,bert,a\n")
    with pytest.raises(TraceError, match=r"did you mean 'app_id'\?") as exc:
        load_trace(f)
    assert "column 'app_idd'" in exc.value.path
    code, _, err = run_cli(
        ["simulate", "--trace", str(f), "--scheduler", "fifo", "--placement", "packed-sticky"]
    )
    assert code == 2 and "did you mean 'app_id'?" in err


def test_known_optional_trace_columns_still_load(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("job_id,num_gpus,submit_time,duration,model,app_id,phase\nj,1,0,10,bert,a,0\n")
    assert list(load_trace(f)["app_id"]) == ["a"]


SWEEP = 'schedulers = ["fifo"]\nplacements = ["pal"]\ntraces = ["workload-1"]\n'


@pytest.mark.parametrize(
    "text,where,near",
    [
        (SWEEP + "seed = [1]\n", "seed", "seeds"),
        (SWEEP + "[fixed]\ngpu = 64\n", "fixed.gpu", "gpus"),
        (SWEEP + "[params]\nlocality_penatly = [1.5]\n", "params.locality_penatly", None),
        (SWEEP + "[[extra]]\nseeds = [1]\nper_rnu = true\n", "extra[0].per_rnu", "per_run"),
    ],
)
def test_a_typo_in_a_sweep_spec_names_the_key(tmp_path, text, where, near):
    f = tmp_path / "s.toml"
    f.write_text(text)
    with pytest.raises(OptionError, match="did you mean") as exc:
        load_spec(f)
    assert exc.value.path == where
    if near is not None:
        assert f"{near!r}" in exc.value.problem
    code, _, err = run_cli(["sweep", str(f), "--validate-only"])
    assert code == 2 and "did you mean" in err


def test_the_suggestion_helper():
    assert suggestion("rho_emtpy", ["id", "rho_empty", "bids"]) == "rho_empty"
    assert suggestion("zzz", ["id", "rho_empty"]) is None
    assert unknown_key("zzz", ["id", "bids"]) == "unknown key 'zzz'; known: id, bids"


FREE = {"meta", "pm", "locality_by_model"}  # free-form maps: any key


def _closed_objects(node, path=()):
    """(path, object) of every closed object of an instance document."""
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            if k not in FREE:
                yield from _closed_objects(v, (*path, k))
    elif isinstance(node, list):
        for k, v in enumerate(node):
            yield from _closed_objects(v, (*path, k))


_KEY = st.text(st.characters(codec="ascii", categories=["L", "N", "P"]), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(base=st.sampled_from([AUCTION, AGENT, PLACEMENT]), pick=st.integers(0, 99), key=_KEY)
def test_any_unknown_key_in_any_closed_object_is_named(base, pick, key):
    doc = copy.deepcopy(base)
    objects = list(_closed_objects(doc))
    path, obj = objects[pick % len(objects)]
    assume(key not in obj and key not in _declared(base["kind"], path))
    obj[key] = 1
    with pytest.raises(InstanceError) as exc:
        inst_io.from_dict(doc)
    assert exc.value.path == inst_io._jpath([*path, key])
    assert f"unknown key {key!r}" in exc.value.problem


def _declared(kind: str, path: tuple) -> set:
    """The keys the schema declares for the object at ``path`` (indices skip ``items``)."""
    node = SCHEMAS[kind]
    for p in path:
        node = node["items"] if isinstance(p, int) else node["properties"][p]
    return set(node.get("properties", {}))


# --- the options a sweep passes on: trace_options, placement_options, scheduler_options -----------
GEN = 'name = "t"\nschedulers = ["las"]\nplacements = ["pal"]\ntraces = ["themis-1"]\n'
OPTION_TYPOS = [
    (GEN + '[fixed]\ntrace_options = { sclae = "small" }\n', "fixed.trace_options.sclae", "scale"),
    (GEN + "[fixed]\nplacement_options = { backfil = true }\n", "fixed.placement_options.backfil",
     "backfill"),
    (GEN + '[params]\n"scheduler_options.starv_factor" = [10]\n',
     "params.scheduler_options.starv_factor", "starve_factor"),
    (GEN + '[[extra]]\ntrace_options = { n_aps = 2 }\n', "extra[0].trace_options.n_aps", "n_apps"),
]  # fmt: skip


@pytest.mark.parametrize("text,where,near", OPTION_TYPOS, ids=[c[1] for c in OPTION_TYPOS])
def test_a_typo_in_a_sweep_option_exits_2_before_any_cell_runs(tmp_path, text, where, near):
    f = tmp_path / "s.toml"
    f.write_text(text)
    with pytest.raises(OptionError) as exc:
        load_spec(f)
    assert exc.value.path == where
    assert f"did you mean {near!r}?" in exc.value.problem
    out = tmp_path / "res.parquet"
    for flags in (["--validate-only"], ["--out", str(out), "--no-progress"]):  # the run as well
        code, _, err = run_cli(["sweep", str(f), *flags])
        assert code == 2, err
        assert f"{where}: " in err and f"did you mean {near!r}?" in err
    assert not list(tmp_path.glob("res*"))  # nothing ran, nothing journaled


def test_run_sweep_rejects_an_unknown_option_before_calling_simulate(tmp_path):
    from fairplace.runs.sweep import run_sweep

    calls = []
    spec = {
        "schedulers": ["fifo"], "placements": ["pal"], "traces": ["themis-1"],
        "fixed": {"gpus": 16, "trace_options": {"sclae": "small"}},
    }  # fmt: skip
    with pytest.raises(OptionError, match="did you mean 'scale'") as exc:
        run_sweep(spec, tmp_path / "r.csv", progress=False, simulate=lambda **kw: calls.append(kw))
    assert exc.value.path == "fixed.trace_options.sclae" and calls == []


@pytest.mark.parametrize(
    "text,where,problem",
    [  # options that would fail every cell at run time
        (GEN.replace("themis-1", "workload-1") + '[fixed]\ntrace_options = { scale = "small" }\n',
         "fixed.trace_options.scale", "takes no options"),
        (GEN + '[fixed]\n"trace_options.scale" = "small"\n', "fixed.trace_options.scale",
         "set the generator argument itself (fixed.scale)"),
        (GEN + '[fixed]\nplacement_options = { ties = "bogus" }\n',
         "fixed.placement_options.ties", "expected one of"),
    ],
)  # fmt: skip
def test_options_no_cell_could_run_are_named(tmp_path, text, where, problem):
    f = tmp_path / "s.toml"
    f.write_text(text)
    with pytest.raises(OptionError) as exc:
        load_spec(f)
    assert exc.value.path == where and problem in exc.value.problem


def test_known_sweep_options_still_validate(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(
        GEN + '[params]\n"scheduler_options.starve_factor" = [5, 10]\n'
        '[fixed]\ngpus = 16\ntrace_options = { scale = "small", n_apps = 2 }\n'
        "placement_options = { backfill = true }\n"
    )
    assert len(load_spec(f)) == 2
    code, out, err = run_cli(["sweep", str(f), "--validate-only"])
    assert code == 0, err


def test_simulate_names_a_misspelled_trace_option_with_the_suggestion():
    import fairplace

    with pytest.raises(OptionError) as exc:
        fairplace.simulate("themis-1", "fifo", "pal", trace_options={"sclae": "small"})
    assert exc.value.path == "trace_options.sclae"
    assert "did you mean 'scale'?" in exc.value.problem
    with pytest.raises(OptionError, match="known: "):  # nothing close: the known ones
        fairplace.simulate("themis-1", "fifo", "pal", trace_options={"zzz": 1})
