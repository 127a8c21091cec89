"""Worked examples of the papers for the ``paper`` suite (``suites.PAPER_INSTANCES``) beyond THEMIS Fig. 5.

* ``themis-4.3.3`` — THEMIS §4.3.3: a hyper-parameter app of 4 jobs (80, 100, 100, 120 s/iteration)
  under successive halving with phases (4 jobs x 8 it, 2 x 16, 1 x 36), budget 10,000 GPU-s,
  d_max = 8, S = 1, on 16 GPUs with N_avg = 4 (so T_id = 2500 s). Its bid table is Table 3: rho for
  1..16 GPUs by :class:`~fairplace.formulations.ftf.FTFModel` in the ``median`` phase model, which gives
  the paper's rho(2) = 2, rho(8) = 0.5, rho(16) = 0.34. The three other apps of the setup enter only
  through N_avg (the paper gives no bids for them), and placement does not matter (S = 1), so each size
  is bid as one packed bundle. Given nothing the app makes no progress: ``rho_empty = null``.
* ``pal-lxv-example`` — PAL §III's L x V matrix: PM-score bins 0.89, 0.94, 1.06, 2.55 and L_across 1.5.
  The paper gives the matrix, not a cluster, so the cluster is ours: two 4-GPU machines whose good
  GPUs are split across machines, so that a 4-GPU class-A job is best spread (L x V = 1.5 x 0.94 = 1.41)
  rather than packed with a 2.55 GPU — the paper's "PAL prefers a distributed allocation over bin 4".
* ``pal-frontera-32gpu`` — the real Frontera 8 x 4 PM-score table (``instances/data``) with a fixed job
  mix (demands 8, 4, 4, 2, 2, 1, 1, 1 of classes A, B, C in turn; 23 of 32 GPUs), L_across = 1.7.
"""

from __future__ import annotations

from fairplace.core.domain import GPU, App, AuctionInstance, Bid, Cluster, Job, PlacementInstance
from fairplace.formulations.ftf import FTFModel, IdealTime
from fairplace.formulations.hyperopt import JobInfo, SuccessiveHalving

from .generators import grid_cluster

LXV_BINS = (0.89, 0.94, 1.06, 2.55)
LXV_LOCALITY = 1.5


def themis_4_3_3() -> AuctionInstance:
    """THEMIS §4.3.3 / Table 3 as a one-app auction on 16 GPUs (see the module docstring)."""
    jobs = tuple(JobInfo(8, t) for t in (80.0, 100.0, 100.0, 120.0))
    phases = ((4, 8.0), (2, 16.0), (1, 36.0))
    model = FTFModel(
        SuccessiveHalving(jobs, phases, mode="median"), d_max=8, t_id=IdealTime(n_avg=4)
    )
    cl = grid_cluster(4, 4)
    bids = tuple(
        Bid(tuple(g.id for g in cl.gpus[:n]), float(model.rho(n, len(cl)))) for n in range(1, 17)
    )
    meta = {
        "source": "THEMIS §4.3.3, Table 3",
        "iteration_seconds": [j.avg_time_per_iter for j in jobs],
        "phases": [list(p) for p in phases],
        "d_max": 8,
        "n_avg": 4,
        "phase_model": "median",
        "t_id": 2500.0,
    }
    return AuctionInstance(cl, (App("hyperband-app", bids, None),), name="themis-4.3.3", meta=meta)


def pal_lxv_example() -> PlacementInstance:
    """PAL's L x V example bins on a two-machine cluster (see the module docstring)."""
    v1, v2, _, v4 = LXV_BINS
    scores = {"m0": (v1, v1, v4, v4), "m1": (v2, v2, v4, v4)}
    gpus = tuple(
        GPU(f"{m}/{g}", m, "r0", {"A": s}) for m, row in scores.items() for g, s in enumerate(row)
    )
    meta = {
        "source": "PAL §III, L x V matrix example (cluster constructed by fairplace)",
        "bins": list(LXV_BINS),
        "expected_cell": [LXV_LOCALITY, round(LXV_LOCALITY * v2, 4)],
    }
    return PlacementInstance(
        Cluster(gpus),
        (Job("j1", 4, "A"),),
        locality_penalty=LXV_LOCALITY,
        name="pal-lxv-example",
        meta=meta,
    )


def pal_frontera_32gpu() -> PlacementInstance:
    """The Frontera 32-GPU cluster (real PM-scores) with a fixed job mix."""
    from .variability import frontera_cluster  # heavy (pandas): imported on use

    demands = (8, 4, 4, 2, 2, 1, 1, 1)
    jobs = tuple(Job(f"j{k}", d, "ABC"[k % 3]) for k, d in enumerate(demands))
    meta = {"source": "PAL: TACC Frontera 8 x 4 V100 PM-scores", "demands": list(demands)}
    return PlacementInstance(
        frontera_cluster(), jobs, locality_penalty=1.7, name="pal-frontera-32gpu", meta=meta
    )
