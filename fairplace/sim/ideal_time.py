"""A user's T_id model (:class:`~fairplace.sim.protocols.IdealTimeModel`) applied to a finished
simulation: rho = T_sh / T_id (THEMIS Eq. 1) per job (each its own app) and per app, next to the
built-in variants of :mod:`fairplace.sim.metrics`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairplace.core.errors import OptionError
from fairplace.formulations.ftf import n_avg

from .accounting import Timeline
from .metrics import active_step
from .workload import Workload


def entities(arrival, finish, work, demand_max, steps) -> pd.DataFrame:
    """What a T_id model sees: one row per job or app (protocols.IdealTimeModel); ``steps`` is the
    step function of the number of active apps (``metrics.active_step``)."""
    times, counts = steps
    navg = np.empty(len(arrival))
    narr = np.empty(len(arrival), dtype=np.int64)
    for k, (a, f) in enumerate(zip(arrival, finish, strict=True)):
        navg[k] = max(n_avg(times, counts, a, f), 1.0)
        pos = int(np.searchsorted(times, a, side="right")) - 1
        narr[k] = max(int(counts[pos]) if pos >= 0 else 1, 1)
    return pd.DataFrame(
        {
            "arrival": np.asarray(arrival, float),
            "finish": np.asarray(finish, float),
            "work": np.asarray(work, float),
            "demand_max": np.asarray(demand_max, np.int64),
            "n_avg": navg,
            "n_arrival": narr,
        }
    )


def _rho(model, ent: pd.DataFrame, gpus: int, what: str) -> np.ndarray:
    tid = np.asarray(model.ideal_time(ent.copy(), gpus), dtype=float)
    if tid.shape != (len(ent),):
        raise OptionError(
            "rho_variant", f"{model.name}.ideal_time gave shape {tid.shape} for {len(ent)} {what}"
        )
    t_sh = ent["finish"].to_numpy() - ent["arrival"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(tid > 0, t_sh / tid, np.inf)


def add_rho(model, w: Workload, tr: Timeline, jobs: pd.DataFrame, apps: pd.DataFrame, G: int):
    """Add ``rho_<model.name>`` to the jobs and apps frames (in place)."""
    name = str(model.name)
    if f"rho_{name}" in jobs:
        raise OptionError("rho_variant", f"{name!r} is a built-in variant's name; rename the model")
    app_arr = apps["arrival"].to_numpy()
    app_fin = apps["finish"].to_numpy()
    steps = active_step(app_arr, app_fin)
    job_ent = entities(tr.release, tr.finish, w.iters * w.t_iter * w.demand, w.demand, steps)
    work = pd.Series(w.iters * w.t_iter * w.demand).groupby(w.app).sum().to_numpy()
    app_ent = entities(app_arr, app_fin, work, w.app_demand_max(), steps)
    jobs[f"rho_{name}"] = _rho(model, job_ent, G, "jobs")
    apps[f"rho_{name}"] = _rho(model, app_ent, G, "apps")
