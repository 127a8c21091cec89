"""Batch throughput (instances / second) of ``run_batch`` with 1 and 2 local Dask workers.

The clock covers submitting, solving and journaling; the cluster is started (and each worker has imported
fairplace) before it starts. Quick mode solves the 12 medium auctions, the full run the whole medium
suite (20 instances) with the ``exact`` solver. No target is set (the issue asks for the comparison).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path


def _items(quick: bool):
    from fairplace.instances import suites

    items = suites.suite_items("medium")
    return [it for it in items if it[0].startswith("auction")] if quick else items


def _warm() -> bool:
    import fairplace.runs.batch  # noqa: F401 - import the solver stack once per worker
    import fairplace.solvers.auction  # noqa: F401
    import fairplace.solvers.placement  # noqa: F401

    return True


def measure(workers: int, quick: bool) -> dict:
    from dask.distributed import Client

    from fairplace.runs.batch import local_cluster, run_batch

    items = _items(quick)
    with local_cluster(workers) as cluster:
        with Client(cluster) as client:
            client.run(_warm)
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            df = run_batch(
                items,
                solvers=["exact"],
                scheduler_address=cluster.scheduler_address,
                out=Path(tmp) / "bench.jsonl",
                progress=False,
            )
            seconds = time.perf_counter() - t0
    return {
        "seconds": seconds,
        "workers": workers,
        "instances": len(df),
        "instances_per_second": len(df) / seconds,
        "solver_seconds": float(df["seconds"].sum()),
        "statuses": sorted(set(df["status"])),
        "cpus": os.cpu_count(),
        "load_average_1min": os.getloadavg()[0],  # other work on the machine skews 1 vs 2 workers
    }


def _end_to_end(workers: int, items) -> float:
    """Seconds of one ``run_batch`` call as a user makes it: cluster start-up included (1 worker:
    solved in-process, no cluster)."""
    from fairplace.runs.batch import run_batch

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run_batch(
            items, solvers=["exact"], workers=workers, out=Path(tmp) / "b.jsonl", progress=False
        )
        return time.perf_counter() - t0


def speedup(quick: bool) -> dict:
    """``batch_medium_24_speedup``: the 24-instance medium suite end to end with 1 worker and with 2
    (best of 1 / 3 runs each in quick / full mode); target: 2 workers >= 1.6x faster."""
    import fairplace.solvers.auction  # noqa: F401 - the solver stack imported once, as in a session
    import fairplace.solvers.placement  # noqa: F401
    from fairplace.instances import suites

    items = suites.suite_items("medium")
    reps = 1 if quick else 3
    one = min(_end_to_end(1, items) for _ in range(reps))
    two = min(_end_to_end(2, items) for _ in range(reps))
    return {
        "seconds": two,
        "instances": len(items),
        "one_worker_seconds": one,
        "two_workers_seconds": two,
        "speedup": one / two,
        "target_speedup": 1.6,
        "speedup_ok": one / two >= 1.6,
        "cpus": os.cpu_count(),
        "load_average_1min": os.getloadavg()[0],
    }


CASES = {
    "batch_medium_24_speedup": (speedup, None),
    "batch_medium_1_worker": (lambda quick: measure(1, quick), None),
    "batch_medium_2_workers": (lambda quick: measure(2, quick), None),
}
