"""The driver as one of a local batch's solvers (``DriverSlot``): it starts the largest task while the
cluster starts, its rows equal the workers' and the in-process ones, and a failure is a row."""

from __future__ import annotations

import time

import pandas as pd

from fairplace.instances import suites
from fairplace.runs import batch_plan as bp
from fairplace.runs import batch_worker
from fairplace.runs.batch import run_batch
from fairplace.runs.batch_worker import DriverSlot


def _rows(df: pd.DataFrame) -> pd.DataFrame:
    return df.set_index("instance")[["status", "objective"]].sort_index()


def test_local_batch_driver_solves_the_largest_task_and_rows_match_in_process(
    tmp_path, monkeypatch
):
    items = suites.suite_items("small")[:8]
    todo = [(n, "exact", p) for n, p in items]
    largest = todo[bp.largest_first(bp.task_efforts(todo))[0]][0]
    solved_here = []
    real = batch_worker.solve_task

    def recording(name, solver, payload, time_limit=None):  # only the driver's calls reach the list
        solved_here.append(name)
        return real(name, solver, payload, time_limit)

    monkeypatch.setattr(batch_worker, "solve_task", recording)
    df = run_batch(items, ["exact"], workers=2, in_process=False, out=tmp_path / "a.jsonl",
                   progress=False)  # fmt: skip
    rep = df.attrs["batch"]
    assert rep["mode"] == "local" and rep["driver_solves"] and rep["workers"] == 2
    assert "this process" in rep["reason"]
    assert solved_here and solved_here[0] == largest  # started before the cluster was up
    ref = run_batch(items, ["exact"], workers=1, out=tmp_path / "b.jsonl", progress=False)
    got, want = _rows(df), _rows(ref)
    assert list(got.index) == list(want.index) and (got["status"] == want["status"]).all()
    assert ((got["objective"] - want["objective"]).abs() < 1e-9).all()


def test_driver_slot_turns_a_failure_into_error_rows(monkeypatch):
    def boom(*_a, **_k):
        raise RuntimeError("solver exploded")

    monkeypatch.setattr(batch_worker, "solve_task", boom)
    monkeypatch.setattr(batch_worker, "warm", lambda solvers: None)
    slot = DriverSlot(["exact"], None)
    assert slot.drain() == [] and not slot.busy
    groups = iter([(0, [("i1", "exact", {}), ("i2", "exact", {})]), (1, [("i3", "exact", {})])])
    slot.start(lambda: next(groups, None))
    rows = []
    while slot.busy:
        rows += slot.drain()
        time.sleep(0.01)
    assert [r["instance"] for r in rows] == ["i1", "i2", "i3"]  # every group, once, in order
    assert {r["status"] for r in rows} == {"error"}
    assert "RuntimeError: solver exploded" in rows[0]["message"]
