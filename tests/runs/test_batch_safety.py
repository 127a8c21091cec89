"""Batch and sweep durability and safety: one run per output file (lock), damaged journal
lines skipped and reported, unknown table extensions refused, temporary journals removed, no Dask
HTTP endpoint, and Ctrl-C as one line with exit 130."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from fairplace.cli import main
from fairplace.core.errors import OptionError
from fairplace.runs.batch import journal_path, read_journal, resolve_suite, run_batch
from fairplace.runs.batch_results import JournalLock, scan_journal
from fairplace.runs.sweep import results_paths, run_sweep

SOLVER = "greedy-rho"
NAMES = [n for n, _ in resolve_suite("small")]


def _done_journal(path: Path) -> list[dict]:
    """A journal in which every (small instance, greedy-rho) pair is finished: resuming it starts
    no cluster."""
    rows = [
        {
            "instance": n,
            "solver": SOLVER,
            "kind": "auction",
            "status": "heuristic",
            "objective": 1.0,
        }
        for n in NAMES
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


BAD_LINES = [b"5", b"[1, 2]", b'"text"', b'{"solver": "exact"}', b'{"instance": 3, "solver": "x"}',
             b"\xff\xfe{}", b"not json", b"{" * 5000 + b"}" * 5000,
             b'{"instance": "a", "solver": "b", "objective": "abc"}',  # the results table computes
             b'{"instance": "a", "solver": "b", "seconds": true}']  # fmt: skip


def test_scan_journal_skips_and_describes_bad_lines(tmp_path):
    j = tmp_path / "r.jsonl"
    rows = _done_journal(j)
    with open(j, "ab") as f:
        f.write(b"\n".join(BAD_LINES) + b"\n" + b'{"instance": "torn')  # + a torn last line
    got, problems = scan_journal(j)
    assert got == rows
    assert len(problems) == len(BAD_LINES)  # the torn last line is a crash trace, not damage
    assert problems[0] == f"line {len(rows) + 1}: not a JSON object"
    assert any("not UTF-8" in p for p in problems) and any("not JSON" in p for p in problems)
    assert any("no 'instance'" in p for p in problems)
    assert any("'objective' is not a number ('abc')" in p for p in problems)


def test_resume_re_solves_a_row_whose_objective_is_not_a_number(tmp_path):
    """A row whose objective is not a number (``"objective": "abc"`` in the journal) is solved again
    by ``batch --resume``, not an exit 1."""
    out = tmp_path / "r.csv"
    rows = _done_journal(journal_path(out))
    lines = journal_path(out).read_text().splitlines()
    lines[0] = json.dumps({**rows[0], "objective": "abc"})
    journal_path(out).write_text("\n".join(lines) + "\n")
    p = subprocess.run(
        [sys.executable, "-m", "fairplace.cli", "batch", "small", "--solvers", SOLVER,
         "--out", str(out), "--resume", "--no-progress"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip().splitlines() == [
        f"fairplace batch: skipped 1 unreadable line(s) of {journal_path(out)} "
        "(line 1: 'objective' is not a number ('abc'))"
    ]
    import pandas as pd

    df = pd.read_csv(out)
    row = df[df["instance"] == rows[0]["instance"]].iloc[0]
    assert row["status"] == "heuristic" and row["objective"] == row["objective"]  # a number
    journal = journal_path(out).read_text().splitlines()
    assert len(journal) == len(rows) + 1  # the damaged pair was solved again and journaled
    assert json.loads(journal[-1])["instance"] == rows[0]["instance"]


def test_resume_skips_bad_lines_and_reports_them_once(tmp_path, caplog):
    out = tmp_path / "r.csv"
    j = journal_path(out)
    rows = _done_journal(j)
    with open(j, "ab") as f:
        f.write(b"\n".join(BAD_LINES) + b"\n")
    with caplog.at_level(logging.WARNING, logger="fairplace.runs.batch"):
        df = run_batch("small", solvers=[SOLVER], out=out, resume=True, progress=False)
    assert sorted(df["instance"]) == sorted(r["instance"] for r in rows)  # no bogus rows
    warnings = [r for r in caplog.records if r.name == "fairplace.runs.batch"]
    assert len(warnings) == 1 and f"skipped {len(BAD_LINES)} unreadable line" in warnings[0].message
    assert out.exists() and not (tmp_path / "r.csv.jsonl.lock").exists()


def test_cli_reports_bad_journal_lines_on_one_line(tmp_path):
    out = tmp_path / "r.csv"
    _done_journal(journal_path(out))
    with open(journal_path(out), "ab") as f:
        f.write(b"[1]\n")
    p = subprocess.run(
        [sys.executable, "-m", "fairplace.cli", "batch", "small", "--solvers", SOLVER,
         "--out", str(out), "--resume", "--no-progress"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip().splitlines() == [
        f"fairplace batch: skipped 1 unreadable line(s) of {journal_path(out)} "
        f"(line {len(NAMES) + 1}: not a JSON object)"
    ]


def test_second_batch_on_the_same_out_exits_2_naming_the_first(tmp_path, capsys):
    out = tmp_path / "r.parquet"
    with JournalLock(journal_path(out)):  # a running batch holds the journal
        code = main(["batch", "small", "--solvers", SOLVER, "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert f"pid {os.getpid()} on {socket.gethostname()}" in err and "--out" in err
    assert not journal_path(out).exists()  # nothing was solved twice


def test_lock_of_a_dead_process_is_taken_over(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    out = tmp_path / "r.csv"
    lock = tmp_path / "r.csv.jsonl.lock"
    owner = tmp_path / "r.csv.jsonl.lock.owner"
    lock.write_text("")  # left behind by the dead run, no flock on it
    owner.write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(), "started": "x"}))
    _done_journal(journal_path(out))
    df = run_batch("small", solvers=[SOLVER], out=out, resume=True, progress=False)
    assert len(df) == len(NAMES) and not lock.exists() and not owner.exists()
    with JournalLock(journal_path(out)) as held:  # and the owner file names its live owner
        assert json.loads(held.owner_path.read_text())["pid"] == os.getpid()
        with pytest.raises(OptionError) as exc:
            JournalLock(journal_path(out)).__enter__()
        assert f"pid {os.getpid()}" in str(exc.value)


def test_second_sweep_on_the_same_out_is_refused(tmp_path):
    spec = {"schedulers": ["fifo"], "placements": ["pal"], "traces": ["workload-1"]}
    out = tmp_path / "sw.parquet"
    with JournalLock(results_paths(out)["csv"]), pytest.raises(OptionError) as exc:
        run_sweep(spec, out, progress=False, simulate=lambda **kw: None)
    assert "in use" in str(exc.value) and not results_paths(out)["csv"].exists()


def test_unknown_table_extension_is_refused_before_running(tmp_path):
    with pytest.raises(OptionError) as exc:
        run_batch("small", solvers=[SOLVER], out=tmp_path / "res.txt", progress=False)
    assert exc.value.path == "--out" and ".txt" in exc.value.problem
    assert list(tmp_path.iterdir()) == []


def test_temporary_journal_folder_is_removed(monkeypatch, tmp_path):
    made = []
    real = tempfile.mkdtemp

    def spy(*a, **kw):
        made.append(Path(real(*a, dir=tmp_path, **{k: v for k, v in kw.items() if k != "dir"})))
        return str(made[-1])

    monkeypatch.setattr(tempfile, "mkdtemp", spy)
    df = run_batch([], solvers=[SOLVER], progress=False)
    assert df.empty and len(made) == 1 and not made[0].exists()


def test_local_cluster_serves_no_http_and_workers_ignore_ctrl_c():
    from dask.distributed import Client

    from fairplace.runs.dask_cluster import close_quietly, local_cluster

    cluster = local_cluster(1)
    client = Client(cluster)
    try:
        bound = [s.getsockname() for s in cluster.scheduler.http_server._sockets.values()]
        assert bound and all(host == "127.0.0.1" and port != 8787 for host, port in bound)
        for path in ("/health", "/status", "/info/main/workers.html", "/metrics"):
            with pytest.raises(urllib.error.HTTPError) as exc:
                urllib.request.urlopen(f"http://127.0.0.1:{bound[0][1]}{path}", timeout=30)
            assert exc.value.code == 404
        handlers = client.run(lambda: signal.getsignal(signal.SIGINT))
        assert set(handlers.values()) == {signal.SIG_IGN}
        # the worker imported the solver stack as it started (preload), before any task
        loaded = client.run(lambda: "fairplace.solvers.compact" in __import__("sys").modules)
        assert set(loaded.values()) == {True}
    finally:
        close_quietly(client, cluster)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the parent's is back


#: ``fairplace batch`` whose driver-side solves (:class:`~fairplace.runs.batch_worker.DriverSlot`, the
#: process's own solver thread) wait until the batch stops: the batch cannot finish before the test's
#: Ctrl-C, however fast the machine (with the medium suite as it is, a loaded machine could solve it
#: all in the driver while the cluster started, and the Ctrl-C came after the end). The Dask worker
#: solves as usual (it runs the real ``solve_task``, which ``fairplace.runs.batch`` bound at import).
HELD = (
    "import sys, time; import fairplace.runs.batch; from fairplace.runs import batch_worker as w; "
    "slots = []; init = w.DriverSlot.__init__; "
    "w.DriverSlot.__init__ = lambda self, *a: (init(self, *a), slots.append(self))[0]; "
    "real = w.solve_task\n"
    "def held(*a):\n"
    "    while not slots[0]._stopped.is_set(): time.sleep(0.01)\n"
    "    return real(*a)\n"
    "w.solve_task = held; from fairplace.cli import main; sys.exit(main(sys.argv[1:]))"
)


@pytest.mark.slow
def test_ctrl_c_closes_the_cluster_quietly(tmp_path):
    """SIGINT to the whole process group (what a terminal's Ctrl-C does), mid-batch."""
    out = tmp_path / "r.parquet"
    p = subprocess.Popen(
        [sys.executable, "-c", HELD, "batch", "medium", "--solvers", "exact,pyomo",
         "--workers", "2", "--out", str(out), "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    t0 = time.monotonic()  # waits for the Dask worker's first row (not a timing assertion)
    while len(read_journal(journal_path(out))) < 1:
        assert p.poll() is None, p.communicate()  # it cannot end before the Ctrl-C (HELD)
        assert time.monotonic() - t0 < 600, "no row journaled"
        time.sleep(0.01)
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=600)
    assert p.returncode == 130
    assert err.strip().splitlines() == [
        f"fairplace batch: interrupted; finished rows are in {journal_path(out)} "
        "(rerun with --resume)"
    ]
    assert read_journal(journal_path(out))  # the finished rows are kept
    assert not Path(str(journal_path(out)) + ".lock").exists()


def test_ctrl_c_during_the_close_is_delivered_after_it():
    """A SIGINT while the cluster closes (which can overlap the driver's last solves) is neither
    lost nor raised half-way: both objects close, then KeyboardInterrupt."""
    from fairplace.runs.dask_cluster import close_quietly

    closed = []

    class Interrupted:
        def close(self):
            os.kill(os.getpid(), signal.SIGINT)  # a Ctrl-C, mid-close
            closed.append("client")

    class Cluster:
        def close(self):
            closed.append("cluster")

    with pytest.raises(KeyboardInterrupt):
        close_quietly(Interrupted(), Cluster())
    assert closed == ["client", "cluster"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
