"""The JSON Schema of a sweep spec (``fairplace.runs.sweep``), built for one spec: its ``[params]`` and
``[fixed]`` values are checked against the type and range of the ``simulate()`` argument (or trace
generator argument) they feed, so a spec that passes ``fairplace sweep --validate-only`` does not fail
at run time on a bad value (``seeds = [-1]``, ``gpus = "lots"``, a missing trace file).

Value schemas come from a table of known arguments (:func:`known`: the specs of the
``SimulationConfig`` fields, the scheduler options and the trace generators' arguments; name enums
read the registries: the profiles, set-ups, grid origins, stampings) and, for any other argument,
from its annotation (``int``, ``float``, ``bool``, ``str``, ``Mapping``, ``tuple``, ``| None``).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import jsonschema

from fairplace import sim
from fairplace.core.errors import OptionError
from fairplace.core.keys import unknown_key
from fairplace.core.limits import annotation_schema
from fairplace.core.shared_params import LOCALITY_PENALTY
from fairplace.instances.trace_generators import arg_schemas
from fairplace.sim.config import SIM_PARAM, field_schemas
from fairplace.sim.schedulers import SCHEDULER_REGISTRY
from fairplace.sim.setups import SETUPS
from fairplace.solvers.placement.policies import POLICY_NAMES

#: the keys of a sweep spec
SPEC_KEYS = (
    "name", "schedulers", "placements", "traces", "seeds", "params", "fixed", "frames", "extra",
)  # fmt: skip
#: the per-cell frames a sweep can keep
FRAMES = ("jobs", "apps", "rounds")

#: a sweep name becomes a file name (``<name>-results.parquet``): letters, digits, ``._-``.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"

_SCALAR = {"type": ["number", "string", "boolean"]}
#: a seed of the sweep: the range of ``SimulationConfig.seed``'s spec
_SEED = SIM_PARAM["seed"].constraint.schema()
#: L is the simulation parameter ``locality_penalty``, not a policy option (``SimulationConfig``)
_NOT_AN_OPTION = {"not": {}, "description": "set locality_penalty instead"}


def option_schemas(registry) -> dict[str, dict]:
    """{option: value schema} of a registry's specs (``Param.schema``); an option two entries
    spec differently takes either. (A policy's options are checked by ``Registry.check`` for each
    cell, ``sweep_spec.check_cell_options``, whose errors name the option.)"""
    out: dict[str, list[dict]] = {}
    for _, entry in registry.items():
        for spec in entry.params:
            schemas = out.setdefault(spec.name, [])
            if spec.schema() not in schemas:
                schemas.append(spec.schema())
    return {k: v[0] if len(v) == 1 else {"anyOf": v} for k, v in out.items()}


def known() -> dict[str, Any]:
    """Value schemas of the simulate() and trace-generator arguments: the
    :class:`~fairplace.sim.SimulationConfig` fields (``sim.config.field_schemas``, also checked
    when a config is made) and the generators' arguments (their specs,
    ``instances.trace_generators.arg_schemas``, also checked for ``trace_options``), plus the
    sweep's own. A name that is both (``gpus_per_machine``) takes the generator's schema."""
    generated = arg_schemas()
    return {
        **field_schemas(),
        "trace_options": {
            "type": "object",
            "properties": generated,
            "additionalProperties": _SCALAR,
        },
        "scheduler_options": {
            "type": "object",
            "properties": option_schemas(SCHEDULER_REGISTRY),
            "additionalProperties": _SCALAR,
        },
        "placement_options": {
            "type": "object",
            "properties": {LOCALITY_PENALTY.name: _NOT_AN_OPTION},
            "additionalProperties": _SCALAR,
        },
        "setup": {"anyOf": [{"enum": list(SETUPS)}, {"type": "null"}]},  # a set-up's own names
        "cluster": {"not": {}},  # a Cluster object cannot be written in TOML: use per_run / profile
        "per_run": {"type": "boolean"},
        **generated,
    }


def from_annotation(annotation: Any) -> dict:
    """A value schema from a parameter annotation (``core.limits.annotation_schema``)."""
    return annotation_schema(annotation)


def value_schema(key: str, signatures: Iterable[Callable]) -> dict:
    """The schema of one ``[params]`` / ``[fixed]`` value: ``KNOWN``, else the annotation of the
    first function in ``signatures`` that takes ``key``; dotted keys (``scheduler_options.f``) are
    scalars."""
    table = known()
    if "." in key:  # a dotted option: its spec's schema (``scheduler_options.f``), else a scalar
        head, _, rest = key.partition(".")
        sub = table.get(head, {}).get("properties", {})
        return sub.get(rest, _SCALAR)
    if key in table:
        return table[key]
    for fn in signatures:
        params = inspect.signature(fn).parameters
        if key in params:
            return from_annotation(params[key].annotation)
    return {}


def spec_schema(spec: Mapping, signatures: Iterable[Callable], check_names: bool = True) -> dict:
    """The JSON Schema of ``spec`` (its own keys decide which value schemas apply)."""
    signatures = list(signatures)
    seeds = {"type": "array", "minItems": 1, "items": _SEED}

    def table(key: str, grid: bool) -> dict:
        t = spec.get(key)
        props = {}
        for k in t if isinstance(t, Mapping) else ():
            v = value_schema(str(k), signatures) if check_names else {}
            props[k] = {"type": "array", "minItems": 1, "items": v} if grid else v
        return {"type": "object", "properties": props}

    def extra() -> dict:
        tables = spec.get("extra")
        keys = {
            k
            for t in (tables if isinstance(tables, list) else [])
            if isinstance(t, Mapping)
            for k in t
            if k != "seeds"
        }
        props = {k: value_schema(str(k), signatures) if check_names else {} for k in keys}
        item = {"type": "object", "properties": {**props, "seeds": seeds}}
        return {"type": "array", "items": item}

    def names(known: Iterable[str] | None) -> dict:
        item = {"type": "string", "minLength": 1}
        if known is not None:
            item = {**item, "enum": list(known)}
        return {"type": "array", "minItems": 1, "items": item}  # a list, even of one name

    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "fairplace sweep spec",
        "type": "object",
        "required": ["schedulers", "placements", "traces"],
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string", "pattern": NAME_PATTERN},
            "schedulers": names(sim.SCHEDULERS if check_names else None),
            "placements": names(POLICY_NAMES if check_names else None),
            "traces": names(None),
            "seeds": {"anyOf": [_SEED, seeds]},
            "params": table("params", grid=True),
            "fixed": table("fixed", grid=False),
            "extra": extra(),
            "frames": {"type": "array", "items": {"enum": list(FRAMES)}},
        },
        "propertyNames": {"enum": list(SPEC_KEYS)},
    }


def _path(parts) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "spec"


def _finite(node: Any, parts: list) -> None:
    """TOML has ``inf`` and ``nan``: no spec value may be either."""
    if isinstance(node, float) and not math.isfinite(node):
        raise OptionError(_path(parts), f"must be finite, got {node!r}")
    if isinstance(node, Mapping):
        for k, v in node.items():
            _finite(v, [*parts, k])
    elif isinstance(node, list):
        for k, v in enumerate(node):
            _finite(v, [*parts, k])


def check(spec: Any, signatures: Iterable[Callable], check_names: bool = True) -> None:
    """Validate ``spec`` against :func:`spec_schema`; raise :class:`OptionError` naming the key."""
    if not isinstance(spec, Mapping):
        raise OptionError("spec", "must be a TOML table")
    _finite(spec, [])
    validator = jsonschema.Draft202012Validator(spec_schema(spec, signatures, check_names))
    errors = list(validator.iter_errors(dict(spec)))
    if not errors:
        return
    err = max(errors, key=lambda e: len(e.absolute_path))
    while err.context:  # anyOf: report the alternative that got furthest
        err = max(err.context, key=lambda e: len(e.absolute_path))
    path = list(err.absolute_path)
    msg = err.message
    if err.validator == "propertyNames":
        path, msg = [err.instance], unknown_key(err.instance, err.schema["enum"])
    elif err.validator == "pattern" and path == ["name"]:
        msg = f"{err.instance!r} must be a file-name-safe name (letters, digits, '.', '_', '-')"
    elif err.validator == "not":
        msg = "cannot be set in a spec" + (
            f"; {err.schema['description']}" if "description" in err.schema else ""
        )
    # name the key (params.x, extra[0].x); the rest goes into the message
    keep = 2 if path and path[0] in ("params", "fixed") else 3 if path[:1] == ["extra"] else 1
    if len(path) > keep:
        msg = f"{_path(path)}: {msg}"
    raise OptionError(_path(path[:keep]), " ".join(msg.split())[:200])
