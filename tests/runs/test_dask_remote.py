"""Sweeps and reproductions on a separately started ``dask scheduler`` + ``dask worker`` (loopback,
TLS with files given through the Dask configuration), and local clusters over TLS: the same
journal and resume guarantees as a sequential run (a worker lost mid-cell loses no finished cell)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from fairplace.runs.batch_results import read_journal
from fairplace.runs.sweep import results_paths, run_sweep

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SPEC = """
name = "remote"
schedulers = ["fifo"]
placements = ["packed-sticky", "pal"]
traces = ["synergy"]
seeds = [0, 1]
[fixed]
n_jobs = 12
jobs_per_hour = 8.0
gpus = 16
"""


def _tls_files(folder: Path) -> dict[str, Path]:
    from distributed.security import Security

    sec = Security.temporary()  # PEM text: one self-signed certificate and its key
    files = {"cert": folder / "cert.pem", "key": folder / "key.pem"}
    files["cert"].write_text(sec.tls_ca_file)
    files["key"].write_text(sec.tls_client_key)
    files["key"].chmod(0o600)
    return files


def _scheduler_info(path: Path) -> dict | None:
    """The scheduler file's contents once it is complete (None while missing or half-written)."""
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """``dask scheduler`` + ``dask worker`` (2 single-thread processes with nannies) on 127.0.0.1,
    TLS; a task whose worker dies is given up at once (allowed-failures 0)."""
    tmp = tmp_path_factory.mktemp("dask")
    tls = _tls_files(tmp)
    flags = ["--tls-ca-file", str(tls["cert"]), "--tls-cert", str(tls["cert"]),
             "--tls-key", str(tls["key"]), "--no-dashboard"]  # fmt: skip
    sched_file = tmp / "scheduler.json"
    # the stand-in simulators below travel by reference: the scheduler and workers import this file
    path = os.pathsep.join(
        filter(None, [str(Path(__file__).resolve().parent), os.environ.get("PYTHONPATH")])
    )
    env = dict(os.environ, DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES="0", PYTHONPATH=path)
    dask = [sys.executable, "-m", "dask"]
    procs = [
        subprocess.Popen(
            [*dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--protocol", "tls",
             "--scheduler-file", str(sched_file), *flags],
            env=env, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    ]  # fmt: skip
    t0 = time.monotonic()
    while (info := _scheduler_info(sched_file)) is None:  # dask writes the file non-atomically
        assert time.monotonic() - t0 < 120, "the scheduler did not start"
        time.sleep(0.1)
    procs.append(
        subprocess.Popen(
            [*dask, "worker", "--scheduler-file", str(sched_file), "--nworkers", "2",
             "--nthreads", "1", "--host", "127.0.0.1", *flags],
            env=env, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: the nannies' workers go with it
        )
    )  # fmt: skip
    address = info["address"]
    client_env = dict(
        os.environ,
        DASK_DISTRIBUTED__COMM__TLS__CA_FILE=str(tls["cert"]),
        DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT=str(tls["cert"]),
        DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY=str(tls["key"]),
    )
    yield SimpleNamespace(address=address, env=client_env, tls=tls)
    for p in reversed(procs):  # the workers, then the scheduler: each process group
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def _security(c):
    from distributed.security import Security

    cert, key = str(c.tls["cert"]), str(c.tls["key"])
    return Security(
        tls_ca_file=cert, tls_client_cert=cert, tls_client_key=key, require_encryption=True
    )


def _cli(args: list[str], env: dict, cwd: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "fairplace.cli", *args]
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)


