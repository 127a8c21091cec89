"""Fuzzing the bad-input contract: mutated instances, traces and sweep specs either give a valid
result or exit 2 with exactly one line on stderr that names a field; never exit 1 (internal error),
never a traceback, never a silent wrong answer (a result whose numbers are not finite).

The CLI runs in-process (``fairplace.cli.main``) with stdout / stderr captured, so every example
costs milliseconds; hypothesis is derandomized, so CI sees the same examples every run.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import re

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_sim_contract import TRACE as CONTRACT_TRACE

from fairplace.cli import main
from fairplace.core.shared_params import LOCALITY_PENALTY, THEMIS_F
from fairplace.runs.sweep import SPEC_KEYS

FUZZ = settings(
    max_examples=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

GPUS = [
    {"id": f"m{m}/{g}", "machine": f"m{m}", "rack": f"r{m // 2}", "pm": {"A": 1.0 + 0.1 * g}}
    for m in range(2)
    for g in range(2)
]
AUCTION = {
    "kind": "auction",
    "gpus": [{k: v for k, v in g.items() if k != "pm"} for g in GPUS],
    "apps": [
        {"id": "A1", "rho_empty": 5.0, "bids": [{"gpus": ["m0/0", "m0/1"], "rho": 2.0}]},
        {"id": "A2", "rho_empty": None, "bids": [{"gpus": ["m1/0"], "rho": 1.5}]},
    ],
}
PLACEMENT = {
    "kind": "placement",
    "locality_penalty": 1.7,
    "locality_by_model": {"bert": 1.2},
    "gpus": GPUS,
    "jobs": [
        {"id": "j1", "gpus": 2, "class": "A", "weight": 1.0},
        {"id": "j2", "gpus": 1, "class": "A", "model": "bert"},
    ],
}
AGENT = {
    "kind": "auction",
    "gpus": GPUS,
    "apps": [
        {
            "id": "X",
            "jobs": [{"iters_left": 8, "t_iter": 80, "locality_sensitivity": 1.0}],
            "t_start": 0,
            "t_now": 10,
            "d_max": 2,
            "class": "A",
            "locality": [1.0, 1.1, 1.3],
            "t_id": {"variant": "themis", "n_avg": 2},
            "held": ["m1/1"],
        },
        {
            "id": "Y",
            "jobs": [{"iters_left": 5, "t_iter": 50}, {"iters_left": 5, "t_iter": 60}],
            "d_max": 2,
            "stopping": "successive-halving",
            "phases": [{"jobs": 2, "iters": 5}, {"jobs": 1, "iters": 10}],
            "current_phase": 0,
            "work_total": 900,
            "demand_max": 2,
        },
    ],
}

HOSTILE = [
    None, True, "", "x", [], {}, -1, 0, 0.5, 2, 1e6, -1e9, 1e13, float("nan"), float("inf"),
    -float("inf"), 10**400, 2**60, "m0/0", ["m0/0", "m0/0"], [[[[[[]]]]]], "r9", "x" * 500,
]  # fmt: skip
LINE = re.compile(r"^fairplace \w+: error: (\S.*?): .+$")


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """``fairplace <argv>`` in-process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse errors
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def assert_contract(code: int, out: str, err: str, field_ok) -> dict | None:
    """Exit 0 with a JSON result (returned) or exit 2 with one line naming a field: under
    ``--json`` the object ``{"error": ..., "where": FIELD}`` on stderr, else ``... error: FIELD: ...``."""
    assert "Traceback" not in err, err
    event(f"exit {code}")
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        if lines[0].startswith("{"):
            obj = json.loads(lines[0])
            assert set(obj) == {"error", "where"} and obj["error"], lines[0]
            assert obj["where"] and field_ok(obj["where"]), lines[0]
            return None
        m = LINE.match(lines[0])
        assert m and field_ok(m.group(1)), lines[0]
        return None
    assert code == 0, (code, err)
    return json.loads(out)


def _leaves(node, path=()):
    """Every (path, value) of a JSON document, containers included."""
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(node, list):
        for k, v in enumerate(node):
            yield from _leaves(v, (*path, k))


