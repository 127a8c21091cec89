"""Batch benchmarks: ``run_batch`` with 1 and 2 workers on the 24-instance medium suite (``exact``).

The medium suite's instances take 0.07-9 s each with HiGHS on one core (sum ~26 s on an idle box;
the 16-job placements and 12-app auctions 1-9 s, the 4-app auctions ~0.15 s): large enough that two
processes can halve the solve time, with one long instance that only largest-first order keeps off
the critical path (the ideal 2-worker makespan is about half the sum).

* ``batch_medium_24_speedup``: whole ``run_batch`` calls as a user makes them, best of 3 (quick: 1):
  ``--workers 1`` (solved in-process, no cluster) against ``--workers 2`` (a local Dask cluster of
  one worker process, this process solving too), and for comparison 2 Dask worker processes with a
  driver that only coordinates (``driver_solves=False``; full mode only, None in ``--quick``).
  Reports the end-to-end speed-up (cluster start-up and close included; target >= 1.6x) and the
  speed-up of the solve phase alone (first submission to last row journaled; start-up, warm-up
  imports and close excluded), with each part's seconds from ``df.attrs["batch"]`` (a local
  cluster's close runs under the driver's last groups when ``close_overlapped``).
* ``dask_cluster_startup_2``: a local cluster of 2 workers started with TLS (temporary credentials,
  the default) and without, alternated: what TLS adds to the start-up (:func:`cluster_startup`).
* ``batch_medium_1_worker`` / ``batch_medium_2_workers``: throughput of an already-started Dask
  cluster (start-up reported apart, not in ``seconds``); full mode only (``--quick`` runs the
  speed-up case, once, on the same 24 instances).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from fairplace.instances import suites
from fairplace.runs.batch import run_batch
from fairplace.runs.dask_cluster import close_quietly, local_cluster

from . import Case, cases

SIZES = {"instances": 24}


def measure(workers: int, quick: bool) -> dict:
    from dask.distributed import Client  # heavy: imported on use

    items = suites.suite_items("medium")
    t0 = time.perf_counter()
    with local_cluster(workers) as cluster:  # workers import the solver stack as they start
        with Client(cluster) as client:
            client.wait_for_workers(workers)
            ran_workers = len(client.nthreads())
        startup = time.perf_counter() - t0
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            df = run_batch(
                items,
                solvers=["exact"],
                scheduler_address=cluster.scheduler_address,
                security=cluster.security,  # the cluster talks TLS
                out=Path(tmp) / "bench.jsonl",
                progress=False,
            )
            seconds = time.perf_counter() - t0
    return {
        "seconds": seconds,
        "sizes": {"instances": len(df), "workers": ran_workers},
        "workers": workers,
        "instances": len(df),
        "instances_per_second": len(df) / seconds,
        "cluster_startup_seconds": startup,
        "solver_seconds": float(df["seconds"].sum()),
        "statuses": sorted(set(df["status"])),
        "cpus": os.cpu_count(),
        "load_average_1min": os.getloadavg()[0],  # other work on the machine skews 1 vs 2 workers
    }


def _end_to_end(workers: int, items, driver_solves: bool = True) -> dict:
    """One ``run_batch`` call as a user makes it (1 worker: in-process, no cluster): its total
    seconds, the parts from ``df.attrs["batch"]`` and each instance's solve seconds."""

    with tempfile.TemporaryDirectory() as tmp:
        t0, c0 = time.perf_counter(), os.times()
        df = run_batch(
            items, solvers=["exact"], workers=workers, out=Path(tmp) / "b.jsonl", progress=False,
            driver_solves=driver_solves,
        )  # fmt: skip
        total, c1 = time.perf_counter() - t0, os.times()
    rep = dict(df.attrs["batch"])
    rep["total_seconds"] = total
    # CPU seconds of this process and of the (reaped) worker processes: on a shared machine the
    # wall time also depends on how much CPU the other users left
    rep["cpu_seconds"] = sum(c1[:4]) - sum(c0[:4])
    rep["statuses"] = sorted(set(df["status"]))
    rep["instance_seconds"] = {r.instance: round(r.seconds, 3) for r in df.itertuples()}
    return rep


