"""JSON Schemas of the instance contract (docs/instances.md).

Structural checks (types, required fields, no unknown key) use these schemas through ``jsonschema``;
the semantic checks (unknown GPU ids, duplicates, demand > cluster, missing PM-scores) live in
:mod:`.io`. Every object is closed (``additionalProperties: false``: a misspelled key is an
error naming the nearest known key, ``core/keys.py``) except the free-form maps: ``meta`` (anything),
a GPU's ``pm`` (class -> score) and ``locality_by_model`` (model -> L).
"""

from __future__ import annotations

import copy

from fairplace.core.errors import OptionError
from fairplace.core.limits import MAX_COUNT, MAX_GPUS, MAX_RATIO, MAX_RHO, MAX_TIME
from fairplace.core.shared_params import LOCALITY_PENALTY
from fairplace.formulations.variants import (
    FUTURE_JOBS,
    PHASE_MODELS,
    SPLITS,
    STOPPING,
    T_ID_VARIANTS,
)

#: every numeric field has both bounds (tests/runs/test_fuzz_contract.py checks it): finite and in range.
_RATIO = {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_RATIO}
_PENALTY = LOCALITY_PENALTY.constraint.schema()  # any locality penalty: L in [1, MAX_RATIO]
_RHO = {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_RHO}
_TIME = {"type": "number", "minimum": 0, "maximum": MAX_TIME}
_POS_TIME = {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TIME}
_COUNT = {"type": "integer", "minimum": 1, "maximum": MAX_COUNT}
#: ids and names: non-empty, no control characters (a NUL or a newline in an id breaks the CSV /
#: JSONL outputs and the one-line errors)
_ID = {"type": "string", "minLength": 1, "pattern": "^[^\\x00-\\x1f\\x7f]*$"}
_GPU_COUNT = {"type": "integer", "minimum": 1, "maximum": MAX_GPUS}

_GPU = {
    "type": "object",
    "required": ["id", "machine"],
    "properties": {
        "id": _ID,
        "machine": _ID,
        "rack": _ID,
        "pm": {
            "type": "object",
            "additionalProperties": _RATIO,
        },
    },
    "additionalProperties": False,
}

_BID = {
    "type": "object",
    "required": ["gpus", "rho"],
    "properties": {
        "gpus": {"type": "array", "items": _ID, "minItems": 1},
        "rho": _RHO,
    },
    "additionalProperties": False,
}

_AGENT_JOB = {
    "type": "object",
    "required": ["iters_left", "t_iter"],
    "properties": {
        "iters_left": _POS_TIME,
        "t_iter": _POS_TIME,
        "locality_sensitivity": {"type": "number", "minimum": 0, "maximum": MAX_RATIO},
        "forecasts": {"type": "array", "items": _TIME},
    },
    "additionalProperties": False,
}

#: Agent-form app fields (docs/instances.md): an app described by its jobs instead of ``bids``.
_AGENT_FIELDS = {
    "jobs": {"type": "array", "items": _AGENT_JOB, "minItems": 1},
    "t_start": _TIME,
    "t_now": _TIME,
    "d_max": _GPU_COUNT,
    "locality": {
        "type": "array",
        "items": _PENALTY,
        "minItems": 3,
        "maxItems": 3,
    },
    "class": {"type": ["string", "null"]},
    "model": {"type": ["string", "null"]},
    "stopping": {"enum": list(STOPPING)},
    "phases": {
        "type": "array",
        "items": {
            "type": "object",
            "required": ["jobs", "iters"],
            "properties": {
                "jobs": _COUNT,
                "iters": _TIME,
                "gpus": _GPU_COUNT,
            },
            "additionalProperties": False,
        },
    },
    "current_phase": {"type": "integer", "minimum": 0, "maximum": MAX_COUNT},
    "phase_model": {"enum": list(PHASE_MODELS)},
    "future": {"enum": list(FUTURE_JOBS)},
    "split": {"enum": list(SPLITS)},
    "work_total": _POS_TIME,
    "demand_max": _GPU_COUNT,
    "t_id": {
        "type": "object",
        "properties": {
            "variant": {"enum": list(T_ID_VARIANTS)},
            "n_avg": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_COUNT},
            "n_arrival": _COUNT,
            "n_active": _COUNT,
            "t_isolated": _TIME,
            "cluster_gpus": _GPU_COUNT,
        },
        "additionalProperties": False,
    },
    "held": {"type": "array", "items": _ID},
}

_APP = {
    "type": "object",
    "required": ["id"],
    "description": "Explicit form (bids) or agent form (jobs; priced by the THEMIS AGENT).",
    "properties": {
        "id": _ID,
        "rho_empty": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": MAX_RHO},
        "bids": {"type": "array", "items": _BID},
        **_AGENT_FIELDS,
    },
    "additionalProperties": False,
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
        "meta": {"type": "object", "description": "free-form: any keys"},
        "gpus": {"type": "array", "items": _GPU, "minItems": 1, "maxItems": MAX_GPUS},
        "apps": {"type": "array", "items": _APP},
    },
    "additionalProperties": False,
}

_JOB = {
    "type": "object",
    "required": ["id", "gpus"],
    "properties": {
        "id": _ID,
        "gpus": _GPU_COUNT,
        "class": {"type": ["string", "null"]},
        "weight": _RATIO,
        "model": {"type": ["string", "null"]},
    },
    "additionalProperties": False,
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
        "meta": {"type": "object", "description": "free-form: any keys"},
        "locality_penalty": LOCALITY_PENALTY.schema(),
        "locality_by_model": {"type": "object", "additionalProperties": _PENALTY},
        "gpus": {"type": "array", "items": _GPU, "minItems": 1, "maxItems": MAX_GPUS},
        "jobs": {"type": "array", "items": _JOB},
    },
    "additionalProperties": False,
}

SCHEMAS = {"auction": AUCTION_SCHEMA, "placement": PLACEMENT_SCHEMA}


def schema(kind: str) -> dict:
    """The published JSON Schema of an instance kind (a copy; callers may extend it)."""
    if kind not in SCHEMAS:
        raise OptionError(
            "kind", f"unknown instance kind {kind!r}; expected one of {sorted(SCHEMAS)}"
        )
    return copy.deepcopy(SCHEMAS[kind])
