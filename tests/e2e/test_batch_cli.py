"""``fairplace batch``: kill part-way (SIGINT, then SIGKILL), resume, every row exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from fairplace import cli
from fairplace.runs.batch import journal_path, read_journal, resolve_suite
from fairplace.runs.batch_plan import in_process_rule, task_efforts

SOLVERS = "exact,pyomo"

#: The small suite is solved in-process (its estimated effort is below the in-process rule) and can
#: finish within one journal poll on a loaded machine; each task is paced by 0.1 s so that the run
#: is still going when the test interrupts it (pacing, not a time limit: no result depends on it).
PACED = (
    "import sys, time; import fairplace.runs.batch as b; real = b.solve_task; "
    "b.solve_task = lambda *a, **k: (time.sleep(0.1), real(*a, **k))[1]; "
    "from fairplace.cli import main; sys.exit(main(sys.argv[1:]))"
)


def _start(out: Path, *extra: str) -> subprocess.Popen:
    cmd = [sys.executable, "-c", PACED, "batch", "small", "--solvers", SOLVERS]
    cmd += ["--workers", "2", "--out", str(out), "--no-progress", *extra]
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, text=True
    )


def _wait_rows(journal: Path, proc: subprocess.Popen, more_than: int, timeout=90.0) -> int:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        n = len(read_journal(journal))
        if n > more_than or proc.poll() is not None:
            return n
        time.sleep(0.02)
    raise AssertionError("no rows appeared in the journal")


def _keys(journal: Path) -> list[tuple[str, str]]:
    return [(r["instance"], r["solver"]) for r in read_journal(journal)]


@pytest.mark.slow
def test_batch_killed_then_resumed_has_every_row_exactly_once(tmp_path):
    out = tmp_path / "res.parquet"
    journal = journal_path(out)
    total = 24 * 2

    # PACED reaches in-process solves only (not a Dask worker's): the batch must stay in-process
    todo = [(n, s, p) for n, p in resolve_suite("small") for s in SOLVERS.split(",")]
    assert in_process_rule(len(todo), sum(task_efforts(todo)), 2, None)[0]

    # 1. Ctrl-C part-way: exit 130, the rows written so far are intact
    proc = _start(out)
    seen = _wait_rows(journal, proc, 2)
    assert proc.poll() is None, proc.communicate()
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "--resume" in err
    first = _keys(journal)
    assert seen <= len(first) < total
    assert len(set(first)) == len(first)

    # 2. without --resume an existing journal is refused (exit 2, one line)
    proc = _start(out)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "--resume" in err and "Traceback" not in err

    # 3. resume, then SIGKILL the whole process group (client and workers) part-way
    proc = _start(out, "--resume")
    _wait_rows(journal, proc, len(first) + 1)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    second = _keys(journal)
    assert second[: len(first)] == first

    # 4. resume to the end
    proc = _start(out, "--resume")
    stdout, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    keys = _keys(journal)
    assert len(keys) == total and len(set(keys)) == total
    df = pd.read_parquet(out)
    assert len(df) == total
    assert not df.duplicated(["instance", "solver"]).any()
    assert set(df["status"]) == {"optimal"}
    assert (df["gap"].abs() < 1e-6).all()  # against the stored brute-force optimum
    assert json.loads(journal.read_text().splitlines()[0])["instance"].startswith("small-")


def test_batch_bad_input_is_one_line_exit_2(tmp_path, capsys):
    out = ["--out", str(tmp_path / "o.csv")]
    for argv, field in (
        ([str(tmp_path / "nope")], "SUITE"),
        (["small", "--solvers", "nosuch"], "nosuch"),
        (["small", "--workers", "0"], "--workers"),
        (["small", "--time-limit", "-1"], "--time-limit"),
        (["small", "--scheduler-address", "nohost"], "--scheduler-address"),
    ):
        try:
            code = cli.main(["batch", *argv, *out])
        except SystemExit as exc:  # a flag's spec (--workers): argparse exits
            code = exc.code
        assert code == 2, argv
        err = capsys.readouterr().err
        assert field in err and len(err.strip().splitlines()) == 1, err
    with pytest.raises(SystemExit) as exc:  # argparse: the two ways to run are exclusive
        cli.main(["batch", "small", "--workers", "2", "--scheduler-address", "x"])
    assert exc.value.code == 2
    assert "not allowed" in capsys.readouterr().err
