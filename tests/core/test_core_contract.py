"""The instance contract: load / validate / save, JSON Schema, and bad input -> exit 2 with the JSON path."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

import fairplace
from fairplace.core.errors import DataError, InstanceError, OptionError, TraceError, UnknownSolver
from fairplace.instances import io
from fairplace.instances.generators import random_auction, random_placement
from fairplace.instances.schema import schema

AUCTION = {
    "kind": "auction",
    "gpus": [
        {"id": "m0/0", "machine": "m0", "rack": "r0"},
        {"id": "m0/1", "machine": "m0", "rack": "r0"},
    ],
    "apps": [{"id": "A1", "rho_empty": 5.0, "bids": [{"gpus": ["m0/0", "m0/1"], "rho": 2.0}]}],
}
PLACEMENT = {
    "kind": "placement",
    "locality_penalty": 1.7,
    "gpus": [
        {"id": "m0/0", "machine": "m0", "rack": "r0", "pm": {"A": 0.97, "B": 1.01}},
        {"id": "m0/1", "machine": "m0", "rack": "r0", "pm": {"A": 1.2, "B": 1.0}},
    ],
    "jobs": [{"id": "j1", "gpus": 2, "class": "A"}],
}


def _cli(*args, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "fairplace.cli", *args], capture_output=True, text=True, input=stdin
    )


def test_roundtrip(tmp_path):
    for inst in (
        random_auction(apps=3, machines=2, seed=1),
        random_placement(jobs=3, machines=2, seed=1),
    ):
        p = io.save(inst, tmp_path / "i.json")
        again = io.load(p)
        assert io.to_dict(again) == io.to_dict(inst)


def _mutate(base, fn):
    doc = copy.deepcopy(base)
    fn(doc)
    return doc


BAD = [
    (
        "unknown gpu in bid",
        AUCTION,
        lambda d: d["apps"][0]["bids"][0]["gpus"].append("zz"),
        "$.apps[0].bids[0].gpus[2]",
        "unknown GPU id",
    ),
    (
        "duplicate gpu id",
        AUCTION,
        lambda d: d["gpus"].append({"id": "m0/0", "machine": "m1"}),
        "$.gpus[2].id",
        "duplicate GPU id",
    ),
    (
        "duplicate app id",
        AUCTION,
        lambda d: d["apps"].append(copy.deepcopy(d["apps"][0])),
        "$.apps[1].id",
        "duplicate app id",
    ),
    (
        "rho zero",
        AUCTION,
        lambda d: d["apps"][0]["bids"][0].update(rho=0),
        "$.apps[0].bids[0].rho",
        "must be > 0",
    ),
    (
        "rho negative",
        AUCTION,
        lambda d: d["apps"][0]["bids"][0].update(rho=-1.5),
        "$.apps[0].bids[0].rho",
        "must be > 0",
    ),
    (
        "rho infinite",
        AUCTION,
        lambda d: d["apps"][0]["bids"][0].update(rho=1e999),
        "$.apps[0].bids[0].rho",
        "finite",
    ),
    (
        "rho_empty zero",
        AUCTION,
        lambda d: d["apps"][0].update(rho_empty=0),
        "$.apps[0].rho_empty",
        "must be > 0",
    ),
    (
        "rho wrong type",
        AUCTION,
        lambda d: d["apps"][0]["bids"][0].update(rho="2"),
        "$.apps[0].bids[0].rho",
        "not of type",
    ),
    (
        "gpus wrong type",
        AUCTION,
        lambda d: d["apps"][0]["bids"][0].update(gpus="m0/0"),
        "$.apps[0].bids[0].gpus",
        "not of type",
    ),
    ("missing apps", AUCTION, lambda d: d.pop("apps"), "$", "'apps' is a required property"),
    ("bad kind", AUCTION, lambda d: d.update(kind="auctions"), "$.kind", "expected one of"),
    (
        "gpu twice in bundle",
        AUCTION,
        lambda d: d["apps"][0]["bids"][0]["gpus"].append("m0/0"),
        "$.apps[0].bids[0].gpus",
        "twice",
    ),
    (
        "job too big",
        PLACEMENT,
        lambda d: d["jobs"][0].update(gpus=3),
        "$.jobs[0].gpus",
        "cluster has 2",
    ),
    (
        "missing pm class",
        PLACEMENT,
        lambda d: d["jobs"][0].update({"class": "C"}),
        "$.jobs[0].class",
        "no PM-score for class 'C'",
    ),
    (
        "duplicate job id",
        PLACEMENT,
        lambda d: d["jobs"].append({"id": "j1", "gpus": 1}),
        "$.jobs[1].id",
        "duplicate job id",
    ),
    (
        "job gpus not int",
        PLACEMENT,
        lambda d: d["jobs"][0].update(gpus=1.5),
        "$.jobs[0].gpus",
        "not of type 'integer'",
    ),
    (
        "pm negative",
        PLACEMENT,
        lambda d: d["gpus"][0]["pm"].update(A=-1),
        "$.gpus[0].pm.A",
        "must be > 0",
    ),
    (
        "penalty below one",
        PLACEMENT,
        lambda d: d.update(locality_penalty=0.5),
        "$.locality_penalty",
        "less than the minimum",
    ),
]


@pytest.mark.parametrize("name,base,mutate,path,message", BAD, ids=[b[0] for b in BAD])
def test_bad_input_raises_instance_error(name, base, mutate, path, message):
    with pytest.raises(InstanceError) as exc:
        io.from_dict(_mutate(base, mutate))
    assert exc.value.path == path
    assert message in exc.value.problem


@pytest.mark.parametrize("name,base,mutate,path,message", BAD, ids=[b[0] for b in BAD])
def test_bad_input_cli_exits_2_with_one_line(tmp_path, name, base, mutate, path, message):
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(_mutate(base, mutate)))
    r = _cli("solve", str(f), "--json")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and path in lines[0] and message in lines[0]
    assert "Traceback" not in r.stderr and r.stdout == ""


@pytest.mark.parametrize(
    "text,problem",
    [
        ('{"kind": "auction", "gpus": [', "malformed JSON"),
        (
            '{"kind": "auction", "gpus": [{"id": "a", "machine": "m"}], "apps": [{"id": "x", "bids": [{"gpus": ["a"], "rho": NaN}]}]}',
            "$.apps[0].bids[0].rho: must be finite",
        ),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_malformed_json_cli(tmp_path, text, problem):
    f = tmp_path / "bad.json"
    f.write_text(text)
    r = _cli("solve", str(f))
    assert r.returncode == 2 and problem in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
def test_cli_bad_options_exit_2(tmp_path):
    f = tmp_path / "ok.json"
    f.write_text(json.dumps(AUCTION))
    for args, needle in (
        (["--solver", "nope"], "unknown solver 'nope'"),
        (["--time-limit", "-1"], "--time-limit: must be a number > 0"),  # its spec's check
        (["--time-limit", "abc"], "--time-limit: must be a number > 0"),
        (["--rounding", "ceil"], "--rounding: expected one of"),
    ):
        r = _cli("solve", str(f), *args)
        assert r.returncode == 2, (args, r.stderr)
        assert needle in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = _cli("solve", str(tmp_path / "missing.json"))
    assert r.returncode == 2 and "file not found" in r.stderr


@pytest.mark.slow
def test_cli_json_contract(tmp_path):
    fa, fp = tmp_path / "a.json", tmp_path / "p.json"
    fa.write_text(json.dumps(AUCTION))
    fp.write_text(json.dumps(PLACEMENT))
    a = json.loads(_cli("solve", str(fa), "--json").stdout)
    for key in (
        "status",
        "solver",
        "seconds",
        "allocation",
        "objective",
        "pf_allocation",
        "payments",
        "leftover",
    ):
        assert key in a
    assert a["status"] == "optimal" and a["solver"] == "exact"
    assert a["pf_allocation"] == {"A1": ["m0/0", "m0/1"]}
    p = json.loads(_cli("solve", str(fp), "--json").stdout)
    for key in ("status", "solver", "seconds", "allocation", "objective", "slowdown"):
        assert key in p
    assert p["slowdown"]["j1"] == pytest.approx(1.2) and p["objective"] == pytest.approx(1.2)


def test_schema_command_and_published_schema_accepts_contract_examples():
    import jsonschema

    for kind, doc in (("auction", AUCTION), ("placement", PLACEMENT)):
        r = _cli("schema", kind)
        assert r.returncode == 0
        published = json.loads(r.stdout)
        assert published == schema(kind)
        jsonschema.validate(doc, published)


def test_solution_views():
    sol = fairplace.solve(AUCTION)
    assert "A1" in repr(sol) and "optimal" in repr(sol)
    assert "<table" in sol._repr_html_()
    assert list(sol.to_frame()["app"]) == ["A1"]
    assert json.loads(json.dumps(sol.to_dict()))["payments"] == {"A1": 1.0}


def test_unknown_solver_option_is_an_option_error():
    from fairplace.core.errors import OptionError

    with pytest.raises(OptionError) as exc:
        fairplace.solve(AUCTION, bogus=1)
    assert exc.value.path == "bogus"


@pytest.mark.parametrize("cls", [DataError, InstanceError, TraceError, OptionError, UnknownSolver])
def test_errors_survive_pickling(cls):
    # errors cross process and Dask-worker boundaries (batch, parallel sweeps)
    import pickle

    err = pickle.loads(pickle.dumps(cls("$.apps[0].rho", "must be positive")))
    assert type(err) is cls and err.path == "$.apps[0].rho" and err.problem == "must be positive"
    assert str(err) == "$.apps[0].rho: must be positive"
