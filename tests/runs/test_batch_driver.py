"""The driver as one of a local batch's solvers (``DriverSlot``): it starts the largest task while the
cluster starts, its rows equal the workers' and the in-process ones, and a failure is a row."""

from __future__ import annotations

import math
import threading
import time

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from fairplace.instances import suites
from fairplace.runs import batch_plan as bp
from fairplace.runs import batch_worker
from fairplace.runs.batch import run_batch
from fairplace.runs.batch_worker import DriverSlot, GroupSource


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
    assert rep["scheduler"].startswith("tls://127.0.0.1:")  # the local cluster talks TLS
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


def test_driver_slot_outlives_a_failed_warm_up(monkeypatch):
    """The driver owes a local batch its last groups (Dask leaves them to it): a warm-up that
    raises must not end its thread."""

    def broken(solvers):
        raise ImportError("no HiGHS here")

    monkeypatch.setattr(batch_worker, "warm", broken)
    monkeypatch.setattr(batch_worker, "solve_task", lambda n, s, p, t=None: {"instance": n})
    slot = DriverSlot(["exact"], None)
    groups = iter([(0, [("i1", "exact", {})]), (1, [("i2", "exact", {})])])
    slot.start(lambda: next(groups, None))
    rows = []
    while slot.busy:
        rows += slot.drain()
        time.sleep(0.01)
    assert [r["instance"] for r in rows] == ["i1", "i2"] and not slot.solving


def test_dask_gets_two_groups_at_once_each_is_taken_once_and_dask_done_comes_under_the_driver(
    tmp_path, monkeypatch
):
    """``_drive`` with the driver solving too: the Dask worker is handed 2 groups (PREFETCH) before any
    result is back (its next group waits on the worker, not on this process), every group is taken
    by exactly one side, the rows equal direct solves, and ``on_dask_done`` (the batch closes the
    cluster there) runs once, while the driver still solves its group, whose rows are journaled."""
    from dask.distributed import Client, LocalCluster

    from fairplace.runs import batch

    items = suites.suite_items("small")[:8]
    todo = [(n, "exact", p) for n, p in items]
    efforts = bp.task_efforts(todo)
    groups = [(k, [todo[k]]) for k in bp.largest_first(efforts)]
    events = []  # (thread, "take" | "journal", instance names), in order

    class Recording(GroupSource):
        def take(self, reserve=0.0):
            g = super().take(reserve)
            if g is not None:
                events.append((threading.current_thread().name, "take", [t[0] for t in g[1]]))
            return g

    source = Recording(groups, {(n, s): e for (n, s, _), e in zip(todo, efforts, strict=True)})

    real_append = batch.append_rows

    def append_rows(f, rows):
        events.append((threading.current_thread().name, "journal", [r["instance"] for r in rows]))
        return real_append(f, rows)

    monkeypatch.setattr(batch, "append_rows", append_rows)
    dask_done = threading.Event()
    real_solve = batch_worker.solve_task

    def driver_solve(*args):  # the driver's group waits until Dask has finished everything else
        assert dask_done.wait(120), "on_dask_done was not called while the driver solved"
        return real_solve(*args)

    monkeypatch.setattr(batch_worker, "solve_task", driver_solve)  # the Dask worker calls the real
    calls = []
    here = DriverSlot(["exact"], None)

    def on_dask_done():
        calls.append(here.busy)
        dask_done.set()

    jpath = tmp_path / "r.jsonl"
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cl, Client(cl) as client:  # fmt: skip
        here.start(source)
        claimed = list(events)  # the driver claims its first group as it starts, in this thread
        batch._drive(client, source, len(todo), jpath, None, False, None, None, here,
                     on_dask_done=on_dask_done)  # fmt: skip
    here.stop()
    assert claimed == [("MainThread", "take", [groups[0][1][0][0]])]  # the largest
    assert calls == [True]  # once, with the driver still solving
    main = [(kind, names) for who, kind, names in events[1:] if who == "MainThread"]
    assert batch.PREFETCH == 2 and [kind for kind, _ in main[:3]] == ["take", "take", "journal"]
    taken = [n for _, kind, names in events if kind == "take" for n in names]
    journaled = [n for _, kind, names in events if kind == "journal" for n in names]
    assert sorted(taken) == sorted(journaled) == sorted(n for n, _, _ in todo)  # each once
    got = {r["instance"]: r for r in batch.read_journal(jpath)}
    assert len(got) == len(todo)
    for name, solver, payload in todo:
        want = real_solve(name, solver, payload)
        assert got[name]["status"] == want["status"]
        assert abs(got[name]["objective"] - want["objective"]) < 1e-9


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.floats(0.0, 100.0), min_size=1, max_size=3), min_size=1, max_size=12),
    st.lists(st.tuples(st.booleans(), st.floats(0.0, 5.0)), max_size=30),
    st.floats(0.01, 10.0),
)
def test_group_source_hands_out_each_group_once_in_order_and_reserves_only_the_tail(
    sizes, calls, seconds_per_effort
):
    """Interleaved takes of the driver (no reserve) and of Dask (a reserve, in seconds): every group
    comes out once, in submission order; Dask gets None only while the groups left are estimated
    (their effort times the observed seconds per effort unit) at <= its reserve. Without an
    observed effort (all zero) nothing is estimated: the groups left count as infinite."""
    tasks = [[(f"i{g}-{t}", "exact", None) for t in range(len(ts))] for g, ts in enumerate(sizes)]
    effort_of = {
        (n, s): e
        for g, ts in zip(tasks, sizes, strict=True)
        for (n, s, _), e in zip(g, ts, strict=True)
    }
    source = GroupSource(list(enumerate(tasks)), effort_of)
    assert source.seconds(tasks[0]) == 0.0  # nothing observed yet: no estimate, no reserve
    assert source.take(reserve=1e9) == (0, tasks[0])
    out = [0]
    source.observe([{"instance": n, "solver": s, "wall_seconds": e * seconds_per_effort}
                    for (n, s), e in effort_of.items()])  # fmt: skip
    assert math.isclose(
        source.seconds(tasks[-1]), sum(sizes[-1]) * seconds_per_effort, abs_tol=1e-9
    )
    for dask, reserve in calls:
        left = sum(sum(ts) for ts in sizes[out[-1] + 1 :]) * seconds_per_effort
        left = left if any(map(any, sizes)) else math.inf  # no effort observed: no estimate
        g = source.take(reserve if dask else 0.0)
        if g is None:
            assert out[-1] + 1 == len(tasks) or (dask and left <= reserve + 1e-9)
        else:
            assert g[0] == out[-1] + 1 and (not dask or left > reserve - 1e-9)
            out.append(g[0])
    while (g := source()) is not None:
        out.append(g[0])
    assert out == list(range(len(tasks)))
