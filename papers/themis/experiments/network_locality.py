"""Why THEMIS' lead does not grow with the network-intensive fraction (Figs. 15-16): where the
locality slowdown falls and who pays it.

Runs the network sweep's cells (``papers/themis/network.toml``: W2 x1, fit-first placement for the
queue baselines) at fractions 0 and 1 and reports per scheduler and seed:

* ``wide work``: the share of the ideal GPU-work in jobs wider than a machine (only these can be
  slowed down by locality when placed well: a job on one machine runs at L = 1);
* ``GPU time / ideal, wide`` / ``narrow``: GPU time held by those jobs over their ideal GPU time
  (iterations x t_iter x GPUs). Without restarts (the queue baselines) it is the locality slowdown
  they paid, on average: a wide job within one rack pays exactly the cross-machine level (1.1
  compute-, 1.5 network-intensive), across racks more (1.3 / 2.0); THEMIS' includes its restarts;
* ``restarts``: checkpoint-restart seconds over the seconds the jobs held GPUs;
* the app with the largest rho: its GPU-hours per job, the share of its jobs' lifetime spent
  waiting, and its rho in the run at the other fraction (the two workloads have the same apps and
  jobs, only their locality differs);
* ``rho ratio (wide apps)``: median over the apps with a wide job of rho at fraction 1 over rho at 0.

    python papers/themis/experiments/network_locality.py --schedulers srtf las gandiva themis --seeds 0 1
    python papers/themis/experiments/network_locality.py --machines-per-rack 8    # the racks control

Every run's max rho equals its journaled cell's.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from fairplace.instances.workloads import themis_workload
from fairplace.sim import simulate


def run(scheduler: str, fraction: float, seed: int, machines_per_rack: int | None = None):
    """One cell of the network sweep (with ``machines_per_rack``: of its racks control,
    papers/themis/experiments/themis-network-racks.toml): (jobs, apps, summary)."""
    tr = themis_workload(2, contention=1, seed=seed, network_fraction=fraction)
    r = simulate(trace=tr, scheduler=scheduler, placement="packed-sticky",
                 placement_options={"backfill": True}, machines_per_rack=machines_per_rack,
                 seed=seed, progress=False)  # fmt: skip
    return r.jobs, r.apps, r.summary


def rows(scheduler: str, seed: int, machine_gpus: int, racks: int | None = None) -> list[dict]:
    """The quantities of the module docstring at fractions 0 and 1."""
    runs = {f: run(scheduler, f, seed, racks) for f in (0.0, 1.0)}
    rho = {f: apps.set_index("app_id").rho_themis for f, (_, apps, _) in runs.items()}
    out = []
    for f, (jobs, apps, summary) in runs.items():
        wide = jobs.gpus.to_numpy() > machine_gpus
        ideal = (jobs.ideal_time * jobs.gpus).to_numpy()
        paid = jobs.gpu_time.to_numpy()
        worst = apps.loc[apps.rho_themis.idxmax(), "app_id"]
        mine = jobs[jobs.app_id == worst]
        has_wide = jobs.groupby("app_id").gpus.max() > machine_gpus
        ratio = (rho[1.0] / rho[0.0])[has_wide.reindex(rho[0.0].index).to_numpy()]
        out.append({
            "scheduler": scheduler, "seed": seed, "fraction": f,
            "max rho": float(summary["max_rho"]),
            "wide work": ideal[wide].sum() / ideal.sum(),
            "GPU time / ideal, wide": paid[wide].sum() / ideal[wide].sum(),
            "narrow": paid[~wide].sum() / ideal[~wide].sum(),
            "restarts": float(jobs.overhead.sum() / jobs.run_time.sum()),
            "worst app": worst,
            "its GPU-h per job": float((mine.ideal_time * mine.gpus).sum() / 3600 / len(mine)),
            "its waiting share": float(mine.waiting.sum() / (mine.finish - mine.arrival).sum()),
            "its rho at the other fraction": float(rho[1.0 - f][worst]),
            "rho ratio (wide apps)": float(np.median(ratio)),
        })  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--schedulers", nargs="+", default=["srtf", "las", "gandiva", "themis"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument(
        "--machines-per-rack",
        type=int,
        default=None,
        help="racks of this many machines (default: one rack, the reproduction's)",
    )
    a = ap.parse_args()
    machine_gpus = int(themis_workload(2, n_apps=2).attrs["gpus_per_machine"])
    out = [r for s in a.schedulers for seed in a.seeds
           for r in rows(s, seed, machine_gpus, a.machines_per_rack)]  # fmt: skip
    print(pd.DataFrame(out).round(3).to_markdown(index=False))


if __name__ == "__main__":
    main()
