"""The "isolated re-run" T_id variant: each app re-simulated alone on the same cluster.

rho_isolated(app) = (finish - arrival) in the shared run / (finish - arrival) when the app runs alone with
the same scheduler, placement policy, PM-scores and round grid (ARCHITECTURE.md lists it next to THEMIS' N_avg,
Gavel's 1/m share and the static N/G share). A job's value uses the job's own times in both runs. This
costs one extra simulation per app, so it is opt-in (``simulate(..., isolated=True)``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from .workload import Workload


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
