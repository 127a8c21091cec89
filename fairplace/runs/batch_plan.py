"""How a batch runs its tasks: estimated effort per (instance, solver), largest-first order, chunks of
tiny tasks, and the rule that picks in-process solving over a local Dask cluster. Pure functions of
the task list (deterministic: ties keep the suite's order).

Effort (:func:`effort`) is read from the instance JSON without validating it, in units of roughly
0.5-1 ms of HiGHS (``threads=1``): the medium suite's 24 instances sum to 45,000 units and ~26 s.
Single instances stray by up to ~5x (placement-16j-s3: 9 s), which is enough to order them:

* auction (explicit bids): ``(A + 1) * B * G / 32`` -- PF plus A leave-one-out MILPs (A apps), each
  with B bid columns (all apps' bids) and G GPU rows;
* placement: ``J * G * J / 4`` -- J*G assignment columns, branching growing with the J jobs
  competing for the G GPUs;
* both times ``max(1, contention)`` (GPUs demanded / GPUs): difficulty follows contention;
* a solver's weight (:data:`SOLVER_WEIGHT`): MILP back ends 1 (Pyomo / CVXPY build their model in
  Python: 2), the relaxation 0.2, heuristics and placement policies (no MILP) 0.01.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from fairplace.core.errors import OptionError
from fairplace.core.limits import JSON_BYTES, check_file_bytes
from fairplace.instances import suites

#: effort multiplier per solver name (others: :data:`DEFAULT_WEIGHT`).
SOLVER_WEIGHT = {"exact": 1.0, "highs": 1.0, "compact": 1.0, "pyomo": 2.0, "cvxpy": 2.0}
SOLVER_WEIGHT |= {"relaxation": 0.2}
#: heuristics and placement policies: no MILP
DEFAULT_WEIGHT = 0.01

#: tasks below this effort (~ms) cost less than a Dask task's round trip (~1.5 ms idle, ~10 ms on a
#: loaded 2-core box): consecutive ones (in largest-first order) share one Dask task, a *chunk* of
#: at most :data:`CHUNK_EFFORT` effort and :data:`CHUNK_TASKS` tasks.
TINY_EFFORT = 5.0
CHUNK_EFFORT = 50.0
CHUNK_TASKS = 64

#: the in-process rule (no scheduler address given): solve in this process when ``workers == 1``,
#: or the suite has at most :data:`IN_PROCESS_MAX_TASKS` tasks, or its estimated total effort is at
#: most :data:`IN_PROCESS_MAX_EFFORT` (~1-2 s of solving: less than a local cluster's start-up,
#: 2-5 s measured on 2 cores).
IN_PROCESS_MAX_TASKS = 4
IN_PROCESS_MAX_EFFORT = 2000.0


def _raw(payload) -> dict | None:
    if isinstance(payload, dict):
        return payload
    try:
        check_file_bytes(payload, JSON_BYTES, str(payload))  # too large: the solve's load says so
        doc = json.loads(Path(payload).read_text())
    except (OSError, TypeError, ValueError, RecursionError):  # DataError: a ValueError
        return None
    return doc if isinstance(doc, dict) else None


def _list(doc, key: str) -> list:
    v = doc.get(key) if isinstance(doc, dict) else None
    return v if isinstance(v, list) else []


def _size(x) -> int:
    return int(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 else 0


def instance_effort(payload) -> float:
    """Estimated effort of an exact solve of ``payload`` (a contract dict or a JSON path); 0 for
    anything unreadable (the worker reports it as an error row). See the module docstring; both
    kinds are scaled by ``max(1, contention)`` (demand / GPUs, as in the results table)."""
    doc = _raw(payload)
    if doc is None:
        return 0.0
    G = len(_list(doc, "gpus"))
    if doc.get("kind") == "placement":
        jobs = _list(doc, "jobs")
        demand = sum(_size(j.get("gpus")) for j in jobs if isinstance(j, dict))
        return len(jobs) * G * len(jobs) / 4.0 * max(1.0, demand / G if G else 0.0)
    apps = _list(doc, "apps")
    bids = [_list(a, "bids") for a in apps]
    demand = sum(max((len(_list(b, "gpus")) for b in bs), default=0) for bs in bids)
    return (len(apps) + 1) * sum(map(len, bids)) * G / 32.0 * max(1.0, demand / G if G else 0.0)


def effort(payload, solver: str) -> float:
    """Estimated effort of one (instance, solver) task (module docstring)."""
    return instance_effort(payload) * SOLVER_WEIGHT.get(solver, DEFAULT_WEIGHT)


def task_efforts(todo: Sequence[tuple]) -> list[float]:
    """:func:`effort` of each (name, solver, payload) task (one read per payload)."""
    memo: dict[int, float] = {}
    out = []
    for _, s, p in todo:
        if id(p) not in memo:
            memo[id(p)] = instance_effort(p)
        out.append(memo[id(p)] * SOLVER_WEIGHT.get(s, DEFAULT_WEIGHT))
    return out


def largest_first(efforts: Sequence[float]) -> list[int]:
    """Task positions by decreasing effort, the suite's order among equals:
    longest-processing-time-first keeps the makespan on several workers close to total / workers
    (a long task never starts last)."""
    return sorted(range(len(efforts)), key=lambda k: (-efforts[k], k))


def chunks(order: Sequence[int], efforts: Sequence[float]) -> list[list[int]]:
    """Group ``order`` (task positions, largest first) into Dask tasks: one task per position,
    except that consecutive tiny ones (< :data:`TINY_EFFORT`) share a chunk of total effort at most
    :data:`CHUNK_EFFORT` and at most :data:`CHUNK_TASKS` tasks. The concatenation is ``order``."""
    out: list[list[int]] = []
    load, tiny_chunk = 0.0, False
    for k in order:
        e = efforts[k]
        tiny = e < TINY_EFFORT
        if tiny and tiny_chunk and len(out[-1]) < CHUNK_TASKS and load + e <= CHUNK_EFFORT:
            out[-1].append(k)
            load += e
        else:
            out.append([k])
            load, tiny_chunk = e, tiny
    return out


def in_process_rule(
    n_tasks: int, total_effort: float, workers: int, scheduler_address: str | None
) -> tuple[bool, str]:
    """(solve in this process?, the reason, one line for the output) -- module docstring."""
    if scheduler_address:
        return False, f"on the Dask scheduler at {scheduler_address}"
    if workers == 1:
        return True, "in-process: --workers 1"
    if n_tasks <= IN_PROCESS_MAX_TASKS:
        return True, f"in-process: {n_tasks} task(s) <= {IN_PROCESS_MAX_TASKS}"
    if total_effort <= IN_PROCESS_MAX_EFFORT:
        return True, (
            f"in-process: estimated effort {total_effort:.0f} <= {IN_PROCESS_MAX_EFFORT:.0f} "
            "(~ms; less than a local cluster's start-up)"
        )
    return False, f"on a local Dask cluster of {workers} worker processes"


# --- suite resolution -----------------------------------------------------------------------------
def resolve_suite(suite) -> list[tuple[str, object]]:
    """(instance name, payload) pairs of a registered suite name, a folder of JSON files, or a list."""

    if not isinstance(suite, (str, Path)):
        return [(str(n), p) for n, p in suite]
    if isinstance(suite, str) and suite in suites.suite_names():
        return list(suites.suite_items(suite))
    folder = Path(suite)
    if not folder.is_dir():
        raise OptionError(
            "SUITE",
            f"{suite!r} is neither a registered suite ({', '.join(suites.suite_names())}) "
            "nor a folder of instance JSON files",
        )
    files = sorted(folder.glob("*.json"))
    if not files:
        raise OptionError("SUITE", f"folder {str(folder)!r} holds no *.json instance files")
    return [(p.stem, str(p.resolve())) for p in files]
