"""The trace generators' keyword arguments as specs (:class:`~fairplace.core.params.Param`): each
generator its own tuple (:data:`THEMIS_PARAMS` for ``themis-1`` / ``themis-2``,
:data:`SYNERGY_PARAMS` for ``synergy``), with that generator's default; an argument two generators
share means one thing and shares its range. ``trace_options`` (``fairplace.simulate``, a sweep's
tables, ``--trace-option``), the sweep schema and the CLI help read them
(``instances.trace_generators``); sizes are bounded by ``core/limits.py``."""

from __future__ import annotations

from fairplace.core.limits import MAX_GPUS, MAX_TIME, MAX_TRACE_APPS, MAX_TRACE_JOBS
from fairplace.core.params import Interval, Options, Pair, Param

from .traces import SYNERGY_DURATIONS
from .workloads import SCALES

#: a GPU count
_GPUS = Interval(1, MAX_GPUS, integer=True)
#: jobs of an app or of a trace
_JOBS = Interval(1, MAX_TRACE_JOBS, integer=True)
#: a fraction of the apps
_SHARE = Interval(0.0, 1.0)
#: hours of a window or of a task (the generator's bound, ``workloads._positive``)
_HOURS = Interval(0.0, 1e6, closed="neither")
#: a log-normal spread
_SIGMA = Interval(0.0, 5.0)


def _arg(name, default, constraint, doc, nullable=False) -> Param:
    return Param(name, default, constraint, doc, "--trace-option " + name, None, nullable)


#: ``themis_workload``'s arguments (``instances/workloads.py``; None: the ``scale``'s preset)
THEMIS_PARAMS: tuple[Param, ...] = (
    _arg(
        "n_apps",
        None,
        Interval(1, MAX_TRACE_APPS, integer=True),
        "apps (None: the scale's)",
        nullable=True,
    ),
    _arg("scale", "paper", Options(SCALES), "the preset every None argument takes"),
    _arg("window_hours", None, _HOURS, "arrival window in h (None: the scale's)", nullable=True),
    _arg(
        "task_gpu_hours",
        None,
        _HOURS,
        "median GPU-hours of an app's task (None: the scale's)",
        nullable=True,
    ),
    _arg("app_sigma", 1.4, _SIGMA, "log-normal spread of the task length across apps"),
    _arg("job_sigma", 0.15, _SIGMA, "log-normal spread of the work across an app's jobs"),
    _arg(
        "jobs_range",
        None,
        Pair(_JOBS),
        "jobs of an exploring app, lowest and highest (None: the scale's)",
        nullable=True,
    ),
    _arg("jobs_median", None, _JOBS, "median jobs of an exploring app (None: the scale's)", True),
    _arg("single_job_fraction", 0.1, _SHARE, "fraction of single-job apps"),
    _arg(
        "network_fraction",
        None,
        _SHARE,
        "fraction of network-intensive apps (None: each model's own)",
        nullable=True,
    ),
    _arg("contention", 1, Options((1, 2, 4)), "x1, x2, x4: base_gpus / contention GPUs"),
    _arg("base_gpus", None, _GPUS, "GPUs at x1 (None: the scale's)", nullable=True),
    _arg("gpus_per_machine", 4, _GPUS, "GPUs per machine of the trace's cluster"),
    _arg("max_gpus_per_job", 16, _GPUS, "workload 2: most GPUs of one job"),
    _arg(
        "load",
        None,
        Interval(0.0, 1e3, closed="right"),
        "offered load at x1 (None: the scale's work and window)",
        nullable=True,
    ),
)

#: ``synergy_trace``'s arguments (``instances/traces.py``)
SYNERGY_PARAMS: tuple[Param, ...] = (
    _arg("n_jobs", 1000, _JOBS, "jobs"),
    _arg("jobs_per_hour", 8.0, Interval(0.0, MAX_TIME, closed="right"), "Poisson arrival rate"),
    _arg("max_gpus", None, _GPUS, "most GPUs of a job (None: the cluster's gpus)", nullable=True),
    _arg("durations", "philly", Options(SYNERGY_DURATIONS), "the job-duration model"),
)
