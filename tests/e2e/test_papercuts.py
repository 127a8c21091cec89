"""Small papercuts: the README shell block runs in order, `solve --help` offers compact
only for agent-form auctions, gavel-ftf's status, a scheduler's missing member named, the
simulate benchmark's memory figure on every platform."""

from __future__ import annotations

import re
import shlex
import sys
import types
from pathlib import Path

import pytest

from fairplace.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _shell_block() -> list[list[str]]:
    """The README's "From the shell" block: one argv per command line (comments dropped)."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"From the shell:\s*```bash\n(.*?)```", text, re.S).group(1)
    lines = [ln.split("  #")[0].strip() for ln in block.splitlines()]
    return [shlex.split(ln) for ln in lines if ln and not ln.startswith("#")]


def _outputs(argv: list[str]) -> set[str]:
    return {argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("-o", "--out")}


def _inputs(argv: list[str]) -> list[str]:
    """Files a command reads: its positional paths (solve FILE, sweep SPEC, plot RESULTS)."""
    if argv[1] not in ("solve", "sweep", "plot"):
        return []
    return [argv[2]]


def test_readme_shell_block_makes_every_file_before_it_reads_it():
    made: set[str] = set()
    cmds = _shell_block()
    assert len(cmds) >= 10 and all(c[0] == "fairplace" for c in cmds)
    for argv in cmds:
        for f in _inputs(argv):
            assert f in made or (ROOT / f).exists(), (
                f"{' '.join(argv)}: {f} is made by nothing before"
            )
        made |= _outputs(argv)


def test_readme_shell_block_runs_in_order(tmp_path, monkeypatch, capsys):
    """The block's first commands, run in order in a fresh folder (the rest: sweeps, a Dask
    cluster at HOST, simulations and the benchmarks, minutes in all, have their own tests)."""
    monkeypatch.chdir(tmp_path)
    first = _shell_block()[:5]
    assert [c[1] for c in first] == ["instances", "solve", "solve", "schema", "instances"]
    for argv in first:
        assert main(argv[1:]) == 0, argv
    assert (
        tmp_path / "instance.json"
    ).exists() and '"status": "optimal"' in capsys.readouterr().out


def test_solve_help_offers_compact_for_agent_form_auctions_only(capsys):
    with pytest.raises(SystemExit):
        main(["solve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    bids = re.search(r"--solver NAME auctions: ([^;]+);", text).group(1)
    assert "compact" not in bids.split(", ") and "exact" in bids.split(", ")
    assert "agent-form auctions also compact" in text


def test_gavel_ftf_is_a_heuristic_for_the_pf_objective():
    import fairplace
    from fairplace.instances.generators import random_auction

    inst = random_auction(apps=3, machines=2, gpus_per_machine=2, bids_per_app=3, seed=1)
    sol = fairplace.solve(inst, solver="gavel-ftf")
    assert sol.status == "heuristic" and sol.extra["solver_status"] == "optimal"
    assert "min max rho" in sol.message and "PF objective" in sol.message


def test_a_scheduler_lacking_name_or_next_change_is_told_which():
    import fairplace
    from fairplace.core.errors import UnknownName

    class NoName:
        def order(self, view):
            return []

        def next_change(self, view):
            return float("inf")

    class NoNext:
        name = "no-next"

        def order(self, view):
            return []

    said = []
    for s in (NoName(), NoNext()):
        with pytest.raises(UnknownName) as e:
            fairplace.simulate(trace="workload-1", scheduler=s, placement="pal", progress=False)
        said.append(str(e.value))
    assert said[0].endswith("which lacks name") and said[1].endswith("which lacks next_change()")


def test_simulate_benchmark_memory_in_mb_on_linux_and_macos(monkeypatch):
    from fairplace.benchmarks import simulate as bench

    fake = types.SimpleNamespace(
        RUSAGE_SELF=0, getrusage=lambda who: types.SimpleNamespace(ru_maxrss=512 * 2**20)
    )
    monkeypatch.setitem(sys.modules, "resource", fake)
    monkeypatch.setattr(sys, "platform", "linux")  # KiB
    assert bench._max_rss_mb() == 512 * 1024
    monkeypatch.setattr(sys, "platform", "darwin")  # bytes
    assert bench._max_rss_mb() == 512
    monkeypatch.setitem(sys.modules, "resource", None)  # Windows: no such module
    assert bench._max_rss_mb() is None
