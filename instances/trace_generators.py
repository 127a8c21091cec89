"""Generated traces by name: the THEMIS workloads (``themis-1``, ``themis-2``; THEMIS §6, Fig. 8)
and the Synergy-style trace (``synergy``). ``fairplace.simulate`` and sweeps accept these names next
to the bundled Sia-Philly traces; a sweep's grid may vary the generators' keyword arguments."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pandas as pd

from fairplace.core.errors import OptionError, TraceError
from fairplace.core.keys import suggestion
from fairplace.core.limits import (
    MAX_GPUS,
    MAX_TIME,
    MAX_TRACE_APPS,
    MAX_TRACE_JOBS,
    annotation_schema,
    check_value,
)
from fairplace.core.registry import Entry, Registry

from .models import MODELS
from .traces import SIA_PHILLY, SYNERGY_DURATIONS, synergy_trace
from .workloads import SCALES, themis_workload


def _themis(workload: int) -> Callable[..., pd.DataFrame]:
    def gen(**kw):
        return themis_workload(workload, **kw)

    return gen


def _synergy(**kw) -> pd.DataFrame:
    t_iter = {n: m.iter_seconds for n, m in MODELS.items()}
    return synergy_trace(t_iter=t_iter, **kw)


#: keyword names the caller may not set (the name fixes the workload, the cell / simulation the seed)
_RESERVED = frozenset({"workload", "t_iter", "seed"})


def _entry(make: Callable[..., pd.DataFrame], generator: Callable, doc: str) -> Entry:
    """``make(seed=..., **kw)``, taking the keyword arguments of the public ``generator``."""
    takes = tuple(p for p in inspect.signature(generator).parameters if p not in _RESERVED)
    return Entry(make, takes, doc, (), {"generator": generator})


#: generated workloads usable as trace names; their keyword arguments (e.g. ``contention``,
#: ``n_apps``, ``jobs_per_hour``) may appear in a sweep's [params] / [fixed] and go to the generator
#: (the public one is each entry's ``capabilities["generator"]``).
TRACE_GENERATORS = Registry(
    "trace generator",
    {
        "themis-1": _entry(_themis(1), themis_workload, "THEMIS workload 1 (§6, Fig. 8)"),
        "themis-2": _entry(_themis(2), themis_workload, "THEMIS workload 2 (§6, Fig. 8)"),
        "synergy": _entry(_synergy, synergy_trace, "Synergy-style trace"),
    },
    where="trace",
)
_POS = {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TIME}
_GPUS = {"type": "integer", "minimum": 1, "maximum": MAX_GPUS}
_SHARE = {"type": "number", "minimum": 0, "maximum": 1}
_NULL = {"type": "null"}
#: value schemas of the generators' keyword arguments (sizes bounded by ``core/limits.py``); any
#: other argument is checked against its annotation. Used by ``simulate``'s ``trace_options`` and
#: by the sweep spec schema alike.
ARG_SCHEMAS: Mapping[str, dict] = MappingProxyType(
    {
        "n_apps": {"type": "integer", "minimum": 1, "maximum": MAX_TRACE_APPS},
        "n_jobs": {"type": "integer", "minimum": 1, "maximum": MAX_TRACE_JOBS},
        "apps_per_hour": _POS,
        "jobs_per_hour": _POS,
        "contention": {"enum": [1, 2, 4]},
        "base_gpus": _GPUS,
        "max_gpus": {"anyOf": [_GPUS, _NULL]},
        "max_gpus_per_job": _GPUS,
        "single_job_fraction": _SHARE,
        "network_fraction": {"anyOf": [_SHARE, {"type": "null"}]},
        "load": {"anyOf": [{"type": "number", "exclusiveMinimum": 0, "maximum": 1000}, _NULL]},
        "scale": {"enum": list(SCALES)},
        "durations": {"enum": list(SYNERGY_DURATIONS)},
        "window_hours": {
            "anyOf": [{"type": "number", "exclusiveMinimum": 0, "maximum": 1e6}, _NULL]
        },
        "task_gpu_hours": {
            "anyOf": [{"type": "number", "exclusiveMinimum": 0, "maximum": 1e6}, _NULL]
        },
        "app_sigma": {"type": "number", "minimum": 0, "maximum": 5},
        "job_sigma": {"type": "number", "minimum": 0, "maximum": 5},
        "jobs_median": {
            "anyOf": [{"type": "integer", "minimum": 1, "maximum": MAX_TRACE_JOBS}, _NULL]
        },
        "gpus_per_machine": _GPUS,
        "jobs_range": {
            "type": "array",
            "minItems": 2,
            "maxItems": 2,
            "items": {"type": "integer", "minimum": 1, "maximum": MAX_TRACE_JOBS},
        },
    }
)


def trace_names() -> tuple[str, ...]:
    """Every trace name ``simulate`` and sweeps accept besides CSV paths: bundled, then generated."""
    return (*SIA_PHILLY, *TRACE_GENERATORS)


def check_trace_name(trace) -> None:
    """A string that is neither a trace name nor a CSV path (existing, or ending in ``.csv``):
    :class:`TraceError` listing every name."""
    if not isinstance(trace, str) or trace in TRACE_GENERATORS or trace in SIA_PHILLY:
        return
    if Path(trace).suffix.lower() != ".csv" and not Path(trace).exists():
        raise TraceError(
            "trace", f"unknown trace {trace!r}: use {', '.join(trace_names())} or a .csv file"
        )


def generator_function(trace: str) -> Callable | None:
    """The generator function behind ``trace`` (None for bundled names and CSV files)."""
    if not isinstance(trace, str) or trace not in TRACE_GENERATORS:
        return None
    return TRACE_GENERATORS.get(trace).capabilities["generator"]


def generator_params(trace: str) -> set[str]:
    """Keyword names of the generator behind ``trace`` (empty for bundled names and CSV files)."""
    f = generator_function(trace)
    if f is None:
        return set()
    return set(inspect.signature(f).parameters) - _RESERVED


def arg_schema(trace: str, key: str) -> dict:
    """The value schema of generator argument ``key`` (:data:`ARG_SCHEMAS`, else its annotation)."""
    if key in ARG_SCHEMAS:
        return dict(ARG_SCHEMAS[key])
    f = generator_function(trace)
    params = inspect.signature(f).parameters if f is not None else {}
    return annotation_schema(params[key].annotation) if key in params else {}


def check_options(trace: str, options: Mapping[str, Any], prefix: str = "trace_options") -> None:
    """Every key of ``options`` is an argument of ``trace``'s generator and every value has its
    type and range (:class:`OptionError` naming ``prefix.key``)."""
    allowed = generator_params(trace)
    for k, v in options.items():
        if k not in allowed:
            near = suggestion(k, allowed)  # the nearest known key (issue 48), else the list
            hint = f"did you mean {near!r}?" if near else f"known: {', '.join(sorted(allowed))}"
            raise OptionError(f"{prefix}.{k}", f"not an option of the {trace!r} generator; {hint}")
        check_value(f"{prefix}.{k}", v, arg_schema(trace, k))


def make_trace(trace, seed: int, kw: Mapping[str, Any]):
    """``trace`` itself, or the frame its generator makes from ``kw`` (seeded with ``seed``); a
    generator with ``max_gpus`` gets ``kw["gpus"]`` unless given. Returns (trace, generator kwargs)."""
    if not isinstance(trace, str) or trace not in TRACE_GENERATORS:
        return trace, {}
    names = generator_params(trace)
    gen_kw = {k: v for k, v in kw.items() if k in names}
    if "max_gpus" in names and "max_gpus" not in gen_kw and "gpus" in kw:
        gen_kw["max_gpus"] = kw["gpus"]
    return TRACE_GENERATORS.get(trace).factory(seed=seed, **gen_kw), gen_kw
