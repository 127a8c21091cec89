"""Generated traces by name: the THEMIS workloads (``themis-1``, ``themis-2``; THEMIS §6, Fig. 8)
and the Synergy-style trace (``synergy``). ``fairplace.simulate`` and sweeps accept these names next
to the bundled Sia-Philly traces; a sweep's grid may vary the generators' keyword arguments."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from fairplace.core.errors import OptionError, TraceError
from fairplace.core.keys import suggestion
from fairplace.core.params import Param
from fairplace.core.registry import Entry, Registry

from .models import MODELS
from .traces import SIA_PHILLY, SYNERGY_PARAMS, synergy_trace
from .workloads import THEMIS_PARAMS, themis_workload


def _themis(workload: int) -> Callable[..., pd.DataFrame]:
    def gen(**kw):
        return themis_workload(workload, **kw)

    return gen


def _synergy(**kw) -> pd.DataFrame:
    t_iter = {n: m.iter_seconds for n, m in MODELS.items()}
    return synergy_trace(t_iter=t_iter, **kw)


#: keyword names the caller may not set (the name fixes the workload, the cell / simulation the seed)
_RESERVED = frozenset({"workload", "t_iter", "seed"})


def _entry(
    make: Callable[..., pd.DataFrame], generator: Callable, doc: str, params: tuple[Param, ...]
) -> Entry:
    """``make(seed=..., **kw)``, taking the keyword arguments of the public ``generator``, each
    of which has its spec in ``params`` (with the generator's default)."""
    sig = inspect.signature(generator).parameters
    takes = tuple(p for p in sig if p not in _RESERVED)
    specs = {p.name: p for p in params}
    if set(takes) != set(specs):
        raise ValueError(f"{generator.__name__}: arguments without a spec or specs without one")
    for name in takes:
        if specs[name].default != sig[name].default:
            raise ValueError(f"{generator.__name__}: {name}'s spec has another default")
    return Entry(make, takes, doc, tuple(specs[n] for n in takes), {"generator": generator})


#: generated workloads usable as trace names; their keyword arguments (e.g. ``contention``,
#: ``n_apps``, ``jobs_per_hour``; each entry's ``params``, declared with the generator) may appear in
#: ``trace_options`` and in a sweep's [params] / [fixed], and go to the generator (the public one is
#: each entry's ``capabilities["generator"]``).
TRACE_GENERATORS = Registry(
    "trace generator",
    {
        "themis-1": _entry(
            _themis(1), themis_workload, "THEMIS workload 1 (§6, Fig. 8)", THEMIS_PARAMS
        ),
        "themis-2": _entry(
            _themis(2), themis_workload, "THEMIS workload 2 (§6, Fig. 8)", THEMIS_PARAMS
        ),
        "synergy": _entry(_synergy, synergy_trace, "Synergy-style trace", SYNERGY_PARAMS),
    },
    where="trace",
    options_path="trace_options",
)


def arg_schemas() -> dict[str, dict]:
    """{argument: value schema} of every generator's specs (``Param.schema``); an argument two
    generators spec differently takes either. The sweep schema's table of known values reads it."""
    out: dict[str, list[dict]] = {}
    for _, entry in TRACE_GENERATORS.items():
        for spec in entry.params:
            schemas = out.setdefault(spec.name, [])
            if spec.schema() not in schemas:
                schemas.append(spec.schema())
    return {k: v[0] if len(v) == 1 else {"anyOf": v} for k, v in out.items()}


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


def check_options(trace: str, options: Mapping[str, Any], prefix: str = "trace_options") -> None:
    """Every key of ``options`` is an argument of ``trace``'s generator and every value is valid
    by its spec (:meth:`Param.check`; :class:`OptionError` naming ``prefix.key``)."""
    allowed = generator_params(trace)
    for k, v in options.items():
        if k not in allowed:
            near = suggestion(k, allowed)  # the nearest known key, else the list
            hint = f"did you mean {near!r}?" if near else f"known: {', '.join(sorted(allowed))}"
            raise OptionError(f"{prefix}.{k}", f"not an option of the {trace!r} generator; {hint}")
        spec = TRACE_GENERATORS.get(trace).spec(k)
        if spec is not None:  # every argument has one (``_entry``)
            spec.check(v, f"{prefix}.{k}")


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
