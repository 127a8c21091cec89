"""``fairplace bench``: collection, error entries, JSON output."""

from __future__ import annotations

import json

import pytest

from fairplace import cli
from fairplace.commands import bench


def test_collect_finds_every_module_case():
    cases = bench.collect()
    names = [name for _, name, _, _ in cases]
    assert "batch_medium_1_worker" in names and "batch_medium_2_workers" in names
    assert len(set(names)) == len(names)
    for _, _, run, target in cases:
        assert callable(run)
        assert target is None or target > 0


def test_run_case_ok_and_error_entries():
    good = bench.run_case("m", "fast", lambda quick: {"seconds": 0.5, "n": 3}, 1.0, True)
    assert good == {
        "name": "fast",
        "module": "m",
        "target_seconds": 1.0,
        "seconds": 0.5,
        "ok": True,
        "n": 3,
    }
    slow = bench.run_case("m", "slow", lambda quick: {"seconds": 2.0}, 1.0, True)
    assert slow["ok"] is False

    def boom(quick):
        raise RuntimeError("no solver")

    bad = bench.run_case("m", "bad", boom, 1.0, True)
    assert bad["ok"] is False and bad["seconds"] is None
    assert bad["error"] == "RuntimeError: no solver"


@pytest.mark.slow
def test_bench_json_runs_a_real_case(capsys):
    assert cli.main(["bench", "--quick", "--json", "--only", "batch_medium_1_worker"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in out] == ["batch_medium_1_worker"]
    r = out[0]
    assert r["seconds"] > 0 and "target_seconds" in r
    assert r["instances"] == 12 and r["statuses"] == ["optimal"]
    assert r["instances_per_second"] > 0


def test_bench_table_and_list(capsys):
    assert cli.main(["bench", "--only", "no-such-case"]) == 0
    assert "name" in capsys.readouterr().out
    assert cli.main(["bench", "--list", "--only", "batch"]) == 0
    assert "batch_medium_2_workers" in capsys.readouterr().out
    # a full name selects that case alone, though other names contain it
    assert cli.main(["bench", "--list", "--only", "auction_pa_compact_1024"]) == 0
    listed = capsys.readouterr().out.split()
    assert "auction_pa_compact_1024" in listed and "auction_pa_compact_1024x16" not in listed


def test_isolated_cases_report_errors_and_timeouts():
    missing = bench.run_case_isolated("batch", "no-such-case", 1.0, True, timeout=60)
    assert missing["ok"] is False and missing["error"].startswith("KeyError")
    slow = bench.run_case_isolated("batch", "batch_medium_1_worker", None, True, timeout=0.2)
    assert slow["seconds"] is None and slow["error"].startswith("TimeoutError")
