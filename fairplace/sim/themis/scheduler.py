"""THEMIS in the driver: leases, the ARBITER's round-by-round PA auction (:mod:`.arbiter`) and an
app-level scheduler that splits each app's GPUs among its jobs (successive halving inside the app).

* Every grant is a lease of ``lease`` seconds from the moment it is granted (per allocation, as in
  the paper's arbiter: a grant at t expires at t + lease), its end rounded up to a multiple of
  ``lease_tick`` (60 s; 0: exact), so that leases ending within the same minute come back in one
  round (fairplace's choice: the paper's ARBITER "pools available resources"; exact per-allocation
  ends give every round its own expiry and ~3x as many rounds of a few GPUs each). Decisions
  happen on resource-available events only: a lease expiry, a completion, an arrival or a released
  successive-halving phase.
  Only free GPUs (idle or with an expired lease) are offered; held leases stay. An app that wins
  back GPUs it held keeps them on the same jobs (no checkpoint-restart).
* Work-conserving rounds: an app that holds more GPUs than its running phase can use (a job finished
  before its lease ended) gives the excess back at that event (``_reclaim``), and it is offered at
  once; only apps that can use more GPUs bid (ceil((1 - f) N) still counts all N active apps), and
  GPUs that neither the auction nor the leftover rule placed go to any app that can use them, worst
  rho first (``Arbiter(fill=True)``). So no GPU is idle while an app's jobs want more
  (``idle_gpu_hours_while_waiting`` = 0 in the summary).
* Apps are described to the ARBITER in agent form (:class:`~fairplace.core.domain.AgentApp`): the running
  jobs of the current phase (serial seconds per iteration = t_iter x N_j), later phases as
  ``successive-halving`` phases (n_jobs, iterations, GPUs per job), T_id under the same variant as
  the metric (``rho_variant``, default the headline ``themis``: per-phase work on a 1/N_avg share, N_avg
  measured so far), and ``rho`` as the app's current rho with the GPUs it held just before.
* PA rounding (``rounding``, default ``partial``, the paper's G_i = c_i G_i,pf: each bidder keeps
  its c_i share of its PF bundle in whole GPUs, largest remainders over the round,
  ``formulations/pa.py``; every c_i exact). ``lottery`` (the whole bundle with probability c_i,
  c_i only as far as its draw needs) stays an option for the control,
  so do ``floor`` and ``fractional``.
  ``payments=False`` drops the hidden payments altogether (every bidder keeps its PF bundle, c_i = 1):
  not THEMIS, a control for the mechanism checks in docs/themis-results.md.
* Pricing (``pricing``): ``locality`` (default; THEMIS as published is variability-unaware, its S(G) is
  the locality slowdown only) or ``pm-score`` (S = L(spread) x max binned PM-score, priced on a copy of
  the cluster carrying the binned scores). Runtime always uses the raw PM-scores.
* App scheduler (``app_split``): ``restart-aware`` (default; the rules in
  :class:`~fairplace.sim.themis.apps.AppScheduler`: running jobs stay where they are, won GPUs go to
  waiting jobs first, a job grows only when that saves more than its checkpoint + restart, an app
  losing GPUs sheds whole jobs), or ``even`` (THEMIS' even split, §4.3.3, the control): n GPUs
  over J jobs -> n < J: the n jobs with most work
  left get one GPU; else n // J each (the remainder to the jobs already holding it, then to those
  with most work), at most N_j per job, what a job cannot take going to the others
  (:func:`~fairplace.sim.themis.apps.even_split`; the app side: :mod:`.apps`);
  each job keeps the GPUs it had where it can, then takes the app's free GPUs best-fit by machine
  (the machine with the fewest of the app's free GPUs that still holds the job's need; else the
  fullest machines first), so that a job that fits in a machine runs within one.
* GPU identities the ARBITER leaves open are resolved towards continuity (fewer checkpoint-restarts):
  an auction winner's bundle moves machine for machine onto machines of the same rack it held just
  before where as many GPUs of the same decision scores are free (``renewal="held-machines"``,
  :func:`back_to_held`: count per machine, spread and value unchanged, so a lease renewal at the
  same count moves no job; ``within-machine``: the control without it), then
  auction winners swap GPUs within groups of interchangeable GPUs to get back ones they held, and
  leftover recipients keep their leftover count but take back GPUs they held first.
  Jobs are elastic as in THEMIS' model: with k <= N_j GPUs a job runs at k / N_j of its full rate.
"""

from __future__ import annotations

import numpy as np

from fairplace.core.domain import GPU, Cluster