@st.composite
def mutated(draw, base: dict):
    """``base`` with one to three edits: a value replaced by a hostile one, a key deleted, or a list
    element duplicated."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p, _ in _leaves(doc) if p]
        numbers = [p for p, v in _leaves(doc) if p and type(v) in (int, float)]
        path = draw(st.sampled_from(numbers if numbers and draw(st.booleans()) else paths))
        parent = doc
        for p in path[:-1]:
            parent = parent[p]
        op = draw(st.sampled_from(["set", "set", "set", "delete", "duplicate"]))
        if op == "set":
            parent[path[-1]] = copy.deepcopy(draw(st.sampled_from(HOSTILE)))
        elif op == "delete":
            del parent[path[-1]]
        elif isinstance(parent, list):
            parent.append(copy.deepcopy(parent[path[-1]]))
    return doc


def _json_text(doc) -> str:
    return json.dumps(doc, allow_nan=True)  # NaN / Infinity on purpose: the loader must name them


def _finite_numbers(x) -> bool:
    return all(
        math.isfinite(v) for _, v in _leaves(x) if isinstance(v, float) and not isinstance(v, bool)
    )


def _check_solution(res: dict, doc: dict) -> None:
    """A result of a (possibly mutated but accepted) instance is a real answer."""
    assert res["status"] in ("optimal", "heuristic", "time_limit", "infeasible"), res
    gpus = {g["id"] for g in doc["gpus"]}
    used = [g for bundle in res["allocation"].values() for g in bundle]
    assert set(used) <= gpus and len(used) == len(set(used)), res["allocation"]
    if res["status"] == "optimal":
        assert res["objective"] is None or math.isfinite(res["objective"])
    assert _finite_numbers(res.get("payments") or {}) and _finite_numbers(res.get("slowdown") or {})


def _solve_contract(tmp_path, doc, solver="exact") -> None:
    f = tmp_path / "i.json"
    f.write_text(_json_text(doc))
    code, out, err = run_cli(["solve", str(f), "--solver", solver, "--json"])
    res = assert_contract(code, out, err, lambda field: field.startswith("$"))
    if res is not None:
        _check_solution(res, doc)


@FUZZ
@given(doc=mutated(AUCTION))
def test_mutated_auction(tmp_path, doc):
    _solve_contract(tmp_path, doc)


@FUZZ
@given(doc=mutated(PLACEMENT))
def test_mutated_placement(tmp_path, doc):
    _solve_contract(tmp_path, doc)


@FUZZ
@given(doc=mutated(AGENT))
def test_mutated_agent_form(tmp_path, doc):
    _solve_contract(tmp_path, doc)


@FUZZ
@given(doc=mutated(PLACEMENT))
def test_mutated_placement_policy(tmp_path, doc):
    _solve_contract(tmp_path, doc, solver="pal")


# --- parameter specs: their out-of-range values through every door ------------------------------
def _outside(spec):
    """The spec's own invalid values (``Param.invalid_values``) and random floats outside its range."""
    floats = st.floats(allow_nan=True, allow_infinity=True)
    return st.sampled_from(spec.invalid_values()) | floats.filter(
        lambda x: not spec.constraint.contains(x)
    )


def _arg(v) -> str:
    return repr(v) if isinstance(v, float) else json.dumps(v)


@settings(FUZZ, max_examples=40)
@given(v=_outside(LOCALITY_PENALTY))
def test_out_of_range_L_exits_2_naming_the_field(tmp_path, v):
    """The CLI flag and the placement JSON: exit 2, one line naming --locality-penalty / the path."""
    code, out, err = run_cli(["simulate", "--trace", "workload-1", LOCALITY_PENALTY.flag, _arg(v)])
    assert code == 2
    assert_contract(code, out, err, lambda field: LOCALITY_PENALTY.flag in field)
    doc = {**PLACEMENT, "locality_penalty": v}
    f = tmp_path / "i.json"
    f.write_text(_json_text(doc))
    code, out, err = run_cli(["solve", str(f), "--solver", "pal", "--json"])
    assert code == 2
    assert_contract(code, out, err, lambda field: field == "$.locality_penalty")


