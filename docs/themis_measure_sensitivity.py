"""THEMIS sensitivity on W2 (8 apps, 16 GPUs = x2 of 32): f, PA rounding, lease; 5 seeds."""

import json
import sys
import time

import fairplace
from fairplace.instances.workloads import themis_workload

out = open(sys.argv[1], "a")
cases = [dict(f=f) for f in (0.5, 0.8, 0.95)]
cases += [dict(f=0.8, rounding=r) for r in ("lottery", "fractional")]
cases += [dict(f=0.8, lease=lease) for lease in (300.0, 1200.0)]
cases += [dict(f=0.5, rounding=r) for r in ("lottery", "fractional")]
for seed in range(5):
    f = themis_workload(
        2,
        n_apps=8,
        base_gpus=32,
        apps_per_hour=0.5,
        load=0.6,
        jobs_range=(10, 40),
        contention=2,
        seed=seed,
    )
    for opts in cases:
        t = time.time()
        r = fairplace.simulate(
            trace=f,
            scheduler="themis",
            placement="packed-sticky",
            gpus=16,
            gpus_per_machine=4,
            seed=seed,
            scheduler_options=dict(opts),
        )
        S = r.summary
        row = {
            k: S[k]
            for k in (
                "max_rho",
                "median_rho",
                "offered_load",
                "utilization",
                "gpu_time",
                "preemptions",
                "frac_rho_le_1",
            )
        }
        row |= {
            "seed": seed,
            "seconds": round(time.time() - t, 1),
            **{k: v for k, v in opts.items()},
        }
        out.write(json.dumps(row) + "\n")
        out.flush()
