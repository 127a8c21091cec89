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