def speedup(quick: bool) -> dict:
    """``batch_medium_24_speedup`` (module docstring); target: 2 workers >= 1.6x faster end to end."""

    items = suites.suite_items("medium")
    reps = 1 if quick else 3
    ones, twos, dask_only = [], [], []
    for _ in range(reps):  # interleaved: a change in the machine's load hits both alike
        ones.append(_end_to_end(1, items))
        twos.append(_end_to_end(2, items))
        if not quick:  # the comparison with a driver that only coordinates: full mode only
            dask_only.append(_end_to_end(2, items, driver_solves=False))
    one = min(ones, key=lambda r: r["total_seconds"])
    two = min(twos, key=lambda r: r["total_seconds"])
    two_dask = min(dask_only, key=lambda r: r["total_seconds"]) if dask_only else None
    one_solve = min(r["solve_seconds"] for r in ones)
    two_solve = min(r["solve_seconds"] for r in twos)
    per = one["instance_seconds"]
    return {
        "seconds": two["total_seconds"],
        "sizes": {"instances": len(items)},
        "instances": len(items),
        "runs_each": reps,
        "one_worker_seconds": one["total_seconds"],
        "two_workers_seconds": two["total_seconds"],
        "speedup": one["total_seconds"] / two["total_seconds"],
        "target_speedup": 1.6,
        "speedup_ok": one["total_seconds"] / two["total_seconds"] >= 1.6,
        # the same with 2 Dask worker processes and a driver that only coordinates
        "two_dask_workers_seconds": two_dask and two_dask["total_seconds"],
        "two_dask_workers_speedup": two_dask and one["total_seconds"] / two_dask["total_seconds"],
        "one_worker_solve_seconds": one_solve,
        "two_workers_solve_seconds": two_solve,
        "speedup_excluding_startup": one_solve / two_solve,
        "speedup_excluding_startup_ok": one_solve / two_solve >= 1.6,
        "one_worker_warmup_seconds": one["startup_seconds"],
        "two_workers_startup_seconds": two["startup_seconds"],
        "two_workers_close_seconds": two["close_seconds"],
        # the close ran under the driver's last groups (not after the last row)
        "two_workers_close_overlapped": two.get("close_overlapped", False),
        "one_worker_cpu_seconds": one["cpu_seconds"],
        "two_workers_cpu_seconds": two["cpu_seconds"],
        "one_worker_mode": one["mode"],
        "two_workers_mode": two["mode"],
        "statuses": sorted(set(one["statuses"]) | set(two["statuses"])),
        "instance_seconds_1_worker": per,
        "instance_seconds_sum": sum(per.values()),
        # the same solves in the 2-worker run: two solvers at once run slower on a 2-core VM
        "two_workers_instance_seconds_sum": sum(two["instance_seconds"].values()),
        "instance_seconds_max": max(per.values()),
        "cpus": os.cpu_count(),
        "load_average_1min": os.getloadavg()[0],
    }


def cluster_startup(quick: bool, workers: int = 2) -> dict:
    """Seconds from ``local_cluster(workers)`` to every worker connected, with TLS (temporary
    credentials, the default) and without, alternated; median of 5 starts each (``--quick``: 1).
    ``seconds`` is the TLS median; ``tls_extra_seconds`` what TLS adds."""

    from dask.distributed import Client  # heavy: imported on use

    reps = 1 if quick else 5
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(reps):
        for tls in (True, False):
            t0 = time.perf_counter()
            cluster = local_cluster(workers, tls=tls)
            client = Client(cluster)
            try:
                client.wait_for_workers(workers)
                times[tls].append(time.perf_counter() - t0)
                n = len(client.nthreads())
                scheduler = client.scheduler
                assert scheduler is not None and scheduler.address is not None
                protocol = scheduler.address.split("://")[0]
                assert protocol == ("tls" if tls else "tcp"), protocol
            finally:
                close_quietly(client, cluster)
    tls_s, tcp_s = statistics.median(times[True]), statistics.median(times[False])
    return {
        "seconds": tls_s,
        "sizes": {"workers": n},
        "starts_each": reps,
        "tls_seconds": times[True],
        "tcp_seconds": times[False],
        "tls_median_seconds": tls_s,
        "tcp_median_seconds": tcp_s,
        "tls_extra_seconds": tls_s - tcp_s,
        "cpus": os.cpu_count(),
        "load_average_1min": os.getloadavg()[0],
    }


_QUICK = "--quick runs batch_medium_24_speedup on the same instances"

CASES = cases(
    __name__,
    {
        "dask_cluster_startup_2": Case(cluster_startup, None, {"workers": 2}),
        "batch_medium_24_speedup": Case(speedup, None, SIZES),
        "batch_medium_1_worker": Case(
            lambda quick: measure(1, quick), None, SIZES | {"workers": 1}, _QUICK
        ),
        "batch_medium_2_workers": Case(
            lambda quick: measure(2, quick), None, SIZES | {"workers": 2}, _QUICK
        ),
    },
)
