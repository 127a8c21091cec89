"""PAL §V-B on the shared Sia-Philly workloads 1-4: 64 GPUs (16 x 4), Longhorn, FIFO, L = 1.7.

A simulated cluster's PM-scores are a random sample of the Longhorn profile (PAL §IV-C), so one seed is
one sampled cluster; the statements below are about the mean average JCT over five sampled clusters
(seeds 0-4), which is what a single-seed result estimates.

* ``longhorn-runs`` (the default) samples per-run rows, as the paper does ("randomly sample this
  profiling data");
  ResNet-50 scores reach ~3.6x. PAL beats Packed-Sticky (Tiresias) on all four workloads; PM-First
  on workloads 1-3. Measured over seeds 0-9 (``pytest`` runs 0-4): PAL +17 / +39 / +33 / +8% and
  PM-First +11 / +38 / +30 / -18% on W1..W4.
* Workload 4 and PM-First: 13 long 4-GPU ResNet-50 jobs. PM-First takes the four best free GPUs
  wherever they are, so these jobs run spread (mean slowdown ~1.6 with L = 1.7, vs ~1.1-1.2 packed);
  the longer runs lengthen everyone's queue. That is the locality blindness PAL's L x V walk exists to
  fix (§III-C), and "PM-First beats Packed-Sticky on each workload" (PAL §V-B, Fig. 11: min +5%) does not hold here.
* ``longhorn`` (the original default; the default is now ``longhorn-runs``, the paper's) takes
  each GPU's median over its runs: ResNet-50 scores span only
  0.97-1.12, so there is little variability to exploit. PAL still wins on workloads 1-3 (+8 / +6 / +3.5%)
  but not on 4 (-3%).
* PAL's own Sia-Philly runs (§IV-D, §V-B) charge *per-model* locality penalties measured on Frontera
  (``locality_model="measured"``: e.g. ResNet-50 on 4 GPUs 1.0, PointNet on 16 GPUs 1.25), while its
  L x V walk still uses L = 1.7. In that set-up PAL and PM-First beat Packed-Sticky on every workload
  with either profile (10 seeds: per-GPU medians PAL +2.7 / +4.7 / +4.4 / +0.8%, PM-First +3.1 / +5.0 /
  +4.7 / +2.3%; per-run rows PAL +15 / +37 / +32 / +9%, PM-First +15 / +37 / +32 / +11%).
"""

from __future__ import annotations

import numpy as np
import pytest

from fairplace.sim import simulate

SEEDS = range(5)


def mean_avg_jct(trace, placement, profile, locality_model="constant") -> float:
    return float(
        np.mean(
            [
                simulate(
                    trace, "fifo", placement, gpus=64, gpus_per_machine=4, profile=profile,
                    locality_penalty=1.7, locality_model=locality_model, seed=s, progress=False,
                ).summary["avg_jct"]
                for s in SEEDS
            ]
        )
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["longhorn", "longhorn-runs"])
@pytest.mark.parametrize("trace", ["workload-1", "workload-2", "workload-3", "workload-4"])
def test_pal_and_pm_first_beat_packed_sticky_with_measured_locality(trace, profile):
    base = mean_avg_jct(trace, "packed-sticky", profile, "measured")
    assert mean_avg_jct(trace, "pal", profile, "measured") < base
    assert mean_avg_jct(trace, "pm-first", profile, "measured") < base


@pytest.mark.slow
@pytest.mark.parametrize("trace", ["workload-1", "workload-2", "workload-3", "workload-4"])
def test_pal_beats_packed_sticky_on_every_workload_per_run_scores(trace):
    base = mean_avg_jct(trace, "packed-sticky", "longhorn-runs")
    assert mean_avg_jct(trace, "pal", "longhorn-runs") < base
    if trace != "workload-4":
        assert mean_avg_jct(trace, "pm-first", "longhorn-runs") < base


@pytest.mark.slow
def test_pm_first_spreads_the_long_4_gpu_jobs_of_workload_4():
    def resnet_4gpu_slowdown(placement):
        r = simulate(
            "workload-4", "fifo", placement, profile="longhorn-runs", seed=0, progress=False
        )
        j = r.jobs[(r.jobs.model == "resnet50") & (r.jobs.gpus == 4)]
        return float((1.0 / j.placement_score).mean())

    packed, pal, pm_first = map(resnet_4gpu_slowdown, ["packed-sticky", "pal", "pm-first"])
    assert pm_first > 1.4 > max(packed, pal)


@pytest.mark.slow
@pytest.mark.parametrize("trace", ["workload-1", "workload-2", "workload-3"])
def test_pal_beats_packed_sticky_with_per_gpu_median_scores(trace):
    assert mean_avg_jct(trace, "pal", "longhorn") < mean_avg_jct(trace, "packed-sticky", "longhorn")


def test_measured_locality_reaches_the_runtime_only():
    from fairplace.instances.models import measured_locality

    assert measured_locality("ResNet-50", 16) == 1.16 and measured_locality("pointnet", 8) == 1.10
    assert measured_locality("resnet50", 8) == 1.0 and measured_locality("BERT", 4) == 1.0
    r = simulate("workload-1", "fifo", "packed-sticky", locality_model="measured", progress=False)
    s = 1.0 / r.jobs.set_index("job_id").placement_score
    pn16 = r.jobs[(r.jobs.model == "PointNet") & (r.jobs.gpus == 16)].job_id
    assert np.allclose(s[pn16], 1.25, atol=0.02)  # PointNet flat scores x measured L = 1.25
    assert r.config["locality_model"] == "measured"
