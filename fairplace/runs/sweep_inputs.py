"""Sweep inputs that are not plain ``simulate()`` arguments: generated traces (THEMIS workloads,
Synergy) whose generator parameters are grid axes, and clusters sampled from per-run profiles."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pandas as pd

#: sweep-level options that are not simulate() arguments: ``per_run = true`` builds the cluster from
#: the Longhorn per-run profile (``instances.variability.make_cluster(per_run=True)``, up to ~3.6x
#: the median) and passes it as ``cluster=``. ``simulate``'s default profile ``longhorn-runs`` does the
#: same sampling, so new specs need not set it.
SWEEP_OPTIONS = ("per_run",)


def _themis(workload: int) -> Callable[..., pd.DataFrame]:
    def gen(**kw):
        from fairplace.instances.workloads import themis_workload

        return themis_workload(workload, **kw)

    return gen


def _synergy(**kw) -> pd.DataFrame:
    from fairplace.instances.models import MODELS
    from fairplace.instances.traces import synergy_trace

    t_iter = {n: m.iter_seconds for n, m in MODELS.items()}
    return synergy_trace(t_iter=t_iter, **kw)


#: generated workloads usable as ``traces`` entries; their keyword arguments (e.g. ``contention``,
#: ``n_apps``, ``jobs_per_hour``) may appear in [params] / [fixed] and go to the generator.
TRACE_GENERATORS: dict[str, Callable[..., pd.DataFrame]] = {
    "themis-1": _themis(1),
    "themis-2": _themis(2),
    "synergy": _synergy,
}
_GEN_PARAMS = {
    "themis-1": "fairplace.instances.workloads:themis_workload",
    "themis-2": "fairplace.instances.workloads:themis_workload",
    "synergy": "fairplace.instances.traces:synergy_trace",
}


def generator_function(trace: str) -> Callable | None:
    """The generator function behind ``trace`` (None for bundled names and CSV files)."""
    if trace not in _GEN_PARAMS:
        return None
    from importlib import import_module

    mod, fn = _GEN_PARAMS[trace].split(":")
    try:
        return getattr(import_module(mod), fn)
    except (ImportError, AttributeError):
        return None


def generator_params(trace: str) -> set[str]:
    """Keyword names of the generator behind ``trace`` (empty for bundled names and CSV files)."""
    f = generator_function(trace)
    if f is None:
        return set()
    return set(inspect.signature(f).parameters) - {"workload", "t_iter", "seed"}


def make_trace(trace: str, seed: int, kw: dict[str, Any]):
    """``trace`` itself, or the frame its generator makes from ``kw`` (seeded with the cell seed)."""
    if trace not in TRACE_GENERATORS:
        return trace, {}
    names = generator_params(trace)
    gen_kw = {k: v for k, v in kw.items() if k in names}
    if "max_gpus" in names and "max_gpus" not in gen_kw and "gpus" in kw:
        gen_kw["max_gpus"] = kw["gpus"]
    return TRACE_GENERATORS[trace](seed=seed, **gen_kw), gen_kw


def per_run_cluster(kw: dict, seed: int) -> dict:
    """Replace gpus / gpus_per_machine / profile by a ``cluster`` sampled from per-run profiles."""
    from fairplace.instances.variability import make_cluster

    gpm = int(kw.pop("gpus_per_machine", 4))
    gpus = int(kw.pop("gpus", 64))
    profile = kw.pop("profile", "longhorn")
    kw["cluster"] = make_cluster(profile, gpus // gpm, gpm, seed=seed, per_run=True)
    return kw
