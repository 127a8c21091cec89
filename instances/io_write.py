"""Write an instance as its contract JSON document (:func:`to_dict`, the inverse of
:func:`.io.from_dict`; :func:`save`): defaults left out where the contract has them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fairplace.core.domain import AgentApp, AuctionInstance, Cluster, Instance
from fairplace.core.errors import naming


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
