"""Each bad input ("Bad input that gets through or crashes") exits 2 with one line naming
the field (CLI) or raises a DataError subclass naming it (library); contradictions are rejected; a
closed stdout exits quietly."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import subprocess
import sys

import pytest

import fairplace
from fairplace.cli import EXIT_BROKEN_PIPE, main
from fairplace.core.errors import DataError, InstanceError, OptionError
from fairplace.instances.generators import random_auction
from fairplace.instances.schema import SCHEMAS

GPUS = [
    {"id": f"m{m}/{g}", "machine": f"m{m}", "rack": "r0", "pm": {"A": 1.0 + 0.1 * g}}
    for m in range(2)
    for g in range(2)
]
AGENT = {
    "kind": "auction",
    "gpus": GPUS,
    "apps": [
        {"id": "X", "jobs": [{"iters_left": 8, "t_iter": 80}], "t_now": 10, "d_max": 2},
        {
            "id": "Y",
            "jobs": [{"iters_left": 5, "t_iter": 50}, {"iters_left": 5, "t_iter": 60}],
            "stopping": "successive-halving",
            "phases": [{"jobs": 2, "iters": 5}, {"jobs": 1, "iters": 10}],
        },
    ],
}
AUCTION = {
    "kind": "auction",
    "gpus": [{"id": "m0/0", "machine": "m0", "rack": "r0"}, {"id": "m0/1", "machine": "m0"}],
    "apps": [{"id": "A1", "rho_empty": 5.0, "bids": [{"gpus": ["m0/0", "m0/1"], "rho": 2.0}]}],
}
PLACEMENT = {
    "kind": "placement",
    "gpus": GPUS,
    "jobs": [{"id": "j1", "gpus": 2, "class": "A"}],
}


def run_cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def _edit(base, fn):
    doc = copy.deepcopy(base)
    fn(doc)
    return doc


def _text(doc) -> str:
    return json.dumps(doc, allow_nan=True)


INSTANCES = [  # (case, JSON text, field named in the one-line error)
    ("t_start NaN", _text(_edit(AGENT, lambda d: d["apps"][0].update(t_start=float("nan")))),
     "$.apps[0].t_start"),
    ("work_total inf", _text(_edit(AGENT, lambda d: d["apps"][0].update(work_total=float("inf")))),
     "$.apps[0].work_total"),
    ("n_avg inf", _text(_edit(AGENT, lambda d: d["apps"][0].update(t_id={"n_avg": float("inf")}))),
     "$.apps[0].t_id.n_avg"),
    ("phase iters inf",
     _text(_edit(AGENT, lambda d: d["apps"][1]["phases"][1].update(iters=float("inf")))),
     "$.apps[1].phases[1].iters"),
    ("iters_left 0", _text(_edit(AGENT, lambda d: d["apps"][0]["jobs"][0].update(iters_left=0))),
     "$.apps[0].jobs[0].iters_left"),
    ("t_now inf", _text(_edit(AGENT, lambda d: d["apps"][0].update(t_now=float("inf")))),
     "$.apps[0].t_now"),
    ("t_now huge", _text(_edit(AGENT, lambda d: d["apps"][0].update(t_now=1e300))),
     "$.apps[0].t_now"),
    ("locality_by_model inf",
     _text(_edit(PLACEMENT, lambda d: d.update(locality_by_model={"bert": float("inf")}))),
     "$.locality_by_model.bert"),
    ("400-digit integer", _text(AUCTION).replace("5.0", "1" + "0" * 400), "$.apps[0].rho_empty"),
    ("5000-digit integer", _text(AUCTION).replace("5.0", "1" + "0" * 5000), "$"),
    ("job gpus huge", _text(_edit(PLACEMENT, lambda d: d["jobs"][0].update(gpus=4_000_000_000))),
     "$.jobs[0].gpus"),
    ("deeply nested", "[" * 100_000 + "]" * 100_000, "$"),
    ("nested 100 deep", _text(_edit(AUCTION, lambda d: d.update(name=[[[]]] * 1))).replace(
        "[[[]]]", "[" * 100 + "]" * 100), "$.name"),
    ("kind is a list", _text(_edit(AUCTION, lambda d: d.update(kind=[]))), "$.kind"),
    ("GPU held by two apps",
     _text(_edit(AGENT, lambda d: [a.update(held=["m0/0"]) for a in d["apps"]])),
     "$.apps[1].held[0]"),
    ("machine in two racks", _text(_edit(AUCTION, lambda d: d["gpus"][1].update(rack="r1"))),
     "$.gpus[1].rack"),
]  # fmt: skip


@pytest.mark.parametrize("case,text,field", INSTANCES, ids=[c[0] for c in INSTANCES])
def test_bad_instance_exits_2_naming_the_field(tmp_path, case, text, field):
    f = tmp_path / "i.json"
    f.write_text(text)
    code, out, err = run_cli(["solve", str(f)])
    assert code == 2 and out == "", (code, err)
    assert err.count("\n") == 1 and f"error: {field}: " in err, err
    with pytest.raises(InstanceError) as exc:  # the library raises the same error
        fairplace.load(f)
    assert exc.value.path == field


def test_unreadable_files_exit_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff\xfe{}")
    loop = tmp_path / "loop.json"
    os.symlink(tmp_path / "loop2.json", loop)
    os.symlink(loop, tmp_path / "loop2.json")
    for path, needle in (
        (str(tmp_path / ("a" * 300 + ".json")), "File name too long"),
        (str(loop), "symbolic links"),
        (str(tmp_path), "directory"),
        (str(bad), "not UTF-8"),
    ):
        code, _, err = run_cli(["solve", path])
        assert code == 2 and err.count("\n") == 1 and needle in err, err
        assert "$" not in err and f"error: {path[:20]}" in err  # the file, not a JSON path


def _trace(tmp_path, locality):
    f = tmp_path / "t.csv"
    f.write_text(
        "job_id,num_gpus,submit_time,duration,model,locality\n"
        f"a,1,0,100,resnet50,1.5\nb,2,5,100,bert,{locality}\n"
    )
    return str(f)


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["simulate", "--trace", "workload-1", "--seed", "-1"], "--seed"),
        (["simulate", "--trace", "workload-1", "--round", "inf"], "--round"),
        (["simulate", "--trace", "workload-1", "--round", "nan"], "--round"),
        (["simulate", "--trace", "workload-1", "--gpus", "4000000000"], "--gpus"),
        (["simulate", "--trace", "workload-1", "--locality-penalty", "inf"], "--locality-penalty"),
        (["simulate", "--trace", "workload-1", "--restart-cost", "inf"], "--restart-cost"),
        (["solve", "AUCTION", "--seed", "-1"], "--seed"),
        (["batch", "small", "--workers", "100000"], "--workers"),
        (["sweep", "SPEC", "--workers", "100000"], "--workers"),
    ],
)
def test_bad_cli_arguments_exit_2(tmp_path, argv, needle):
    f = tmp_path / "a.json"
    f.write_text(json.dumps(AUCTION))
    s = tmp_path / "s.toml"
    s.write_text('schedulers = ["fifo"]\nplacements = ["pal"]\ntraces = ["workload-1"]\n')
    argv = [str(f) if a == "AUCTION" else str(s) if a == "SPEC" else a for a in argv]
    code, out, err = run_cli([*argv, "--out", str(tmp_path / "o.csv")] if "batch" in argv else argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and needle in err, (code, err)


def test_out_must_not_be_a_file_or_unknown_extension(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    (tmp_path / "adir.parquet").mkdir()
    spec = tmp_path / "s.toml"
    spec.write_text('schedulers = ["fifo"]\nplacements = ["pal"]\ntraces = ["workload-1"]\n')
    for argv, needle in (
        (["simulate", "--trace", "workload-1", "--out", str(afile)], "not a folder"),
        (["simulate", "--trace", "workload-1", "--out", str(afile / "sub")], "not a folder"),
        (["reproduce", "--tiny", "--out", str(afile)], "not a folder"),
        (["instances", "generate", "small", "--out", str(afile)], "not a folder"),
        (["batch", "small", "--out", str(tmp_path / "res.txt")], "unknown extension .txt"),
        (["batch", "small", "--out", str(tmp_path / "adir.parquet")], "is a folder"),
        (["sweep", str(spec), "--out", str(tmp_path / "r.txt")], "unknown extension .txt"),
    ):
        code, _, err = run_cli(argv)
        assert code == 2 and err.count("\n") == 1 and "--out" in err and needle in err, err
    assert afile.read_text() == "x"


def test_trace_locality_below_one_is_rejected(tmp_path):
    code, _, err = run_cli(["simulate", "--trace", _trace(tmp_path, 0.5), "--gpus", "16"])
    assert code == 2 and err.count("\n") == 1 and "row 2 column 'locality'" in err, err


def test_sweep_spec_files_that_are_not_toml_text(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"\xff\xfe name = 1")
    for path, needle in ((tmp_path, "directory"), (bad, "not UTF-8")):
        code, _, err = run_cli(["sweep", str(path), "--validate-only"])
        assert code == 2 and err.count("\n") == 1 and needle in err, err


SWEEP_BASE = 'schedulers = ["fifo"]\nplacements = ["pal"]\ntraces = ["workload-1"]\n'


@pytest.mark.parametrize(
    "text,field",
    [
        (SWEEP_BASE + "seeds = [-1]\n", "seeds"),
        (SWEEP_BASE + '[fixed]\ngpus = "lots"\n', "fixed.gpus"),
        (SWEEP_BASE + "[fixed]\ngpus = 63\n", "fixed.gpus"),
        (SWEEP_BASE + "[params]\nround_length = [300.0, inf]\n", "params.round_length[1]"),
        (SWEEP_BASE + '[params]\nprofile = ["longhorn", "nope"]\n', "params.profile"),
        (SWEEP_BASE.replace("workload-1", "missing.csv"), "traces[0]"),
        ('name = "../../x"\n' + SWEEP_BASE, "name"),
        ('name = "a b"\n' + SWEEP_BASE, "name"),
        (SWEEP_BASE.replace('["workload-1"]', "[[]]"), "traces"),  # found by the fuzz test
    ],
)
def test_sweep_spec_fails_at_validate_only(tmp_path, text, field):
    f = tmp_path / "s.toml"
    f.write_text(text)
    code, out, err = run_cli(["sweep", str(f), "--validate-only"])
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert f"error: {field}: " in err, err


def test_solve_rejects_non_instances_and_bad_options():
    for bad in (None, [], 5, b"{}", 2.5):
        with pytest.raises(OptionError) as exc:
            fairplace.solve(bad)
        assert exc.value.path == "instance"
    inst = random_auction(apps=2, machines=2, seed=1)
    for kw, field in (
        ({"threads": "x"}, "threads"),
        ({"threads": 2.5}, "threads"),
        ({"threads": True}, "threads"),
        ({"mip_rel_gap": float("nan")}, "mip_rel_gap"),
        ({"random_seed": -1}, "random_seed"),
        ({"presolve": "no"}, "presolve"),
        ({"time_limit": float("inf")}, "time_limit"),
    ):
        with pytest.raises(OptionError) as exc:
            fairplace.solve(inst, **kw)
        assert exc.value.path == field
    with pytest.raises(DataError):
        fairplace.simulate(trace="workload-1", seed=-1)
    with pytest.raises(DataError):
        fairplace.simulate(trace="workload-1", gpus=4_000_000_000)


def _numeric_schemas(node, path="$"):
    if isinstance(node, dict):
        t = node.get("type")
        types = t if isinstance(t, list) else [t]
        if "number" in types or "integer" in types:
            yield path, node
        for k, v in node.items():
            if k == "meta":
                continue
            yield from _numeric_schemas(v, f"{path}.{k}")
    elif isinstance(node, list):
        for k, v in enumerate(node):
            yield from _numeric_schemas(v, f"{path}[{k}]")


@pytest.mark.parametrize("kind", sorted(SCHEMAS))
def test_every_numeric_field_of_the_schema_is_bounded(kind):
    fields = list(_numeric_schemas(SCHEMAS[kind]))
    assert len(fields) >= 4
    for path, sch in fields:
        assert "minimum" in sch or "exclusiveMinimum" in sch, path
        assert "maximum" in sch, path


def test_closed_stdout_exits_quietly():
    r, w = os.pipe()
    os.close(r)  # the reader is gone before fairplace writes (like `| head` after its lines)
    p = subprocess.run(
        [sys.executable, "-m", "fairplace.cli", "schema", "auction"],
        stdout=w,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(w)
    assert p.returncode == EXIT_BROKEN_PIPE and p.stderr == ""


def test_broken_pipe_in_process(monkeypatch):
    class Closed(io.StringIO):
        def write(self, s):
            raise BrokenPipeError(32, "Broken pipe")

    err = io.StringIO()
    with contextlib.redirect_stdout(Closed()), contextlib.redirect_stderr(err):
        assert main(["schema", "auction"]) == EXIT_BROKEN_PIPE
    assert err.getvalue() == ""


# --- the remaining crashes, closed stdout, full disk, --json errors ----------------------

UNDERFLOW = _edit(AGENT, lambda d: d["apps"][0]["jobs"][0].update(iters_left=1e-300, t_iter=1e-300))


def _sweep(tmp_path, text: str, name: str) -> str:
    f = tmp_path / f"{name}.toml"
    f.write_text(text)
    return str(f)


HUGE_SWEEP = (
    SWEEP_BASE
    + "[params]\n"
    + "".join(
        f"{k} = [{', '.join(str(1.0 + i / 100) for i in range(100))}]\n"
        for k in ("locality_penalty", "round_length", "checkpoint", "restart")
    )
)  # 10^8 cells


@pytest.mark.parametrize(
    "case",
    ["underflow", "synergy n_jobs", "themis n_apps", "huge generate", "huge sweep", "string list"],
)
def test_issue_21_reproducers_exit_2_naming_the_field(tmp_path, case):
    f = tmp_path / "i.json"
    f.write_text(json.dumps(UNDERFLOW))
    argv, field = {
        "underflow": (["solve", str(f)], "$.apps[0].jobs[0]"),
        "synergy n_jobs": (
            ["simulate", "--trace", "synergy", "--trace-option", "n_jobs=abc"],
            "--trace-option n_jobs",
        ),
        "themis n_apps": (
            ["simulate", "--trace", "themis-1", "--trace-option", "n_apps=abc"],
            "--trace-option n_apps",
        ),
        "huge generate": (
            ["instances", "generate", "--kind", "auction", "--apps", "100000000", "-o",
             str(tmp_path / "x.json")],
            "--apps",
        ),
        "huge sweep": (["sweep", _sweep(tmp_path, HUGE_SWEEP, "huge"), "--validate-only"], "params"),
        "string list": (
            ["sweep", _sweep(tmp_path, SWEEP_BASE.replace('["fifo"]', '"fifo"'), "str"), "--validate-only"],
            "schedulers",
        ),
    }[case]  # fmt: skip
    code, out, err = run_cli(argv)
    assert code == 2 and out == "" and err.count("\n") == 1, (code, err)
    assert f"error: {field}: " in err, err
    assert not (tmp_path / "x.json").exists()


def test_file_not_found_names_the_path_not_a_json_path(tmp_path):
    missing = str(tmp_path / "nope.json")
    code, _, err = run_cli(["solve", missing])
    assert code == 2 and err == f"fairplace solve: error: {missing}: file not found\n"
    with pytest.raises(InstanceError) as exc:
        fairplace.load(missing)
    assert exc.value.path == missing and exc.value.problem == "file not found"


@pytest.mark.parametrize(
    "argv",
    [
        ["solve", "MISSING", "--json"],
        ["solve", "UNDERFLOW", "--json"],
        ["solve", "UNDERFLOW", "--time-limit", "x", "--json"],
        ["simulate", "--trace", "synergy", "--trace-option", "n_jobs=abc", "--json"],
        ["instances", "generate", "--kind", "auction", "--apps", "0", "-o", "OUT", "--json"],
        ["sweep", "MISSING", "--validate-only", "--json"],
        ["batch", "small", "--workers", "0", "--out", "OUT", "--json"],
    ],
)
def test_errors_under_json_are_one_object_on_stderr(tmp_path, argv):
    f = tmp_path / "i.json"
    f.write_text(json.dumps(UNDERFLOW))
    subst = {
        "MISSING": str(tmp_path / "nope"),
        "UNDERFLOW": str(f),
        "OUT": str(tmp_path / "o.json"),
    }
    code, out, err = run_cli([subst.get(a, a) for a in argv])
    assert code == 2 and out == "" and err.count("\n") == 1, (code, err)
    obj = json.loads(err)
    assert set(obj) == {"error", "where"} and obj["error"] and obj["where"], obj


def _shell(command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True)


def test_solve_with_stdout_closed_exits_141_quietly(tmp_path):
    f = tmp_path / "a.json"
    f.write_text(json.dumps(AUCTION))
    p = _shell(f"{sys.executable} -m fairplace.cli solve {f} --json >&-")
    assert p.returncode == EXIT_BROKEN_PIPE and p.stderr == "", p.stderr


def test_a_command_that_prints_nothing_runs_with_stdout_closed(tmp_path):
    f = tmp_path / "a.json"
    f.write_text(json.dumps(AUCTION))
    out = tmp_path / "o.json"
    p = _shell(
        f"{sys.executable} -m fairplace.cli instances generate --kind auction -o {out} >&-"
    )  # the file is written, then printing its path meets the closed stdout
    assert p.returncode == EXIT_BROKEN_PIPE and out.exists() and p.stderr == ""
    fairplace.load(out)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a full disk)")
def test_full_disk_names_the_file(tmp_path):
    target = tmp_path / "full.json"
    os.symlink("/dev/full", target)
    code, _, err = run_cli(["instances", "generate", "--kind", "auction", "-o", str(target)])
    assert code == 2 and err.count("\n") == 1, err
    assert f"error: {target}: No space left on device" in err, err
    from fairplace.instances import io as instance_io

    with pytest.raises(OSError) as exc:  # the library names it too
        instance_io.save(random_auction(apps=2, machines=1), target)
    assert exc.value.filename == str(target)
