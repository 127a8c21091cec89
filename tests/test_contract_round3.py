"""Issue 48, the contract round three: bench exit status, no plain-text cluster traffic by surprise,
the smaller items (CSV range before the cast, the file named on a failed write, --validate-only
against the entries' specs, SIGINT, journal checksums, stale locks)."""

from __future__ import annotations

import json

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
