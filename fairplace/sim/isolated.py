"""The T_id variants that re-simulate each app alone (one extra simulation per app, so opt-in).

``isolated``: rho(app) = (finish - arrival) in the shared run / (finish - arrival) when the app runs
alone on the same cluster with the same scheduler, placement policy, PM-scores and round grid
(``simulate(..., isolated=True)``; ARCHITECTURE.md lists it next to THEMIS' N_avg, Gavel's 1/m share
and the static N/G share).

``solo`` (THEMIS' T_id made consistent with the simulator): T_id(app) = the JCT of the app
simulated alone on its 1/N_avg share, n = max(1, round(R_C / N_avg)) GPUs (N_avg: the time-averaged
number of active apps over the app's life in the shared run, as in the analytical ``themis``
variant), the first n GPUs of the run's cluster (same machines, PM-scores and binned scores), with
the same execution model (phases, elastic jobs, spread slowdown, checkpoint + restart) and the
run's decision clock. ONE reference executor for every scheduler, so that the metric favours none:
THEMIS (its default options and the run's seed) with leases that never expire: a lone app wins
every GPU it can use, THEMIS' app scheduler splits them among its (elastic) jobs, and GPUs come and
go only at completions and releases. With expiring leases a lone app's GPUs are re-auctioned
every 10 minutes for nothing; when the arbiter then hands back other GPUs the jobs move, and T_id
would carry that churn (W1 seed 7: +6% JCT, so SRTF's lone app had rho 0.94). A job wider than n
runs elastic on n GPUs at n / N_j of its rate (in the solo workload its demand is n and its
t_iter N_j / n times longer: the same work, the same rate at every k <= n). An app alone on an
empty cluster (N_avg = 1) thus has rho_solo = its JCT / THEMIS' JCT alone without leases.
Computed once per app after the run (the agents keep bidding with the analytical T_id while it
runs).

A job's value uses the job's own times in both runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial

import numpy as np

from fairplace.core.domain import Cluster
from fairplace.core.limits import MAX_TIME
from fairplace.solvers.placement.cache import PlacementCache
from fairplace.solvers.placement.policies import ClusterState

from .engine import Driver, DriverConfig
from .metrics import SOLO, active_step, window_n_avg
from .schedulers import SCHEDULER_REGISTRY, make_scheduler
from .workload import Workload

#: the reference executor of ``solo``: one scheduler (default options) for every run, its lease
#: (its round option) never expiring
SOLO_SCHEDULER = "themis"
SOLO_LEASE = MAX_TIME


def app_subset(w: Workload, a: int) -> Workload:
    """The jobs of app ``a`` as a workload of their own (app index 0)."""
    m = w.app == a
    return replace(
        w,
        ids=tuple(i for i, k in zip(w.ids, m, strict=True) if k),
        app_ids=(w.app_ids[a],),
        app=np.zeros(int(m.sum()), np.int64),
        phase=w.phase[m],
        submit=w.submit[m],
        demand=w.demand[m],
        iters=w.iters[m],
        t_iter=w.t_iter[m],
        cls=tuple(c for c, k in zip(w.cls, m, strict=True) if k),
        model=tuple(x for x, k in zip(w.model, m, strict=True) if k),
        l_machine=w.l_machine[m],
        l_rack=w.l_rack[m],
    )


def isolated_jct(w: Workload, run_alone: Callable[[Workload], tuple[np.ndarray, np.ndarray]]):
    """(per-job JCT alone, per-app JCT alone); ``run_alone(sub) -> (release, finish)`` per job."""
    job = np.empty(len(w))
    app = np.empty(len(w.app_ids))
    for a in range(len(w.app_ids)):
        idx = np.flatnonzero(w.app == a)
        release, finish = run_alone(app_subset(w, a))
        job[idx] = finish - release
        app[a] = finish.max() - release.min()
    return job, app


def solo_gpus(n_avg: np.ndarray, gpus: int) -> np.ndarray:
    """n = max(1, round(R_C / N_avg)) GPUs per app (halves rounded up), at most R_C."""
    n = np.floor(gpus / np.maximum(np.asarray(n_avg, float), 1.0) + 0.5)
    return np.clip(n, 1, gpus).astype(np.int64)


def solo_workload(w: Workload, a: int, n: int) -> Workload:
    """App ``a`` alone on ``n`` GPUs: a job wider than n is demand n with t_iter N_j / n times
    longer (the same work; with k <= n GPUs the same rate k / (N_j t_iter) as the elastic job)."""
    sub, _ = w.take(np.flatnonzero(w.app == a))
    cap = np.minimum(sub.demand, n)
    return replace(sub, demand=cap, t_iter=sub.t_iter * (sub.demand / cap))


def solo_runner(cluster: Cluster, scores, policy, driver: DriverConfig, seed: int):
    """``run(sub, n) -> (release, finish)``: ``sub`` simulated by the reference executor
    (:data:`SOLO_SCHEDULER`, default options, lease :data:`SOLO_LEASE`) on the first ``n`` GPUs of
    ``cluster``; the driver's options as the run's (decision clock, checkpoint, restart, ...), its
    round the scheduler's default lease (as a THEMIS run's)."""
    entry = SCHEDULER_REGISTRY.entry_of(SOLO_SCHEDULER)[1]
    option, default = entry.capabilities["round_option"]
    cfg = replace(driver, round_length=float(default))

    def run(sub: Workload, n: int):
        part = Cluster(tuple(cluster.gpus[:n]))
        sc = {c: np.asarray(v)[:n] for c, v in scores.items()}
        sched = make_scheduler(SOLO_SCHEDULER, seed=seed, **{option: SOLO_LEASE})
        state = partial(ClusterState, cache=PlacementCache())  # the rounds of this run
        t = Driver(sub, part, sc, sched, policy, state, cfg).run()
        return t.release, t.finish

    return run


def solo_jct(w: Workload, n: np.ndarray, run_alone) -> tuple[np.ndarray, np.ndarray]:
    """(per-job JCT, per-app JCT) of every app alone on its ``n[a]`` GPUs
    (``run_alone(sub, n) -> (release, finish)``, :func:`solo_runner`)."""
    job = np.empty(len(w))
    app = np.empty(len(w.app_ids))
    for a in range(len(w.app_ids)):
        idx = np.flatnonzero(w.app == a)
        release, finish = run_alone(solo_workload(w, a, int(n[a])), int(n[a]))
        job[idx] = finish - release
        app[a] = finish.max() - release.min()
    return job, app


def add_solo_rho(w: Workload, jobs, apps, gpus: int, run_alone) -> None:
    """Add ``rho_solo`` to the jobs and apps frames (in place): N_avg of each app from the apps'
    arrivals and finishes (as the ``themis`` variant's), n = :func:`solo_gpus`, T_id = the JCT
    alone (:func:`solo_jct`); the apps frame also gets ``solo_gpus`` (n)."""
    arr, fin = apps["arrival"].to_numpy(), apps["finish"].to_numpy()
    n = solo_gpus(window_n_avg(active_step(arr, fin), arr, fin), gpus)
    job_alone, app_alone = solo_jct(w, n, run_alone)
    jobs[f"rho_{SOLO}"] = jobs["jct"].to_numpy() / job_alone
    apps[f"rho_{SOLO}"] = apps["jct"].to_numpy() / app_alone
    apps["solo_gpus"] = n
