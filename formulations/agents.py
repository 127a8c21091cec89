"""THEMIS AGENT: turn an offer (a set of free GPUs) into bids.

An app's rho depends on a bundle G only through (|G|, spread(G), worst PM level max V over G) —
``fairplace.formulations.ftf``. So the AGENT computes one *rho table* ``rho[n, s, v]`` per offer
(n offered GPUs on top of the ``held`` ones, spread s and worst level v of the union), and from it:

* ``subset_bids`` — exact enumeration of every subset of the offer (small offers; the paper's AGENT);
* ``count_bundles`` — symmetry-reduced bundles: GPUs on one machine with the same PM level are
  interchangeable, so a bundle is a count per (machine, level) group, not a list of subsets;
* the table itself, which the compact arbiter (``formulations/compact.py``) consumes directly:
  its size is n_max x 3 x levels, never exponential in the offer.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np

from fairplace.core.domain import AgentApp, App, AuctionInstance, Bid, Cluster, spread
from fairplace.core.errors import OptionError

from .ftf import FTFModel, IdealTime, locality_triple
from .ftf_counts import rho_grid
from .hyperopt import HyperOptimizer, PerfCurve, SuccessiveHalving
from .variants import STOPPING

#: Largest number of subsets ``subset_bids`` enumerates per app before refusing.
MAX_SUBSETS = 1 << 14


def machine_gpus(cluster: Cluster | None) -> int | None:
    """GPUs of the smallest machine: a job of at most this many GPUs fits in any machine."""
    if cluster is None or len(cluster) == 0:
        return None
    return cluster.smallest_machine


def optimizer_of(
    app: AgentApp, future_memo: dict | None = None, model_job: tuple[float, float] | None = None
) -> SuccessiveHalving | PerfCurve:
    """The hyper-parameter optimiser's view of ``app`` (Figure 7): its jobs (``JobInfo``'s fields)
    under its stopping rule (``future_memo`` / ``model_job``: :attr:`SuccessiveHalving.future_memo`
    and :func:`~fairplace.formulations.hyperopt.model_job` of its jobs, kept by a caller that prices the
    same app again and again)."""
    jobs = tuple(app.jobs)  # an AgentJob reads as a JobInfo (the same numbers): no copy per job
    if app.stopping == "successive-halving":
        return SuccessiveHalving(
            jobs, tuple(app.phases), app.current_phase, app.phase_model, app.future, future_memo,
            model_job,
        )  # fmt: skip
    if app.stopping in ("perf-curve", "none"):
        return PerfCurve(jobs, tuple(tuple(j.forecasts) for j in app.jobs))
    raise OptionError("stopping", f"expected one of {STOPPING}, got {app.stopping!r}")


def ftf_model(
    app: AgentApp,
    cluster: Cluster | None = None,
    optimizer: HyperOptimizer | None = None,
) -> FTFModel:
    """The finish-time fairness model of an agent-form app (``cluster``: for per-job spreads;
    ``optimizer``: :func:`optimizer_of` ``app`` when the caller already has it — its jobs and
    phases, the parts that do not move with time)."""
    opt = optimizer_of(app) if optimizer is None else optimizer
    t_id: dict[str, Any] = dict(app.t_id)  # IdealTime's fields; IdealTime checks them
    return FTFModel(
        optimizer=opt,
        d_max=int(app.d_max),
        elapsed=float(app.t_now - app.t_start),
        locality=locality_triple(app.locality),
        t_id=IdealTime(**t_id),
        work_total=app.work_total,
        demand_max=app.demand_max,
        split=app.split,
        machine_gpus=machine_gpus(cluster),
    )


def levels_of(cluster: Cluster, idx: np.ndarray, cls: str | None) -> np.ndarray:
    """Sorted distinct PM levels V_cls over GPU indices (1.0 when the class has no scores)."""
    if len(idx):
        every = cluster.pm_levels(cls)
        if every.size == 1:  # one value on the whole cluster: the bundle's only level
            return every
    v = cluster.pm_vector(cls)[np.asarray(idx, dtype=np.int64)]
    return np.unique(np.round(v, 12)) if v.size else np.ones(1)


@dataclass(frozen=True)
class RhoTable:
    """rho[n, s, v] for n offered GPUs (0..n_max) on top of ``held``, union spread s, worst level v.

    ``rho[0]`` is rho with the held GPUs only (``rho_empty`` when given, inf when nothing is held and
    no ``rho_empty``). Entries for impossible (n, s, v) combinations are still defined (the formula)."""

    app_id: str
    levels: np.ndarray  # sorted V levels of the app's class
    rho: np.ndarray  # shape (n_max + 1, 3, len(levels))
    held_count: int = 0
    held_spread: int = 0
    held_level: int = -1  # index into levels of max V over the held GPUs (-1: none held)

    @property
    def n_max(self) -> int:
        return self.rho.shape[0] - 1

    @property
    def rho_empty(self) -> float | None:
        r = float(self.rho[0, self.held_spread, max(self.held_level, 0)])
        return None if math.isinf(r) else r

    @staticmethod
    def _key(v: float) -> float:
        return round(float(v), 12) - 1e-12

    def level(self, v: float) -> int:
        """Index of the first level >= v (rounded to 12 digits): np.searchsorted's left side."""
        return bisect.bisect_left(self._level_list, self._key(v))

    def levels_at(self, vs) -> np.ndarray:
        """:meth:`level` of every value of ``vs`` (np.searchsorted's left side, by bisection: the
        groups of one offer are few)."""
        lst, key = self._level_list, self._key
        return np.array([bisect.bisect_left(lst, key(v)) for v in vs], dtype=np.intp)

    @cached_property
    def _level_list(self) -> list[float]:
        return self.levels.tolist()

    def lookup(self, n: int, s: int, v: float) -> float:
        return float(self.rho[n, s, self.level(v)])


