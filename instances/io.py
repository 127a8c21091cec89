"""Load, validate and save instance JSON documents (the contract in docs/instances.md).

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

from fairplace.core.domain import (
    GPU,
    AgentApp,
    AgentJob,
    App,
    AuctionInstance,
    Bid,
    Cluster,
    Instance,
    Job,
    PlacementInstance,
)
from fairplace.core.errors import InstanceError, naming
from fairplace.core.keys import unknown_key
from fairplace.core.limits import (
    JSON_BYTES,
    MAX_SAFE_INT,
    MIN_WORK,
    check_file_bytes,
    check_instance_sizes,
)
from fairplace.core.shared_params import LOCALITY_PENALTY

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


def _check_finite(value: float, path: str) -> float:
    if not math.isfinite(value):
        raise InstanceError(path, f"must be finite, got {value!r}")
    return float(value)


def _cluster(doc: Mapping) -> Cluster:
    seen: dict[str, int] = {}
    racks: dict[str, tuple[str, int]] = {}
    gpus = []
    for k, g in enumerate(doc["gpus"]):
        if g["id"] in seen:
            raise InstanceError(
                f"$.gpus[{k}].id",
                f"duplicate GPU id {g['id']!r} (first at $.gpus[{seen[g['id']]}])",
            )
        seen[g["id"]] = k
        rack = g.get("rack", "r0")
        first = racks.setdefault(g["machine"], (rack, k))
        if first[0] != rack:
            raise InstanceError(
                f"$.gpus[{k}].rack",
                f"machine {g['machine']!r} is in rack {first[0]!r} at $.gpus[{first[1]}] "
                f"and in rack {rack!r} here (a machine sits in one rack)",
            )
        pm = {c: _check_finite(v, f"$.gpus[{k}].pm.{c}") for c, v in g.get("pm", {}).items()}
        gpus.append(GPU(id=g["id"], machine=g["machine"], rack=rack, pm=pm))
    return Cluster(tuple(gpus))


def _auction(doc: Mapping) -> AuctionInstance:
    cluster = _cluster(doc)
    apps, agents = [], []
    seen: dict[str, int] = {}  # app id -> its index
    holder: dict[str, str] = {}  # GPU id -> the agent-form app that holds it
    for i, a in enumerate(doc["apps"]):
        base = f"$.apps[{i}]"
        if a["id"] in seen:
            raise InstanceError(
                f"{base}.id", f"duplicate app id {a['id']!r} (first at $.apps[{seen[a['id']]}])"
            )
        seen[a["id"]] = i
        if "bids" in a and "jobs" in a:
            raise InstanceError(base, "an app has either 'bids' (explicit) or 'jobs' (agent form)")
        if "jobs" in a:
            agents.append(_agent(a, base, cluster))
            for k, gid in enumerate(agents[-1].held):
                if gid in holder:
                    raise InstanceError(
                        f"{base}.held[{k}]",
                        f"GPU {gid!r} is also held by app {holder[gid]!r} (a GPU has one holder)",
                    )
                holder[gid] = a["id"]
            continue
        if "bids" not in a:
            raise InstanceError(base, "an app needs a 'bids' table (or 'jobs': agent form)")
        rho_empty = a.get("rho_empty")
        if rho_empty is not None:
            rho_empty = _check_finite(rho_empty, f"{base}.rho_empty")
        bids = []
        for b, bid in enumerate(a["bids"]):
            bpath = f"{base}.bids[{b}]"
            rho = _check_finite(bid["rho"], f"{bpath}.rho")
            if len(set(bid["gpus"])) != len(bid["gpus"]):
                raise InstanceError(f"{bpath}.gpus", "a GPU is listed twice in one bundle")
            for k, gid in enumerate(bid["gpus"]):
                if gid not in cluster.index:
                    raise InstanceError(f"{bpath}.gpus[{k}]", f"unknown GPU id {gid!r}")
            bids.append(Bid(gpus=tuple(bid["gpus"]), rho=rho))
        apps.append(App(id=a["id"], bids=tuple(bids), rho_empty=rho_empty))
    return AuctionInstance(
        cluster=cluster,
        apps=tuple(apps),
        name=doc.get("name", ""),
        meta=dict(doc.get("meta", {})),
        agents=tuple(agents),
    )


_AGENT_KEYS: tuple[str, ...] = ("t_start", "t_now", "d_max", "model", "stopping", "current_phase")
_AGENT_KEYS += ("phase_model", "future", "split", "work_total", "demand_max", "rho_empty")


def _agent(a: Mapping, base: str, cluster: Cluster) -> AgentApp:
    """An agent-form app (docs/instances.md); semantic checks with JSON paths."""
    jobs = []
    for k, j in enumerate(a["jobs"]):
        jp = f"{base}.jobs[{k}]"
        jobs.append(
            AgentJob(
                iters_left=_check_finite(j["iters_left"], f"{jp}.iters_left"),
                t_iter=_check_finite(j["t_iter"], f"{jp}.t_iter"),
                locality_sensitivity=_check_finite(
                    j.get("locality_sensitivity", 1.0), f"{jp}.locality_sensitivity"
                ),
                forecasts=tuple(
                    _check_finite(v, f"{jp}.forecasts[{n}]")
                    for n, v in enumerate(j.get("forecasts", []))
                ),
            )
        )
    for k, j in enumerate(jobs):
        if j.iters_left * j.t_iter < MIN_WORK:  # 1e-300 x 1e-300 underflows to 0
            raise InstanceError(
                f"{base}.jobs[{k}]",
                f"work iters_left x t_iter = {j.iters_left * j.t_iter!r} GPU-seconds is below "
                f"{MIN_WORK:g} (T_id would be 0)",
            )
        if a.get("stopping") == "perf-curve" and not j.forecasts:
            raise InstanceError(
                f"{base}.jobs[{k}].forecasts",
                "stopping 'perf-curve' needs at least one remaining-iteration forecast per job",
            )
    loc = tuple(a.get("locality", (1.0, 1.1, 1.3)))
    for n, v in enumerate(loc):
        _check_finite(v, f"{base}.locality[{n}]")
    if list(loc) != sorted(loc):
        raise InstanceError(
            f"{base}.locality",
            f"must be non-decreasing (machine <= rack <= cluster), got {list(loc)}",
        )
    stopping = a.get("stopping", "none")
    phases = tuple(
        (int(p["jobs"]), float(p["iters"]))
        + ((int(p["gpus"]),) if p.get("gpus") is not None else ())
        for p in a.get("phases", [])
    )
    if stopping == "successive-halving":
        if not phases:
            raise InstanceError(f"{base}.phases", "successive halving needs at least one phase")
        if a.get("current_phase", 0) >= len(phases):
            raise InstanceError(
                f"{base}.current_phase", f"must be < {len(phases)} (the number of phases)"
            )
    if a.get("t_now", 0.0) < a.get("t_start", 0.0):
        raise InstanceError(f"{base}.t_now", "must be >= t_start")
    cls = a.get("class")
    if cls is not None:
        missing = [g.id for g in cluster.gpus if cls not in g.pm]
        if missing:
            raise InstanceError(
                f"{base}.class", f"no PM-score for class {cls!r} on GPU {missing[0]!r}"
            )
    held = tuple(a.get("held", []))
    for k, gid in enumerate(held):
        if gid not in cluster.index:
            raise InstanceError(f"{base}.held[{k}]", f"unknown GPU id {gid!r}")
        if gid in held[:k]:
            raise InstanceError(f"{base}.held[{k}]", f"GPU {gid!r} is listed twice")
    kw = {k: a[k] for k in _AGENT_KEYS if k in a}
    return AgentApp(
        id=a["id"],
        jobs=tuple(jobs),
        locality=loc,
        cls=cls,
        phases=phases,
        t_id=dict(a.get("t_id", {})),
        held=held,
        **kw,
    )


def _agent_dict(a: AgentApp) -> dict:
    d: dict[str, Any] = {"id": a.id, "jobs": []}
    for j in a.jobs:
        jd: dict[str, Any] = {"iters_left": j.iters_left, "t_iter": j.t_iter}
        if j.locality_sensitivity != 1.0:
            jd["locality_sensitivity"] = j.locality_sensitivity
        if j.forecasts:
            jd["forecasts"] = list(j.forecasts)
        d["jobs"].append(jd)
    d.update(t_start=a.t_start, t_now=a.t_now, d_max=a.d_max, locality=list(a.locality))
    d.update({"class": a.cls, "stopping": a.stopping, "rho_empty": a.rho_empty})
    if a.phases:
        d["phases"] = [
            {"jobs": p[0], "iters": p[1]} | ({"gpus": p[2]} if len(p) > 2 else {}) for p in a.phases
        ]
        d.update(current_phase=a.current_phase, phase_model=a.phase_model, future=a.future)
    for k in ("model", "work_total", "demand_max"):
        if getattr(a, k) is not None:
            d[k] = getattr(a, k)
    if a.split != "even":
        d["split"] = a.split
    if a.t_id:
        d["t_id"] = dict(a.t_id)
    if a.held:
        d["held"] = list(a.held)
    return d


def _placement(doc: Mapping) -> PlacementInstance:
    cluster = _cluster(doc)
    jobs = []
    seen: dict[str, int] = {}  # job id -> its index
    for j, job in enumerate(doc["jobs"]):
        base = f"$.jobs[{j}]"
        if job["id"] in seen:
            raise InstanceError(
                f"{base}.id", f"duplicate job id {job['id']!r} (first at $.jobs[{seen[job['id']]}])"
            )
        seen[job["id"]] = j
        if job["gpus"] > len(cluster):
            raise InstanceError(
                f"{base}.gpus",
                f"job asks for {job['gpus']} GPUs but the cluster has {len(cluster)}",
            )
        cls = job.get("class")
        if cls is not None:
            missing = [g.id for g in cluster.gpus if cls not in g.pm]
            if missing:
                raise InstanceError(
                    f"{base}.class",
                    f"no PM-score for class {cls!r} on GPU {missing[0]!r}"
                    + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""),
                )
        weight = _check_finite(job.get("weight", 1.0), f"{base}.weight")
        jobs.append(
            Job(id=job["id"], gpus=int(job["gpus"]), cls=cls, weight=weight, model=job.get("model"))
        )
    return PlacementInstance(
        cluster=cluster,
        jobs=tuple(jobs),
        locality_penalty=_check_finite(
            doc.get("locality_penalty", LOCALITY_PENALTY.default), "$.locality_penalty"
        ),
        locality_by_model=dict(doc.get("locality_by_model", {})),
        name=doc.get("name", ""),
        meta=dict(doc.get("meta", {})),
    )


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


def _gpus_dict(cluster: Cluster) -> list[dict]:
    out = []
    for g in cluster.gpus:
        d: dict[str, object] = {"id": g.id, "machine": g.machine, "rack": g.rack}
        if g.pm:
            d["pm"] = dict(g.pm)
        out.append(d)
    return out


def to_dict(inst: Instance) -> dict:
    """The contract JSON document of an instance (inverse of :func:`from_dict`)."""
    doc: dict[str, Any] = {"kind": inst.kind}
    if inst.name:
        doc["name"] = inst.name
    if inst.meta:
        doc["meta"] = dict(inst.meta)
    if isinstance(inst, AuctionInstance):
        doc["gpus"] = _gpus_dict(inst.cluster)
        doc["apps"] = [
            {
                "id": a.id,
                "rho_empty": a.rho_empty,
                "bids": [{"gpus": list(b.gpus), "rho": b.rho} for b in a.bids],
            }
            for a in inst.apps
        ] + [_agent_dict(a) for a in inst.agents]
    else:
        doc["locality_penalty"] = inst.locality_penalty
        if inst.locality_by_model:
            doc["locality_by_model"] = dict(inst.locality_by_model)
        doc["gpus"] = _gpus_dict(inst.cluster)
        doc["jobs"] = []
        for j in inst.jobs:
            d = {"id": j.id, "gpus": j.gpus, "class": j.cls}
            if j.weight != 1.0:
                d["weight"] = j.weight
            if j.model is not None:
                d["model"] = j.model
            doc["jobs"].append(d)
    return doc


def save(inst: Instance, path: str | Path) -> Path:
    """Write an instance as contract JSON."""
    p = Path(path)
    text = json.dumps(to_dict(inst), indent=1)
    with naming(p):
        p.write_text(text)
    return p
