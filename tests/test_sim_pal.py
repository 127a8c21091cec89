"""PAL §V-B on the shared Sia-Philly workloads 1-4: 64 GPUs (16 x 4), Longhorn, FIFO, L = 1.7.

The default Longhorn profile takes each GPU's *median* over its runs (PM-scores 0.95-1.12 for ResNet-50);
the per-run rows keep the slow runs (up to 3.6x), which is how the variability reaches the ~3.5x the
paper reports. Both are exercised; see the issue-5 report for the seed sensitivity of the margins.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from fairplace.instances.generators import grid_cluster
from fairplace.instances.models import PAPER_CLASS_PROFILES
from fairplace.instances.traces import SIA_PHILLY
from fairplace.instances.variability import data_file

from fairplace.sim import simulate


def per_run_longhorn(machines: int = 16, gpm: int = 4, seed: int = 0):
    """Cluster whose PM-scores are per-run Longhorn rows (perf / median perf), sampled with
    replacement per class profile (paper classes: A ResNet-50, B BERT, C PageRank)."""
    rng = np.random.default_rng(seed)
    pm = {}
    for cls, app in PAPER_CLASS_PROFILES.items():
        with data_file("variability", "longhorn", f"{app}.csv").open("r") as fh:
            perf = pd.read_csv(fh)["perf"].to_numpy(dtype=float)
        pm[cls] = rng.choice(perf / np.median(perf), machines * gpm)
    return grid_cluster(machines, gpm, pm=pm)


def avg_jct(trace, placement, **kw) -> float:
    res = simulate(trace, "fifo", placement, locality_penalty=1.7, progress=False, **kw)
    return res.summary["avg_jct"]


@pytest.mark.slow
@pytest.mark.parametrize("trace", SIA_PHILLY)
def test_pal_beats_packed_sticky_with_the_longhorn_profile(trace):
    kw = {"gpus": 64, "gpus_per_machine": 4, "profile": "longhorn", "seed": 0}
    assert avg_jct(trace, "pal", **kw) < avg_jct(trace, "packed-sticky", **kw)


@pytest.mark.slow
@pytest.mark.parametrize("trace", SIA_PHILLY)
def test_pal_and_pm_first_beat_packed_sticky_with_per_run_longhorn_scores(trace):
    cl = per_run_longhorn()
    base = avg_jct(trace, "packed-sticky", cluster=cl)
    assert avg_jct(trace, "pal", cluster=cl) < base
    assert avg_jct(trace, "pm-first", cluster=cl) < base
