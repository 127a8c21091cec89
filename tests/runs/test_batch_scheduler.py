"""``fairplace batch --scheduler-address``: the same batch on a Dask cluster started separately."""

from __future__ import annotations

import json
import logging

import pandas as pd
import pytest
from dask.distributed import LocalCluster

from fairplace import cli
from fairplace.instances.suites import SUITE_DIR
from fairplace.runs.batch import local_cluster, read_journal, run_batch, solve_task, to_frame


@pytest.fixture(scope="module")
def scheduler():
    cluster = local_cluster(2, tls=False)  # an external scheduler without TLS
    yield cluster.scheduler_address
    cluster.close()


@pytest.mark.slow
def test_folder_suite_on_external_scheduler(tmp_path, scheduler, capsys):
    suite = tmp_path / "suite"
    assert cli.main(["instances", "generate", "small", "--out", str(suite)]) == 0
    out = tmp_path / "res.csv"
    argv = ["batch", str(suite), "--scheduler-address", scheduler, "--out", str(out)]
    assert cli.main([*argv, "--no-progress"]) == 0
    df = pd.read_csv(out)
    assert len(df) == 24 and set(df["solver"]) == {"exact"}
    assert set(df["status"]) == {"optimal"}
    assert (df["gap"].abs() < 1e-6).all()
    assert {"apps", "jobs", "gpus", "machines", "contention", "seed", "bids_per_app"} <= set(df)
    # resuming a finished batch submits nothing and keeps every row once
    assert cli.main([*argv, "--resume", "--no-progress"]) == 0
    assert len(pd.read_csv(out)) == 24
    assert "24 rows" in capsys.readouterr().out
    assert cli.main([*argv, "--resume", "--no-progress", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"] == 24 and doc["out"] == str(out)
    assert sum(r["rows"] for r in doc["summary"]) == 24


def test_failures_become_rows(tmp_path, scheduler):
    good = json.loads((SUITE_DIR / "small" / "small-00-auction.json").read_text())
    bad = dict(good, apps=[dict(good["apps"][0], bids=[{"gpus": ["nope"], "rho": 1.0}])])
    items = [("good", good), ("bad", bad)]
    out = tmp_path / "r.jsonl"
    df = run_batch(items, solvers=["exact"], scheduler_address=scheduler, out=out, progress=False)
    by = df.set_index("instance")
    assert by.loc["good", "status"] == "optimal"
    assert by.loc["bad", "status"] == "error"
    assert "$.apps[0].bids[0].gpus[0]" in by.loc["bad", "message"]
    assert len(read_journal(out)) == 2


def test_exact_row_is_the_reference_when_no_optimum_is_stored():
    rows = [
        {
            "instance": "i",
            "kind": "placement",
            "solver": "exact",
            "status": "optimal",
            "objective": 4.0,
        },
        {
            "instance": "i",
            "kind": "placement",
            "solver": "h",
            "status": "heuristic",
            "objective": 5.0,
        },
        {
            "instance": "k",
            "kind": "auction",
            "solver": "exact",
            "status": "optimal",
            "objective": -0.5,
        },
        {
            "instance": "k",
            "kind": "auction",
            "solver": "h",
            "status": "heuristic",
            "objective": -0.7,
        },
    ]
    df = to_frame(rows).set_index(["instance", "solver"])
    assert df.loc[("i", "h"), "gap"] == pytest.approx(0.25)
    assert df.loc[("k", "h"), "gap"] == pytest.approx(0.2)
    assert df.loc[("i", "exact"), "gap"] == 0.0


def test_solve_task_never_raises():
    row = solve_task("x", "exact", {"kind": "auction"})
    assert row["status"] == "error" and "$" in row["message"]


def test_rows_worse_on_the_lexicographic_first_part_get_no_gap():
    rows = [
        {
            "instance": "p",
            "kind": "placement",
            "solver": "exact",
            "status": "optimal",
            "objective": 6.0,
            "placed": 3,
        },
        {
            "instance": "p",
            "kind": "placement",
            "solver": "h",
            "status": "heuristic",
            "objective": 2.0,
            "placed": 2,
        },
        {
            "instance": "q",
            "kind": "auction",
            "solver": "h",
            "status": "heuristic",
            "objective": 3.0,
            "unserved_unbounded": 1,
            "optimum": 1.0,
            "optimum_unserved_unbounded": 0,
        },
    ]
    df = to_frame(rows).set_index(["instance", "solver"])
    assert pd.isna(df.loc[("p", "h"), "gap"]) and pd.isna(df.loc[("q", "h"), "gap"])
    assert df.loc[("p", "exact"), "gap"] == 0.0


def test_time_limit_becomes_a_row_with_its_status(monkeypatch):
    import fairplace
    from fairplace.instances import suites
    from fairplace.solvers.budget import Budget

    # a budget already spent when the solve starts, whatever the machine's speed
    spent = Budget(1.0, start=0.0, clock=lambda: 1e9)
    real_solve = fairplace.solve
    monkeypatch.setattr(fairplace, "solve", lambda *a, **k: real_solve(*a, **k, budget=spent))
    payload = dict(suites.suite_items("large"))["placement-64j-s0"]
    row = solve_task("p", "exact", payload, time_limit=1.0)
    assert row["status"] == "time_limit" and row["message"]
    assert row["jobs"] == 64 and row["gpus"] == 256


def test_resume_reruns_infrastructure_errors_only(tmp_path, scheduler):
    good = json.loads((SUITE_DIR / "small" / "small-00-auction.json").read_text())
    out = tmp_path / "r.jsonl"
    out.write_text(
        json.dumps(
            {"instance": "a", "solver": "exact", "status": "error", "message": "KilledWorker: x"}
        )
        + "\n"
        + json.dumps({"instance": "b", "solver": "exact", "status": "error", "message": "bad"})
        + "\n"
        + '{"instance": "c", "sol'  # torn line from a crash mid-write
    )
    items = [("a", good), ("b", good), ("c", good)]
    df = run_batch(items, scheduler_address=scheduler, out=out, resume=True, progress=False)
    by = df.set_index("instance")["status"].to_dict()
    assert by == {"a": "optimal", "b": "error", "c": "optimal"}
    assert len(read_journal(out)) == 4 and out.read_text().endswith("\n")


def test_a_cluster_without_workers_stops_with_a_clear_error(tmp_path, capsys):
    # Dask would wait forever for a worker; the batch gives up after --no-workers-timeout seconds
    empty = LocalCluster(
        n_workers=0, host="127.0.0.1", dashboard_address=None, silence_logs=logging.CRITICAL
    )
    try:
        out = tmp_path / "res.parquet"
        argv = ["batch", "small", "--scheduler-address", empty.scheduler_address, "--out", str(out)]
        assert cli.main([*argv, "--no-progress", "--no-workers-timeout", "1.5"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "no Dask worker for 1.5 s" in err
        assert "--resume" in err and (tmp_path / "res.parquet.jsonl").exists()
    finally:
        empty.close()
    with pytest.raises(SystemExit) as bad:  # a bad flag fails at parse time, as argparse does
        cli.main(["batch", "small", "--no-workers-timeout", "0"])
    assert bad.value.code == 2 and "--no-workers-timeout" in capsys.readouterr().err


def test_tiny_tasks_share_dask_tasks_and_every_row_is_journaled(tmp_path, scheduler):
    # heuristics and policies on small instances are "tiny": they travel in chunks, yet each pair
    # gets its own row (skipped where the solver does not take the instance's kind)
    from fairplace.runs.batch import resolve_suite

    items = resolve_suite("small")
    solvers = ["greedy-log", "greedy-rho", "pal", "pm-first"]
    out = tmp_path / "r.jsonl"
    df = run_batch(items, solvers=solvers, scheduler_address=scheduler, out=out, progress=False)
    how = df.attrs["batch"]
    assert how["mode"] == "scheduler" and how["tasks"] == len(items) * len(solvers)
    assert how["dask_tasks"] < how["tasks"]
    keys = [(r["instance"], r["solver"]) for r in read_journal(out)]
    assert sorted(keys) == sorted((n, s) for n, _ in items for s in solvers)
    assert set(df["status"]) <= {"heuristic", "skipped"}
