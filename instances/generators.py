"""Deterministic instance generators; every parameter (and the seed) is recorded in ``meta``."""

from __future__ import annotations

import numpy as np

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
    spread,
)
from fairplace.core.errors import OptionError
from fairplace.core.limits import (
    MAX_GENERATED_APPS,
    MAX_GENERATED_BIDS,
    MAX_GPUS,
    MAX_RATIO,
    MAX_SEED,
)
from fairplace.core.params import InstanceOf, Interval, Items, Options, Param, checked
from fairplace.core.shared_params import LOCALITY_PENALTY

#: THEMIS' bootstrap slowdown constants (machine / rack / cluster) and a placement-sensitive profile.
LOCALITY_INSENSITIVE = (1.0, 1.1, 1.3)
LOCALITY_SENSITIVE = (1.0, 1.5, 2.0)


#: the sizes of a generated instance (``core/limits.py``) and its seed
_COUNT = Interval(1, MAX_GENERATED_APPS, integer=True)
_GPUS = Interval(1, MAX_GPUS, integer=True)
_SEED = Interval(0, MAX_SEED, integer=True)


def _sizes(count: str, default_count: int, default_machines: int) -> tuple[Param, ...]:
    """The specs of a generator's size arguments (``apps`` or ``jobs``, ``machines``,
    ``gpus_per_machine``) and seed, with its defaults; ``fairplace instances generate`` maps the
    errors to ``--apps`` / ``--jobs``, ``--machines``, ``--gpus-per-machine``, ``--seed``."""
    return (
        Param(count, default_count, _COUNT, f"{count} of the instance"),
        Param("machines", default_machines, _GPUS, "machines"),
        Param("gpus_per_machine", 4, _GPUS, "GPUs per machine"),
        Param("seed", 0, _SEED, "random seed"),
    )


def _racks(default: int) -> Param:
    return Param("machines_per_rack", default, _GPUS, "machines of a rack")


_RHO_EMPTY = Param(
    "rho_empty",
    "finite",
    Options(("finite", "null")),
    "rho of an app granted nothing: finite (one more lease) or null (unbounded)",
)

#: :func:`random_auction`'s arguments (the sizes, seed and bids per app set from the CLI)
AUCTION_PARAMS: tuple[Param, ...] = (
    *_sizes("apps", 8, 8),
    Param("bids_per_app", 20, Interval(1, MAX_GENERATED_BIDS, integer=True), "bids of each app"),
    _racks(4),
    Param("sensitive_fraction", 0.5, Interval(0.0, 1.0), "share of locality-sensitive apps"),
    _RHO_EMPTY,
    Param(
        "contention",
        None,
        Interval(0.0, MAX_RATIO, closed="right"),
        "the apps' demands / the cluster (None: d_max drawn from 1..16)",
        nullable=True,
    ),
)
#: :func:`random_placement`'s arguments (the sizes and seed set from the CLI)
PLACEMENT_PARAMS: tuple[Param, ...] = (
    *_sizes("jobs", 8, 8),
    Param("classes", ("A", "B", "C"), Items(InstanceOf((str,), "a class name")), "job classes"),
    LOCALITY_PENALTY,
    Param("levels", 4, _GPUS, "PM-score levels per class (None: unrounded)", nullable=True),
    Param("max_demand", None, _GPUS, "largest job (None: 2 x gpus_per_machine)", nullable=True),
)
#: :func:`random_agent_auction`'s arguments (the sizes and seed set from the CLI)
AGENT_AUCTION_PARAMS: tuple[Param, ...] = (
    *_sizes("apps", 64, 256),
    _racks(16),
    Param(
        "levels",
        (1.0, 1.25),
        Items(Interval(0.0, MAX_RATIO, closed="right"), min_items=2),
        "PM-score levels of class A (the first on 80% of the GPUs)",
    ),
    Param("demands", (4, 8, 16, 32, 64), Items(_GPUS), "the demand caps d_max drawn from"),
    _RHO_EMPTY,
)


def _check_gpus(machines: int, gpus_per_machine: int) -> None:
    """machines x gpus_per_machine GPUs at most :data:`MAX_GPUS` (each is checked by its spec)."""
    if machines * gpus_per_machine > MAX_GPUS:
        raise OptionError(
            "machines",
            f"{machines} machines x {gpus_per_machine} GPUs = {machines * gpus_per_machine:,} "
            f"GPUs exceed the limit of {MAX_GPUS:,}",
        )