def rho_table(
    app: AgentApp,
    cluster: Cluster,
    offer: Sequence[int] | np.ndarray,
    r_c: int | None = None,
    room: int | None = None,
    model: FTFModel | None = None,
) -> RhoTable:
    """The AGENT's valuation of every (count, spread, worst level) an offer can produce; at most
    ``room`` more GPUs when given (what the app can run now: the simulator's THEMIS bids for no GPU
    its running jobs cannot use, although its model values GPUs for later phases). ``model``:
    ``ftf_model(app, cluster)`` when the caller has built it."""
    model = ftf_model(app, cluster) if model is None else model
    held = cluster.indices(app.held) if app.held else np.zeros(0, np.int64)
    r_c = r_c or len(cluster)

    def rows(lo: int, n: int, levels: np.ndarray) -> np.ndarray:
        return rho_grid(model, range(lo, lo + n), r_c, levels)

    return offer_table(app.id, app.cls, held, cluster, offer, model.app_demand_max, room, rows,
                       app.rho_empty)  # fmt: skip


def offer_table(
    app_id: str,
    cls: str | None,
    held: np.ndarray,
    cluster: Cluster,
    offer: Sequence[int] | np.ndarray,
    demand_max: int,
    room: int | None,
    rows: Callable[[int, int, np.ndarray], np.ndarray],
    rho_empty: float | None = None,
) -> RhoTable:
    """:func:`rho_table` of an app holding the GPU indices ``held``, its demand cap
    ``demand_max``, whose rho over counts lo..lo + n - 1 at every spread and level of ``levels``
    is ``rows(lo, n, levels)`` (an (n, 3, levels) array: ``ftf_counts.rho_grid`` of its model, or
    ``running_app.RunningApp.table``)."""
    offered = np.asarray(offer, dtype=np.int64)
    levels = levels_of(cluster, np.concatenate([offered, held]), cls)
    n_max = int(min(offered.size, max(demand_max - held.size, 0)))
    if room is not None:
        n_max = min(n_max, max(int(room), 0))
    rho = rows(int(held.size), n_max + 1, levels)
    h_level, h_spread = -1, 0
    if held.size:
        if cluster.pm_levels(cls).size == 1:  # one value on the cluster: the first level
            h_level = 0
        else:
            v = np.round(cluster.pm_vector(cls)[held].max(), 12)
            h_level = int(np.searchsorted(levels, v))
        h_spread = spread(cluster.machine_index, cluster.rack_index, held)
    elif rho_empty is not None:
        rho[0] = rho_empty
    return RhoTable(app_id, levels, rho, int(held.size), h_spread, h_level)


def table_rho(
    table: RhoTable, app: AgentApp, cluster: Cluster, idx: Sequence[int] | np.ndarray
) -> float:
    """rho of a concrete offered bundle (union with the held GPUs) read from the table."""
    bundle = np.asarray(idx, dtype=np.int64)
    held = cluster.indices(app.held) if app.held else np.zeros(0, np.int64)
    union = np.concatenate([bundle, held])
    s = spread(cluster.machine_index, cluster.rack_index, union)
    v = cluster.pm_vector(app.cls)[union].max() if union.size else 1.0
    return table.lookup(min(int(bundle.size), table.n_max), s, v)