from ..protocols import SchedView
from .agents import Agents
from .apps import AppScheduler, StepAverage
from .arbiter import Arbiter
from .estimate_error import RhoError
from .params import (
    THEMIS_APP_SPLIT,
    THEMIS_PRICING,
    THEMIS_RENEWAL,
    THEMIS_RHO_VARIANT,
    THEMIS_ROUNDING,
    THEMIS_VALUATION,
)
from .renewal import Renewal

__all__ = ["OVERHEAD_KEYS", "Themis", "binned_cluster"]

#: §6.2.3 overheads in the summary (``Themis.summary_extra``): bid and arbiter ms, p50 / p95
OVERHEAD_KEYS = ("mean_offered_gpus", "bid_ms_p50", "bid_ms_p95", "arbiter_ms_p50",
                 "arbiter_ms_p95")  # fmt: skip


def binned_cluster(cluster: Cluster, scores) -> Cluster:
    """The same GPUs carrying the (binned) decision scores as PM-scores."""
    return Cluster(
        tuple(
            GPU(g.id, g.machine, g.rack, {c: float(v[k]) for c, v in scores.items()})
            for k, g in enumerate(cluster.gpus)
        )
    )


class Themis:
    """The THEMIS scheduler: ``allocates`` GPUs itself (no placement policy)."""

    name = "themis"
    allocates = True

    def __init__(
        self,
        f: float = 0.8,
        lease: float = 600.0,
        leftover: str = "random",
        pricing: str = "locality",
        rounding: str = "partial",
        rho_variant: str = "themis",
        seed: int = 0,
        lease_tick: float | None = None,
        payments: bool = True,
        app_split: str = "restart-aware",
        rho_error: float = 0.0,
        rho_error_kind: str = "random",
        valuation: str = "lease",
        liar: str | None = None,
        renewal: str = "held-machines",
    ):
        pricing, self.renewal = THEMIS_PRICING.check(pricing), THEMIS_RENEWAL.check(renewal)
        rho_variant = THEMIS_RHO_VARIANT.check(rho_variant)
        self.app_split = THEMIS_APP_SPLIT.check(app_split)
        self.move_cost = 45.0  # s a move or resume costs: checkpoint + restart (the driver sets it)
        rounding = THEMIS_ROUNDING.check(rounding)
        err = RhoError(rho_error, rho_error_kind, seed, liar)  # §6.3: ``liar`` alone errs
        self.rho_error = err if err.x > 0 else None  # Fig. 17; None: the truth
        self.pricing = pricing
        self.rho_variant = rho_variant
        self.arbiter = Arbiter(
            f=f, lease=lease, leftover=leftover, rounding=rounding, seed=seed, lease_tick=lease_tick,
            payments=payments, exact_payments=False,  # the driver reads the allocation only
            rho_error=self.rho_error, valuation=THEMIS_VALUATION.check(valuation),
        )  # fmt: skip
        self.lease = float(lease)
        self.cache: dict = {}
        self.expiry: np.ndarray | None = None  # per GPU: lease end (-inf = free)
        self.owner: np.ndarray | None = None  # per GPU: app index holding it (-1 = free)
        self.steps = StepAverage()  # active apps over time, for N_avg
        self.agents = Agents(rho_variant, self.steps)
        self.splitter: AppScheduler | None = None  # bound to the cluster (``bind``)
        #: per auction: (t, bidders, GPUs offered, bid seconds (all bidders), arbiter seconds)
        self.auctions: list[tuple[float, int, int, float, float]] = []
        self.k = 0

    def next_change(self, view: SchedView) -> float:
        return view.t

    def next_event(self, t: float) -> float:
        """The next lease expiry after ``t`` (inf when no GPU is leased)."""
        if self.expiry is None or self.owner is None:
            return np.inf
        e = self.expiry[(self.owner >= 0) & (self.expiry > t + 1e-9)]
        return float(e.min()) if e.size else np.inf

    # ------------------------------------------------------------------------------------------
    def allocate(self, view: SchedView, w, cluster: Cluster, scores, alloc, grid) -> dict:
        """New job allocations {job index: GPU indices} at ``view.t`` (``grid(t)``: next grid point)."""
        G, t = len(cluster), view.t
        if self.expiry is None or self.owner is None:  # the first decision (both set together)
            self.expiry = np.full(G, -np.inf)
            self.owner = np.full(G, -1, np.int64)
            if self.pricing == "locality":  # THEMIS as published: S = L(spread), every V = 1
                scores = {c: np.ones(G) for c in scores}
            self.decide_cluster = binned_cluster(cluster, scores)
        active = view.active
        apps = np.bincount(w.app[active], minlength=len(w.app_ids)).nonzero()[0]  # sorted
        self.steps.append(t, int(apps.size))
        before = self.owner.copy()
        alive = np.zeros(len(w.app_ids) + 1, bool)  # the last slot: owner -1 (free)
        alive[apps] = True
        finished_app = ~alive[self.owner]
        self.owner[finished_app | (self.expiry <= t + 1e-9)] = -1
        splitter = self._splitter()
        running = splitter.running(view, w)  # the same dict while the active jobs are the same
        usable = splitter.usable(running, view, w, alloc)
        self._reclaim(self.owner, usable, alloc)
        self.expiry[self.owner < 0] = -np.inf
        free = (self.owner < 0).nonzero()[0]
        held = np.bincount(self.owner[self.owner >= 0], minlength=usable.size)
        room = usable - held
        wanting = apps[room[apps] > 0]
        if free.size and wanting.size:
            states = self.agents.states(
                wanting.tolist(), view, w, self.owner, before, room, self.decide_cluster, running
            )
            out = self.arbiter.round_on_offer(  # GPU indices in and out
                self.decide_cluster,
                states,
                free,
                t,
                self.k,
                cache=self.cache,
                n_active=int(apps.size),
            )
            self.cache.update(out.tables)  # (the arbiter reads it only)
            self.auctions.append(
                (t, len(out.participants), int(free.size), out.bid_seconds, out.arbiter_seconds)
            )
            end = out.lease_expiry
            pos = {w.app_ids[a]: a for a in wanting}
            won = {pos[a]: np.asarray(g, np.int64) for a, g in out.auction.items() if g}
            extra: dict = {}
            for part in (out.leftover_given, out.filled):
                for a, g in part.items():
                    extra[pos[a]] = extra.get(pos[a], 0) + len(g)
            if self.renewal == "held-machines":
                left = np.zeros(G, bool)  # the offer less what the auction gave (sorted)
                left[free] = True
                for idx in won.values():
                    left[idx] = False
                spare = left.nonzero()[0]
                won = self._renewal(won, spare, before, extra)
            grant = self._keep_previous(won, before)
            taken = {g for gs in won.values() for g in gs.tolist()}
            spare = np.asarray(sorted(set(free.tolist()) - taken), np.int64)
            for a, idx in self._leftover_back(extra, spare, before).items():
                grant[a] = np.concatenate([grant.get(a, np.zeros(0, np.int64)), idx])
            for a, idx in grant.items():
                self.owner[idx] = a
                self.expiry[idx] = end
        self.k += 1
        return splitter.split(self.owner, view, w, alloc, running)

    def summary_extra(self, gpus: int) -> dict[str, float]:
        """Per-run auction statistics for the simulation summary: auctions held, mean bidders per
        auction, share of auctions with a single bidder (who pays nothing: PA degenerates), mean
        fraction of the cluster offered (re-auctioned) per auction; and the overheads of §6.2.3:
        p50 / p95 over auctions of the bid time (the bidders' rho tables per bidder, ms) and of the
        arbiter time (the rest of the round: ranking, PA solve, leftover, fill; ms)."""
        if not self.auctions:
            return {"auctions": 0, "mean_bidders": 0.0, "single_bidder_share": 0.0,
                    "mean_offered_fraction": 0.0} | dict.fromkeys(OVERHEAD_KEYS, 0.0)  # fmt: skip
        _, bidders, offered, bid, arb = (
            np.asarray(c, float) for c in zip(*self.auctions, strict=True)
        )
        bid_ms, arb_ms = 1e3 * bid / np.maximum(bidders, 1.0), 1e3 * arb
        return {
            "auctions": len(self.auctions),
            "mean_bidders": float(bidders.mean()),
            "single_bidder_share": float(np.mean(bidders == 1)),
            "mean_offered_fraction": float(offered.mean() / gpus),
            "mean_offered_gpus": float(offered.mean()),
            "bid_ms_p50": float(np.percentile(bid_ms, 50)),
            "bid_ms_p95": float(np.percentile(bid_ms, 95)),
            "arbiter_ms_p50": float(np.percentile(arb_ms, 50)),
            "arbiter_ms_p95": float(np.percentile(arb_ms, 95)),
        }

    def _reclaim(self, owner: np.ndarray, usable: np.ndarray, alloc) -> None:
        """Work-conserving leases: an app holding more GPUs than its running jobs can use (jobs
        finished before its lease ended) gives the excess back now, idle GPUs first, from the
        machines where it holds fewest (``owner``: per GPU the app holding it, -1 free; changed in
        place)."""
        held = np.bincount(owner[owner >= 0], minlength=usable.size)
        over = np.flatnonzero(held > usable)
        if not over.size:
            return
        busy = np.zeros(len(owner), bool)
        for gs in alloc.values():
            busy[np.asarray(gs, np.int64)] = True
        for a in over.tolist():
            mine = np.flatnonzero(owner == a)
            per_machine = np.bincount(self._mi[mine], minlength=int(self._mi.max()) + 1)
            order = np.lexsort((mine, per_machine[self._mi[mine]], busy[mine]))
            owner[mine[order[: held[a] - usable[a]]]] = -1

    def _keep_previous(self, grant: dict, before: np.ndarray) -> dict:
        """Swap granted GPUs within groups of interchangeable GPUs (same machine and same decision
        scores: the same bundle value for every app) so that apps get back the GPUs they held: in
        each group, each of its GPUs' apps in turn takes the lowest GPU of the group it held
        before, and those that held none take the rest, lowest first. A group granted to one app
        stays as it is (so does a grant to one app)."""
        if len(grant) == 1:
            ((a, idx),) = grant.items()
            return {a: np.sort(np.asarray(idx, np.int64))}
        gid = self._group_ids
        by_group: dict = {}
        for a, idx in grant.items():
            for g in idx.tolist():
                got = by_group.get(gid[g])
                if got is None:
                    by_group[gid[g]] = [(a, g)]
                else:
                    got.append((a, g))
        out: dict = {a: [] for a in grant}
        held = None
        for items in by_group.values():
            owners = [a for a, _ in items]
            if owners.count(owners[0]) == len(owners):  # one app: its own GPUs
                out[owners[0]] += [g for _, g in items]
                continue
            if held is None:
                held = before.tolist()
            pool = sorted(g for _, g in items)
            left = []
            for a in owners:  # first: a GPU of the group this app held before
                mine = [g for g in pool if held[g] == a]
                if mine:
                    out[a].append(mine[0])
                    pool.remove(mine[0])
                else:
                    left.append(a)
            for a, g in zip(left, pool, strict=True):
                out[a].append(g)
        return {a: np.asarray(sorted(g), np.int64) for a, g in out.items()}

    def _leftover_back(self, counts: dict, spare: np.ndarray, before: np.ndarray) -> dict:
        """Leftover recipients keep the number of GPUs the ARBITER gave them; which spare GPUs
        (leftover or unallocated) they get is not specified by THEMIS, so each takes back GPUs it
        held before, then GPUs on machines it already uses, then the lowest indices."""
        pool = set(spare.tolist())
        out = {}
        held, mi = before.tolist(), self._mi_list
        for a, n in sorted(counts.items()):
            mine = sorted(g for g in pool if held[g] == a)[:n]
            pool -= set(mine)
            need, take = n - len(mine), mine
            if need > 0:  # the rest: on the machines of ``mine`` first, lowest first
                rest = sorted(pool)
                if mine:
                    machines = {mi[g] for g in mine}
                    on = [g for g in rest if mi[g] in machines]
                    rest = on + [g for g in rest if mi[g] not in machines] if len(on) < need else on
                take = mine + rest[:need]
                pool -= set(take)
            out[a] = np.asarray(sorted(take), np.int64)
        return out

    def _splitter(self) -> AppScheduler:
        """The app scheduler :meth:`bind` made for the cluster."""
        if self.splitter is None:
            raise RuntimeError("Themis.bind(cluster) must be called before allocate")
        return self.splitter

    def bind(self, cluster: Cluster) -> None:
        self._mi = cluster.machine_index
        self._mi_list = self._mi.tolist()  # per-GPU look-ups in Python loops
        self._ri = cluster.rack_index
        self.splitter = AppScheduler(cluster.machine_index, self.app_split, self.move_cost)

    @property
    def _labels(self) -> np.ndarray:
        """Per GPU its decision scores as one int (equal: the same price for every app)."""
        if not hasattr(self, "_label_arr"):
            ids: dict = {}
            keys = [tuple(sorted(g.pm.items())) for g in self.decide_cluster.gpus]
            self._label_arr = np.array([ids.setdefault(k, len(ids)) for k in keys], np.int64)
        return self._label_arr

    @property
    def _renewal(self) -> Renewal:
        """:func:`back_to_held` bound to the decision cluster (its statics computed once)."""
        if not hasattr(self, "_renew"):
            self._renew = Renewal(self._mi, self._ri, self._labels)
        return self._renew

    @property
    def _group_ids(self) -> list[int]:
        """Per GPU its group of interchangeable GPUs (same machine, same decision scores) as an
        int, in a list (read per granted GPU)."""
        if not hasattr(self, "_gids"):
            cl, ids = self.decide_cluster, dict[tuple, int]()
            keys = [
                (m, tuple(sorted(g.pm.items())))
                for m, g in zip(cl.machine_index.tolist(), cl.gpus, strict=True)
            ]
            self._gids = [ids.setdefault(k, len(ids)) for k in keys]
        return self._gids
