"""The contract's smaller rules: bench exit status, no plain-text cluster traffic by surprise,
the smaller items (CSV range before the cast, the file named on a failed write, --validate-only
against the entries' specs, SIGINT, journal checksums, stale locks)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from fairplace import cli
from fairplace.benchmarks import Case
from fairplace.commands import bench


def _fake_cases(target: float | None):
    return lambda: [("fake", "fake_case", Case(lambda quick: {"seconds": 0.01}, target))]


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_bench_exits_1_when_a_case_misses_its_target(monkeypatch, capsys, json_flag):
    """A case whose target is tiny misses it: exit 1; the same case with a wide target: exit 0."""
    monkeypatch.setattr(bench, "collect", _fake_cases(1e-9))
    assert cli.main(["bench", "--quick", "--quiet", *json_flag]) == 1
    out = capsys.readouterr().out
    if json_flag:
        assert json.loads(out)["ok"] is False
    monkeypatch.setattr(bench, "collect", _fake_cases(1e9))
    assert cli.main(["bench", "--quick", "--quiet", *json_flag]) == 0
    monkeypatch.setattr(bench, "collect", _fake_cases(None))  # no target: never a miss
    assert cli.main(["bench", "--quick", "--quiet", *json_flag]) == 0
    capsys.readouterr()


def test_bench_exits_1_when_a_case_fails(monkeypatch, capsys):
    def boom(quick):
        raise RuntimeError("no solver")

    monkeypatch.setattr(bench, "collect", lambda: [("fake", "bad", Case(boom, 1.0))])
    assert cli.main(["bench", "--quick", "--quiet"]) == 1
    assert "bad: error: RuntimeError: no solver" in capsys.readouterr().out


def test_bench_help_documents_the_exit_status(capsys):
    with pytest.raises(SystemExit):
        cli.main(["bench", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "exit status: 1 when any case that ran missed its target" in out


# -- no plain-text cluster traffic by surprise (item 4) ------------------------------------------

SPEC = 'name = "x"\nschedulers = ["fifo"]\nplacements = ["pal"]\ntraces = ["workload-1"]\n'


@pytest.mark.parametrize(
    ("address", "refused"),
    [
        ("tcp://192.0.2.1:8786", True),
        ("192.0.2.1:8786", True),  # no scheme: Dask's default is tcp
        ("ws://10.0.0.5:8786", True),
        ("tcp://scheduler.example:8786", True),  # a name is never resolved: not loopback
        ("tls://192.0.2.1:8786", False),
        ("tcp://127.0.0.1:8786", False),
        ("tcp://127.3.2.1:8786", False),
        ("tcp://localhost:8786", False),
        ("tcp://[::1]:8786", False),
        ("inproc://192.0.2.1/1/2", False),
    ],
)
def test_plain_text_to_another_host_is_refused(address, refused):
    from fairplace.core.errors import OptionError
    from fairplace.runs.dask_cluster import KnowinglyInsecure, checked_address

    if refused:
        with pytest.raises(OptionError, match="--allow-insecure to accept it knowingly"):
            checked_address(address)
        assert isinstance(checked_address(address, allow_insecure=True), KnowinglyInsecure)
    else:
        assert checked_address(address) == address


@pytest.fixture
def no_client(monkeypatch):
    """dask's Client records the address it was given and stops there (nothing is connected)."""
    import distributed

    seen = []

    def client(address, *a, **k):
        seen.append(address)
        raise OSError("connection refused (test)")

    monkeypatch.setattr(distributed, "Client", client)
    monkeypatch.setattr("dask.distributed.Client", client)
    return seen