@settings(FUZZ, max_examples=40)
@given(v=_outside(THEMIS_F))
def test_out_of_range_f_exits_2_naming_the_flag(v):
    argv = ["simulate", "--trace", "themis-1", "--scheduler", "themis"]
    code, out, err = run_cli([*argv, "--scheduler-option", f"f={_arg(v)}"])
    assert code == 2
    assert_contract(code, out, err, lambda field: field == THEMIS_F.flag)


# --- traces ---------------------------------------------------------------------------------------
TRACE = pd.DataFrame(
    {
        "job_id": ["a", "b", "c"],
        "num_gpus": [1, 2, 4],
        "submit_time": [0.0, 10.0, 20.0],
        "duration": [100.0, 50.0, 80.0],
        "model": ["resnet50", "bert", "vgg19"],
        "locality": [1.5, 1.2, 2.0],
    }
)
CELLS = ["", "x", "nan", "inf", "-inf", "-1", "0", "0.5", "1e400", "1" + "0" * 40, "2.5", "3"]


@st.composite
def mutated_trace(draw) -> str:
    df = TRACE.astype(object).copy()
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["cell", "cell", "cell", "drop", "dup-id"]))
        col = draw(st.sampled_from(list(df.columns)))
        if op == "cell":
            df.loc[draw(st.integers(0, len(df) - 1)), col] = draw(st.sampled_from(CELLS))
        elif op == "drop" and len(df.columns) > 1:
            df = df.drop(columns=[col])
        else:
            df.loc[2, "job_id"] = df.loc[0, "job_id"] if "job_id" in df else None
    return df.to_csv(index=False)


@settings(FUZZ, max_examples=25)
@given(text=mutated_trace())
def test_mutated_trace(tmp_path, text):
    f = tmp_path / "t.csv"
    f.write_text(text)
    argv = ["simulate", "--trace", str(f), "--gpus", "16", "--placement", "packed-sticky"]
    code, out, err = run_cli([*argv, "--json"])
    res = assert_contract(code, out, err, lambda field: str(f) in field or "--" in field)
    if res is not None:
        assert all(v is None or not isinstance(v, float) or math.isfinite(v) for v in res.values())


# --- sweep specs ----------------------------------------------------------------------------------
SPEC = {  # valid as it stands (test below): each mutation is the only fault
    "name": "fz",
    "schedulers": ["las"],  # starve_factor is LAS's option (fifo takes none)
    "placements": ["pal", "packed-sticky"],
    "traces": ["workload-1"],
    "seeds": [0, 1],
    "params": {"locality_penalty": [1.0, 2.0], "scheduler_options.starve_factor": [10]},
    "fixed": {"gpus": 64, "gpus_per_machine": 4, "profile": "longhorn", "round_length": 300.0},
    "frames": ["jobs"],
}
SPEC_HOSTILE = [
    -1, 0, 3, 63, 1.5, "lots", "", "../../x", "a/b", True, [], [-1], ["nope"], {}, float("inf"),
    float("nan"), 10**30, "missing.csv", ["workload-1", "missing.csv"], "synergy",
]  # fmt: skip


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"


def to_toml(spec: dict) -> str:
    top = [f"{k} = {_toml_value(v)}" for k, v in spec.items() if not isinstance(v, dict)]
    tables = [
        f"[{k}]\n" + "\n".join(f"{json.dumps(a)} = {_toml_value(b)}" for a, b in v.items())
        for k, v in spec.items()
        if isinstance(v, dict)
    ]
    return "\n".join(top) + "\n" + "\n".join(tables) + "\n"


@st.composite
def mutated_spec(draw):
    spec = copy.deepcopy(SPEC)
    for _ in range(draw(st.integers(1, 2))):
        paths = [p for p, v in _leaves(spec) if p and v is not None]
        path = draw(st.sampled_from(paths))
        parent = spec
        for p in path[:-1]:
            parent = parent[p]
        if draw(st.booleans()) or not isinstance(parent, dict):
            parent[path[-1]] = draw(st.sampled_from(SPEC_HOSTILE))
        else:
            del parent[path[-1]]
    return spec


def _spec_field(field: str) -> bool:
    head = re.split(r"[.\[]", field, maxsplit=1)[0]
    return head in SPEC_KEYS or head == "spec" or field.endswith(".toml")