def n_subsets(n: int, k_max: int) -> int:
    return sum(math.comb(n, k) for k in range(1, min(n, k_max) + 1))


def subset_bids(
    app: AgentApp,
    cluster: Cluster,
    offer: Sequence[int] | np.ndarray,
    r_c: int | None = None,
    max_subsets: int = MAX_SUBSETS,
) -> tuple[tuple[Bid, ...], RhoTable]:
    """Exact enumeration: one bid per non-empty subset of the offer of size <= n_max that beats
    receiving nothing (more GPUs than the app can use are never better than fewer); rho of each
    subset read from the table as :func:`table_rho` does, vectorised per subset size."""
    table = rho_table(app, cluster, offer, r_c)
    offer = [int(g) for g in offer]
    count = n_subsets(len(offer), table.n_max)
    if count > max_subsets:
        raise OptionError(
            "offer",
            f"app {app.id!r}: {count} subsets exceed max_subsets={max_subsets}; "
            "use count_bundles or the compact arbiter",
        )
    empty = table.rho_empty
    pm = cluster.pm_vector(app.cls)
    held = cluster.indices(app.held) if app.held else np.zeros(0, np.int64)
    mi, ri = cluster.machine_index, cluster.rack_index
    ids = [g.id for g in cluster.gpus]
    bids = []
    for k in range(1, table.n_max + 1):
        combos = np.array(list(itertools.combinations(offer, k)), dtype=np.int64).reshape(-1, k)
        union = np.concatenate([combos, np.broadcast_to(held, (len(combos), held.size))], axis=1)
        m, r = mi[union], ri[union]
        s = np.where((m == m[:, :1]).all(axis=1), 0, np.where((r == r[:, :1]).all(axis=1), 1, 2))
        v = pm[union].max(axis=1)
        uv, inv = np.unique(v, return_inverse=True)
        level = np.array([table.level(x) for x in uv], dtype=np.int64)[inv.ravel()]
        rho = table.rho[min(k, table.n_max), s, level]
        ok = np.ones(len(combos), dtype=bool) if empty is None else rho < empty
        for sub, rv in zip(combos[ok].tolist(), rho[ok].tolist(), strict=True):
            bids.append(Bid(tuple(ids[g] for g in sub), rv))
    return tuple(bids), table


@dataclass(frozen=True)
class Group:
    """Interchangeable offered GPUs: one machine, one PM level (per class in play)."""

    machine: int
    rack: int
    scores: tuple[float, ...]
    gpus: tuple[int, ...]


def one_type(cluster: Cluster, classes: Sequence[str | None]) -> tuple[float, ...] | None:
    """The PM scores (one per class in ``classes``, rounded to 12 digits) of every GPU of
    ``cluster`` when each class has one score on the whole cluster (a :class:`Group`'s
    ``scores``), else None."""
    levels = [cluster.pm_levels(c) for c in classes]
    if any(lv.size != 1 for lv in levels):
        return None
    return tuple(lv.item() for lv in levels) if levels else (1.0,)


def gpus_by_machine(
    cluster: Cluster, offer: Sequence[int] | np.ndarray
) -> tuple[dict[int, tuple[int, ...]], dict[int, int]]:
    """The offer's GPUs by machine, straight from the cluster's arrays: (m -> {g in offer :
    m(g) = m} ascending, m -> k(m)), machines ascending."""
    idx = np.asarray(offer, dtype=np.int64)
    on: dict[int, list[int]] = {}
    rack: dict[int, int] = {}
    ms, rs = cluster.machine_index[idx].tolist(), cluster.rack_index[idx].tolist()
    for g, m, r in zip(idx.tolist(), ms, rs, strict=True):
        got = on.get(m)
        if got is None:
            on[m], rack[m] = [g], r
        else:
            got.append(g)
    machines = sorted(on)
    return {m: tuple(sorted(on[m])) for m in machines}, {m: rack[m] for m in machines}


