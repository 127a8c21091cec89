"""Batch scheduling: effort estimate, largest-first order, chunks of tiny tasks, the in-process rule,
and imports warmed before any task is timed."""

from __future__ import annotations

import json
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

import fairplace
from fairplace.instances import suites
from fairplace.runs import batch_plan as bp
from fairplace.runs.batch import read_journal, run_batch


def _auction(apps: int, bids: int, gpus: int) -> dict:
    return {
        "kind": "auction",
        "gpus": [{"id": f"g{k}"} for k in range(gpus)],
        "apps": [{"id": f"A{i}", "bids": [{}] * bids} for i in range(apps)],
    }


def _placement(jobs: int, gpus: int) -> dict:
    return {"kind": "placement", "gpus": [{}] * gpus, "jobs": [{}] * jobs}


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 12), st.integers(1, 20), st.integers(1, 40))
def test_effort_grows_with_apps_bids_gpus_and_jobs(apps, bids, gpus):
    e = bp.instance_effort(_auction(apps, bids, gpus))
    assert e > 0
    assert bp.instance_effort(_auction(apps + 1, bids, gpus)) > e
    assert bp.instance_effort(_auction(apps, bids + 1, gpus)) > e
    assert bp.instance_effort(_auction(apps, bids, gpus + 1)) > e
    p = bp.instance_effort(_placement(apps, gpus))
    assert bp.instance_effort(_placement(apps + 1, gpus)) > p > 0
    # heuristics and policies (no MILP) weigh less than the exact solver on the same instance
    inst = _auction(apps, bids, gpus)
    assert bp.effort(inst, "greedy-log") < bp.effort(inst, "exact") <= bp.effort(inst, "pyomo")


def test_effort_of_a_file_equals_its_dict_and_unreadable_is_zero(tmp_path):
    name, payload = suites.suite_items("medium")[-1]
    f = tmp_path / "i.json"
    f.write_text(json.dumps(payload))
    assert bp.instance_effort(str(f)) == bp.instance_effort(payload) > 0
    assert bp.instance_effort(tmp_path / "missing.json") == 0.0
    (tmp_path / "bad.json").write_text("[1, 2")
    assert bp.instance_effort(tmp_path / "bad.json") == 0.0


def test_medium_suite_puts_its_16_job_placements_and_12_app_auctions_first():
    # the 16-job placements hold the suite's longest solve (seconds); submitted last, one of them
    # would leave the other worker idle at the end
    items = suites.suite_items("medium")
    todo = [(n, "exact", p) for n, p in items]
    order = bp.largest_first(bp.task_efforts(todo))
    first = [todo[k][0] for k in order[:8]]
    assert {n for n in first} == {n for n, _ in items if "16j" in n or "12a" in n}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0, 4.9, 5.0, 20.0, 400.0]), max_size=40))
def test_largest_first_is_a_stable_sort_and_chunks_keep_it(efforts):
    order = bp.largest_first(efforts)
    assert sorted(order) == list(range(len(efforts)))  # a permutation
    assert [efforts[k] for k in order] == sorted(efforts, reverse=True)
    for a, b in zip(order, order[1:], strict=False):  # equal efforts keep the suite's order
        if efforts[a] == efforts[b]:
            assert a < b
    groups = bp.chunks(order, efforts)
    assert [k for g in groups for k in g] == order
    for g in groups:
        if len(g) > 1:  # only tiny tasks share a Dask task, within the chunk limits
            assert all(efforts[k] < bp.TINY_EFFORT for k in g)
            assert sum(efforts[k] for k in g) <= bp.CHUNK_EFFORT
            assert len(g) <= bp.CHUNK_TASKS
        else:
            assert len(g) == 1


def test_in_process_rule():
    big = bp.IN_PROCESS_MAX_EFFORT + 1
    many = bp.IN_PROCESS_MAX_TASKS + 1
    assert bp.in_process_rule(100, 1e9, 1, None)[0] is True  # --workers 1
    assert bp.in_process_rule(bp.IN_PROCESS_MAX_TASKS, 1e9, 2, None)[0] is True
    assert bp.in_process_rule(many, bp.IN_PROCESS_MAX_EFFORT, 2, None)[0] is True
    assert bp.in_process_rule(many, big, 2, None)[0] is False
    # a scheduler address always means Dask, whatever the size
    assert bp.in_process_rule(1, 0.0, 1, "tcp://127.0.0.1:1")[0] is False
    for case in [(100, 1e9, 1, None), (many, 0.0, 2, None), (many, big, 2, None)]:
        assert bp.in_process_rule(*case)[1]  # the reason is reported


def test_small_suite_is_solved_in_process_with_the_workers_rows(tmp_path):
    items = suites.suite_items("small")[:3]
    df = run_batch(items, solvers=["exact"], workers=2, out=tmp_path / "r.jsonl", progress=False)
    assert df.attrs["batch"]["mode"] == "in-process"
    assert "task(s) <=" in df.attrs["batch"]["reason"]
    assert list(df["instance"]) == sorted(n for n, _ in items)
    for name, payload in items:
        row = df[df["instance"] == name].iloc[0]
        ref = fairplace.solve(suites.load_item(payload), "exact", threads=1, parallel=False)
        assert row["status"] == ref.status
        assert abs(row["objective"] - ref.objective) < 1e-9


def test_low_effort_suite_runs_in_process_largest_first(tmp_path):
    items = suites.suite_items("small")
    todo = [(n, "exact", p) for n, p in items]
    efforts = bp.task_efforts(todo)
    assert len(items) > bp.IN_PROCESS_MAX_TASKS and sum(efforts) <= bp.IN_PROCESS_MAX_EFFORT
    out = tmp_path / "r.jsonl"
    df = run_batch(items, solvers=["exact"], workers=2, out=out, progress=False)
    assert df.attrs["batch"]["mode"] == "in-process"
    assert "estimated effort" in df.attrs["batch"]["reason"]
    assert len(df) == len(items) and set(df["status"]) == {"optimal"}
    # in-process rows are journaled in solve order: the largest-first order
    expected = [todo[k][0] for k in bp.largest_first(efforts)]
    assert [r["instance"] for r in read_journal(out)] == expected


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_warm_imports_the_solver_stack_and_only_the_requested_backends():
    probe = "fairplace.solvers.compact fairplace.solvers.placement highspy pyomo cvxpy".split()
    show = f"import sys; print(' '.join(m for m in {probe!r} if m in sys.modules))"
    plain = _modules_after(f"from fairplace.runs.batch_worker import warm; warm(['exact']); {show}")
    assert plain == {"fairplace.solvers.compact", "fairplace.solvers.placement", "highspy"}
    pyomo = _modules_after(f"from fairplace.runs.batch_worker import warm; warm(['pyomo']); {show}")
    assert "pyomo" in pyomo and "cvxpy" not in pyomo


def test_unbinned_policy_solve_does_not_import_scikit_learn():
    # `seconds` of a policy solve covers the placement only: the scikit-learn import (seconds, once
    # per process) happens only for binned scores, and then before the timed region
    code = (
        "import sys, fairplace\n"
        "from fairplace.instances import suites\n"
        "p = dict(suites.suite_items('small'))['small-12-placement']\n"
        "fairplace.solve(suites.load_item(p), solver='pal')\n"
        "print('sklearn' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
