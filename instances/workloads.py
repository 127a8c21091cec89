"""THEMIS Workload 1 / Workload 2 generators (THEMIS §6.1), as trace frames for the simulator.

An app is a hyper-parameter exploration: ``n`` jobs of one model. Apps arrive as a Poisson process
(``apps_per_hour``; the paper replays Microsoft arrival times that are not public). Category mix
CV 10% / NLP 60% / speech 30% with Gandiva-like models per category (:data:`THEMIS_MODELS`).

* Workload 1: every job of an app runs independently (phase 0) on 1 or 2 GPUs; the app finishes when
  its last job does.
* Workload 2 (THEMIS Fig. 8, jobs per app like Fig. 2): the same app arrivals; ~10% single-job apps,
  the rest explore ``jobs_range`` hyper-parameters (default 20..100, uniform: "tens to about a
  hundred", median ~60), following successive halving (Hyperband, THEMIS Eq. 2): phase p keeps
  n / 2^p jobs, each on d_p = ``tasks * 2^p`` GPUs (capped at ``max_gpus_per_job``; tasks 1 or 2)
  for ``I * 2^p`` iterations at the job's serial time ``t0 * tasks`` per iteration, so every phase
  has the same GPU budget n * I * t0 * tasks and, uncapped, lasts ``I * t0``.

``load`` (optional) rescales every job's iterations so that the offered load at x1 (GPU-hours
arriving / (``base_gpus`` x arrival span), ``fairplace.sim.metrics.offered_load``) equals it; x2 / x4
contention then doubles / quadruples it. Without it the per-job phase time is ``phase_hours``.

``network_fraction`` (the knob of THEMIS Fig. 15/16) makes that fraction of apps network-intensive
(locality (1, 1.5, 2.0)) and the rest compute-intensive ((1, 1.1, 1.3), THEMIS' bootstrap constants);
``None`` uses each model's own sensitivity. Contention x1 / x2 / x4 shrinks the cluster:
``frame.attrs["gpus"] = base_gpus // contention`` is the cluster the workload is meant for.

Columns: the Sia-Philly ones plus ``app_id, phase, t_iter, cls, locality, locality_rack, category``.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np
import pandas as pd

from fairplace.core.errors import OptionError

from .generators import LOCALITY_INSENSITIVE, LOCALITY_SENSITIVE

CATEGORY_MIX = MappingProxyType({"cv": 0.1, "nlp": 0.6, "speech": 0.3})

#: model -> (category, serial seconds per iteration on one GPU, PM class, network-intensive).
#: Per-iteration times are representative K80-era values (THEMIS Table 4 lists the models, not times).
THEMIS_MODELS = MappingProxyType(
    {
        "VGG16": ("cv", 0.60, "A", True),
        "ResNet-50": ("cv", 0.35, "A", False),
        "Inception-v3": ("cv", 0.45, "A", False),
        "LSTM-LM": ("nlp", 0.25, "B", True),
        "GNMT": ("nlp", 0.40, "B", True),
        "Transformer": ("nlp", 0.30, "B", False),
        "DeepSpeech": ("speech", 0.50, "B", False),
        "WaveNet": ("speech", 0.70, "C", False),
    }
)


def themis_workload(
    workload: int = 2,
    n_apps: int = 30,
    apps_per_hour: float = 3.0,
    jobs_per_app: tuple[int, ...] = (2, 4, 8, 16),
    single_job_fraction: float = 0.1,
    phase_hours: float = 1.0,
    network_fraction: float | None = None,
    contention: int = 1,
    base_gpus: int = 256,
    max_gpus_per_job: int = 16,
    jobs_range: tuple[int, int] = (20, 100),
    load: float | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """One THEMIS workload as a trace frame (see the module doc). ``phase_hours`` sets the median
    isolated time of one phase of a job (log-normal, sigma 0.5)."""
    if workload not in (1, 2):
        raise OptionError("workload", f"THEMIS workload is 1 or 2, got {workload!r}")
    if contention not in (1, 2, 4):
        raise OptionError("contention", f"expected 1, 2 or 4, got {contention!r}")
    if network_fraction is not None and not 0.0 <= network_fraction <= 1.0:
        raise OptionError("network_fraction", f"must be in [0, 1], got {network_fraction}")
    if n_apps < 1 or not apps_per_hour > 0:
        raise OptionError("n_apps", "need n_apps >= 1 and apps_per_hour > 0")
    # app-level draws use their own stream so Workload 1 and 2 share arrivals, models and sizes
    rng = np.random.default_rng([seed, 1])
    gaps = rng.exponential(3600.0 / apps_per_hour, n_apps)
    arrival = np.round(np.cumsum(gaps) - gaps[0], 3)
    cats = list(CATEGORY_MIX)
    cat = rng.choice(cats, size=n_apps, p=list(CATEGORY_MIX.values()))
    by_cat = {c: [m for m, v in THEMIS_MODELS.items() if v[0] == c] for c in cats}
    model = [by_cat[c][int(rng.integers(len(by_cat[c])))] for c in cat]
    single = rng.random(n_apps) < single_job_fraction
    lo, hi = (int(v) for v in jobs_range)
    if not 1 <= lo <= hi:
        raise OptionError("jobs_range", f"need 1 <= lo <= hi, got {jobs_range!r}")
    many = rng.choice(np.asarray(jobs_per_app), size=n_apps)
    if workload == 2:
        many = rng.integers(lo, hi + 1, size=n_apps)
    n_jobs = np.where(single, 1, many)
    net = (
        np.array([THEMIS_MODELS[m][3] for m in model])
        if network_fraction is None
        else rng.random(n_apps) < network_fraction
    )
    job_rng = np.random.default_rng([seed, 2, workload])
    rows = []
    for a in range(n_apps):
        _, t0, cls, _ = THEMIS_MODELS[model[a]]
        loc = LOCALITY_SENSITIVE if net[a] else LOCALITY_INSENSITIVE
        tasks = int(job_rng.choice([1, 2]))
        hours = phase_hours * job_rng.lognormal(0.0, 0.5)
        iters = max(1.0, round(hours * 3600.0 / t0))
        n = int(n_jobs[a])
        phases = [(0, n)]
        if workload == 2:
            phases = [(p, max(n >> p, 1)) for p in range(int(np.log2(n)) + 1)]
        for p, k in phases:
            d = min(tasks * 2**p, max_gpus_per_job, base_gpus // contention)
            if workload == 1:
                d = min(tasks, base_gpus // contention)
            for j in range(k):
                rows.append(
                    {
                        "job_id": f"a{a}-p{p}-j{j}",
                        "num_gpus": d,
                        "submit_time": arrival[a],
                        "duration": iters * (2**p if workload == 2 else 1),
                        "model": model[a],
                        "app_id": f"a{a}",
                        "phase": p,
                        # seconds per iteration on d GPUs (linear speedup of t0 x tasks serial)
                        "t_iter": t0 * tasks / d if workload == 2 else t0,
                        "cls": cls,
                        "locality": loc[1],
                        "locality_rack": loc[2],
                        "category": cat[a],
                    }
                )
    frame = pd.DataFrame(rows)
    if load is not None:
        if not load > 0:
            raise OptionError("load", f"must be > 0, got {load!r}")
        work = float((frame["duration"] * frame["t_iter"] * frame["num_gpus"]).sum())
        span = float(arrival.max() - arrival.min())
        scale = load * base_gpus * span / work if span > 0 else 1.0
        frame["duration"] = np.maximum(1.0, np.round(frame["duration"] * scale))
    frame.attrs["name"] = f"themis-w{workload}-{n_apps}apps-x{contention}-s{seed}"
    frame.attrs["gpus"] = base_gpus // contention
    return frame
