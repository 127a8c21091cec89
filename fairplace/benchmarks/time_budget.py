"""One budget, everything inside it: ``--time-limit 1`` on the agent-form auction
``random_agent_auction(apps=7, machines=3, gpus_per_machine=4, seed=0)`` (21,762 subset bids) must
return within about a second of solver time — listing the bids, pruning, building the model and
every solve included — with the best solution found (status ``time_limit``) or exit 3.

``time_budget_agents_7x12_1s``: ``seconds`` is the slowest in-process ``fairplace.solve(...,
time_limit=1)`` over the routes (no solver named, ``exact``, ``compact``), after a warm-up solve
(imports are start-up, not solver time); in full mode the same routes through the CLI (``fairplace solve FILE
--time-limit 1 --json``, a fresh process each) give ``cli`` (wall seconds, exit code, status).

``time_budget_a7_{0.5,1,2}s`` (one honest budget): ``fairplace.solve(a7, solver,
time_limit=L)`` as the first solve of a fresh process (where a first-call cost would be charged to
the budget), on the three routes of a7 (no solver named: the compact arbiter; ``exact``: its 21,762
subset bids; ``compact``). ``seconds`` is the slowest route's budgeted wall time (the call's wall
time less its reported ``setup_seconds``), target L x 1.1 + 0.05 s; each route also records its
``seconds`` and ``unaccounted`` = wall - setup_seconds - seconds (what ``seconds`` would hide: ~0).
``--quick`` runs the default route only. ``time_budget_a7_bids_{0.5,1,2}s`` (full mode): the same
on a7's 21,762 subset bids written as bid tables (route ``bids``: a wide PF program whose first LP
HiGHS cannot interrupt). ``time_budget_a7_optimal_0.5s``: the command
``fairplace solve a7.json --time-limit 0.5 --json`` (a fresh process), must exit 0 with status
``optimal`` (else an error entry) within its ``seconds`` target of 0.5.

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
from typing import Any

import fairplace
from fairplace.formulations import agents
from fairplace.instances import io
from fairplace.instances.generators import random_agent_auction

from . import Case, cases

#: the auction every case here solves (a7)
REPRODUCER: dict[str, Any] = {"apps": 7, "machines": 3, "gpus_per_machine": 4, "seed": 0}
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


#: the first solve of a fresh process: one JSON line (wall, seconds, setup_seconds, status, route)
_CHILD = """
import json, sys, time
import fairplace
inst = fairplace.load(sys.argv[1])
t0 = time.perf_counter()
sol = fairplace.solve(inst, sys.argv[2] or None, time_limit=float(sys.argv[3]))
wall = time.perf_counter() - t0
print(json.dumps({"wall_seconds": wall, "seconds": sol.seconds, "status": sol.status,
                  "setup_seconds": sol.setup_seconds, "route": sol.extra.get("route")}))
"""


def _first_solve(path: Path, solver: str | None, limit: float) -> dict:
    cmd = [sys.executable, "-c", _CHILD, str(path), solver or "", str(limit)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"solver {solver}: exit {proc.returncode}: {proc.stderr[-300:]}")
    row = json.loads(proc.stdout.strip().splitlines()[-1])
    row["budgeted_seconds"] = row["wall_seconds"] - row["setup_seconds"]
    row["unaccounted"] = row["budgeted_seconds"] - row["seconds"]
    return {"solver": solver or "(none)", **row}


def overrun(limit: float, bids: bool = False):
    """The case of one limit: every route's first solve in a fresh process (module docstring);
    ``bids``: a7's subset bids written as bid tables, solved with no solver named."""

    def run(quick: bool) -> dict:
        inst = random_agent_auction(**REPRODUCER)
        routes = (None,) if quick or bids else ROUTES
        with tempfile.TemporaryDirectory() as tmp:
            explicit = agents.to_explicit(inst) if bids else inst
            assert explicit is not None  # None only when a stop callback says stop
            path = io.save(explicit, Path(tmp) / "a7.json")
            rows = [_first_solve(path, s, limit) for s in routes]
        return {
            "seconds": max(r["budgeted_seconds"] for r in rows),
            "sizes": {
                "apps": len(inst.agents),
                "gpus": len(inst.cluster),
                "time_limit_seconds": limit,
            },
            "routes": rows,
        }

    return run


def optimal_at_half_a_second(quick: bool) -> dict:
    """``fairplace solve a7.json --time-limit 0.5 --json``: exit 0, status optimal."""
    inst = random_agent_auction(**REPRODUCER)
    with tempfile.TemporaryDirectory() as tmp:
        path = io.save(inst, Path(tmp) / "a7.json")
        cmd = [sys.executable, "-m", "fairplace.cli", "solve", str(path), "--time-limit", "0.5"]
        proc = subprocess.run(cmd + ["--json"], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
    sol = json.loads(proc.stdout)
    if sol["status"] != "optimal":
        raise RuntimeError(f"status {sol['status']!r}, not optimal (seconds {sol['seconds']:.3f})")
    return {
        "seconds": sol["seconds"],
        "sizes": {"apps": len(inst.agents), "gpus": len(inst.cluster), "time_limit_seconds": 0.5},
        "status": sol["status"],
        "setup_seconds": sol["setup_seconds"],
        "route": sol["extra"]["route"],
    }


def route_table(quick: bool) -> dict:
    if quick:
        return {"seconds": None, "skipped": "the route table: full mode only"}
    rows = []
    for apps, machines, gpm in ROUTE_SIZES:
        inst = random_agent_auction(
            apps=apps, machines=machines, gpus_per_machine=gpm, machines_per_rack=2, seed=0
        )
        row: dict[str, Any] = {"apps": apps, "gpus": machines * gpm}
        row["subset_bids"] = sum(c for _, c in agents.subset_counts(inst))
        for solver in ("exact", "compact"):
            t0 = time.perf_counter()
            # no limit: under one, exact takes the compact route on many subset bids (dispatch)
            sol = fairplace.solve(inst, solver)
            row[f"{solver}_seconds"] = time.perf_counter() - t0
            row[f"{solver}_status"] = sol.status
        rows.append(row)
    return {
        "seconds": sum(r["exact_seconds"] + r["compact_seconds"] for r in rows),
        "sizes": {"route_sizes": len(rows)},
        "rows": rows,
    }


#: the 1 s budget, with 0.2 s for Python work that cannot be interrupted (docs/solutions.md)
CASES = cases(
    __name__,
    {
        "time_budget_agents_7x12_1s": Case(
            reproducer, 1.2, {"apps": 7, "gpus": 12, "time_limit_seconds": 1}
        ),
        **{
            f"time_budget_a7_{limit:g}s": Case(
                overrun(limit),
                round(1.1 * limit + 0.05, 3),
                {"apps": 7, "gpus": 12, "time_limit_seconds": limit},
            )
            for limit in (0.5, 1.0, 2.0)
        },
        **{
            f"time_budget_a7_bids_{limit:g}s": Case(
                overrun(limit, bids=True),
                round(1.1 * limit + 0.05, 3),
                {"apps": 7, "gpus": 12, "time_limit_seconds": limit},
                full_only="loading 21,762 bids takes ~10 s per process",
            )
            for limit in (0.5, 1.0, 2.0)
        },
        "time_budget_a7_optimal_0.5s": Case(
            optimal_at_half_a_second, 0.5, {"apps": 7, "gpus": 12, "time_limit_seconds": 0.5}
        ),
        "auction_route_agents": Case(
            route_table,
            None,
            {"route_sizes": len(ROUTE_SIZES)},
            full_only="the route table (~1 min)",
        ),
    },
)
