"""JSON Schemas of the instance contract (DESIGN.md, "Contracts").

Structural checks (types, required fields) use these schemas through ``jsonschema``; the semantic
checks (unknown GPU ids, duplicates, demand > cluster, missing PM-scores) live in :mod:`.io`.
"""

from __future__ import annotations

import copy

_GPU = {
    "type": "object",
    "required": ["id", "machine"],
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "machine": {"type": "string", "minLength": 1},
        "rack": {"type": "string", "minLength": 1},
        "pm": {
            "type": "object",
            "additionalProperties": {"type": "number", "exclusiveMinimum": 0},
        },
    },
}

_BID = {
    "type": "object",
    "required": ["gpus", "rho"],
    "properties": {
        "gpus": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "rho": {"type": "number", "exclusiveMinimum": 0},
    },
}

_AGENT_JOB = {
    "type": "object",
    "required": ["iters_left", "t_iter"],
    "properties": {
        "iters_left": {"type": "number", "minimum": 0},
        "t_iter": {"type": "number", "exclusiveMinimum": 0},
        "locality_sensitivity": {"type": "number", "minimum": 0},
        "forecasts": {"type": "array", "items": {"type": "number", "minimum": 0}},
    },
}

#: Agent-form app fields (docs/instances.md): an app described by its jobs instead of ``bids``.
_AGENT_FIELDS = {
    "jobs": {"type": "array", "items": _AGENT_JOB, "minItems": 1},
    "t_start": {"type": "number"},
    "t_now": {"type": "number"},
    "d_max": {"type": "integer", "minimum": 1},
    "locality": {
        "type": "array",
        "items": {"type": "number", "minimum": 1},
        "minItems": 3,
        "maxItems": 3,
    },
    "class": {"type": ["string", "null"]},
    "model": {"type": ["string", "null"]},
    "stopping": {"enum": ["none", "successive-halving", "perf-curve"]},
    "phases": {
        "type": "array",
        "items": {
            "type": "object",
            "required": ["jobs", "iters"],
            "properties": {
                "jobs": {"type": "integer", "minimum": 1},
                "iters": {"type": "number", "minimum": 0},
                "gpus": {"type": "integer", "minimum": 1},
            },
        },
    },
    "current_phase": {"type": "integer", "minimum": 0},
    "phase_model": {"enum": ["actual", "median"]},
    "future": {"enum": ["median", "slowest"]},
    "split": {"enum": ["even", "balanced"]},
    "work_total": {"type": "number", "exclusiveMinimum": 0},
    "demand_max": {"type": "integer", "minimum": 1},
    "t_id": {
        "type": "object",
        "properties": {
            "variant": {"enum": ["themis", "literal", "static", "gavel"]},
            "n_avg": {"type": "number", "exclusiveMinimum": 0},
            "n_arrival": {"type": "integer", "minimum": 1},
            "n_active": {"type": "integer", "minimum": 1},
            "t_isolated": {"type": "number", "minimum": 0},
            "cluster_gpus": {"type": "integer", "minimum": 1},
        },
        "additionalProperties": False,
    },
    "held": {"type": "array", "items": {"type": "string"}},
}

_APP = {
    "type": "object",
    "required": ["id"],
    "description": "Explicit form (bids) or agent form (jobs; priced by the THEMIS AGENT).",
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "rho_empty": {"type": ["number", "null"], "exclusiveMinimum": 0},
        "bids": {"type": "array", "items": _BID},
        **_AGENT_FIELDS,
    },
}

AUCTION_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "fairplace auction instance",
    "description": "Apps with explicit bid tables (bundle -> finish-time fairness rho). "
    "rho_empty is rho if the app receives nothing; null means unbounded.",
    "type": "object",
    "required": ["kind", "gpus", "apps"],
    "properties": {
        "kind": {"const": "auction"},
        "name": {"type": "string"},
        "meta": {"type": "object"},
        "gpus": {"type": "array", "items": _GPU, "minItems": 1},
        "apps": {"type": "array", "items": _APP},
    },
}

_JOB = {
    "type": "object",
    "required": ["id", "gpus"],
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "gpus": {"type": "integer", "minimum": 1},
        "class": {"type": ["string", "null"]},
        "weight": {"type": "number", "exclusiveMinimum": 0},
        "model": {"type": ["string", "null"]},
    },
}

PLACEMENT_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "fairplace placement instance",
    "description": "Jobs to place jointly on GPUs with per-class PM-scores; slowdown = L(spread) * max V.",
    "type": "object",
    "required": ["kind", "gpus", "jobs"],
    "properties": {
        "kind": {"const": "placement"},
        "name": {"type": "string"},
        "meta": {"type": "object"},
        "locality_penalty": {"type": "number", "minimum": 1},
        "locality_by_model": {
            "type": "object",
            "additionalProperties": {"type": "number", "minimum": 1},
        },
        "gpus": {"type": "array", "items": _GPU, "minItems": 1},
        "jobs": {"type": "array", "items": _JOB},
    },
}

SCHEMAS = {"auction": AUCTION_SCHEMA, "placement": PLACEMENT_SCHEMA}


def schema(kind: str) -> dict:
    """The published JSON Schema of an instance kind (a copy; callers may extend it)."""
    if kind not in SCHEMAS:
        from fairplace.errors import OptionError

        raise OptionError(
            "kind", f"unknown instance kind {kind!r}; expected one of {sorted(SCHEMAS)}"
        )
    return copy.deepcopy(SCHEMAS[kind])
