"""The THEMIS simulation bench cases report THEMIS' CPU over LAS' on the same workload (issue 46's
targets are set as that ratio); run here on a tiny workload in place of the paper-scale one."""

from __future__ import annotations

import fairplace.benchmarks.simulate as bench
from fairplace.instances.workloads import themis_workload


def test_themis_bench_case_reports_the_las_ratio(monkeypatch):
    def tiny(workload, contention=1, seed=0):
        return themis_workload(
            workload, scale="small", n_apps=3, jobs_range=(2, 3), contention=contention, seed=seed
        )

    monkeypatch.setattr(bench, "themis_workload", tiny)
    out = bench.themis_w2(1)(quick=False)
    assert out["sizes"]["contention"] == 1 and out["las_cpu_seconds"] > 0
    assert out["themis_las_ratio"] == out["cpu_seconds"] / out["las_cpu_seconds"]
