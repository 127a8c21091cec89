"""THEMIS Workload 1 / Workload 2 generators (THEMIS §2.2, §6.1, Figs. 2-4 and 8), as trace frames.

An app is a hyper-parameter exploration: ``n`` jobs of one model. Each number of the default
(``scale="paper"``) set-up comes from the paper:

* a **256-GPU** cluster (§6: "an event-driven simulator modeling a 256 GPU cluster"), 4 GPUs per
  machine (fairplace's choice; the paper does not give the machine size of its simulator);
  contention x2 / x4 halves / quarters the cluster (§6.2.2: "halving and quartering the cluster");
* **85 apps** (§2.2: "a subset containing 85 ML training apps") arriving over a **two-week window**
  (§6.1: "scaled down using a two-week snapshot"; the trace's arrival times are not public, so they
  are uniform over the window, i.e. a Poisson process conditioned on the count);
* **jobs per app** (Fig. 2): ~10% single-job apps, the rest explore "as many as 100 jobs (median 75)"
  from "a few tens": half uniform on ``[jobs_range[0], jobs_median]``, half on
  ``[jobs_median, jobs_range[1]]`` (default 20..75..100);
* **work** (Figs. 3-4): every job of an app has the app's GPU-hours per task (log-normal per app
  around the median task of **3.75 GPU-hours**, Fig. 4, with ``app_sigma`` 1.4 so that ~5% of apps
  are more than 10x shorter and ~5% more than 10x longer: "a significant fraction ... more than 10X
  shorter and many more than 10X longer") times a per-job log-normal factor (``job_sigma`` 0.15,
  mean 1 within the app: the jobs of an exploration run the same iterations at per-iteration times
  that differ by the hyper-parameters, §4.3.3's example app has 80, 100, 100 and 120 s, a relative
  spread of 0.14), on its 1 or 2 GPUs; an app's budget is the sum over its jobs. With Fig. 2's jobs
  per app this makes the median app ~11 GPU-days (Fig. 3: 11.5), and a single-job app one task's
  worth (a short app). The spread within an app sets a floor under its rho whatever the scheduler:
  T_id divides the app's budget over its demand (Eq. 2), but the app ends with its longest job
  (rho >= ~e^(2.4 x job_sigma) for 75 jobs: 1.4 at 0.15, 3.3 at 0.5);
* **categories** CV 10% / NLP 60% / speech 30% (§6.1) with Gandiva-like models (:data:`THEMIS_MODELS`).

Workload 1: every job of an app runs independently (phase 0) on 1 or 2 GPUs (§6.2: "all jobs are 1-
or 2-GPU jobs"); the app finishes when its last job does. Workload 2 (§6.1: W1's arrivals, jobs per app
following successive halving, more tasks per job): phase p keeps ``n // 2^p`` jobs (at least one), each
on ``d_p = tasks * 2^p`` GPUs (capped at ``max_gpus_per_job``) for ``I * 2^p`` iterations, so that
every phase spends the same share of the app's budget (THEMIS Eq. 2, "apportions" a budget B); the app's
budget is the same as in Workload 1, so W2's tasks are shorter (median ~25-30 min, several leases).

``scale="small"`` is a named quick variant (not the paper's): 48 apps over 8 hours on 64 GPUs, tasks
of half a GPU-hour and 8..24 jobs per app. It is heavily loaded (offered load ~3 at x1) so that, as
at the paper's scale under contention, ~15 apps are active at once and a THEMIS round with f = 0.8
has ~3 bidders (``mean_bidders`` in the summary); a scaled-down workload at a moderate load has one
bidder per round, where PA degenerates (no hidden payments). Every parameter can be given explicitly
and overrides the preset.

``scale="testbed"`` is the paper's 64-GPU testbed (§6: "evaluated on a 64 GPU cluster", where Figs.
9-13 and Table 5 come from; one rack of 16 machines x 4 GPUs, the machine size fairplace's choice as
above): the paper scale's apps, jobs per app and task lengths (the same frame as ``scale="paper"``
on the same seed but for the arrival times), arriving over the two-week window (offered load
~2.6-5.1: the paper scale's work on a quarter of its GPUs, as at x4) or, with ``load``, over the
window that gives that load (the paper does not state the testbed's load; below ~4 the window is
longer than two weeks: the paper's task lengths on 64 GPUs at its x1 load need eight weeks).

``load`` (optional) sets the offered load at x1 (GPU-hours arriving / (``base_gpus`` x arrival
window), :func:`fairplace.sim.metrics.offered_load`): by rescaling every app's budget, or at the
``testbed`` scale by stretching or compressing the arrival window (work unchanged; ``window_hours``
is then derived, and giving it too is an error).
``network_fraction`` (THEMIS Figs. 15/16) makes that fraction of apps network-intensive (locality
(1, 1.5, 2.0)) and the rest compute-intensive ((1, 1.1, 1.3), THEMIS' bootstrap constants); ``None``
uses each model's own sensitivity. The frame's ``attrs``: ``gpus`` (``base_gpus // contention``),
``gpus_per_machine``, ``profile`` = ``uniform`` (THEMIS models no per-GPU variability; pass
``profile=`` to :func:`fairplace.simulate` to run it on variable GPUs), ``name``.

Columns: the Sia-Philly ones plus ``app_id, phase, t_iter, cls, locality, locality_rack, category``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from fairplace.core.errors import OptionError
from fairplace.core.limits import MAX_TRACE_APPS
from fairplace.core.params import Interval, Options, Pair, Param, checked

from .generators import LOCALITY_INSENSITIVE, LOCALITY_SENSITIVE
from .trace_params import GPUS, HOURS, JOBS, SEED, SHARE, SIGMA, arg

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

#: the presets of ``scale``: the paper's set-up (module doc) and a named small variant for quick runs
SCALES = MappingProxyType(
    {
        "paper": MappingProxyType(
            {
                "n_apps": 85,
                "window_hours": 14 * 24.0,
                "task_gpu_hours": 3.75,
                "jobs_range": (20, 100),
                "jobs_median": 75,
                "base_gpus": 256,
            }
        ),
        "small": MappingProxyType(
            {
                "n_apps": 48,
                "window_hours": 8.0,
                "task_gpu_hours": 0.5,
                "jobs_range": (8, 24),
                "jobs_median": 16,
                "base_gpus": 64,
            }
        ),
        "testbed": MappingProxyType(
            {
                "n_apps": 85,
                "window_hours": 14 * 24.0,  # the trace's window until ``load`` sets it
                "task_gpu_hours": 3.75,
                "jobs_range": (20, 100),
                "jobs_median": 75,
                "base_gpus": 64,
                "load_by": "window",
            }
        ),
    }
)
#: :func:`themis_workload`'s arguments as specs (None: the ``scale``'s preset; ``trace_params``)
THEMIS_PARAMS: tuple[Param, ...] = (
    arg(
        "n_apps",
        None,
        Interval(1, MAX_TRACE_APPS, integer=True),
        "apps (None: the scale's)",
        nullable=True,
    ),
    arg("scale", "paper", Options(SCALES), "the preset every None argument takes"),
    arg("window_hours", None, HOURS, "arrival window in h (None: the scale's)", nullable=True),
    arg(
        "task_gpu_hours",
        None,
        HOURS,
        "median GPU-hours of an app's task (None: the scale's)",
        nullable=True,
    ),
    arg("app_sigma", 1.4, SIGMA, "log-normal spread of the task length across apps"),
    arg("job_sigma", 0.15, SIGMA, "log-normal spread of the work across an app's jobs"),
    arg(
        "jobs_range",
        None,
        Pair(JOBS),
        "jobs of an exploring app, lowest and highest (None: the scale's)",
        nullable=True,
    ),
    arg("jobs_median", None, JOBS, "median jobs of an exploring app (None: the scale's)", True),
    arg("single_job_fraction", 0.1, SHARE, "fraction of single-job apps"),
    arg(
        "network_fraction",
        None,
        SHARE,
        "fraction of network-intensive apps (None: each model's own)",
        nullable=True,
    ),
    arg("contention", 1, Options((1, 2, 4)), "x1, x2, x4: base_gpus / contention GPUs"),
    arg("base_gpus", None, GPUS, "GPUs at x1 (None: the scale's)", nullable=True),
    arg("gpus_per_machine", 4, GPUS, "GPUs per machine of the trace's cluster"),
    arg("max_gpus_per_job", 16, GPUS, "workload 2: most GPUs of one job"),
    arg(
        "load",
        None,
        Interval(0.0, 1e3, closed="right"),
        "offered load at x1 (None: the scale's work and window)",
        nullable=True,
    ),
)
#: the homogeneous cluster THEMIS workloads run on unless a profile is given (THEMIS has no variability)
THEMIS_PROFILE = "uniform"
#: every scheduler decides on one 60-s clock (THEMIS' lease tick) and the queue baselines hold
#: 10-minute leases (§6.2: "All baselines are evaluated ... with f = 0.8 and lease = 10 minutes")
THEMIS_DECISION_TICK, THEMIS_BASELINE_LEASE = 60.0, 600.0


@checked((*THEMIS_PARAMS, SEED))
def themis_workload(
    workload: int = 2,
    n_apps: int | None = None,
    *,
    scale: str = "paper",
    window_hours: float | None = None,
    task_gpu_hours: float | None = None,
    app_sigma: float = 1.4,
    job_sigma: float = 0.15,
    jobs_range: tuple[int, int] | None = None,
    jobs_median: int | None = None,
    single_job_fraction: float = 0.1,
    network_fraction: float | None = None,
    contention: int = 1,
    base_gpus: int | None = None,
    gpus_per_machine: int = 4,
    max_gpus_per_job: int = 16,
    load: float | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """One THEMIS workload as a trace frame (see the module doc for every default and its source);
    each argument is checked by its spec (:data:`THEMIS_PARAMS`) first."""
    if workload not in (1, 2):
        raise OptionError("workload", f"THEMIS workload is 1 or 2, got {workload!r}")
    preset: Mapping[str, Any] = SCALES[scale]  # valid by construction
    n_apps = int(preset["n_apps"] if n_apps is None else n_apps)
    if preset.get("load_by") == "window" and load is not None and window_hours is not None:
        raise OptionError(
            "window_hours", f"the {scale!r} scale sets the window from load; give one"
        )
    window = float(preset["window_hours"] if window_hours is None else window_hours)
    task_h = float(preset["task_gpu_hours"] if task_gpu_hours is None else task_gpu_hours)
    base_gpus = int(preset["base_gpus"] if base_gpus is None else base_gpus)
    gpm = int(gpus_per_machine)
    lo, hi = (int(v) for v in (preset["jobs_range"] if jobs_range is None else jobs_range))
    med = preset["jobs_median"] if jobs_median is None else jobs_median
    med = int(np.clip(int(med), lo, hi))
    gpus = base_gpus // contention
    if gpus < 1 or gpus % gpm:
        raise OptionError("base_gpus", f"{gpus} GPUs at x{contention} is not a multiple of {gpm}")

    # app-level draws use their own stream so Workload 1 and 2 share arrivals, models and budgets
    rng = np.random.default_rng([seed, 1])
    arrival = np.round(np.sort(rng.uniform(0.0, window * 3600.0, n_apps)), 3)
    arrival -= arrival[0]
    cats = list(CATEGORY_MIX)
    cat = rng.choice(cats, size=n_apps, p=list(CATEGORY_MIX.values()))
    by_cat = {c: [m for m, v in THEMIS_MODELS.items() if v[0] == c] for c in cats}
    model = [by_cat[c][int(rng.integers(len(by_cat[c])))] for c in cat]
    single = rng.random(n_apps) < single_job_fraction
    upper = rng.random(n_apps) < 0.5  # Fig. 2: half the explorations above the median
    many = np.where(upper, rng.integers(med, hi + 1, n_apps), rng.integers(lo, med + 1, n_apps))
    n_jobs = np.where(single, 1, many)
    tasks = rng.choice([1, 2], size=n_apps)
    # GPU-hours per task, log-normal per app (the app-level spread scales every task of the app)
    task_hours = task_h * np.exp(app_sigma * rng.standard_normal(n_apps))
    budget = n_jobs * tasks * task_hours  # GPU-hours per app
    net = (
        np.array([THEMIS_MODELS[m][3] for m in model])
        if network_fraction is None
        else rng.random(n_apps) < network_fraction
    )
    if load is not None:
        span = float(arrival.max() - arrival.min())
        if span > 0 and preset.get("load_by") == "window":  # same work, the window compressed
            target = float(budget.sum()) * 3600.0 / (load * base_gpus)
            arrival = np.round(arrival * (target / span), 3)
            window *= target / span
        elif span > 0:
            budget = budget * load * base_gpus * span / 3600.0 / float(budget.sum())
    job_rng = np.random.default_rng([seed, 2, workload])
    rows = []
    for a in range(n_apps):
        _, t0, cls, _ = THEMIS_MODELS[model[a]]
        loc = LOCALITY_SENSITIVE if net[a] else LOCALITY_INSENSITIVE
        n, k = int(n_jobs[a]), int(tasks[a])
        phases = [(0, n)]
        if workload == 2:
            phases = [(p, max(n >> p, 1)) for p in range(int(np.log2(n)) + 1)]
        share = budget[a] / len(phases)  # GPU-hours per phase (one phase in Workload 1)
        for p, count in phases:
            d = min(k * 2**p, max_gpus_per_job, gpus) if workload == 2 else min(k, gpus)
            w = np.exp(job_sigma * job_rng.standard_normal(count))
            gpu_hours = share * w / w.sum()
            # seconds per iteration on d GPUs: W1 t0 per task; W2 linear speedup of t0 x tasks
            t_iter = t0 * k / d if workload == 2 else t0
            for j in range(count):
                iters = max(1.0, round(gpu_hours[j] * 3600.0 / (t_iter * d)))
                rows.append(
                    {
                        "job_id": f"a{a}-p{p}-j{j}",
                        "num_gpus": d,
                        "submit_time": arrival[a],
                        "duration": iters,
                        "model": model[a],
                        "app_id": f"a{a}",
                        "phase": p,
                        "t_iter": t_iter,
                        "cls": cls,
                        "locality": loc[1],
                        "locality_rack": loc[2],
                        "category": cat[a],
                    }
                )
    frame = pd.DataFrame(rows)
    frame.attrs["name"] = f"themis-w{workload}-{scale}-{n_apps}apps-x{contention}-s{seed}"
    frame.attrs["gpus"] = gpus
    frame.attrs["gpus_per_machine"] = gpm
    frame.attrs["profile"] = THEMIS_PROFILE
    frame.attrs["decision_tick"] = THEMIS_DECISION_TICK  # simulate()'s defaults for these runs
    frame.attrs["baseline_lease"] = THEMIS_BASELINE_LEASE
    frame.attrs["solo"] = True  # rho_solo in every summary (fairplace.sim.isolated)
    frame.attrs["window_hours"] = window
    return frame


def workload_stats(frame: pd.DataFrame) -> dict[str, float]:
    """The paper's workload statistics of a frame: median task GPU-hours (Fig. 4: a task is one GPU of
    a job), median app GPU-days (Fig. 3), median jobs per exploring app (Fig. 2), single-job share,
    and the offered load on ``attrs["gpus"]`` GPUs (:func:`fairplace.sim.metrics.offered_load`: work
    / (GPUs x max(arrival span, the longest job's isolated time)))."""
    hours = frame["duration"] * frame["t_iter"] / 3600.0  # a task's wall = GPU time per task
    app_days = (hours * frame["num_gpus"]).groupby(frame["app_id"]).sum() / 24.0
    first = frame[frame["phase"] == 0].groupby("app_id").size()
    span = max(float(np.ptp(frame["submit_time"])) / 3600.0, float(hours.max()))
    gpus = frame.attrs.get("gpus")
    return {
        "offered_load": float(app_days.sum() * 24.0 / (gpus * span)) if gpus else float("nan"),
        "median_task_gpu_hours": float(np.median(np.repeat(hours, frame["num_gpus"]))),
        "median_app_gpu_days": float(app_days.median()),
        "median_jobs_per_exploring_app": float(first[first > 1].median())
        if (first > 1).any()
        else 1.0,
        "single_job_fraction": float((first == 1).mean()),
        "jobs": float(len(frame)),
    }
