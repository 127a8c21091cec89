"""A sweep spec (``fairplace.runs.sweep``'s module docstring shows one) read and checked: the TOML file
or dict, its keys and grid axes (names, seeds, ``[params]`` / ``[fixed]`` / ``[[extra]]`` tables),
its values against the ``simulate()`` arguments they feed (``sweep_schema``), the options each
cell passes on (scheduler / placement / trace generator: :func:`check_cell_options`), its traces and
cluster sizes, and its size (``MAX_SWEEP_CELLS``); the result is a frozen :class:`SweepSpec`
whose ``cells()`` are the grid. Every error is an :class:`OptionError` naming the key."""

from __future__ import annotations

import itertools
import json
import math
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fairplace import sim
from fairplace.core.errors import DataError, OptionError
from fairplace.core.keys import suggestion, unknown_key
from fairplace.core.limits import JSON_BYTES, MAX_SWEEP_CELLS, check_file_bytes
from fairplace.instances.trace_generators import (
    TRACE_GENERATORS,
    check_trace_name,
    generator_function,
    generator_params,
)
from fairplace.instances.trace_generators import check_options as check_trace_options
from fairplace.instances.traces import SIA_PHILLY, load_trace
from fairplace.runs import sweep_schema
from fairplace.runs.sweep_inputs import SWEEP_OPTIONS
from fairplace.runs.sweep_schema import FRAMES, SPEC_KEYS
from fairplace.sim.config import field_names
from fairplace.sim.schedulers import SCHEDULER_REGISTRY
from fairplace.solvers.placement.policies import POLICY_NAMES, POLICY_REGISTRY

