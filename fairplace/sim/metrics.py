"""Frames and summary built from what the driver recorded (analysis never recomputes them).

Finish-time fairness of an app (or of a job taken as its own app), realised:
    rho = T_sh / T_id,  T_sh = finish - arrival,
and T_id under each variant of :class:`fairplace.formulations.ftf.IdealTime` with
W = sum_j iters_j x t_iter_j x N_j (serial GPU-seconds), d_max = largest per-phase demand:
    themis:   sum_p W_p / min(R_C / N_avg, d_p)  (headline: the app alone on a 1/N_avg share, each
              successive-halving phase p with its work W_p and total demand d_p; N_avg = the
              time-averaged number of active apps over the life)
    literal:  W / min(R_C, d_max) x N_avg   (THEMIS Eq. 1 / Eq. 2 as printed)
    static:   W / min(R_C / N_arrival, d_max)
    gavel:    t_isolated (the isolated-equivalent time of the work, accumulated by the driver)
and, re-simulated after the run (:mod:`fairplace.sim.isolated`): ``solo`` (the app alone on
round(R_C / N_avg) GPUs under THEMIS without lease ends; THEMIS workloads by default) and
``isolated`` (alone on the whole cluster under the run's scheduler).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from fairplace.formulations.ftf import T_ID_VARIANTS

from .accounting import TextLog
from .engine import Timeline
from .workload import Workload

#: also reported when the simulation re-runs every app alone (``simulate(isolated=True)``)
ISOLATED = "isolated"
#: also reported when each app is simulated alone on its 1/N_avg share (``simulate(solo=True)``,
#: :mod:`fairplace.sim.isolated`): THEMIS' T_id with the simulator's execution model
SOLO = "solo"
#: the T_id variants computed by re-simulating apps (after the run, outside these metrics)
RESIMULATED = (ISOLATED, SOLO)


def active_step(arrival: np.ndarray, finish: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step function of the number of active entities: (change times, count from each time on)."""
    times = np.concatenate([arrival, finish])
    delta = np.concatenate([np.ones(arrival.size), -np.ones(finish.size)])
    order = np.lexsort((-delta, times))  # at equal times count arrivals first
    t, d = times[order], delta[order]
    counts = np.cumsum(d)
    last = np.r_[t[1:] != t[:-1], True]  # keep the count after all changes at one time
    return t[last], counts[last].astype(np.int64)


