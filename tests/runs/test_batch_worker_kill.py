"""``fairplace batch`` survives the loss of one Dask worker mid-batch.

A batch runs as a CLI process against an external two-worker cluster; once the journal holds a few
rows, the test SIGKILLs the OS process of a worker that is running a solve. Dask reschedules the lost
tasks (on the surviving worker or the one the nanny restarts), the batch exits 0 without a
traceback, every (instance, solver) row appears exactly once, the rows journaled before the kill are
kept untouched, and every objective equals a clean run's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from dask.distributed import Client

from fairplace.runs.batch import journal_path, local_cluster, read_journal, resolve_suite, run_batch

SOLVERS = ("exact", "pyomo")  # pyomo (~0.1 s a solve) leaves time to kill a worker part-way
PAIRS = [(name, s) for name, _ in resolve_suite("small") for s in SOLVERS]  # the batch's task order


@pytest.fixture
def cluster():
    """A fresh cluster per test: the test kills one of its workers (its nanny starts a new one)."""
    # the batch's own cluster shape (2 processes with nannies, 1 thread), plain TCP as an
    # external scheduler without TLS is (the CLI subprocess gets no credentials)
    cl = local_cluster(2, tls=False)
    client = Client(cl)
    yield cl, client
    client.close()
    cl.close()


def _wait_rows(journal: Path, proc: subprocess.Popen, at_least: int, timeout=60.0) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if len(read_journal(journal)) >= at_least or proc.poll() is not None:
            return
        time.sleep(0.005)
    raise AssertionError(f"fewer than {at_least} rows in the journal after {timeout} s")


def _kill_a_busy_worker(client: Client) -> str:
    """SIGKILL the OS process of a worker that is running a solve; return its address."""
    pids = client.run(os.getpid)
    busy = [
        addr
        for addr, keys in client.processing().items()
        if any(str(k).startswith("fairplace-solve-") for k in keys)
    ]
    assert busy, "no worker is running a solve"
    os.kill(pids[busy[0]], signal.SIGKILL)
    return busy[0]


def _lost_pairs(client: Client, victim: str) -> set[tuple[str, str]]:
    """(instance, solver) pairs the scheduler had in flight on ``victim`` when it removed it (not yet
    finished, so not yet journaled). Results already finished on ``victim`` but not yet gathered are
    lost too (Dask recomputes them: "Couldn't gather ... rescheduling"); the checks below cover
    them through the clean-run comparison."""
    removed = [
        ev
        for _, ev in client.get_events("all")
        if ev.get("action") == "remove-worker" and ev.get("worker") == victim
    ]
    assert len(removed) == 1, removed
    assert not removed[0]["expected"]  # a crash, not a graceful retirement
    keys = [str(k) for k in removed[0]["processing-tasks"]]
    # batch keys are fairplace-solve-<run id>-<position in the task list>
    return {PAIRS[int(k.rsplit("-", 1)[1])] for k in keys if k.startswith("fairplace-solve-")}


def _objectives(df: pd.DataFrame) -> dict[tuple[str, str], float]:
    return {(r.instance, r.solver): r.objective for r in df.itertuples()}


@pytest.mark.slow
def test_batch_survives_a_killed_worker(tmp_path, cluster):
    cl, client = cluster
    total = len(PAIRS)
    clean = run_batch(
        "small",
        solvers=SOLVERS,
        scheduler_address=cl.scheduler_address,
        out=tmp_path / "clean.parquet",
        progress=False,
    )
    assert len(clean) == total and set(clean["status"]) == {"optimal"}

    def pace() -> None:  # each solve on these workers waits 0.2 s first (results unchanged)
        import fairplace

        real = fairplace.solve
        fairplace.solve = lambda *a, **k: (time.sleep(0.2), real(*a, **k))[1]

    # paced, the batch is still running (and a worker busy) when the test kills one, however fast
    # the machine: 48 solves on 2 workers take >= 4.8 s and the kill comes 3 rows in
    client.run(pace)
    out = tmp_path / "res.parquet"
    journal = journal_path(out)
    cmd = [sys.executable, "-m", "fairplace.cli", "batch", "small", "--solvers", ",".join(SOLVERS)]
    cmd += ["--scheduler-address", cl.scheduler_address, "--out", str(out), "--no-progress"]
    # cwd: a folder without a fairplace/ in it, so `-m` imports the installed package
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        _wait_rows(journal, proc, 3)
        assert proc.poll() is None, proc.communicate()
        victim = _kill_a_busy_worker(client)
        before = read_journal(journal)  # rows finished before the kill
        stdout, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()

    # (a) the batch completes: exit 0, no traceback, and the killed worker's tasks ran elsewhere
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    assert f"{total} rows" in stdout
    lost = _lost_pairs(client, victim)
    assert lost, "the killed worker had no solve in flight"
    assert victim not in client.scheduler_info()["workers"]
    assert len(before) < total
    assert all(r["wall_seconds"] >= 0.2 for r in before)  # the pacing was in force

    # (b) every (instance, solver) row exactly once, in the journal and in the table
    rows = read_journal(journal)
    keys = [(r["instance"], r["solver"]) for r in rows]
    assert len(keys) == total and set(keys) == set(PAIRS)
    df = pd.read_parquet(out)
    assert len(df) == total and not df.duplicated(["instance", "solver"]).any()
    assert set(df["status"]) == {"optimal"}, df[df["status"] != "optimal"][["instance", "message"]]

    # (c) rows finished before the kill are kept as they were; the lost ones were solved afterwards
    assert rows[: len(before)] == before
    assert lost.isdisjoint((r["instance"], r["solver"]) for r in before)
    # every objective equals the clean run's (and the stored brute-force optimum)
    assert _objectives(df) == pytest.approx(_objectives(clean), rel=1e-9, abs=1e-9)
    assert (df["gap"].abs() < 1e-6).all()