def test_address_is_tls_and_plain_clients_are_refused(cluster, tmp_path):
    assert cluster.address.startswith("tls://127.0.0.1:")
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    bare = {k: v for k, v in cluster.env.items() if "DASK_DISTRIBUTED__COMM__TLS" not in k}
    p = _cli(["sweep", str(spec), "--scheduler-address", cluster.address, "--out",
              str(tmp_path / "r.parquet")], bare | {"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "5s"},
             tmp_path)  # fmt: skip
    assert p.returncode == 2, p.stderr  # no credentials: a one-line error naming the flag
    # progress lines (stderr is not a terminal: "<spec>: 0/4 started", "stopped at") aside, one line
    errors = [ln for ln in p.stderr.splitlines() if not ln.startswith("remote: ")]
    assert len(errors) == 1 and "--scheduler-address" in errors[0]


def test_sweep_on_a_separate_scheduler_matches_the_sequential_run(cluster, tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    out = tmp_path / "remote.parquet"
    args = ["sweep", str(spec), "--scheduler-address", cluster.address, "--out", str(out), "--json"]
    p = _cli([*args, "-v"], cluster.env, tmp_path)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["rows"] == 4
    assert "Dask scheduler tls://" in p.stderr  # --verbose: how the sweep ran
    remote = pd.read_parquet(out).sort_values("cell_id").reset_index(drop=True)
    here = run_sweep(str(spec), tmp_path / "here.parquet", progress=False)
    here = here.sort_values("cell_id").reset_index(drop=True)
    assert list(remote["cell_id"]) == list(here["cell_id"])
    for col in ("avg_jct", "makespan", "max_rho", "jobs"):
        assert remote[col].tolist() == pytest.approx(here[col].tolist(), rel=1e-9)
    journal = read_journal(results_paths(out)["jsonl"], ())
    p = _cli([*args, "--resume"], cluster.env, tmp_path)  # nothing left to run
    assert p.returncode == 0, p.stderr
    assert read_journal(results_paths(out)["jsonl"], ()) == journal


def test_reproduce_on_a_separate_scheduler(cluster, tmp_path):
    out = tmp_path / "report"
    p = _cli(["reproduce", "pal", "--tiny", "--scheduler-address", cluster.address, "--out",
              str(out), "--json"], cluster.env, tmp_path)  # fmt: skip
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    claims = {c["id"]: c for c in doc["claims"]}
    assert "pal-sia-geomean" in claims  # judged, or "not run at this size" (tiny: fewer workloads)
    journal = out / "data" / "pal-sia_philly.jsonl"  # the Sia-Philly sweep ran there
    assert journal.exists() and journal.read_text().count("\n") >= 1
    assert Path(doc["report"]["html"]).exists()


def _lethal(trace=None, seed=0, **kw):
    """A stand-in simulator whose seed-2 cell kills its worker process."""
    if seed == 2:
        os._exit(17)
    return SimpleNamespace(summary={"avg_jct": 100.0 + seed}, jobs=None, apps=None, rounds=None)


def _fine(trace=None, seed=0, **kw):
    return SimpleNamespace(summary={"avg_jct": 100.0 + seed}, jobs=None, apps=None, rounds=None)


def test_a_worker_lost_mid_cell_loses_no_finished_cell(cluster, tmp_path):
    spec = {"name": "lost", "schedulers": ["fifo"], "placements": ["pal"],
            "traces": ["workload-1"], "seeds": [0, 1, 2, 3, 4, 5]}  # fmt: skip
    out = tmp_path / "lost.parquet"
    kw = {"scheduler_address": cluster.address, "security": _security(cluster), "progress": False}
    df = run_sweep(spec, out, simulate=_lethal, **kw).set_index("seed")
    assert len(df) == 6  # every cell has a row: none hangs, none is dropped
    assert df.loc[2, "status"] == "error" and df.loc[2, "message"].startswith("KilledWorker")
    lost = set(df.index[df["status"] == "error"])
    assert all(df.loc[s, "message"].startswith("KilledWorker") for s in lost)
    finished = {
        r["cell_id"]: r
        for r in read_journal(results_paths(out)["jsonl"], ())
        if r["status"] == "ok"
    }
    assert finished and {r["seed"] for r in finished.values()} == set(df.index) - lost
    # --resume runs the lost cells again (the worker's fault, not the cell's) and keeps the rest
    again = run_sweep(spec, out, simulate=_fine, resume=True, **kw).set_index("seed")
    assert (again["status"] == "ok").all() and again.loc[2, "avg_jct"] == 102.0
    rows = {r["cell_id"]: r for r in read_journal(results_paths(out)["jsonl"], ())}
    assert all(rows[cid] == r for cid, r in finished.items())  # finished cells untouched


def test_a_local_cluster_admits_only_its_own_clients():
    """A local cluster talks TLS with credentials of its own: its client and workers connect, a
    client without them (another user of the machine) cannot."""
    from dask.distributed import Client

    from fairplace.runs.dask_cluster import close_quietly, local_cluster

    cluster = local_cluster(1, preload=False)
    client = Client(cluster)
    try:
        assert cluster.scheduler_address.startswith("tls://127.0.0.1:")
        assert client.submit(sum, [1, 2], pure=False).result() == 3
        with pytest.raises((OSError, TypeError, TimeoutError)):
            Client(cluster.scheduler_address, timeout="3s")  # no credentials
    finally:
        close_quietly(client, cluster)
