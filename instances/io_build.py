"""Build the domain instance from a document that passed the schema (:mod:`.io`): the semantic
checks the JSON Schema cannot state (duplicate ids, unknown GPU ids, one rack per machine, one
holder per GPU, finite numbers, an agent-form app's work, phases and locality), each raising
:class:`~fairplace.core.errors.InstanceError` with the JSON path of the offending field."""

from __future__ import annotations

import math
from collections.abc import Mapping

from fairplace.core.domain import (
    GPU,
    AgentApp,
    AgentJob,
    App,
    AuctionInstance,
    Bid,
    Cluster,
    Job,
    PlacementInstance,
)
from fairplace.core.errors import InstanceError
from fairplace.core.limits import MIN_WORK
from fairplace.core.shared_params import LOCALITY_PENALTY


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
