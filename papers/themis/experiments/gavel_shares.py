"""Why gavel-ftf's max rho grows under contention: what its program promises each job and app.

gavel-ftf solves min max rho over *jobs* at every decision (``fairplace.sim.schedulers.GavelFTF``),
each job's rho against its own T_id. This script runs it on THEMIS' paper-scale workloads, records
the time share X_j of every active job at every decision (``GavelFTF.last_shares``) and reports:

* per job, the time it held GPUs over the integral of X_j over its active life ("received /
  promised"; ~1 when the round mechanism delivers what the program promised), median per width;
* the time share X of single-job apps' jobs and of the other apps' last-phase jobs (time-averaged
  over each job's active life);
* per app, the GPUs promised (sum over its active jobs of X_j N_j) over an equal app share G / m
  (m active apps), time-averaged: for single-job apps, and for the other apps in their earlier
  phases and in their last (successive-halving) phase, with the share of their life spent there;
* who sets max rho: how many of the 5 apps with the largest rho are single-job apps.

    python papers/themis/experiments/gavel_shares.py --workload 2 --contention 2 4 --seeds 0 1 2

The runs are the reproduction's gavel-ftf cells (fit-first placement, the same max rho).
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from fairplace.instances.workloads import themis_workload
from fairplace.sim import simulate
from fairplace.sim.schedulers import GavelFTF


class RecordingGavel(GavelFTF):
    """gavel-ftf that appends (t, active jobs, X) of every decision to ``log``."""

    def __init__(self, log: list, tol: float = 1e-4):
        super().__init__(tol)
        self.log = log

    def order(self, view):
        out = super().order(view)
        idx, x = self.last_shares
        self.log.append((float(view.t), idx.copy(), x.copy()))
        return out


def shares(workload: int, contention: int, seed: int) -> dict:
    """One gavel-ftf run and the quantities of the module docstring."""
    log: list = []
    r = simulate(trace=themis_workload(workload, contention=contention, seed=seed),
                 scheduler=RecordingGavel(log), placement="packed-sticky",
                 placement_options={"backfill": True}, progress=False)  # fmt: skip
    jobs, apps, G = r.jobs, r.apps, int(r.summary["gpus"])
    app, names = pd.factorize(jobs.app_id)
    d, phase = jobs.gpus.to_numpy(), jobs.phase.to_numpy()
    last = jobs.groupby("app_id").phase.transform("max").to_numpy()
    single = (jobs.groupby("app_id").job_id.transform("size") == 1).to_numpy()
    last_of, single_of = np.zeros(len(names), np.int64), np.zeros(len(names), bool)
    last_of[app], single_of[app] = last, single  # per app: its last phase, single-job or not
    ends = [t for t, *_ in log[1:]] + [float(jobs.finish.max())]
    promised, alive = np.zeros(len(jobs)), np.zeros(len(jobs))
    rel = {}  # (app, in its last phase) -> [share x seconds, seconds]
    for (t, idx, x), t1 in zip(log, ends, strict=True):
        dt = t1 - t
        promised[idx] += x * dt
        alive[idx] += dt
        a = app[idx]
        present = np.unique(a)
        got = np.bincount(a, weights=x * d[idx], minlength=len(names)) / (G / present.size)
        cur = np.full(len(names), np.iinfo(np.int64).max)
        np.minimum.at(cur, a, phase[idx])
        for k in present.tolist():
            acc = rel.setdefault((k, bool(cur[k] == last_of[k])), [0.0, 0.0])
            acc[0] += got[k] * dt
            acc[1] += dt
    ratio = jobs.run_time.to_numpy() / np.maximum(promised, 1e-9)
    by_width = pd.Series(ratio).groupby(jobs.gpus.to_numpy()).median()
    share = pd.DataFrame(
        [(k, in_last, v / s, s) for (k, in_last), (v, s) in rel.items()],
        columns=["app", "last", "share", "seconds"],
    )
    share["single"] = single_of[share.app.to_numpy()]
    multi = share[~share.single]
    life_last = multi.groupby("app").apply(
        lambda g: g.seconds[g["last"]].sum() / g.seconds.sum(), include_groups=False
    )
    top = apps.nlargest(5, "rho_themis")
    return {
        "workload": workload, "contention": contention, "seed": seed,
        "max_rho": float(r.summary["max_rho"]),
        "top5_single": int((top.jobs == 1).sum()),
        "received/promised (width medians)": f"{by_width.min():.2f}..{by_width.max():.2f}",
        "single-job apps' X": float(np.median(promised[single] / np.maximum(alive[single], 1e-9))),
        "single-job apps' share": float(share[share.single].share.median()),
        "last-phase jobs' X": float(np.median((promised / np.maximum(alive, 1e-9))[~single & (phase == last)])),
        "others' share, earlier phases": float(multi[~multi["last"]].share.median()),
        "others' share, last phase": float(multi[multi["last"]].share.median()),
        "others' life in last phase": float(life_last.median()),
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", type=int, nargs="+", default=[2])
    ap.add_argument("--contention", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    a = ap.parse_args()
    rows = [shares(w, c, s) for w in a.workload for c in a.contention for s in a.seeds]
    print(pd.DataFrame(rows).round(3).to_markdown(index=False))


if __name__ == "__main__":
    main()
