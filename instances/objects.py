"""Hand-built instance objects checked as JSON documents: one validation path.

:func:`check` writes the document an instance object stands for (:func:`document`: the
:func:`~fairplace.instances.io.to_dict` layout with the values as they are, no coercion) and puts it
through :func:`~fairplace.instances.io.from_dict`, so a wrong ``Bid(rho=0.0)`` gets the same
:class:`~fairplace.core.errors.InstanceError` (``$.apps[0].bids[0].rho: must be > 0, got 0.0``) as the
same value in a file. ``fairplace.solve`` calls it on every instance object it is given;
``fairplace.simulate`` checks a hand-built cluster with :func:`check_cluster`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fairplace.core.domain import AgentApp, AgentJob, AuctionInstance, Cluster, PlacementInstance
from fairplace.core.errors import InstanceError, OptionError
from fairplace.core.limits import plain

from .io import checked, from_dict


def check(inst: Any) -> None:
    """Validate a hand-built instance object exactly as a JSON document: it is written as the
    document it stands for (:func:`document`) and put through :func:`from_dict`, so the same
    :class:`InstanceError` (the same JSON path, the same message) names what is wrong. An
    object the loader built (``io.checked``: frozen, already checked) is not checked again."""
    if not checked(inst):
        from_dict(document(inst))


def check_cluster(cluster: Any, name: str = "cluster") -> None:
    """Validate a hand-built :class:`Cluster` as the ``gpus`` of an instance document; an
    :class:`~fairplace.core.errors.OptionError` names ``name`` and the GPU field."""
    if not isinstance(cluster, Cluster):
        raise OptionError(name, f"expected a Cluster, got {type(cluster).__name__}")
    try:
        from_dict({"kind": "placement", "gpus": gpus_document(cluster.gpus), "jobs": []})
    except InstanceError as exc:
        raise OptionError(f"{name}{exc.path[1:]}", exc.problem) from None


def _seq(value: Any) -> Any:
    """A tuple or list as a list; anything else as it is (the schema names what it is)."""
    return [plain(v) for v in value] if isinstance(value, (list, tuple)) else plain(value)


def _map(value: Any) -> Any:
    return {k: plain(v) for k, v in value.items()} if isinstance(value, Mapping) else value


def _fields(obj: Any, names: tuple[str, ...], what: str, path: str) -> dict:
    """``{name: obj.name}`` of a domain object, or an InstanceError naming ``path``."""
    try:
        return {n: getattr(obj, n) for n in names}
    except AttributeError:
        raise InstanceError(path, f"expected {what}, got {type(obj).__name__}") from None


def document(inst: Any) -> dict:
    """The JSON document a (possibly hand-built, possibly wrong) instance object stands for: the
    :func:`to_dict` layout with its values as they are (numpy numbers as Python numbers, tuples as
    lists, no coercion), for :func:`check`."""
    if not isinstance(inst, (AuctionInstance, PlacementInstance)):
        raise InstanceError(
            "$", f"expected an AuctionInstance or a PlacementInstance, got {type(inst).__name__}"
        )
    cl = inst.cluster
    if not isinstance(cl, Cluster) or not isinstance(cl.gpus, (list, tuple)):
        raise InstanceError("$.gpus", f"expected a Cluster of GPUs, got {type(cl).__name__}")
    doc: dict[str, Any] = {"kind": inst.kind, "name": inst.name, "meta": _map(inst.meta)}
    doc["gpus"] = gpus_document(cl.gpus)
    if isinstance(inst, AuctionInstance):
        apps = []
        for k, a in enumerate(_seq_of(inst.apps, "$.apps")):
            f = _fields(a, ("id", "bids", "rho_empty"), "an App", f"$.apps[{k}]")
            bids = []
            for b, bid in enumerate(_seq_of(f["bids"], f"$.apps[{k}].bids")):
                g = _fields(bid, ("gpus", "rho"), "a Bid", f"$.apps[{k}].bids[{b}]")
                bids.append({"gpus": _seq(g["gpus"]), "rho": plain(g["rho"])})
            apps.append({"id": f["id"], "rho_empty": plain(f["rho_empty"]), "bids": bids})
        for k, a in enumerate(_seq_of(inst.agents, "$.agents"), start=len(apps)):
            if not isinstance(a, AgentApp):
                raise InstanceError(f"$.apps[{k}]", f"expected an AgentApp, got {type(a).__name__}")
            apps.append(_agent_document(a, k))
        doc["apps"] = apps
        return doc
    doc["locality_penalty"] = plain(inst.locality_penalty)
    doc["locality_by_model"] = _map(inst.locality_by_model)
    jobs = []
    for k, j in enumerate(_seq_of(inst.jobs, "$.jobs")):
        f = _fields(j, ("id", "gpus", "cls", "weight", "model"), "a Job", f"$.jobs[{k}]")
        jobs.append(
            {
                "id": f["id"],
                "gpus": plain(f["gpus"]),
                "class": f["cls"],
                "weight": plain(f["weight"]),
            }
            | ({"model": f["model"]} if f["model"] is not None else {})
        )
    doc["jobs"] = jobs
    return doc


def _seq_of(value: Any, path: str) -> list:
    if not isinstance(value, (list, tuple)):
        raise InstanceError(path, f"expected a tuple, got {type(value).__name__}")
    return list(value)


def gpus_document(gpus: Any) -> list:
    """The ``gpus`` list of a document from GPU objects, values as they are (:func:`document`)."""
    out = []
    for k, g in enumerate(_seq_of(gpus, "$.gpus")):
        f = _fields(g, ("id", "machine", "rack", "pm"), "a GPU", f"$.gpus[{k}]")
        out.append({"id": f["id"], "machine": f["machine"], "rack": f["rack"], "pm": _map(f["pm"])})
    return out


def _agent_document(a: AgentApp, k: int) -> dict:
    d: dict[str, Any] = {"id": a.id, "jobs": []}
    for j in _seq_of(a.jobs, f"$.apps[{k}].jobs"):
        if not isinstance(j, AgentJob):
            d["jobs"].append(j)  # the schema names it
            continue
        d["jobs"].append(
            {
                "iters_left": plain(j.iters_left),
                "t_iter": plain(j.t_iter),
                "locality_sensitivity": plain(j.locality_sensitivity),
                "forecasts": _seq(j.forecasts),
            }
        )
    phases: list[object] = []
    for p in a.phases if isinstance(a.phases, (list, tuple)) else [a.phases]:
        if isinstance(p, (list, tuple)) and len(p) in (2, 3):
            phases.append(
                {"jobs": plain(p[0]), "iters": plain(p[1])}
                | ({"gpus": plain(p[2])} if len(p) > 2 else {})
            )
        else:
            phases.append(p)
    d.update(
        t_start=plain(a.t_start),
        t_now=plain(a.t_now),
        d_max=plain(a.d_max),
        locality=_seq(a.locality),
        stopping=a.stopping,
        phases=phases,
        current_phase=plain(a.current_phase),
        phase_model=a.phase_model,
        future=a.future,
        split=a.split,
        t_id=_map(a.t_id),
        held=_seq(a.held),
        rho_empty=plain(a.rho_empty),
    )
    d["class"] = a.cls
    for attr in ("model", "work_total", "demand_max"):
        if getattr(a, attr) is not None:
            d[attr] = plain(getattr(a, attr))
    return d