def window_n_avg(steps, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """:func:`fairplace.formulations.ftf.n_avg` of the step function ``steps`` over each window
    [start_k, end_k] at once: the integral of the steps from their running sum at the change
    times (a window's integral is the difference of its ends'), divided by the window's length;
    equal to it up to rounding (a window inside one step: its count exactly). As n_avg, a window
    counts from the first change on (nan if it closes before it); an empty window: the count at
    its start."""
    times, counts = steps
    times = np.asarray(times, float)
    start, end = np.asarray(start, float), np.asarray(end, float)
    if not times.size:
        return np.ones(start.size)
    c = np.asarray(counts, float)
    F = np.concatenate([[0.0], np.cumsum(c[:-1] * np.diff(times))])  # integral up to times[i]

    def step_of(x):
        return np.maximum(np.searchsorted(times, x, side="right") - 1, 0)

    lo = step_of(start)
    s = np.maximum(start, times[0])
    first = step_of(s)
    one = np.searchsorted(times, end, side="left") <= first + 1  # inside one step
    with np.errstate(invalid="ignore", divide="ignore"):
        i, k = step_of(end), first
        mean = (F[i] + c[i] * (end - times[i]) - F[k] - c[k] * (s - times[k])) / (end - s)
    mean = np.where(one, c[first], mean)
    mean = np.where(end > times[0], mean, np.nan)  # closes before the first change: 0 / 0
    return np.where(end > start, mean, c[lo])


def _rho(arrival, finish, work, dmax, t_iso, steps, G, phases=None) -> dict[str, np.ndarray]:
    """rho = T_sh / T_id per variant (:class:`fairplace.formulations.ftf.IdealTime`'s rules with
    n_active = 1 and no work left, over numpy arrays; inf where T_id is not > 0)."""
    times, counts = steps
    t_sh = finish - arrival
    navg = np.maximum(window_n_avg(steps, arrival, finish), 1.0)
    pos = np.searchsorted(times, arrival, side="right") - 1
    n_arr = np.where(pos >= 0, counts[np.maximum(pos, 0)] if counts.size else 1, 1)
    n_arr = np.maximum(n_arr, 1)
    work = np.asarray(work, float)
    dmax = np.asarray(dmax).astype(float)
    share = G / navg
    themis = work / np.minimum(share, dmax)
    if phases is not None:  # sum_p W_p / min(share, d_p), phase after phase (as Python's sum)
        if isinstance(phases, PhaseTable):
            owner, w_p, d_p = phases.app, phases.work, phases.demand.astype(float)
            n_apps = t_sh.size
        else:  # per app: ((W_p, d_p), ...)
            n_apps = len(phases)
            owner = np.repeat(np.arange(n_apps), [len(p) for p in phases])
            flat = [x for p in phases for x in p]
            w_p = np.array([float(w) for w, _ in flat])
            d_p = np.array([float(int(d)) for _, d in flat])
        has = np.bincount(owner, minlength=n_apps) > 0
        total = np.zeros(n_apps)
        if owner.size:
            np.add.at(total, owner, w_p / np.minimum(share[owner], d_p))
        themis = np.where(has, total, themis)
    tid = {
        "themis": themis,
        "literal": work / np.minimum(float(G), dmax) * navg,
        "static": work / np.minimum(G / n_arr, dmax),
        "gavel": np.asarray(t_iso, float) + 0.0 / np.minimum(float(G), dmax),
    }
    out = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for v in T_ID_VARIANTS:
            out[v] = np.where(tid[v] > 0, t_sh / tid[v], np.inf)
    return out


class PhaseTable(NamedTuple):
    """One row per (app, phase), sorted by app then phase: the app's index, the phase's work W_p
    (serial GPU-seconds) and total demand d_p (GPUs)."""

    app: np.ndarray
    work: np.ndarray
    demand: np.ndarray


def phase_table(w: Workload) -> PhaseTable:
    """The apps' phases as columns (:class:`PhaseTable`; no Python object per app)."""
    df = pd.DataFrame({"app": w.app, "phase": w.phase, "work": w.work * w.demand, "d": w.demand})
    g = df.groupby(["app", "phase"], sort=True)[["work", "d"]].sum()
    return PhaseTable(
        g.index.get_level_values(0).to_numpy(np.int64),
        g["work"].to_numpy(float),
        g["d"].to_numpy(np.int64),
    )


def app_phases(w: Workload) -> list[tuple[tuple[float, int], ...]]:
    """Per app: ((W_p, d_p), ...) over its phases (serial GPU-seconds, total GPUs of the phase)."""
    app, work, d = phase_table(w)
    work, d = work.tolist(), d.tolist()
    cut = np.flatnonzero(np.diff(app)) + 1
    out: list = [()] * len(w.app_ids)
    for a, b in zip(np.r_[0, cut].tolist(), np.r_[cut, app.size].tolist(), strict=True):
        out[int(app[a])] = tuple((float(work[i]), int(d[i])) for i in range(a, b))
    return out


def offered_load(jobs: pd.DataFrame, G: int) -> float:
    """GPU-hours arriving / (capacity x span): sum_j N_j x iters_j x t_iter_j over G x (last submit -
    first submit); the span is at least the longest job's isolated time (all arriving together)."""
    work = float((jobs["ideal_time"] * jobs["gpus"]).sum())
    span = max(float(jobs["submit"].max() - jobs["submit"].min()), float(jobs["ideal_time"].max()))
    return work / (G * span) if G > 0 and span > 0 else float("inf")


def job_frame(w: Workload, tr: Timeline, G: int) -> pd.DataFrame:
    jct = tr.finish - tr.release
    app_arr = pd.Series(tr.release).groupby(w.app).min().to_numpy()
    app_fin = pd.Series(tr.finish).groupby(w.app).max().to_numpy()
    steps = active_step(app_arr, app_fin)
    work = w.iters * w.t_iter * w.demand
    rho = _rho(tr.release, tr.finish, work, w.demand, tr.t_isolated_job, steps, G)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(tr.run > 0, tr.score_time / tr.run, np.nan)
    return pd.DataFrame(  # one frame from whole columns (no row objects, no insert per column)
        {
            "job_id": list(w.ids),
            "app_id": np.asarray(w.app_ids, dtype=object)[w.app].tolist(),
            "model": list(w.model),
            "cls": list(w.cls),
            "gpus": w.demand,
            "phase": w.phase,
            "iterations": w.iters,
            "submit": w.submit,
            "arrival": tr.release,
            "start": tr.start,
            "finish": tr.finish,
            "jct": jct,
            "waiting": jct - tr.held,
            "run_time": tr.held,
            "gpu_time": tr.gpu_seconds,
            "ideal_time": w.iters * w.t_iter,
            "placement_score": score,
            "migrations": tr.migrations,
            "preemptions": tr.preemptions,
            "overhead": tr.overhead,
            # paid checkpoint-restarts: every move, and every resume (each preemption of a job that
            # finished is followed by exactly one resume; first starts are free)
            "restarts": tr.preemptions + tr.migrations,
            "restart_gpu_time": tr.restart_gpu_seconds,
            **{f"rho_{v}": rho[v] for v in T_ID_VARIANTS},
        }
    )


def app_frame(w: Workload, tr: Timeline, jobs: pd.DataFrame, G: int) -> pd.DataFrame:
    g = jobs.groupby(w.app, sort=True)
    arrival = g["arrival"].min().to_numpy()
    finish = g["finish"].max().to_numpy()
    work = pd.Series(w.iters * w.t_iter * w.demand).groupby(w.app).sum().to_numpy()
    dmax = w.app_demand_max()
    rho = _rho(
        arrival, finish, work, dmax, tr.t_isolated, active_step(arrival, finish), G, phase_table(w)
    )
    run = g["run_time"].sum().to_numpy()
    st = pd.Series(tr.score_time).groupby(w.app).sum().to_numpy()
    prog = pd.Series(tr.run).groupby(w.app).sum().to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(prog > 0, st / prog, np.nan)
    df = pd.DataFrame(
        {
            "app_id": list(w.app_ids),
            "jobs": g.size().to_numpy(),
            "demand_max": dmax,
            "arrival": arrival,
            "finish": finish,
            "jct": finish - arrival,
            "run_time": run,
            "gpu_time": g["gpu_time"].sum().to_numpy(),
            "placement_score": score,
            "migrations": g["migrations"].sum().to_numpy(),
            "restarts": g["restarts"].sum().to_numpy(),
            "restart_gpu_time": g["restart_gpu_time"].sum().to_numpy(),
        }
    )
    for v in T_ID_VARIANTS:
        df[f"rho_{v}"] = rho[v]
    return df


def round_frame(tr: Timeline) -> pd.DataFrame:
    """One row per decision (``accounting.ROUND_COLUMNS``), as ``pd.DataFrame`` makes it of the
    recorded lists; the allocation texts, the bulk of a long run's record, taken from their
    :class:`~.accounting.TextLog` without a copy where the frame keeps strings in Arrow
    (pandas >= 3), else as a list."""
    cols = dict(tr.rounds)
    texts = cols.get("allocation")
    if isinstance(texts, TextLog):
        dtype = pd.Series(["{}"]).dtype
        arrow = getattr(dtype, "storage", None) == "pyarrow" and len(texts)
        cols["allocation"] = pd.array(texts.arrow(), dtype=dtype) if arrow else list(texts)
    return pd.DataFrame(cols)


def jain(x: np.ndarray) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2) in (0, 1]."""
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    return float(x.sum() ** 2 / (x.size * np.square(x).sum())) if x.size else float("nan")


def restart_summary(jobs: pd.DataFrame) -> dict:
    """Paid checkpoint-restarts (resumes after a preemption and moves; first starts are free):
    ``restarts_per_job`` = restarts / jobs, ``restart_gpu_hours`` = GPU-hours held while paying
    checkpoint + restart (GPUs held x seconds before the job is ready again), ``restart_gpu_share``
    = that / all GPU-hours the jobs held."""
    held = float(jobs["gpu_time"].sum())
    paid = float(jobs["restart_gpu_time"].sum())
    return {
        "restarts_per_job": float(jobs["restarts"].sum() / len(jobs)) if len(jobs) else 0.0,
        "restart_gpu_hours": paid / 3600.0,
        "restart_gpu_share": paid / held if held > 0 else 0.0,
    }


def summary(
    jobs: pd.DataFrame, apps: pd.DataFrame, tr: Timeline, G: int, rho_variant: str = "themis"
) -> dict:
    jct = jobs["jct"].to_numpy()
    makespan = float(jobs["finish"].max() - jobs["submit"].min())
    rho = apps[f"rho_{rho_variant}"].to_numpy()
    out = {
        "jobs": int(len(jobs)),
        "apps": int(len(apps)),
        "gpus": int(G),
        "avg_jct": float(jct.mean()),
        "median_jct": float(np.median(jct)),
        "p99_jct": float(np.percentile(jct, 99)),
        "geomean_jct": float(np.exp(np.mean(np.log(jct)))),
        "avg_waiting": float(jobs["waiting"].mean()),
        "avg_app_jct": float(apps["jct"].mean()),
        "makespan": makespan,
        "utilization": float(tr.busy_gpu_seconds / (G * makespan)) if makespan > 0 else 0.0,
        "gpu_time": float(jobs["gpu_time"].sum()),
        "idle_gpu_hours_while_waiting": float(tr.idle_waiting_gpu_seconds / 3600.0),
        "offered_load": offered_load(jobs, G),
        "placement_score": float(
            np.nansum(jobs["placement_score"] * jobs["run_time"]) / jobs["run_time"].sum()
        ),
        "migrations": int(jobs["migrations"].sum()),
        "preemptions": int(jobs["preemptions"].sum()),
        **restart_summary(jobs),
        "rho_variant": rho_variant,
        "max_rho": float(np.max(rho)),
        "median_rho": float(np.median(rho)),
        "frac_rho_le_1": float(np.mean(rho <= 1.0)),
        "jain_rho": jain(rho),
        "decisions": int(len(tr.rounds["t"])),
        "rounds": int(np.sum(tr.rounds["span"])),
    }
    for v in (*T_ID_VARIANTS, *RESIMULATED):
        if f"rho_{v}" not in apps:
            continue
        r = apps[f"rho_{v}"].to_numpy()
        out[f"max_rho_{v}"] = float(np.max(r))
        out[f"median_rho_{v}"] = float(np.median(r))
    return out
