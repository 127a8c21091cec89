"""A trace frame turned into the numpy arrays the driver works on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fairplace.core.domain import Job, locality
from fairplace.core.errors import TraceError
from fairplace.core.shared_params import LOCALITY_PENALTY


@dataclass(frozen=True)
class Workload:
    """One entry per job; apps group jobs, ``phase`` orders successive-halving phases inside an app."""

    ids: tuple[str, ...]
    app_ids: tuple[str, ...]  # distinct apps, in first-arrival order
    app: np.ndarray  # app index per job
    phase: np.ndarray
    submit: np.ndarray  # seconds
    demand: np.ndarray  # GPUs
    iters: np.ndarray  # iterations
    t_iter: np.ndarray  # seconds per iteration on median GPUs within one machine
    cls: tuple[str | None, ...]
    model: tuple[str, ...]
    l_machine: np.ndarray  # L when spread over machines of one rack
    l_rack: np.ndarray  # L when spread over racks
    name: str = ""
    meta: Mapping[str, object] = field(default_factory=dict)
    #: jobs the simulation runs for (bool per job; None = all): the driver stops when every tracked
    #: job has finished; the others (recycled jobs) only compete for GPUs until then
    tracked: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, idx) -> tuple[Workload, np.ndarray]:
        """The jobs ``idx`` (in that order) as a workload of their own, and the indices of their
        apps in this one (kept in first-arrival order)."""
        idx = np.asarray(idx, dtype=np.int64)
        apps = np.unique(self.app[idx])
        pick = idx.tolist()
        sub = Workload(
            ids=tuple(self.ids[j] for j in pick),
            app_ids=tuple(self.app_ids[a] for a in apps.tolist()),
            app=np.searchsorted(apps, self.app[idx]),
            phase=self.phase[idx],
            submit=self.submit[idx],
            demand=self.demand[idx],
            iters=self.iters[idx],
            t_iter=self.t_iter[idx],
            cls=tuple(self.cls[j] for j in pick),
            model=tuple(self.model[j] for j in pick),
            l_machine=self.l_machine[idx],
            l_rack=self.l_rack[idx],
            name=self.name,
            meta=self.meta,
        )
        return sub, apps

    def jobs(self, idx=None) -> list[Job]:
        """:class:`~fairplace.core.domain.Job` objects handed to placement policies, each with its
        runtime L across machines (``l_machine``): policies decide with the L the job runs with.
        ``idx``: only those jobs (indices), in that order; the driver makes a job's object when it
        is released and drops it when it finishes."""
        if idx is None:
            return self.jobs(range(len(self)))
        idx = list(idx)
        ids, cls, mod = self.ids, self.cls, self.model
        dem, lm = self.demand[idx].tolist(), self.l_machine[idx].astype(float).tolist()
        # each filled in directly (the fields as the frozen ``__init__`` sets them, which costs a
        # call per field): the driver makes an object per released job
        new, out = object.__new__, []
        for j, n, loc in zip(idx, dem, lm, strict=True):
            job = new(Job)
            job.__dict__.update(
                id=ids[j], gpus=int(n), cls=cls[j], weight=1.0, model=mod[j], locality=loc
            )
            out.append(job)
        return out

    def app_demand_max(self) -> np.ndarray:
        """Per app: the largest total demand of one phase (jobs of a phase run together)."""
        key = self.app * (int(self.phase.max()) + 2) + self.phase
        _, g = np.unique(key, return_inverse=True)
        per_phase = np.bincount(g, weights=self.demand)
        app_of = np.zeros(per_phase.size, np.int64)
        app_of[g] = self.app
        out = np.zeros(len(self.app_ids))
        np.maximum.at(out, app_of, per_phase)
        return out

    @property
    def work(self) -> np.ndarray:
        """Isolated running time per job on median GPUs within one machine: iters x t_iter (s)."""
        return self.iters * self.t_iter


def _lookup(models: Mapping[str, Mapping[str, object]], model: str, key: str, row: int, name: str):
    for m in (model, model.lower()):
        if m in models and models[m].get(key) is not None:
            return models[m][key]
    raise TraceError(f"{name}: row {row + 1} column 'model'", f"unknown model {model!r} ({key})")


def workload_from_trace(
    frame: pd.DataFrame,
    models: Mapping[str, Mapping[str, object]] | None = None,
    locality_penalty: float = LOCALITY_PENALTY.default,
    locality_by_model: Mapping[str, float] | None = None,
    max_gpus: int | None = None,
) -> Workload:
    """Trace frame (``instances.traces.validate_trace`` columns) -> :class:`Workload`.

    ``t_iter`` and ``cls`` come from the frame's columns when present, else from ``models``
    (model -> {"t_iter": s, "cls": class}); L across machines from the ``locality`` column, else
    ``locality_by_model``, else ``locality_penalty``; L across racks from ``locality_rack`` else the
    same L (PAL's two-level model)."""
    name = frame.attrs.get("name", "<trace>")
    models = models or {}
    n = len(frame)
    model = tuple(frame["model"].astype(str).tolist())
    # each model once, in order of its first row (the row a lookup error names)
    code, uniq = pd.factorize(pd.Series(model, dtype=object))
    first = dict(zip(uniq.tolist(), np.unique(code, return_index=True)[1].tolist(), strict=True))
    if "t_iter" in frame.columns:
        t_iter = frame["t_iter"].to_numpy(dtype=float)
    else:
        t_of = [float(_lookup(models, m, "t_iter", k, name)) for m, k in first.items()]
        t_iter = np.asarray(t_of, float)[code] if n else np.zeros(0)
    if "cls" in frame.columns:
        cls = tuple(None if pd.isna(c) else str(c) for c in frame["cls"].tolist())
    else:
        c_of = [str(_lookup(models, m, "cls", k, name)) for m, k in first.items()]
        cls = tuple(map(c_of.__getitem__, code.tolist()))
    if "locality" in frame.columns:
        l_m = frame["locality"].to_numpy(dtype=float)
    else:
        by = locality_by_model or {}
        l_of = [float(locality(m, by, locality_penalty)) for m in first]
        l_m = np.asarray(l_of, float)[code] if n else np.zeros(0)
    l_r = frame["locality_rack"].to_numpy(dtype=float) if "locality_rack" in frame else l_m.copy()
    demand = frame["num_gpus"].to_numpy(dtype=np.int64)
    if max_gpus is not None and (demand > max_gpus).any():
        k = int(np.flatnonzero(demand > max_gpus)[0])
        raise TraceError(
            f"{name}: row {k + 1} column 'num_gpus'",
            f"job needs {demand[k]} GPUs but the cluster has {max_gpus}",
        )
    ids = tuple(frame["job_id"].astype(str).tolist())
    apps = frame["app_id"].astype(str).tolist() if "app_id" in frame else ids
    app_ids = tuple(dict.fromkeys(apps))
    pos = {a: k for k, a in enumerate(app_ids)}
    phase = frame["phase"].to_numpy(dtype=np.int64) if "phase" in frame else np.zeros(n, np.int64)
    return Workload(
        ids=ids,
        app_ids=app_ids,
        app=np.fromiter(map(pos.__getitem__, apps), np.int64, n),
        phase=phase,
        submit=frame["submit_time"].to_numpy(dtype=float),
        demand=demand,
        iters=frame["duration"].to_numpy(dtype=float),
        t_iter=t_iter,
        cls=cls,
        model=model,
        l_machine=l_m,
        l_rack=l_r,
        name=str(name),
    )