def groups(
    cluster: Cluster, offer: Sequence[int] | np.ndarray, classes: Sequence[str | None]
) -> tuple[Group, ...]:
    """Partition of the offer into (machine, PM levels of every class in ``classes``) groups."""
    one = one_type(cluster, classes)
    if one is not None:  # one score per class on the whole cluster: a group per machine
        on, rack = gpus_by_machine(cluster, offer)
        return tuple(Group(m, rack[m], one, gs) for m, gs in on.items())
    idx = np.asarray(offer, dtype=np.int64)
    V = np.stack([cluster.pm_vector(c) for c in classes]) if classes else np.ones((1, len(cluster)))
    scores = np.round(V[:, idx], 12).T.tolist()  # one rounding for the whole offer
    buckets: dict[tuple, list[int]] = {}
    for g, m, sc in zip(idx.tolist(), cluster.machine_index[idx].tolist(), scores, strict=True):
        buckets.setdefault((m, tuple(sc)), []).append(g)
    return tuple(
        Group(m, int(cluster.rack_index[gs[0]]), sc, tuple(sorted(gs)))
        for (m, sc), gs in sorted(buckets.items())
    )


@dataclass(frozen=True)
class CountBundle:
    """A symmetry-reduced bid: ``counts[q]`` GPUs from group q (any of them), and its rho."""

    counts: tuple[int, ...]
    rho: float

    def gpus(self, grps: Sequence[Group], cluster: Cluster) -> tuple[str, ...]:
        """One concrete representative (the first GPUs of each group)."""
        return tuple(
            cluster.gpus[g].id for q, k in enumerate(self.counts) for g in grps[q].gpus[:k]
        )


def count_bundles(
    app: AgentApp,
    cluster: Cluster,
    offer: Sequence[int] | np.ndarray,
    r_c: int | None = None,
    limit: int = 1 << 18,
) -> tuple[tuple[CountBundle, ...], tuple[Group, ...], RhoTable]:
    """Every count vector over the app's (machine, level) groups with 1..n_max GPUs that beats
    receiving nothing: prod_q (|q| + 1) vectors at most instead of 2^|offer| subsets."""
    table = rho_table(app, cluster, offer, r_c)
    grps = groups(cluster, offer, [app.cls])
    caps = [min(len(g.gpus), table.n_max) for g in grps]
    if math.prod(c + 1 for c in caps) > limit:
        raise OptionError("offer", f"app {app.id!r}: more than {limit} count vectors")
    held = cluster.indices(app.held) if app.held else np.zeros(0, np.int64)
    empty = table.rho_empty
    out = []
    for counts in itertools.product(*(range(c + 1) for c in caps)):
        n = sum(counts)
        if not 1 <= n <= table.n_max:
            continue
        used = [q for q, k in enumerate(counts) if k]
        machines = {grps[q].machine for q in used} | set(cluster.machine_index[held].tolist())
        racks = {grps[q].rack for q in used} | set(cluster.rack_index[held].tolist())
        s = 0 if len(machines) <= 1 else (1 if len(racks) == 1 else 2)
        v = max([grps[q].scores[0] for q in used] + cluster.pm_vector(app.cls)[held].tolist())
        r = table.lookup(n, s, v)
        if empty is None or r < empty:
            out.append(CountBundle(tuple(counts), r))
    return tuple(out), grps, table


def free_gpus(inst: AuctionInstance) -> np.ndarray:
    """GPU indices not held by any agent-form app."""
    held = {g for a in inst.agents for g in a.held}
    return np.array([k for k, g in enumerate(inst.cluster.gpus) if g.id not in held], np.int64)


def to_explicit(
    inst: AuctionInstance,
    max_subsets: int = MAX_SUBSETS,
    stop: Callable[[], bool] | None = None,
) -> AuctionInstance | None:
    """The same auction with every agent-form app replaced by its exact subset bid table over the
    free GPUs (``OptionError`` when an offer is too large to enumerate). ``stop`` (asked before
    each app, e.g. "is the time budget spent?"): None when it says stop."""
    if not inst.agents:
        return inst
    offer = free_gpus(inst)
    apps = list(inst.apps)
    for a in inst.agents:
        if stop is not None and stop():
            return None
        bids, table = subset_bids(a, inst.cluster, offer, max_subsets=max_subsets)
        apps.append(App(a.id, bids, table.rho_empty))
    return replace(inst, apps=tuple(apps), agents=())


def subset_counts(inst: AuctionInstance) -> list[tuple[str, int]]:
    """(app id, number of subsets of at most n_max GPUs of the offer) per agent-form app (n_max =
    what it can use on top of the GPUs it holds, as in :func:`rho_table`): what
    :func:`to_explicit` would list at most, without pricing any."""
    offer = len(free_gpus(inst))
    out = []
    for a in inst.agents:
        need = ftf_model(a, inst.cluster).app_demand_max - len(set(a.held))
        out.append((a.id, n_subsets(offer, min(offer, max(need, 0)))))
    return out