def grid_cluster(
    machines: int,
    gpus_per_machine: int,
    machines_per_rack: int | None = None,
    pm: dict[str, np.ndarray] | None = None,
) -> Cluster:
    """``machines`` x ``gpus_per_machine`` GPUs named ``m{k}/{g}``, racks of ``machines_per_rack``."""
    mpr = machines_per_rack or machines
    gpus = []
    for m in range(machines):
        for g in range(gpus_per_machine):
            k = m * gpus_per_machine + g
            scores = {c: float(v[k]) for c, v in (pm or {}).items()}
            gpus.append(GPU(id=f"m{m}/{g}", machine=f"m{m}", rack=f"r{m // mpr}", pm=scores))
    return Cluster(tuple(gpus))


@checked(AUCTION_PARAMS)
def random_auction(
    apps: int = 8,
    machines: int = 8,
    gpus_per_machine: int = 4,
    bids_per_app: int = 20,
    machines_per_rack: int = 4,
    sensitive_fraction: float = 0.5,
    seed: int = 0,
    rho_empty: str = "finite",
    contention: float | None = None,
) -> AuctionInstance:
    """THEMIS-like bid tables: each app is a job with demand cap d_max, work W and elapsed time; a bid is
    a bundle and rho = (elapsed + W * S(G) / min(|G|, d_max)) / T_id (Eq. 1), S from the app's locality
    constants. ``rho_empty='finite'`` uses rho with no GPUs for one more lease (W/1 GPU as a cap);
    ``'null'`` leaves it unbounded. ``contention`` (e.g. 2.0) draws every app's d_max around
    contention * G / apps and bundles of at least d_max/2 GPUs, so the apps' demands add up to about
    contention x the cluster: the hard regime (weak LP relaxations). Sizes are bounded
    (``core/limits.py``: apps x bids_per_app <= MAX_GENERATED_BIDS)."""
    _check_gpus(machines, gpus_per_machine)
    if apps * bids_per_app > MAX_GENERATED_BIDS:
        raise OptionError(
            "apps",
            f"{apps} apps x {bids_per_app} bids = {apps * bids_per_app:,} bids exceed the limit "
            f"of {MAX_GENERATED_BIDS:,}",
        )
    rng = np.random.default_rng(seed)
    cl = grid_cluster(machines, gpus_per_machine, machines_per_rack)
    G = len(cl)
    mi, ri = cl.machine_index, cl.rack_index
    out = []
    for a in range(apps):
        if contention is None:
            d_max, lo = int(rng.choice([1, 2, 4, 8, 16])), 1
        else:
            d_max = max(1, int(round(contention * G / apps * rng.uniform(0.5, 1.5))))
            lo = max(1, d_max // 2)
        d_max = min(d_max, G)
        lo = min(lo, d_max)
        loc = LOCALITY_SENSITIVE if rng.random() < sensitive_fraction else LOCALITY_INSENSITIVE
        work = float(rng.uniform(1, 10)) * 3600 * d_max
        elapsed = float(rng.uniform(0, 5)) * 3600
        t_id = work / min(G, d_max) * apps
        seen: set[frozenset[int]] = set()
        bids: list[Bid] = []
        tries = 0
        while len(bids) < bids_per_app and tries < 20 * bids_per_app:
            tries += 1
            size = int(rng.integers(lo, d_max + 1))
            if rng.random() < 0.5:  # packed: fill machines in a random order
                order = rng.permutation(machines)
                picks = np.concatenate([np.flatnonzero(mi == m) for m in order])[:size]
            else:
                picks = rng.choice(G, size=size, replace=False)
            key = frozenset(int(p) for p in picks)
            if key in seen:
                continue
            seen.add(key)
            idx = np.array(sorted(key))
            S = loc[spread(mi, ri, idx)]
            rho = (elapsed + work * S / min(len(idx), d_max)) / t_id
            bids.append(Bid(gpus=tuple(cl.gpus[k].id for k in idx), rho=float(rho)))
        empty = None if rho_empty == "null" else float((elapsed + 600 + work) / t_id)
        out.append(App(id=f"A{a}", bids=tuple(bids), rho_empty=empty))
    meta = {
        "generator": "random_auction",
        "apps": apps,
        "machines": machines,
        "gpus_per_machine": gpus_per_machine,
        "bids_per_app": bids_per_app,
        "machines_per_rack": machines_per_rack,
        "sensitive_fraction": sensitive_fraction,
        "seed": seed,
        "rho_empty": rho_empty,
        "contention": contention,
    }
    return AuctionInstance(
        cluster=cl, apps=tuple(out), name=f"auction-{apps}x{G}-s{seed}", meta=meta
    )


@checked(PLACEMENT_PARAMS)
def random_placement(
    jobs: int = 8,
    machines: int = 8,
    gpus_per_machine: int = 4,
    classes=("A", "B", "C"),
    locality_penalty: float = LOCALITY_PENALTY.default,
    levels: int | None = 4,
    seed: int = 0,
    max_demand: int | None = None,
) -> PlacementInstance:
    """Random PM-scores (a tight body near 1 and a slow tail) and jobs of demand 1..max_demand.
    ``levels`` rounds scores to that many distinct values per class (like binned scores)."""
    _check_gpus(machines, gpus_per_machine)
    rng = np.random.default_rng(seed)
    G = machines * gpus_per_machine
    pm = {}
    for k, c in enumerate(classes):
        spread_ = 0.15 / (k + 1)
        v = 1 + np.abs(rng.normal(0, spread_, G)) * rng.choice([-0.3, 1], G)
        v[rng.random(G) < 0.05] *= 2.0
        if levels:
            qs = np.quantile(v, np.linspace(0, 1, levels))
            v = qs[np.abs(v[:, None] - qs[None, :]).argmin(1)]
        pm[c] = v
    cl = grid_cluster(machines, gpus_per_machine, pm=pm)
    md = max_demand or 2 * gpus_per_machine
    js = tuple(
        Job(id=f"j{j}", gpus=int(rng.integers(1, md + 1)), cls=str(rng.choice(classes)))
        for j in range(jobs)
    )
    meta = {
        "generator": "random_placement",
        "jobs": jobs,
        "machines": machines,
        "gpus_per_machine": gpus_per_machine,
        "classes": list(classes),
        "locality_penalty": locality_penalty,
        "levels": levels,
        "seed": seed,
        "max_demand": md,
    }
    return PlacementInstance(
        cluster=cl,
        jobs=js,
        locality_penalty=locality_penalty,
        name=f"placement-{jobs}x{G}-s{seed}",
        meta=meta,
    )


@checked(AGENT_AUCTION_PARAMS)
def random_agent_auction(
    apps: int = 64,
    machines: int = 256,
    gpus_per_machine: int = 4,
    machines_per_rack: int = 16,
    levels: tuple[float, ...] = (1.0, 1.25),
    demands: tuple[int, ...] = (4, 8, 16, 32, 64),
    seed: int = 0,
    rho_empty: str = "finite",
) -> AuctionInstance:
    """Agent-form auction: single-job apps (Eq. 1) with random demand caps, work, elapsed time,
    locality sensitivity (0, 1 or 3 x the bootstrap constants) and a PM class with two levels."""
    _check_gpus(machines, gpus_per_machine)
    rng = np.random.default_rng(seed)
    G = machines * gpus_per_machine
    pm = {"A": rng.choice(levels, G, p=[0.8] + [0.2 / (len(levels) - 1)] * (len(levels) - 1))}
    cl = grid_cluster(machines, gpus_per_machine, machines_per_rack, pm=pm)
    out = []
    for a in range(apps):
        d = int(rng.choice(demands))
        t_iter = float(rng.uniform(0.1, 1.0))
        iters = float(rng.integers(1_000, 100_000))
        done = float(rng.uniform(0, 0.5)) * iters
        elapsed = done * t_iter / max(1, d // 2)
        out.append(
            AgentApp(
                id=f"A{a}",
                jobs=(AgentJob(iters - done, t_iter, float(rng.choice([0.0, 1.0, 3.0]))),),
                t_start=0.0,
                t_now=elapsed,
                d_max=d,
                cls="A" if rng.random() < 0.7 else None,
                work_total=iters * t_iter,
                t_id={"variant": "themis", "n_avg": float(apps) / 4},
                rho_empty=None if rho_empty == "null" else 1e3,
            )
        )
    meta = {"generator": "random_agent_auction", "apps": apps, "machines": machines, "seed": seed}
    return AuctionInstance(cl, (), name=f"agents-{apps}x{G}-s{seed}", meta=meta, agents=tuple(out))