def test_the_unmutated_sweep_spec_validates(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(to_toml(SPEC))
    code, out, err = run_cli(["sweep", str(f), "--validate-only"])
    assert code == 0, err


@settings(FUZZ, max_examples=80)
@given(spec=mutated_spec())
def test_mutated_sweep_spec_validates_fully(tmp_path, spec):
    f = tmp_path / "s.toml"
    f.write_text(to_toml(spec))
    code, out, err = run_cli(["sweep", str(f), "--validate-only"])
    assert_contract(code, "{}", err, _spec_field)
    if code == 0:  # accepted: the grid is well-formed
        from fairplace.runs.sweep import load_spec

        s = load_spec(str(f))
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", s.name)
        assert all(isinstance(x, int) and x >= 0 for x in s.seeds)


# --- user extensions: a scheduler or placement policy that breaks its contract --------------------
# `fairplace simulate` takes names; the objects behind them are swapped for broken ones here, as a
# user's objects reach the same driver through fairplace.simulate. A broken decision exits 2 with
# one line naming --placement / --scheduler, the object and the rule (or the run is still valid).
EXT_TRACE = CONTRACT_TRACE  # 6 jobs of 1-4 GPUs (tests/sim/test_sim_contract.py)


class _Policy:
    """Lowest free GPU indices in queue order, stop at a misfit; ``mutate`` breaks decision ``at``
    and every later one."""

    def __init__(self, mutate, at: int):
        self.name, self.mutate, self.at, self.calls = "fuzzed-policy", mutate, at, 0

    def place(self, state, queue):
        from fairplace.solvers.placement.policies import Decision

        free, alloc = list(range(len(state.cluster))), {}
        for job in queue:
            if job.gpus > len(free):
                break
            alloc[job.id], free = tuple(free[: job.gpus]), free[job.gpus :]
        dec = Decision(alloc, tuple(j for j in state.allocation if j not in alloc))
        self.calls += 1
        return dec if self.calls <= self.at else self.mutate(dec, state)


class _Scheduler:
    def __init__(self, mutate, at: int):
        self.name, self.mutate, self.at, self.calls = "fuzzed-scheduler", mutate, at, 0

    def order(self, view):
        order = view.active[np.lexsort((view.active, view.arrival[view.active]))]
        self.calls += 1
        return order if self.calls <= self.at else self.mutate(order, view)

    def next_change(self, view):
        return np.inf


def _edit_gpus(how: str, hostile):
    def mutate(dec, state):
        from fairplace.solvers.placement.policies import Decision

        a = dict(dec.allocation)
        if not a:
            return dec
        j = next(iter(a))
        g = list(a[j])
        other = [x for k, v in a.items() if k != j for x in v]
        edits = {
            "hostile": lambda: hostile,
            "gpu-id": lambda: tuple(state.cluster.gpus[x].id for x in g),
            "float": lambda: tuple(x + 0.0 for x in g),
            "reversed": lambda: tuple(g[::-1]),
            "shifted": lambda: tuple(x + len(state.cluster) for x in g),
            "negative": lambda: tuple(-1 - x for x in g),
            "taken": lambda: tuple(sorted({*g[1:], other[0]})) if other else tuple(g),
            "short": lambda: tuple(g[:-1]),
            "long": lambda: (*g, g[-1]),
            "array": lambda: np.asarray(g),
            "list": lambda: g,
        }
        a[j] = edits[how]()
        return Decision(a, dec.preempted)

    return mutate


def _edit_decision(how: str, hostile):
    def mutate(dec, state):
        from fairplace.solvers.placement.policies import Decision

        if how == "hostile":
            return hostile
        if how == "dict":
            return dict(dec.allocation)
        if how == "idle":
            return Decision({}, tuple(state.allocation))
        try:
            job = hostile if how == "unknown" else "a"  # an unknown id / a job perhaps not queued
            hash(job)
        except TypeError:
            job = repr(hostile)
        return Decision({**dec.allocation, job: (0,)}, ())

    return mutate


def _edit_order(how: str, hostile):
    def mutate(order, view):
        return {
            "hostile": lambda: hostile,
            "float": lambda: order.astype(float),
            "inactive": lambda: np.arange(len(view.arrival)),
            "twice": lambda: np.concatenate([order, order[:1]]),
            "beyond": lambda: np.append(order, len(view.arrival)),
            "negative": lambda: np.append(order, -1),
            "mask": lambda: np.isin(np.arange(len(view.arrival)), order),
            "empty": lambda: order[:0],
            "list": lambda: order.tolist(),
        }[how]()

    return mutate


GPU_EDITS = ["hostile", "gpu-id", "float", "reversed", "shifted", "negative", "taken", "short",
             "long", "array", "list"]  # fmt: skip


@st.composite
def broken_extension(draw):
    """(which flag, the object): a policy or scheduler whose decisions break from the ``at``-th."""
    at = draw(st.integers(0, 2))
    hostile = copy.deepcopy(draw(st.sampled_from(HOSTILE)))
    kind = draw(st.sampled_from(["gpus", "decision", "order"]))
    if kind == "gpus":
        return "--placement", _Policy(_edit_gpus(draw(st.sampled_from(GPU_EDITS)), hostile), at)
    if kind == "decision":
        how = draw(st.sampled_from(["hostile", "dict", "idle", "unknown", "unqueued"]))
        return "--placement", _Policy(_edit_decision(how, hostile), at)
    how = draw(
        st.sampled_from(
            ["hostile", "float", "inactive", "twice", "beyond", "negative", "mask", "empty", "list"]
        )
    )
    return "--scheduler", _Scheduler(_edit_order(how, hostile), at)


@settings(FUZZ, max_examples=60)
@given(ext=broken_extension())
def test_broken_extensions_exit_2_naming_the_object(tmp_path, ext):
    from unittest import mock

    flag, obj = ext
    f = tmp_path / "t.csv"
    EXT_TRACE.to_csv(f, index=False)
    target = (
        "fairplace.solvers.placement.policies.make_policy"
        if flag == "--placement"
        else "fairplace.sim.api.make_scheduler"
    )
    with mock.patch(target, lambda *a, **k: obj):
        code, out, err = run_cli(["simulate", "--trace", str(f), "--gpus", "8", "--json"])
    res = assert_contract(code, out, err, lambda field: field == flag)
    if res is None:
        assert f"'{obj.name}'" in err, err
    else:  # the edit was harmless (a list for a tuple, an empty queue for a while, ...)
        assert res["jobs"] == len(EXT_TRACE)
        assert all(v is None or not isinstance(v, float) or math.isfinite(v) for v in res.values())


#: the issue's reproducers, through the CLI: (flag, object, words of the one line)
REPRODUCERS = {
    "duplicate GPU": ("--placement", _Policy(_edit_gpus("taken", None), 0), "gave GPU"),
    "inactive job ordered": (
        "--scheduler",
        _Scheduler(_edit_order("inactive", None), 0),
        "which is not active",
    ),
    "dict returned": ("--placement", _Policy(_edit_decision("dict", None), 0), "returned dict"),
    "GPU ids": ("--placement", _Policy(_edit_gpus("gpu-id", None), 0), "not GPU ids"),
    "float orders": ("--scheduler", _Scheduler(_edit_order("float", None), 0), "float64 values"),
    "no progress": (
        "--placement",
        _Policy(_edit_decision("idle", None), 0),
        "no job started, finished or advanced in 1000 consecutive decisions",
    ),
}


def test_issue_reproducers_exit_2_with_one_line(tmp_path):
    from unittest import mock

    f = tmp_path / "t.csv"
    EXT_TRACE.to_csv(f, index=False)
    for case, (flag, obj, words) in REPRODUCERS.items():
        target = (
            "fairplace.solvers.placement.policies.make_policy"
            if flag == "--placement"
            else "fairplace.sim.api.make_scheduler"
        )
        with mock.patch(target, lambda *a, obj=obj, **k: obj):
            code, out, err = run_cli(["simulate", "--trace", str(f), "--gpus", "8"])
        assert code == 2 and "Traceback" not in err, (case, err)
        assert err.startswith(f"fairplace simulate: error: {flag}: ") and err.count("\n") == 1, err
        assert f"'{obj.name}'" in err and words in err, (case, err)
