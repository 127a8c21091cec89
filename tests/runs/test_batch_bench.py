"""``fairplace bench``: collection, honest sizes, error entries, JSON Lines output."""

from __future__ import annotations

import json
import re

import pytest

from fairplace import cli
from fairplace.benchmarks import Case
from fairplace.commands import bench

#: ``fairplace bench`` exits 1 when a case misses its speed target (depends on the machine)
RAN = (0, 1)


def test_collect_finds_every_module_case():
    from fairplace.benchmarks.registry import BENCH_REGISTRY

    cases = bench.collect()
    names = [name for _, name, _ in cases]
    assert "batch_medium_1_worker" in names and "batch_medium_2_workers" in names
    assert names == list(BENCH_REGISTRY) and {m for m, _, _ in cases} >= {"batch", "simulate"}
    for _, _, case in cases:
        assert callable(case.run)
        assert case.target is None or case.target > 0


def _stated(name: str) -> set[int]:
    """The sizes a case name states: its numbers (``1024x256`` -> 1024, 256; ``100k`` -> 100000)."""
    tokens = [re.fullmatch(r"(\d+)(k?)", t) for t in re.split(r"[_x]", name)]
    return {int(m[1]) * (1000 if m[2] else 1) for m in tokens if m}


def test_every_case_declares_the_sizes_its_name_states():
    """Each number in a case's name is one of its declared sizes (the command checks each run
    against them), and a case skipped by --quick says why."""
    assert _stated("auction_pa_compact_1024x256") == {1024, 256}
    assert _stated("binning_100k") == {100_000}
    for _, name, case in bench.collect():
        assert case.sizes, name
        assert _stated(name) <= set(case.sizes.values()), (name, case.sizes)
        assert case.full_only is None or case.full_only.strip(), name


def test_a_run_of_other_sizes_than_stated_is_an_error():
    case = Case(lambda quick: {}, 1.0, {"apps": 64, "gpus": 1024})
    honest = bench.run_case(
        "m", "x", lambda q: {"seconds": 0.5, "sizes": {"apps": 64, "gpus": 1024}}, case, True
    )
    assert honest["ok"] is True and "error" not in honest
    shrunk = bench.run_case(
        "m", "x", lambda q: {"seconds": 0.5, "sizes": {"apps": 16, "gpus": 256}}, case, True
    )
    assert shrunk["ok"] is False and "its name states" in shrunk["error"]
    assert shrunk["sizes"] == {"apps": 16, "gpus": 256}  # what it ran, never the name's sizes


def test_run_case_ok_and_error_entries():
    good = bench.run_case("m", "fast", lambda quick: {"seconds": 0.5, "n": 3}, 1.0, True)
    assert good == {
        "name": "fast",
        "module": "m",
        "target_seconds": 1.0,
        "seconds": 0.5,
        "ok": True,
        "sizes": {},
        "n": 3,
    }
    slow = bench.run_case("m", "slow", lambda quick: {"seconds": 2.0}, 1.0, True)
    assert slow["ok"] is False

    def boom(quick):
        raise RuntimeError("no solver")

    bad = bench.run_case("m", "bad", boom, 1.0, True)
    assert bad["ok"] is False and bad["seconds"] is None
    assert bad["error"] == "RuntimeError: no solver"


def test_bench_json_lines_stream_real_cases_and_quick_skips(capsys):
    """One JSON line per case; --quick runs the named sizes or skips the case, saying so."""
    assert cli.main(["bench", "--quick", "--json", "--only", "place_256"]) in RAN
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in out.splitlines()]
    assert [r["name"] for r in lines] == ["pal_place_256", "pm_first_place_256"]
    for r in lines:
        assert r["seconds"] > 0 and r["quick"] is True and r["sizes"] == {"gpus": 256}
        assert r["repeats"] == 5 and r["placed"] > 0
    assert "bench: pal_place_256 ..." in err
    assert cli.main(["bench", "--quick", "--json", "--only", "simulate_synergy_100000_4096"]) == 0
    out, err = capsys.readouterr()
    (r,) = [json.loads(line) for line in out.splitlines()]
    assert r["seconds"] is None and r["skipped"].startswith("full mode only")
    assert r["sizes"] == {"jobs": 100_000, "gpus": 4096}
    assert "skipped (full mode only" in err
    assert cli.main(["bench", "--quick", "--quiet", "--only", "pal_place_256"]) in RAN
    out, err = capsys.readouterr()
    assert err == "" and "pal_place_256" in out and "gpus=256" in out  # the table on stdout