@pytest.mark.parametrize("command", ["sweep", "batch", "reproduce"])
def test_cli_refuses_plain_tcp_to_192_0_2_1_without_connecting(
    tmp_path, capsys, no_client, command
):
    seen = no_client
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    target = {"sweep": [str(spec)], "batch": ["tiny"], "reproduce": ["pal", "--tiny"]}[command]
    out = ["--out", str(tmp_path / ("r" if command == "reproduce" else "r.parquet"))]
    argv = [command, *target, *out, "--scheduler-address", "tcp://192.0.2.1:8786"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and seen == []
    assert "--scheduler-address: 'tcp://192.0.2.1:8786' is plain tcp:// to 192.0.2.1" in err
    assert "use tls://192.0.2.1:8786" in err and "--allow-insecure" in err


def test_allow_insecure_hands_the_address_on_knowingly(tmp_path, capsys, no_client):
    from fairplace.runs.dask_cluster import KnowinglyInsecure

    seen = no_client
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    argv = ["sweep", str(spec), "--out", str(tmp_path / "r.parquet"), "--allow-insecure"]
    assert cli.main([*argv, "--scheduler-address", "tcp://192.0.2.1:8786"]) == 2
    assert "cannot connect to 'tcp://192.0.2.1:8786': connection refused" in capsys.readouterr().err
    assert seen == ["tcp://192.0.2.1:8786"] and isinstance(seen[0], KnowinglyInsecure)


# -- the smaller items (item 5) -------------------------------------------------------------------


def test_validate_only_checks_options_against_each_entrys_spec(tmp_path, capsys):
    """An option the scheduler or the placement policy does not take, or a value outside its
    spec, is exit 2 at --validate-only (it used to pass, and the run then failed cell by cell)."""
    spec = tmp_path / "s.toml"
    cases = [
        ('schedulers = ["fifo", "themis"]\n[fixed]\nscheduler_options = {f = 0.5}\n', 2,
         "fixed.scheduler_options.f: unknown option of scheduler 'fifo'"),
        ('schedulers = ["themis"]\n[fixed]\nscheduler_options = {f = 0.5}\n', 0, "2 cells"),
        ('schedulers = ["themis"]\n[params]\n"scheduler_options.lease" = [60.0, -1.0]\n', 2,
         "params.scheduler_options.lease"),
        ('schedulers = ["fifo"]\n[fixed]\nplacement_options = {wieght = 1}\n', 2,
         "fixed.placement_options.wieght: unknown option of placement policy 'pal'"),
    ]  # fmt: skip
    for body, code, text in cases:
        spec.write_text(
            'name = "x"\nplacements = ["pal", "packed-sticky"]\ntraces = ["workload-1"]\n' + body
        )
        assert cli.main(["sweep", str(spec), "--validate-only"]) == code, body
        out, err = capsys.readouterr()
        assert text in (err if code else out), (body, err)


SIGINT_SCRIPT = r"""
import ctypes, sys
from fairplace.runs.sweep import run_sweep

def stuck(**kw):  # native code that never returns and holds no GIL (a long HiGHS solve, say)
    mutex = ctypes.create_string_buffer(64)  # zeroed: PTHREAD_MUTEX_INITIALIZER on glibc
    libc = ctypes.CDLL(None)
    libc.pthread_mutex_lock(mutex)
    print("started", flush=True)
    libc.pthread_mutex_lock(mutex)  # a deadlock: only the process's end stops it

spec = {"name": "s", "schedulers": ["fifo"], "placements": ["pal"], "traces": ["workload-1"],
        "seeds": [0, 1]}
try:
    run_sweep(spec, sys.argv[1], simulate=stuck, progress=False)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's pthread mutex")
def test_sigint_ends_a_sequential_sweep_stuck_in_native_code(tmp_path):
    """One SIGINT ends a sequential sweep whose cell sits in native code (the main thread waits
    for the cell in short joins); before, the sweep went on until the native call returned."""
    proc = subprocess.Popen(
        [sys.executable, "-c", SIGINT_SCRIPT, str(tmp_path / "r.parquet")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "started"
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)  # without the fix: never (a deadlocked cell)
        seconds = time.monotonic() - t0
    finally:
        proc.kill()
    assert proc.returncode == 130 and out.strip() == "interrupted", err
    assert not (tmp_path / "r.jsonl").exists() or (tmp_path / "r.jsonl").read_text() == ""
    print(f"SIGINT to exit: {seconds:.3f} s")


class _Result:
    def __init__(self, seed):
        self.summary = {"avg_jct": 100.0 + seed}


@pytest.fixture
def fake_simulate(monkeypatch):
    """``fairplace.simulate`` as the sweep calls it, instant; records the seeds it ran."""
    import fairplace.sim as sim_pkg

    ran = []

    def simulate(trace, seed, **kw):
        ran.append(seed)
        return _Result(seed)

    monkeypatch.setattr(sim_pkg, "simulate", simulate)
    return ran


def _sweep_spec(tmp_path, seeds=(0, 1, 2)):
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC + f"seeds = {list(seeds)}\n")
    return spec


def test_a_failed_journal_write_names_the_journal(tmp_path, capsys, monkeypatch, fake_simulate):
    """A full disk (or a file too large) while a row is journaled names <out>.jsonl, not the
    results table (the journal's buffered close used to fail again with no file named)."""
    import errno

    import fairplace.runs.batch_results as br

    class FullDisk:  # the journal module's os, whose write finds the disk full
        def __getattr__(self, name):
            return getattr(os, name)

        def write(self, fd, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(br, "os", FullDisk())
    out = tmp_path / "r.parquet"
    assert cli.main(["sweep", str(_sweep_spec(tmp_path)), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"fairplace sweep: error: {tmp_path / 'r.jsonl'}: No space left on device"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_append_rows_to_a_full_device_raises_once_naming_it():
    from fairplace.runs.batch_results import append_rows

    with open("/dev/full", "a") as f:  # the close must not fail again (nothing left buffered)
        with pytest.raises(OSError) as exc:
            append_rows(f, [{"instance": "a", "solver": "exact"}])
    assert exc.value.errno == 28 and exc.value.filename == "/dev/full"


def test_journal_rows_carry_a_checksum_and_a_tampered_row_runs_again(tmp_path, fake_simulate):
    """Each row's checksum covers its content; a row edited by hand (objective -1e308, say)
    fails it and is skipped like a damaged line, so --resume runs its cell again."""
    from fairplace.runs.batch_results import CHECKSUM_KEY, scan_journal
    from fairplace.runs.sweep import SWEEP_KEYS

    spec, out = _sweep_spec(tmp_path), tmp_path / "r.parquet"
    assert cli.main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    assert sorted(fake_simulate) == [0, 1, 2]
    journal = tmp_path / "r.jsonl"
    lines = journal.read_text().splitlines()
    assert all(CHECKSUM_KEY in json.loads(line) for line in lines)
    rows, problems = scan_journal(journal, SWEEP_KEYS)
    assert len(rows) == 3 and problems == [] and all(CHECKSUM_KEY not in r for r in rows)
    tampered = json.loads(lines[1])
    tampered["avg_jct"] = -1e308
    lines[1] = json.dumps(tampered)
    journal.write_text("\n".join(lines) + "\n")
    rows, problems = scan_journal(journal, SWEEP_KEYS)
    assert len(rows) == 2 and problems == [
        "line 2: checksum mismatch (the row changed after it was written)"
    ]
    fake_simulate.clear()
    assert cli.main(["sweep", str(spec), "--out", str(out), "--resume", "--quiet"]) == 0
    assert fake_simulate == [tampered["seed"]]  # only the tampered cell ran again
    table = pd.read_parquet(out)
    assert sorted(table["avg_jct"]) == [100.0, 101.0, 102.0]


def test_journals_without_checksums_are_read_as_before(tmp_path):
    """Rows written before journals had checksums (no row_sha256 field) are trusted."""
    from fairplace.runs.batch_results import journal_line, row_checksum, scan_journal

    journal = tmp_path / "old.jsonl"
    old = {"instance": "a", "solver": "exact", "objective": 1.5}
    journal.write_text(json.dumps(old) + "\n" + journal_line(old | {"instance": "b"}))
    rows, problems = scan_journal(journal)
    assert rows == [old, old | {"instance": "b"}] and problems == []
    assert row_checksum(old) == row_checksum(json.loads(json.dumps(old)))  # order-free
    assert row_checksum(old) != row_checksum(old | {"objective": 1.25})


HOLD_SCRIPT = r"""
import fcntl, sys, time
f = open(sys.argv[1], "a")
fcntl.flock(f, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(60)
"""


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _write_owner(lock, pid):
    import socket

    lock.owner_path.write_text(
        json.dumps({"pid": pid, "host": socket.gethostname(), "started": "2026-01-01T00:00:00"})
    )


def test_the_lock_of_a_dead_process_is_removed_when_found(tmp_path, caplog):
    """kill -9 leaves <file>.lock and .lock.owner: the next run finds the owner gone and takes
    the lock, even while the lock is still held (here by a process the dead run left)."""
    from fairplace.core.errors import OptionError
    from fairplace.runs.batch_results import JournalLock

    target = tmp_path / "r.csv"
    lock = JournalLock(target)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_SCRIPT, str(lock.path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        _write_owner(lock, holder.pid)  # its owner alive: in use
        with pytest.raises(
            OptionError, match=f"in use by another fairplace run \\(pid {holder.pid}"
        ):
            JournalLock(target).__enter__()
        dead = _dead_pid()
        _write_owner(lock, dead)  # its owner gone: stale, though still held
        with caplog.at_level("INFO", logger="fairplace.runs.batch_results"):
            with JournalLock(target) as got:
                assert json.loads(got.owner_path.read_text())["pid"] == os.getpid()
        assert f"removed the stale lock of pid {dead}" in caplog.text
        assert not lock.path.exists() and not lock.owner_path.exists()
    finally:
        holder.kill()
        holder.wait()
    _write_owner(lock, _dead_pid())  # not held (the OS dropped it): taken over, files removed
    lock.path.write_text("")
    with JournalLock(target):
        pass
    assert not lock.path.exists() and not lock.owner_path.exists()


EFBIG_SCRIPT = r"""
import resource, sys
from fairplace.runs.batch_results import append_rows
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
try:
    with open(sys.argv[1], "a") as f:
        append_rows(f, [{"instance": "a", "solver": "exact", "message": "x" * 10_000}])
except OSError as exc:
    print(exc.errno, exc.filename)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE as on Linux")
def test_a_journal_past_the_file_size_limit_is_named(tmp_path):
    """A file too large (EFBIG: the process's file-size limit) names the journal, once."""
    import errno

    journal = tmp_path / "r.jsonl"
    proc = subprocess.run(
        [sys.executable, "-c", EFBIG_SCRIPT, str(journal)], capture_output=True, text=True
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.split() == [str(errno.EFBIG), str(journal)]