#: the coordinates of every cell (besides ``[params]``' axes)
CELL_KEYS = ("scheduler", "placement", "trace", "seed")


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep grid (see module docstring)."""

    name: str
    schedulers: tuple[str, ...]
    placements: tuple[str, ...]
    traces: tuple[str, ...]
    seeds: tuple[int, ...] = (0,)
    params: dict[str, tuple] = field(default_factory=dict)
    fixed: dict[str, Any] = field(default_factory=dict)
    frames: tuple[str, ...] = ()
    #: further copies of the grid: (their seeds, simulate() arguments that are cell coordinates
    #: and win over ``fixed``), e.g. one run of a fixed cluster draw next to many sampled ones
    extra: tuple[tuple[tuple[int, ...], dict[str, Any]], ...] = ()

    def cells(self) -> list[dict[str, Any]]:
        """The grid in a fixed order, then each ``extra`` copy: one dict of cell coordinates per
        simulation."""
        axes = list(self.params)
        out = []
        for seeds, over in ((self.seeds, {}), *self.extra):
            for sch, pl, tr in itertools.product(self.schedulers, self.placements, self.traces):
                for values in itertools.product(*(self.params[a] for a in axes)):
                    for seed in seeds:
                        cell = {"scheduler": sch, "placement": pl, "trace": tr, "seed": seed}
                        cell.update(dict(zip(axes, values, strict=True)))
                        out.append({**cell, **over})
        return out

    def __len__(self) -> int:
        n = len(self.schedulers) * len(self.placements) * len(self.traces)
        n *= math.prod(len(v) for v in self.params.values())
        return n * (len(self.seeds) + sum(len(s) for s, _ in self.extra))


def _simulate_params() -> set[str]:
    """Keyword names ``fairplace.simulate`` accepts: the scheduler, the placement and the
    :class:`~fairplace.sim.SimulationConfig` fields."""
    return {"scheduler", "placement", *field_names()}


def _names(spec: dict, key: str, known: tuple[str, ...] | None) -> tuple[str, ...]:
    v = spec.get(key)
    if isinstance(v, str):
        raise OptionError(key, f"must be a list of names, e.g. [{v!r}], got the string {v!r}")
    if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
        raise OptionError(key, "must be a non-empty list of names")
    if known is not None:
        for x in v:
            if x not in known:
                raise OptionError(key, f"unknown value {x!r}; known: {', '.join(known)}")
    return tuple(v)


def validate_spec(spec: dict, *, check_names: bool = True) -> SweepSpec:
    """Check a spec dict and return a :class:`SweepSpec`; raises :class:`OptionError` naming the key."""
    if not isinstance(spec, dict):
        raise OptionError("spec", "must be a TOML table")
    for k in spec:
        if k not in SPEC_KEYS:
            raise OptionError(str(k), unknown_key(k, SPEC_KEYS))
    traces = spec.get("traces")
    named = traces if isinstance(traces, list) else [traces]
    gens = [
        generator_function(t) for t in named if isinstance(t, str)
    ]  # the schema checks the rest
    sweep_schema.check(spec, [sim.SimulationConfig, *(g for g in gens if g)], check_names)
    name = spec.get("name", "sweep")
    if not isinstance(name, str):
        raise OptionError("name", "must be a string")
    scheds = _names(spec, "schedulers", sim.SCHEDULERS if check_names else None)
    places = _names(spec, "placements", POLICY_NAMES if check_names else None)
    traces = _names(spec, "traces", None)
    seeds = spec.get("seeds", [0])
    if isinstance(seeds, int):
        seeds = [seeds]
    if not isinstance(seeds, list) or not seeds or not all(type(s) is int for s in seeds):
        raise OptionError("seeds", "must be a non-empty list of integers")
    allowed = _simulate_params() if check_names else None
    if allowed is not None:
        for tr in traces:
            allowed |= generator_params(tr)
    reserved = set(CELL_KEYS)
    params: dict[str, tuple] = {}
    for table in ("params", "fixed"):
        t = spec.get(table, {})
        if not isinstance(t, dict):
            raise OptionError(table, "must be a table of simulate() keyword arguments")
        for k, v in t.items():
            if k in reserved:
                raise OptionError(f"{table}.{k}", f"{k!r} is a grid axis of its own")
            if allowed is not None and k.split(".")[0] not in allowed | set(SWEEP_OPTIONS):
                raise OptionError(f"{table}.{k}", _unknown_param(k, allowed))
            if table == "params" and (not isinstance(v, list) or not v):
                raise OptionError(f"params.{k}", "must be a non-empty list of values")
    params = {k: tuple(v) for k, v in spec.get("params", {}).items()}
    fixed = dict(spec.get("fixed", {}))
    for k in set(params) & set(fixed):
        raise OptionError(f"fixed.{k}", "is also a grid axis in [params]")
    frames = spec.get("frames", [])
    if not isinstance(frames, list) or any(f not in FRAMES for f in frames):
        raise OptionError("frames", f"must be a list drawn from {', '.join(FRAMES)}")
    extra = _extra(spec.get("extra", []), allowed, reserved | set(params))
    out = SweepSpec(name, scheds, places, traces, tuple(seeds), params, fixed, tuple(frames), extra)
    if len(out) > MAX_SWEEP_CELLS:
        axes = " x ".join(
            f"{len(v)} {k}" for k, v in (("schedulers", scheds), ("placements", places),
                                         ("traces", traces), ("seeds", seeds), *params.items())
        )  # fmt: skip
        raise OptionError(
            "params", f"{len(out):,} cells ({axes}) exceed the limit of {MAX_SWEEP_CELLS:,}"
        )
    if check_names:
        _check_inputs(traces, params, fixed)
        for _, over in extra:
            _check_inputs(traces, params, {**fixed, **over})
        check_cell_options(out)
    return out


def _unknown_param(key: str, allowed: set) -> str:
    """An unknown ``[params]`` / ``[fixed]`` / ``[[extra]]`` key, with the nearest known one."""
    known = sorted(allowed | set(SWEEP_OPTIONS))
    return unknown_key(key.split(".")[0], known, "simulate() parameter")


def _extra(tables, allowed: set | None, reserved: set) -> tuple:
    """``[[extra]]`` tables -> ((seeds, simulate() arguments), ...)."""
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise OptionError("extra", "must be a list of tables ([[extra]])")
    out = []
    for i, t in enumerate(tables):
        over = {k: v for k, v in t.items() if k != "seeds"}
        for k in over:
            if k in reserved:
                raise OptionError(f"extra[{i}].{k}", f"{k!r} is a grid axis of its own")
            if allowed is not None and k.split(".")[0] not in allowed | set(SWEEP_OPTIONS):
                raise OptionError(f"extra[{i}].{k}", _unknown_param(k, allowed))
        seeds = t.get("seeds", [0])
        if not isinstance(seeds, list) or not seeds or not all(type(s) is int for s in seeds):
            raise OptionError(f"extra[{i}].seeds", "must be a non-empty list of integers")
        out.append((tuple(seeds), over))
    return tuple(out)


#: the option tables a cell passes on: (its key, the cell entry that takes them, that entry's
#: registry; None: the trace generator's arguments)
_OPTION_TABLES = (
    ("scheduler_options", "scheduler", SCHEDULER_REGISTRY),
    ("placement_options", "placement", POLICY_REGISTRY),
    ("trace_options", "trace", None),
)


def check_cell_options(spec: SweepSpec) -> None:
    """Every option a cell passes on is one its taker knows, with a value in its spec:
    ``scheduler_options`` / ``placement_options`` against the scheduler's / placement policy's
    (``Registry.check``, what ``simulate`` runs first), ``trace_options`` against the trace
    generator's arguments (``trace_generators.check_options``; only generated traces take any).
    Merged as ``sweep.run_cell`` merges them (``[fixed]``, ``[params]``, ``[[extra]]``, dotted
    keys). An unknown key is an :class:`OptionError` naming where the spec sets it
    (``fixed.trace_options.sclae``) and the nearest known key, before any cell runs."""
    for table, over in (("fixed", spec.fixed), ("params", spec.params)) + tuple(
        (f"extra[{i}]", o) for i, (_, o) in enumerate(spec.extra)
    ):
        for k in over:
            if k.startswith(
                "trace_options."
            ):  # run_cell passes them to simulate, not the generator
                arg = k.split(".", 1)[1]
                raise OptionError(
                    f"{table}.{k}", f"set the generator argument itself ({table}.{arg}) instead"
                )
    seen: set[str] = set()
    one = replace(spec, seeds=(0,), extra=tuple(((0,), o) for _, o in spec.extra))  # seeds: same
    for cell in one.cells():
        kw = {**spec.fixed, **{k: v for k, v in cell.items() if k != "seed"}}
        for k in [k for k in kw if "." in k]:
            outer, inner = k.split(".", 1)
            kw[outer] = {**(kw.get(outer) or {}), inner: kw.pop(k)}
        for key, entry, registry in _OPTION_TABLES:
            opts, name = kw.get(key) or {}, kw.get(entry)
            if not opts or not isinstance(opts, dict) or not isinstance(name, str):
                continue  # none / not a table (the schema names it)
            seen_key = json.dumps([key, name, opts], sort_keys=True, default=str)
            if seen_key not in seen:
                seen.add(seen_key)
                _check_table(spec, key, name, opts, registry)


def _check_table(spec: SweepSpec, key: str, name: str, opts: dict, registry) -> None:
    """One cell's ``key`` options of entry ``name`` (see :func:`check_cell_options`)."""
    if registry is None:
        known, owner = generator_params(name), f"the {name!r} generator"
    else:
        known, owner = registry.option_names(name), f"{registry.kind} {name!r}"
    for k in opts:
        if k in known:
            continue
        if not known and registry is None:
            problem = f"trace {name!r} takes no options: only {', '.join(TRACE_GENERATORS)} do"
        else:  # the key is in the path; the message as Registry.check words it, plus the nearest
            near = suggestion(k, known)
            hint = f"did you mean {near!r}?" if near else f"known: {', '.join(sorted(known))}"
            problem = f"unknown option of {owner}; {hint if known else 'it takes none'}"
        raise OptionError(_where(spec, f"{key}.{k}"), problem)
    try:
        registry.check(name, opts) if registry is not None else check_trace_options(name, opts)
    except OptionError as exc:  # a value outside its spec: named where the spec sets it
        raise OptionError(_where(spec, exc.path), exc.problem) from None


