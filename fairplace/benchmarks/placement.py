"""Placement benchmarks: one PAL / PM-First round, PM-score binning at 100,000 GPUs, exact joint placement.

Queues mimic Synergy-style Philly load: GPU demands drawn from the Philly demand histogram (>90% single
GPU, capped at the cluster size), models uniformly from Table II (paper classes), until the total demand
is 1.5x the cluster; scores are Longhorn (256 GPUs, sampled with replacement as the artifact does) or
synthetic (4,096 and 100,000 GPUs) PM-scores binned by :class:`PMScoreBinner`.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import pandas as pd

import fairplace
from fairplace.core.domain import Job, PlacementInstance
from fairplace.formulations.pm_score import bin_scores
from fairplace.instances.generators import grid_cluster
from fairplace.instances.models import MODELS
from fairplace.instances.variability import data_file, make_cluster, synthetic_pm_scores
from fairplace.solvers.placement.cache import PlacementCache
from fairplace.solvers.placement.job_queue import JobQueue
from fairplace.solvers.placement.policies import ClusterState, make_policy

from . import Case, cases


def philly_queue(cluster_size: int, seed: int = 0, load: float = 1.5, max_jobs=None) -> list[Job]:
    """Jobs with Philly GPU demands and Table II models until demand >= load * cluster_size."""
    with data_file("traces", "philly-gpu-demand.csv").open("r") as fh:
        hist = pd.read_csv(fh)
    hist = hist[hist["num_gpus"] <= cluster_size]
    p = hist["jobs"].to_numpy(float) / hist["jobs"].sum()
    rng = np.random.default_rng(seed)
    names = list(MODELS)
    jobs: list[Job] = []
    total = 0
    while total < load * cluster_size and (max_jobs is None or len(jobs) < max_jobs):
        n = int(rng.choice(hist["num_gpus"].to_numpy(), p=p))
        m = MODELS[names[int(rng.integers(len(names)))]]
        jobs.append(Job(f"j{len(jobs)}", n, m.paper_class, model=m.name))
        total += n
    return jobs


def _state(machines: int, profile: str, seed: int = 0) -> ClusterState:
    cl = make_cluster(profile, machines, 4, seed=seed, with_replacement=True)
    scores, _ = bin_scores({c: cl.pm_vector(c) for c in cl.classes}, random_state=seed)
    return ClusterState(cl, scores, {})


def argsort_seconds(scores, repeats: int = 20) -> float:
    """Best of ``repeats`` timings of one ``np.argsort`` of each class's scores, summed over classes
    (a round sorts every class it places): the sort limit a round is compared with."""
    total = 0.0
    for v in scores.values():
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            np.argsort(v)
            times.append(time.perf_counter() - t0)
        total += min(times)
    return total


def time_round(policy: str, machines: int, profile: str, repeats: int) -> dict:
    """Median / worst / best seconds of one round of ``policy`` over a Philly queue of 1.5x the
    cluster (a :class:`JobQueue`, as the simulator gives it), and the median's ratio to one
    argsort of the scores (:func:`argsort_seconds`); the same for the process CPU seconds of a
    round (``cpu_seconds``, ``cpu_argsort_ratio``: what a loaded machine changes least; and
    ``cpu_best_ratio``, the fastest round's)."""
    state = _state(machines, profile)
    queue = JobQueue.of(philly_queue(len(state.cluster)))  # tabled once, as jobs arrive
    pol = make_policy(policy, backfill=True)
    cache = PlacementCache()  # kept across the rounds, as a simulation keeps it
    times, cpu = [], []
    for r in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        d = pol.place(ClusterState(state.cluster, state.scores, {}, r, cache), queue)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    sort_s = argsort_seconds(state.scores)
    med = statistics.median(times)
    return {
        "seconds": med,
        "sizes": {"gpus": len(state.cluster)},
        "repeats": repeats,
        "worst": max(times),
        "best": min(times),
        "gpus": len(state.cluster),
        "size": len(state.cluster),
        "jobs": len(queue),
        "placed": len(d.allocation),
        "argsort_seconds": sort_s,
        "argsort_ratio": med / sort_s,
        "cpu_seconds": statistics.median(cpu),
        "cpu_best": min(cpu),
        "cpu_argsort_ratio": statistics.median(cpu) / sort_s,
        "cpu_best_ratio": min(cpu) / sort_s,  # the least loaded round's: reads the noise
        "kernel": d.kernel,  # which pick loop ran: "c" (compiled) or "python" (FAIRPLACE_KERNEL)
    }


def _round_bench(policy: str, machines: int, profile: str, repeats: int = 30):
    def run(quick: bool = False) -> dict:
        return time_round(policy, machines, profile, 5 if quick else repeats)

    return run


def _binning(quick: bool = False) -> dict:
    n = 100_000  # --quick keeps the size (the fit runs once either way)
    scores = synthetic_pm_scores(n, seed=0)
    t0 = time.perf_counter()
    _, binner = bin_scores(scores, random_state=0)
    return {
        "seconds": time.perf_counter() - t0,
        "sizes": {"gpus": n},
        "gpus": n,
        "k": [int(k) for k in binner.k_],
        "outliers": [int(k) for k in binner.n_outliers_],
    }


def exact_instance(machines: int = 64, jobs: int = 64, seed: int = 0) -> PlacementInstance:
    """``jobs`` Philly jobs (demand <= 8) on ``machines`` x 4 Longhorn GPUs with binned scores."""
    state = _state(machines, "longhorn", seed)
    cl = grid_cluster(machines, 4, pm={c: np.asarray(v) for c, v in state.scores.items()})
    queue = [j for j in philly_queue(len(cl), seed=seed, load=50) if j.gpus <= 8][:jobs]
    return PlacementInstance(cl, tuple(queue), name=f"exact-{jobs}x{len(cl)}")


def _exact(quick: bool = False) -> dict:
    inst = exact_instance(64, 64)  # one solve; --quick keeps the size
    t0 = time.perf_counter()
    sol = fairplace.solve(inst, solver="exact")
    seconds = time.perf_counter() - t0
    pal = fairplace.solve(inst, solver="pal", backfill=True)
    return {
        "seconds": seconds,
        "sizes": {"gpus": len(inst.cluster), "jobs": len(inst.jobs)},
        "status": sol.status,
        "placed": sol.extra.get("placed"),
        "objective": sol.objective,
        "pal_objective": pal.objective,
        "pal_placed": pal.extra["placed"],
    }


def _gpus(n: int) -> dict:
    return {"gpus": n}


#: ``--quick``: 5 rounds per case instead of 30 (10 at 16,384 GPUs), the same sizes
CASES = cases(
    __name__,
    {
        "pal_place_256": Case(_round_bench("pal", 64, "longhorn"), 0.01, _gpus(256)),
        "pm_first_place_256": Case(_round_bench("pm-first", 64, "longhorn"), 0.01, _gpus(256)),
        "pal_place_4096": Case(_round_bench("pal", 1024, "synthetic"), 0.02, _gpus(4096)),
        "pal_place_16384": Case(
            _round_bench("pal", 4096, "synthetic", repeats=10), 0.1, _gpus(16384)
        ),
        "pm_first_place_4096": Case(_round_bench("pm-first", 1024, "synthetic"), 0.2, _gpus(4096)),
        "binning_100k": Case(_binning, 5.0, _gpus(100_000)),
        "placement_exact_256": Case(_exact, 5.0, {"gpus": 256, "jobs": 64}),
    },
)