def test_simulation_cases_report_cpu_time_and_time_per_decision(capsys):
    """A simulation case's line: wall and CPU seconds, decisions, and wall ms per decision."""
    assert cli.main(["bench", "--quick", "--json", "--only", "simulate_sia_philly_160"]) in RAN
    (r,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert r["seconds"] > 0 and r["cpu_seconds"] > 0 and r["decisions"] > 0
    assert r["ms_per_decision"] == pytest.approx(1000 * r["seconds"] / r["decisions"], rel=1e-12)


@pytest.mark.slow
def test_bench_json_runs_the_cluster_startup_case(capsys):
    """A real Dask case: a 2-worker local cluster started with TLS (the default) and without."""
    assert cli.main(["bench", "--quick", "--json", "--only", "dask_cluster_startup_2"]) in RAN
    (r,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert r["sizes"] == {"workers": 2} and "error" not in r and r["starts_each"] == 1
    assert r["seconds"] == r["tls_median_seconds"] > 0 and r["tcp_median_seconds"] > 0
    assert r["tls_extra_seconds"] == pytest.approx(
        r["tls_median_seconds"] - r["tcp_median_seconds"], rel=1e-12
    )


def test_bench_table_and_list(capsys):
    # a name no case has or contains: exit 2 naming the flag (and the nearest name, if one is close)
    assert cli.main(["bench", "--only", "no-such-case"]) == 2
    err = capsys.readouterr().err
    assert "--only: no bench case named or containing 'no-such-case'" in err
    assert cli.main(["bench", "--list", "--only", "pal_plase_256"]) == 2
    assert "did you mean 'pal_place_256'?" in capsys.readouterr().err
    assert cli.main(["bench", "--list", "--only", "batch"]) == 0
    assert "batch_medium_2_workers" in capsys.readouterr().out
    # a full name selects that case alone, though other names contain it
    assert cli.main(["bench", "--list", "--only", "auction_pa_compact_1024"]) == 0
    listed = capsys.readouterr().out.split()
    assert "auction_pa_compact_1024" in listed and "auction_pa_compact_1024x16" not in listed


def test_isolated_cases_report_errors_and_timeouts():
    missing = bench.run_case_isolated("batch", "no-such-case", 1.0, True, timeout=60)
    assert missing["ok"] is False and missing["error"].startswith("UnknownName: --only")
    slow = bench.run_case_isolated("batch", "batch_medium_1_worker", None, True, timeout=0.2)
    assert slow["seconds"] is None and slow["error"].startswith("TimeoutError")


def test_bench_cases_are_one_registry_with_quick_as_their_option():
    """Each module's ``CASES`` is a Registry; the bench registry merges them, a name in two
    modules being an error; every case takes ``quick``, checked by its spec."""
    from fairplace.benchmarks import cases, merged
    from fairplace.benchmarks.registry import BENCH_REGISTRY
    from fairplace.core.errors import OptionError

    assert BENCH_REGISTRY.option_names("pal_place_256") == ("quick",)
    assert BENCH_REGISTRY.check("pal_place_256", {"quick": True}) == {"quick": True}
    with pytest.raises(OptionError, match="quick"):
        BENCH_REGISTRY.check("pal_place_256", {"quick": "yes"})
    one = cases("fairplace.benchmarks.x", {"a": Case(lambda q: {"seconds": 0.0, "q": q})})
    assert one.make("a", {"quick": True}) == {"seconds": 0.0, "q": True}
    assert one.get("a").capabilities["module"] == "x"
    with pytest.raises(ValueError, match="'a' is in two modules"):
        merged(one, one)