def _where(spec: SweepSpec, path: str) -> str:
    """Where the spec sets option ``path`` (``scheduler_options.f``): ``params.``, ``extra[i].``
    or ``fixed.`` before it (the order ``sweep.run_cell`` lets them win)."""
    key = path.split(".", 1)[0]
    if path in spec.params or key in spec.params:
        return f"params.{path}"
    for i, (_, over) in enumerate(spec.extra):
        if path in over or key in over:
            return f"extra[{i}].{path}"
    return f"fixed.{path}"


def _check_inputs(traces, params: dict, fixed: dict) -> None:
    """What the schema cannot see: every trace exists and is valid, every cluster size splits into
    whole machines."""
    for k, tr in enumerate(traces):
        if tr in SIA_PHILLY or tr in TRACE_GENERATORS:
            continue
        try:
            check_trace_name(tr)
            load_trace(tr)
        except DataError as exc:
            raise OptionError(f"traces[{k}]", str(exc)) from None
    where = {k: ("params" if k in params else "fixed") for k in ("gpus", "gpus_per_machine")}
    for g in params.get("gpus", [fixed.get("gpus")]):
        for m in params.get("gpus_per_machine", [fixed.get("gpus_per_machine", 4)]):
            if g is not None and g % m:
                raise OptionError(
                    f"{where['gpus']}.gpus",
                    f"{g} GPUs is not a multiple of {m} GPUs per machine",
                )


def load_spec(path: str | Path | dict, *, check_names: bool = True) -> SweepSpec:
    """Read a TOML spec file (or take a dict) and validate it."""
    if isinstance(path, dict):
        return validate_spec(path, check_names=check_names)
    p = Path(path)
    check_file_bytes(p, JSON_BYTES, str(p), OptionError)  # before TOML parses it
    try:
        with p.open("rb") as fh:
            raw = tomllib.load(fh)
    except FileNotFoundError as exc:
        raise OptionError(str(p), "no such spec file") from exc
    except OSError as exc:  # a folder, no permission, a name too long, ...
        raise OptionError(str(p), f"cannot read the spec: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise OptionError(str(p), f"not UTF-8 text ({exc.reason})") from None
    except tomllib.TOMLDecodeError as exc:
        raise OptionError(str(p), f"not valid TOML: {exc}") from exc
    return validate_spec(raw, check_names=check_names)
