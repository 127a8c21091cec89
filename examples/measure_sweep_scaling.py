"""How a simulation sweep scales with Dask workers: the scaling table of docs/dask.md.

    python examples/measure_sweep_scaling.py OUT.json [--workers 1,4,16] [--seeds 4] [--tiny]

For each worker count, in its own fresh loopback cluster (``fairplace.runs.dask_cluster``: TLS,
one thread per worker process), it runs the same sweep through ``fairplace.runs.sweep.run_sweep``
and measures three phases apart: cluster start-up (until every worker is connected), the solve
phase (first cell submitted to last cell journaled) and the close. The default grid has 64 cells
(FIFO x 4 placements x Synergy-style traces of 300 jobs on 64 GPUs at 8, 16, 32, 64 jobs/hour x
4 seeds); ``--seeds`` scales it (16 cells per seed), ``--tiny`` is a 2-cell smoke test.
Prints a Markdown table and writes everything (per-run seconds, speed-up and parallel efficiency of
the solve phase against the first worker count, the machine, and whether every worker count gave
the same results) to OUT.json. Needs only fairplace installed; run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path


def grid(seeds: int, tiny: bool) -> dict:
    """The sweep spec (a dict for ``fairplace.runs.sweep.load_spec``)."""
    if tiny:
        return {
            "name": "scaling-tiny",
            "schedulers": ["fifo"],
            "placements": ["packed-sticky", "pal"],
            "traces": ["synergy"],
            "seeds": [0],
            "fixed": {"n_jobs": 12, "jobs_per_hour": 8.0, "gpus": 16},
        }
    return {
        "name": "scaling",
        "schedulers": ["fifo"],
        "placements": ["packed-sticky", "packed-non-sticky", "pm-first", "pal"],
        "traces": ["synergy"],
        "seeds": list(range(seeds)),
        "params": {"jobs_per_hour": [8.0, 16.0, 32.0, 64.0]},
        "fixed": {"n_jobs": 300, "gpus": 64},
    }


def measure(spec, workers: int, folder: Path) -> tuple[dict, dict]:
    """One worker count in a fresh cluster: (phase seconds, {cell_id: avg_jct})."""
    from dask.distributed import Client

    from fairplace.runs.dask_cluster import close_quietly, local_cluster
    from fairplace.runs.sweep import run_sweep

    t0 = time.perf_counter()
    cluster = local_cluster(workers)
    client = Client(cluster)
    try:
        client.wait_for_workers(workers)
        t1 = time.perf_counter()
        df = run_sweep(
            spec,
            folder / f"w{workers}.parquet",
            scheduler_address=cluster.scheduler_address,
            security=cluster.security,
            progress=False,
        )
        t2 = time.perf_counter()
        connected = len(client.nthreads())
    finally:
        close_quietly(client, cluster)
    t3 = time.perf_counter()
    run = {
        "workers": connected,
        "startup_seconds": t1 - t0,
        "solve_seconds": t2 - t1,
        "close_seconds": t3 - t2,
        "cells": len(df),
        "failed": int((df["status"] != "ok").sum()),
        "cell_seconds_sum": float(df["wall_seconds"].sum()),
        "load_average_1min_after": os.getloadavg()[0],
    }
    return run, dict(zip(df["cell_id"], df["avg_jct"], strict=True))


def markdown(runs: list[dict]) -> str:
    head = (
        "| workers | cells | start-up (s) | solve phase (s) | speed-up | efficiency | close (s) |\n"
        "|---:|---:|---:|---:|---:|---:|---:|"
    )
    rows = [
        f"| {r['workers']} | {r['cells']} | {r['startup_seconds']:.1f} | {r['solve_seconds']:.1f} "
        f"| {r['speedup']:.2f}x | {100 * r['efficiency']:.0f}% | {r['close_seconds']:.1f} |"
        for r in runs
    ]
    return "\n".join([head, *rows])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="JSON file to write")
    p.add_argument("--workers", default="1,4,16", help="comma-separated worker counts (1,4,16)")
    p.add_argument("--seeds", type=int, default=4, help="seeds per cell of the grid (4: 64 cells)")
    p.add_argument("--tiny", action="store_true", help="a 2-cell smoke test")
    args = p.parse_args(argv)
    counts = [int(w) for w in args.workers.split(",")]

    import fairplace
    from fairplace.runs.sweep import load_spec

    spec = load_spec(grid(args.seeds, args.tiny))
    runs, results = [], []
    with tempfile.TemporaryDirectory(prefix="fairplace-scaling-") as tmp:
        for w in counts:
            run, res = measure(spec, w, Path(tmp))
            runs.append(run)
            results.append(res)
            print(
                f"{w} worker(s): start-up {run['startup_seconds']:.1f} s, solve "
                f"{run['solve_seconds']:.1f} s, close {run['close_seconds']:.1f} s",
                file=sys.stderr,
                flush=True,
            )
    base = runs[0]
    for r in runs:  # speed-up and efficiency of the solve phase against the first count
        r["speedup"] = base["solve_seconds"] / r["solve_seconds"]
        r["efficiency"] = r["speedup"] * base["workers"] / r["workers"]
    doc = {
        "grid": {"name": spec.name, "cells": len(spec)},
        "runs": runs,
        "same_results": all(r == results[0] for r in results),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "fairplace": fairplace.__version__,
        },
        "command": " ".join(
            ["python", "examples/measure_sweep_scaling.py", *(argv or sys.argv[1:])]
        ),
    }
    Path(args.out).write_text(json.dumps(doc, indent=1))
    print(markdown(runs))
    print(f"\n{len(spec)} cells; same results at every worker count: {doc['same_results']}")
    return 0 if doc["same_results"] and not any(r["failed"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
