"""One budget, everything inside it (issue 21): ``--time-limit 1`` on the agent-form auction
``random_agent_auction(apps=7, machines=3, gpus_per_machine=4, seed=0)`` (21,762 subset bids) must
return within about a second of solver time — listing the bids, pruning, building the model and
every solve included — with the best solution found (status ``time_limit``) or exit 3.

``time_budget_agents_7x12_1s``: ``seconds`` is the slowest in-process ``fairplace.solve(...,
time_limit=1)`` over the routes (no solver named, ``exact``, ``compact``), after a warm-up solve
(imports are start-up, not solver time); in full mode the same routes through the CLI (``fairplace solve FILE
--time-limit 1 --json``, a fresh process each) give ``cli`` (wall seconds, exit code, status).

``auction_route_agents``: full PF + PA through both routes of an agent-form auction (subset bids
``exact`` and ``compact``) over sizes — the measurement behind
``fairplace.solvers.dispatch.AUTO_COMPACT_BIDS`` (docs/solutions.md, "Which route").
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import fairplace
from fairplace.formulations import agents
from fairplace.instances import io
from fairplace.instances.generators import random_agent_auction

from . import Case

#: the issue's reproducer
REPRODUCER = {"apps": 7, "machines": 3, "gpus_per_machine": 4, "seed": 0}
ROUTES = (None, "exact", "compact")
#: (apps, machines, GPUs per machine) of the route table (full mode only)
ROUTE_SIZES = ((3, 2, 3), (4, 2, 4), (6, 2, 4), (8, 2, 4), (6, 3, 3), (4, 3, 4), (7, 3, 4))


def _in_process(inst, solver) -> dict:
    t0 = time.perf_counter()
    sol = fairplace.solve(inst, solver, time_limit=1.0)
    return {
        "solver": solver or "(none)",
        "wall_seconds": time.perf_counter() - t0,
        "status": sol.status,
        "route": sol.extra.get("route"),
        "objective": sol.objective,
    }


def _cli(path: Path, solver) -> dict:
    cmd = [sys.executable, "-m", "fairplace.cli", "solve", str(path), "--time-limit", "1"]
    cmd += ["--json"] + (["--solver", solver] if solver else [])
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    try:
        status = json.loads(proc.stdout).get("status")
    except json.JSONDecodeError:
        status = None
    return {
        "solver": solver or "(none)",
        "wall_seconds": wall,
        "exit": proc.returncode,
        "status": status,
    }


def _startup() -> float:
    """Wall seconds of ``fairplace solve`` on a one-GPU instance: the CLI's start-up."""
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "tiny.json"
        p.write_text(
            json.dumps(
                {
                    "kind": "auction",
                    "gpus": [{"id": "g", "machine": "m"}],
                    "apps": [{"id": "a", "rho_empty": 2.0, "bids": [{"gpus": ["g"], "rho": 1.0}]}],
                }
            )
        )
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "fairplace.cli", "solve", str(p)],
            check=False,
            capture_output=True,
        )
        return time.perf_counter() - t0


def reproducer(quick: bool) -> dict:
    inst = random_agent_auction(**REPRODUCER)
    fairplace.solve(random_agent_auction(apps=2, machines=1, gpus_per_machine=4), "exact")
    runs = [_in_process(inst, s) for s in ROUTES]
    out = {
        "seconds": max(r["wall_seconds"] for r in runs),
        "sizes": {"apps": len(inst.agents), "gpus": len(inst.cluster), "time_limit_seconds": 1},
        "subset_bids": sum(c for _, c in agents.subset_counts(inst)),
        "in_process": runs,
    }
    if not quick:
        with tempfile.TemporaryDirectory() as tmp:
            path = io.save(inst, Path(tmp) / "agents-7x12.json")
            out["cli_startup_seconds"] = _startup()
            out["cli"] = [_cli(path, s) for s in ROUTES]
    return out


def route_table(quick: bool) -> dict:
    if quick:
        return {"seconds": None, "skipped": "the route table: full mode only"}
    rows = []
    for apps, machines, gpm in ROUTE_SIZES:
        inst = random_agent_auction(
            apps=apps, machines=machines, gpus_per_machine=gpm, machines_per_rack=2, seed=0
        )
        row = {"apps": apps, "gpus": machines * gpm}
        row["subset_bids"] = sum(c for _, c in agents.subset_counts(inst))
        for solver in ("exact", "compact"):
            t0 = time.perf_counter()
            sol = fairplace.solve(inst, solver, time_limit=300.0)
            row[f"{solver}_seconds"] = time.perf_counter() - t0
            row[f"{solver}_status"] = sol.status
        rows.append(row)
    return {
        "seconds": sum(r["exact_seconds"] + r["compact_seconds"] for r in rows),
        "sizes": {"route_sizes": len(rows)},
        "rows": rows,
    }


#: the 1 s budget, with 0.2 s for Python work that cannot be interrupted (docs/solutions.md)
CASES = {
    "time_budget_agents_7x12_1s": Case(
        reproducer, 1.2, {"apps": 7, "gpus": 12, "time_limit_seconds": 1}
    ),
    "auction_route_agents": Case(
        route_table, None, {"route_sizes": len(ROUTE_SIZES)}, full_only="the route table (~1 min)"
    ),
}
