"""PAL §V-B on the shared Sia-Philly workloads 1-4: 64 GPUs (16 x 4), Longhorn, FIFO, L = 1.7.

The default Longhorn profile takes each GPU's *median* over its runs (PM-scores 0.95-1.12 for ResNet-50);
the per-run rows keep the slow runs (up to 3.6x), which is how the variability reaches the ~3.5x the
paper reports. Measured (seeds 0-2): with per-run scores PAL and PM-First beat Packed-Sticky on
workloads 1-3 for every seed; on workload 4 (a 30 h, 32-GPU ResNet-50 job and many 4-GPU jobs) PM-First
loses (+13% to +45%) and PAL wins for 2 of 3 seeds, because non-sticky re-placement fragments machines
and 2-4-GPU jobs get spread (L = 1.7). With per-GPU medians PAL wins on workloads 1-2 for every seed.
The assertions below are the cases that hold for every seed tried; workload 4 is reported, not asserted.
"""

from __future__ import annotations

import pytest

from fairplace.instances.variability import make_cluster
from fairplace.sim import simulate


def per_run_longhorn(machines: int = 16, gpm: int = 4, seed: int = 0):
    """Cluster whose PM-scores are per-run Longhorn rows (perf / median perf), not per-GPU medians."""
    return make_cluster("longhorn", machines, gpm, seed=seed, per_run=True)


def avg_jct(trace, placement, **kw) -> float:
    res = simulate(trace, "fifo", placement, locality_penalty=1.7, progress=False, **kw)
    return res.summary["avg_jct"]


@pytest.mark.slow
@pytest.mark.parametrize("trace", ["workload-1", "workload-2"])
def test_pal_beats_packed_sticky_with_the_per_gpu_median_profile(trace):
    kw = {"gpus": 64, "gpus_per_machine": 4, "profile": "longhorn", "seed": 0}
    assert avg_jct(trace, "pal", **kw) < avg_jct(trace, "packed-sticky", **kw)


@pytest.mark.slow
@pytest.mark.parametrize("trace", ["workload-1", "workload-2", "workload-3"])
def test_pal_and_pm_first_beat_packed_sticky_with_per_run_longhorn_scores(trace):
    cl = per_run_longhorn()
    base = avg_jct(trace, "packed-sticky", cluster=cl)
    assert avg_jct(trace, "pal", cluster=cl) < base
    assert avg_jct(trace, "pm-first", cluster=cl) < base
