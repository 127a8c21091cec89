"""Load, validate and save instance JSON documents (the contract in docs/instances.md): here the
entry points and the structural checks (JSON, number ranges, the JSON Schema); the domain objects
are built in :mod:`.io_build`, documents written in :mod:`.io_write` (re-exported here).

Every problem raises :class:`~fairplace.core.errors.InstanceError` whose ``path`` is a JSON path such as
``$.apps[1].bids[0].gpus[2]`` and whose ``problem`` says what is wrong.
"""

from __future__ import annotations

import json
import math
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema

from fairplace.core.domain import Instance
from fairplace.core.errors import InstanceError
from fairplace.core.keys import unknown_key
from fairplace.core.limits import JSON_BYTES, MAX_SAFE_INT, check_file_bytes, check_instance_sizes

from .io_build import _auction, _placement
from .io_write import save, to_dict  # noqa: F401 - re-exported: the old import path
from .schema import SCHEMAS


def _jpath(parts) -> str:
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def _parse_constant(token: str) -> float:
    """NaN / Infinity are not JSON; keep them as floats so validation reports the field that holds them."""
    return float(token.lower().replace("infinity", "inf"))


def loads(text: str, source: str = "<string>") -> Instance:
    """Parse and validate an instance from JSON text."""
    JSON_BYTES.check(len(text) if text.isascii() else len(text.encode()), source, InstanceError)
    try:
        doc = json.loads(text, parse_constant=_parse_constant)
    except json.JSONDecodeError as exc:
        raise InstanceError(
            "$", f"malformed JSON in {source} (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except RecursionError:
        raise InstanceError("$", f"JSON in {source} is nested too deeply") from None
    except ValueError as exc:  # an integer literal of more than 4300 digits
        raise InstanceError("$", f"a number in {source} is out of range ({exc})") from None
    return from_dict(doc)


def load(path: str | Path) -> Instance:
    """Read an instance JSON file."""
    p = Path(path)
    try:
        check_file_bytes(p, JSON_BYTES, _short(str(p), 200), InstanceError)  # before reading it
        text = p.read_text()
    except FileNotFoundError:
        raise InstanceError(_short(str(p), 200), "file not found") from None
    except OSError as exc:  # a folder, no permission, a name too long, a symlink loop, ...
        raise InstanceError(_short(str(p), 200), f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InstanceError(
            _short(str(p), 200), f"cannot read: not UTF-8 text ({exc.reason})"
        ) from None
    return loads(text, source=str(p))


def _short(text: str, n: int = 60) -> str:
    """A value or path cut to ``n`` characters, so that an error stays one readable line."""
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def _numbers_in_range(node: Any, parts: list, depth: int = 0) -> None:
    """Every number of the document (``meta`` aside) is finite and a safe integer: the schema's
    ``minimum`` / ``maximum`` cannot reject NaN, and a 400-digit integer would overflow ``float``."""
    if depth > 64:
        raise InstanceError(_jpath(parts[:1]), "nested too deeply (more than 64 levels)")
    if isinstance(node, bool) or node is None or isinstance(node, str):
        return
    if isinstance(node, float) and not math.isfinite(node):
        raise InstanceError(_jpath(parts), f"must be finite, got {node!r}")
    if isinstance(node, int) and abs(node) > MAX_SAFE_INT:
        raise InstanceError(_jpath(parts), f"out of range, got {_short(str(node), 24)}")
    if isinstance(node, Mapping):
        for k, v in node.items():
            if not (depth == 0 and k == "meta"):
                _numbers_in_range(v, [*parts, k], depth + 1)
    elif isinstance(node, (list, tuple)):
        for k, v in enumerate(node):
            _numbers_in_range(v, [*parts, k], depth + 1)


def _structural(doc: Any) -> str:
    if not isinstance(doc, Mapping):
        raise InstanceError("$", f"expected a JSON object, got {type(doc).__name__}")
    check_instance_sizes(doc, InstanceError)  # apps, bids, jobs, GPUs before the walks below
    _numbers_in_range(doc, [])
    kind = doc.get("kind")
    if not isinstance(kind, str) or kind not in SCHEMAS:
        raise InstanceError("$.kind", f"expected one of {sorted(SCHEMAS)}, got {kind!r}")
    validator = jsonschema.Draft202012Validator(SCHEMAS[kind])
    errors = sorted(
        validator.iter_errors(doc),
        key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))),
    )
    if errors:
        err = max(errors, key=_depth)  # the most specific location; an unknown key first
        if err.validator == "additionalProperties" and err.validator_value is False:
            key = _extra_keys(err)[0]
            raise InstanceError(
                _jpath([*err.absolute_path, key]), unknown_key(key, err.schema["properties"])
            )
        msg = _short(err.message, 160)
        if err.validator == "exclusiveMinimum":
            msg = f"must be > {err.validator_value}, got {_short(repr(err.instance), 24)}"
        elif err.validator == "pattern":  # ids (schema._ID)
            msg = f"must not contain control characters (NUL, newline, ...), got {err.instance!r}"
        raise InstanceError(_jpath(err.absolute_path), msg)
    return kind


def _extra_keys(err) -> list[str]:
    """The keys of a closed object (``additionalProperties: false``) its schema does not declare."""
    return [k for k in err.instance if k not in err.schema.get("properties", {})]


def _depth(err) -> tuple[int, int]:
    """Where an error sits: an unknown key one level below its object, and before any other error
    of the same depth (a misspelled required key is reported as the misspelling)."""
    unknown = err.validator == "additionalProperties" and err.validator_value is False
    return len(err.absolute_path) + unknown, unknown


#: instance objects built here, by identity (already checked: ``objects.check`` does not check them
#: again, so ``fairplace.solve(fairplace.load(f))`` validates once; 21,762 bids take ~10 s)
_CHECKED: dict[int, weakref.ref] = {}


def checked(inst: Any) -> bool:
    """True if ``inst`` is an object :func:`from_dict` built (it met the contract)."""
    ref = _CHECKED.get(id(inst))
    return ref is not None and ref() is inst


def from_dict(doc: Any) -> Instance:
    """Validate a parsed JSON document and build the domain instance."""
    try:
        kind = _structural(doc)
    except RecursionError:  # a self-referencing or absurdly deep Python object
        raise InstanceError("$", "nested too deeply") from None
    inst = _auction(doc) if kind == "auction" else _placement(doc)
    key = id(inst)
    _CHECKED[key] = weakref.ref(inst, lambda _ref: _CHECKED.pop(key, None))
    return inst
