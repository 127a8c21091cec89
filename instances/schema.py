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

_APP = {
    "type": "object",
    "required": ["id"],
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "rho_empty": {"type": ["number", "null"], "exclusiveMinimum": 0},
        "bids": {"type": "array", "items": _BID},
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
