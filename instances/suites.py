"""Instance suites: named collections of auction and placement instances.

* ``small`` — brute-forceable instances stored as JSON in ``instances/suites/small/`` with their stored
  optimum in ``meta.optimum`` (computed by the brute-force oracles of ``fairplace.solvers.brute_force``
  AND the exact HiGHS solver; ``fairplace.runs.small_suite.make_small`` rebuilds them and refuses to
  store an instance on which the two disagree).
* ``medium``, ``large`` — built on demand by the deterministic generators of
  :mod:`fairplace.instances.generators` (every parameter, the seed included, lands in ``meta``).
* ``paper`` — the worked examples of the two papers (:data:`PAPER_INSTANCES`).

The suites are :data:`SUITES` and the paper examples :data:`PAPER_INSTANCES`, both
:class:`~fairplace.core.registry.Registry` objects (the type of every set of names).

An item is ``(name, payload)`` where the payload is the path of a stored JSON file or a contract dict
(:func:`fairplace.instances.io.to_dict`), so a batch worker can solve it without the registry.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from fairplace.core.domain import AuctionInstance, Instance
from fairplace.core.registry import Entry, Registry
from fairplace.formulations.agents import to_explicit

from . import generators, io, paper, suite_paper

SUITE_DIR = Path(__file__).with_name("suites")


#: generator parameters of the small suite: (kind, kwargs); seeds are the running index.
SMALL_SPECS: tuple[tuple[str, dict[str, Any]], ...] = (
    *(("auction", dict(apps=3, machines=2, gpus_per_machine=2, bids_per_app=4)),) * 4,
    *(("auction", dict(apps=4, machines=2, gpus_per_machine=3, bids_per_app=4)),) * 4,
    *(("auction", dict(apps=4, machines=2, gpus_per_machine=2, bids_per_app=3, rho_empty="null")),)
    * 4,
    *(("placement", dict(jobs=3, machines=2, gpus_per_machine=2, max_demand=2)),) * 4,
    *(("placement", dict(jobs=3, machines=3, gpus_per_machine=2, max_demand=3)),) * 4,
    *(("placement", dict(jobs=4, machines=2, gpus_per_machine=3, max_demand=3, levels=3)),) * 4,
)


# --- builders -------------------------------------------------------------------------------------
def _small() -> list[tuple[str, Path]]:
    return [(p.stem, p) for p in sorted((SUITE_DIR / "small").glob("*.json"))]


def agent_auction(**kw) -> Instance:
    """An agent-form auction (THEMIS AGENTs: single-job apps priced by Eq. 1, from
    ``fairplace.benchmarks.auction.random_agent_auction``) turned into explicit subset bid tables by
    the AGENT (``formulations.agents.to_explicit``), so every solver and the JSON contract apply."""
    inst = to_explicit(generators.random_agent_auction(**kw))
    assert inst is not None  # None only when a stop callback says stop
    return replace(inst, meta={**inst.meta, **kw, "form": "agent -> explicit subset bids"})


def _generated(auctions, placements, agents=()) -> list[tuple[str, dict]]:
    items: list[tuple[str, Instance]] = []
    for kw in agents:
        G = kw["machines"] * kw["gpus_per_machine"]
        items.append((f"agents-{kw['apps']}a-{G}g-s{kw['seed']}", agent_auction(**kw)))
    for kw in auctions:
        name = f"auction-{kw['apps']}a-{kw['bids_per_app']}b-s{kw['seed']}"
        items.append((name, generators.random_auction(**kw)))
    for kw in placements:
        items.append((f"placement-{kw['jobs']}j-s{kw['seed']}", generators.random_placement(**kw)))
    out = []
    for name, inst in items:
        doc = io.to_dict(inst)
        doc["name"] = name
        out.append((name, doc))
    return out


def _medium() -> list[tuple[str, dict]]:
    auctions = [
        dict(apps=a, machines=8, gpus_per_machine=4, bids_per_app=10, seed=s)
        for a in (4, 8, 12)
        for s in range(4)
    ]
    placements = [
        dict(jobs=j, machines=8, gpus_per_machine=4, seed=s) for j in (8, 16) for s in range(4)
    ]
    agents = [
        dict(apps=a, machines=4, gpus_per_machine=2, machines_per_rack=2, demands=(1, 2, 4), seed=s)
        for a in (4, 6)
        for s in range(2)
    ]
    return _generated(auctions, placements, agents)


def _large() -> list[tuple[str, dict]]:
    auctions = [
        dict(apps=16, machines=16, gpus_per_machine=4, bids_per_app=20, seed=s) for s in range(4)
    ]
    placements = [dict(jobs=64, machines=64, gpus_per_machine=4, seed=s) for s in range(4)]
    agents = [
        dict(apps=6, machines=3, gpus_per_machine=4, machines_per_rack=2, demands=(1, 2, 4), seed=s)
        for s in range(2)
    ]
    return _generated(auctions, placements, agents)


#: the worked examples of the papers: name -> builder() -> Instance (THEMIS Fig. 5:
#: ``instances/paper.py``; THEMIS §4.3.3, PAL L x V, Frontera: ``instances/suite_paper.py``)
PAPER_INSTANCES = Registry(
    "paper instance",
    {
        "themis-fig5-instance1": Entry(paper.fig5_instance1, (), "THEMIS Fig. 5, Instance 1"),
        "themis-fig5-instance2": Entry(paper.fig5_instance2, (), "THEMIS Fig. 5, Instance 2"),
        "themis-4.3.3": Entry(suite_paper.themis_4_3_3, (), "THEMIS §4.3.3 hyper-parameter app"),
        "pal-lxv-example": Entry(suite_paper.pal_lxv_example, (), "PAL §III's L x V matrix"),
        "pal-frontera-32gpu": Entry(
            suite_paper.pal_frontera_32gpu, (), "Frontera 32 GPUs, fixed job mix"
        ),
    },
    where="instance",
)


def paper_items() -> list[tuple[str, dict]]:
    """(name, contract dict) of every :data:`PAPER_INSTANCES` example."""
    out = []
    for name in PAPER_INSTANCES:
        doc = io.to_dict(PAPER_INSTANCES.make(name))
        doc["name"] = name
        out.append((name, doc))
    return out


#: suite name -> builder() -> [(instance name, stored JSON path or contract dict)], doc its one-line
#: description, in the order ``fairplace instances`` lists them
SUITES = Registry(
    "suite",
    {
        "paper": Entry(paper_items, (), "worked examples of THEMIS and PAL"),
        "small": Entry(_small, (), "brute-forceable auctions and placements with stored optima"),
        "medium": Entry(
            _medium,
            (),
            "generated auctions (4-12 apps x 32 GPUs), agent-form auctions (4-6 apps x 8 GPUs) "
            "and placements (8-16 jobs x 32 GPUs)",
        ),
        "large": Entry(
            _large,
            (),
            "generated auctions (16 apps x 64 GPUs x 20 bids), agent-form auctions (6 apps x 12 "
            "GPUs) and placements (64 jobs x 256 GPUs)",
        ),
    },
)


def suite_names() -> tuple[str, ...]:
    return SUITES.names()


def describe(name: str) -> str:
    return SUITES.get(name).doc


def suite_items(name: str) -> list[tuple[str, Path | dict]]:
    """(instance name, stored JSON path or contract dict) for every instance of a registered suite
    (:class:`~fairplace.core.errors.UnknownName` naming the suites for any other name)."""
    return SUITES.make(name)


def load_item(payload: Path | str | dict) -> Instance:
    return io.from_dict(payload) if isinstance(payload, dict) else io.load(payload)


def load_suite(name: str) -> dict[str, Instance]:
    """{instance name: instance} of a registered suite."""
    return {n: load_item(p) for n, p in suite_items(name)}


def stored_optimum(inst: Instance) -> float | None:
    """The objective stored in ``meta.optimum`` (small suite), else None."""
    opt = (inst.meta or {}).get("optimum")
    if isinstance(opt, dict) and opt.get("objective") is not None:
        return float(opt["objective"])
    return None


def generate(name: str, out: str | Path) -> list[Path]:
    """Write every instance of suite ``name`` as ``out/<instance>.json``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for inst_name, payload in suite_items(name):
        doc = payload if isinstance(payload, dict) else json.loads(Path(payload).read_text())
        p = out / f"{inst_name}.json"
        p.write_text(json.dumps(doc, indent=1) + "\n")
        paths.append(p)
    return paths


def summary(inst: Instance) -> dict:
    """Features of an instance (the batch table's columns): size, contention, bids, seed."""
    cl = inst.cluster
    G = len(cl)
    meta = dict(inst.meta or {})
    row: dict[str, Any] = {
        "kind": inst.kind,
        "gpus": G,
        "machines": len(cl.machines),
        "racks": len(cl.racks),
        "generator": meta.get("generator"),
        "seed": meta.get("seed"),
    }
    if isinstance(inst, AuctionInstance):
        demand = sum(max((len(b.gpus) for b in a.bids), default=0) for a in inst.apps)
        row |= {
            "apps": len(inst.apps),
            "bids_per_app": float(np.mean([len(a.bids) for a in inst.apps])) if inst.apps else 0.0,
            "contention": demand / G if G else float("nan"),
        }
    else:
        row |= {
            "jobs": len(inst.jobs),
            "contention": sum(j.gpus for j in inst.jobs) / G if G else float("nan"),
            "locality_penalty": inst.locality_penalty,
        }
    return row
