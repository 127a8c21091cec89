"""Max rho per scheduler on THEMIS W1/W2 at x1/x2/x4, 5 seeds (THEMIS §6.2.2; results in docs/themis-results.md)."""

import json
import sys
import time

import fairplace
from fairplace.instances.workloads import themis_workload

SCHEDS = ["themis", "las", "srtf", "optimus", "srpt-oracle", "gavel-ftf", "drf", "gandiva", "slaq"]
BASE, APPS = 32, 8
out = open(sys.argv[1], "a")
for seed in [int(x) for x in sys.argv[2].split(",")]:
    for wl in (1, 2):
        for c in (1, 2, 4):
            f = themis_workload(
                wl,
                n_apps=APPS,
                base_gpus=BASE,
                apps_per_hour=0.5,
                load=0.6,
                jobs_range=(10, 40),
                contention=c,
                seed=seed,
            )
            for s in SCHEDS:
                t = time.time()
                try:
                    r = fairplace.simulate(
                        trace=f,
                        scheduler=s,
                        placement="packed-sticky",
                        gpus=BASE // c,
                        gpus_per_machine=4,
                        seed=seed,
                    )
                    S = r.summary
                    row = {
                        k: S[k]
                        for k in (
                            "max_rho",
                            "max_rho_literal",
                            "median_rho",
                            "offered_load",
                            "utilization",
                            "gpu_time",
                            "preemptions",
                            "frac_rho_le_1",
                        )
                    }
                except Exception as e:
                    row = {"error": repr(e)}
                row |= {
                    "scheduler": s,
                    "workload": wl,
                    "contention": c,
                    "seed": seed,
                    "seconds": round(time.time() - t, 1),
                    "jobs": len(f),
                }
                out.write(json.dumps(row) + "\n")
                out.flush()
