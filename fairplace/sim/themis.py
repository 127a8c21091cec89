"""THEMIS in the driver: leases, the ARBITER's round-by-round PA auction (``fairplace.sim.rounds``) and an
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
  the metric (``t_id``, default the headline ``themis``: per-phase work on a 1/N_avg share, N_avg
  measured so far), and ``rho`` as the app's current rho with the GPUs it held just before.
* PA rounding (``rounding``, default ``lottery``): in the sensitivity experiment (W2, 16 GPUs,
  f = 0.5 so that auctions have several bidders) ``floor`` gave the worst max rho (it drops a whole
  GPU at c = 0.996), ``lottery`` and ``fractional`` were alike; ``lottery`` keeps the hidden payment
  in expectation (PA's incentives), ``fractional`` drops it, so ``lottery`` is the default.
* Pricing (``pricing``): ``locality`` (default; THEMIS as published is variability-unaware, its S(G) is
  the locality slowdown only) or ``pm-score`` (S = L(spread) x max binned PM-score, priced on a copy of
  the cluster carrying the binned scores). Runtime always uses the raw PM-scores.
* App scheduler (THEMIS' even split, §4.3.3): n GPUs over J jobs -> n < J: the n jobs with most work
  left get one GPU; else n // J each (the remainder to the jobs already holding it, then to those
  with most work), at most N_j per job, what a job cannot take going to the others
  (:func:`even_split`);
  each job keeps the GPUs it had where it can, then takes the app's free GPUs best-fit by machine
  (the machine with the fewest of the app's free GPUs that still holds the job's need; else the
  fullest machines first), so that a job that fits in a machine runs within one.
* GPU identities the ARBITER leaves open are resolved towards continuity (fewer checkpoint-restarts):
  auction winners swap GPUs within groups of interchangeable GPUs to get back ones they held, and
  leftover recipients keep their leftover count but take back GPUs they held first.
  Jobs are elastic as in THEMIS' model: with k <= N_j GPUs a job runs at k / N_j of its full rate.
"""

from __future__ import annotations

import bisect

import numpy as np

from fairplace.core.domain import GPU, AgentApp, AgentJob, Cluster
from fairplace.core.errors import OptionError
from fairplace.formulations.agents import ftf_model, optimizer_of
from fairplace.formulations.ftf import bundle_rho
from fairplace.formulations.variants import AGENT_T_ID_VARIANTS

from .schedulers import SchedView

#: How the ARBITER's AGENTs price bundles: ``locality`` (THEMIS as published, S = L(spread)) or
#: ``pm-score`` (S = L(spread) x max binned PM-score: a variability-aware THEMIS).
PRICING = ("locality", "pm-score")


def binned_cluster(cluster: Cluster, scores) -> Cluster:
    """The same GPUs carrying the (binned) decision scores as PM-scores."""
    return Cluster(
        tuple(
            GPU(g.id, g.machine, g.rack, {c: float(v[k]) for c, v in scores.items()})
            for k, g in enumerate(cluster.gpus)
        )
    )


def best_fit(pool: set, need: int, machine_of: np.ndarray) -> list:
    """``need`` GPUs of ``pool``: all on the machine with the fewest pool GPUs that still has ``need``
    of them; otherwise from the machines with most pool GPUs first (``machine_of[g]``: g's machine).
    The app-level job placement of THEMIS' agents and of Optimus."""
    by: dict = {}
    for g in sorted(pool):
        by.setdefault(int(machine_of[g]), []).append(g)
    fits = [m for m, gs in by.items() if len(gs) >= need]
    if fits:
        m = min(fits, key=lambda m: (len(by[m]), m))
        return by[m][:need]
    out = []
    for m in sorted(by, key=lambda m: (-len(by[m]), m)):
        out += by[m][: need - len(out)]
    return out


def _groups_of(keys: np.ndarray, values: np.ndarray) -> dict[int, np.ndarray]:
    """{key: the values with that key, in their order} (one stable sort)."""
    if not keys.size:
        return {}
    order = np.argsort(keys, kind="stable")
    k, v = keys[order], values[order]
    cuts = np.flatnonzero(np.diff(k)) + 1
    return {int(g[0]): vals for g, vals in zip(np.split(k, cuts), np.split(v, cuts), strict=True)}


def even_split(n: int, caps: np.ndarray, order: np.ndarray) -> np.ndarray:
    """THEMIS' even split of ``n`` GPUs over jobs with demands ``caps``, water-filled: every job gets
    the same count up to its demand, what a capped job cannot take goes to the others, and a
    remainder of one GPU each goes to the jobs first in ``order`` (most work left). Uses
    min(n, sum(caps)) GPUs."""
    target = np.zeros(caps.size, np.int64)
    left, open_ = int(n), caps > 0
    while left > 0 and open_.any():
        share = left // int(open_.sum())
        if share == 0:
            pick = order[open_[order]][:left]
            target[pick] += 1
            break
        add = np.where(open_, np.minimum(share, caps - target), 0)
        target += add
        left -= int(add.sum())
        open_ &= target < caps
    return target


class StepAverage:
    """N_avg bookkeeping: the number of active apps as a step function of time, with its running
    integral, so that the time-weighted mean over [t_start, t_now] (``ftf.n_avg``) costs two
    binary searches instead of a pass over every past decision."""

    def __init__(self):
        self.t: list[float] = []
        self.n: list[int] = []
        self.area: list[float] = []

    def append(self, t: float, n: int) -> None:
        if self.t and t == self.t[-1]:  # a later count at the same time replaces the earlier one
            self.n[-1] = n
            return
        a = self.area[-1] + self.n[-1] * (t - self.t[-1]) if self.t else 0.0
        self.t.append(t)
        self.n.append(n)
        self.area.append(a)

    def _integral(self, x: float) -> float:
        k = max(bisect.bisect_right(self.t, x) - 1, 0)
        return self.area[k] + self.n[k] * (x - self.t[k])

    def mean(self, t_start: float, t_now: float) -> float:
        """Time-weighted mean over [t_start, t_now] (the value at t_start for an empty window)."""
        if not self.t:
            return 1.0
        lo = max(t_start, self.t[0])
        if t_now <= lo:
            return float(self.n[max(bisect.bisect_right(self.t, t_start) - 1, 0)])
        return (self._integral(t_now) - self._integral(lo)) / (t_now - lo)


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
        rounding: str = "lottery",
        t_id: str = "themis",
        seed: int = 0,
        lease_tick: float = 60.0,
    ):
        from fairplace.sim.rounds import Arbiter

        if pricing not in PRICING:
            raise OptionError("scheduler_options.pricing", f"expected one of {PRICING}")
        if t_id not in AGENT_T_ID_VARIANTS:
            raise OptionError("scheduler_options.t_id", f"expected one of {AGENT_T_ID_VARIANTS}")
        self.pricing = pricing
        self.t_id = t_id
        self.arbiter = Arbiter(
            f=f, lease=lease, leftover=leftover, rounding=rounding, seed=seed, lease_tick=lease_tick
        )
        self.lease = float(lease)
        self.cache: dict = {}
        self.expiry: np.ndarray | None = None  # per GPU: lease end (-inf = free)
        self.owner: np.ndarray | None = None  # per GPU: app index holding it (-1 = free)
        self.steps = StepAverage()  # active apps over time, for N_avg
        self._split_memo: dict = {}  # per app: (its GPUs and running jobs, the split they got)
        self._statics: dict = {}  # per app: its agent description's workload-only parts
        self._jobs: dict = {}  # per app: (running jobs, progress), their AgentJobs, its optimiser
        self.auctions: list[tuple[float, int, int]] = []  # (t, bidders, GPUs offered) per auction
        self.k = 0

    def next_change(self, view: SchedView) -> float:
        return view.t

    def next_event(self, t: float) -> float:
        """The next lease expiry after ``t`` (inf when no GPU is leased)."""
        if self.expiry is None:
            return np.inf
        e = self.expiry[(self.owner >= 0) & (self.expiry > t + 1e-9)]
        return float(e.min()) if e.size else np.inf

    # ------------------------------------------------------------------------------------------
    def allocate(self, view: SchedView, w, cluster: Cluster, scores, alloc, grid) -> dict:
        """New job allocations {job index: GPU indices} at ``view.t`` (``grid(t)``: next grid point)."""
        G, t = len(cluster), view.t
        if self.expiry is None:
            self.expiry = np.full(G, -np.inf)
            self.owner = np.full(G, -1, np.int64)
            if self.pricing == "locality":  # THEMIS as published: S = L(spread), every V = 1
                scores = {c: np.ones(G) for c in scores}
            self.decide_cluster = binned_cluster(cluster, scores)
        active = view.active
        apps = np.unique(w.app[active])
        self.steps.append(t, int(apps.size))
        before = self.owner.copy()
        finished_app = ~np.isin(self.owner, apps)
        self.owner[finished_app | (self.expiry <= t + 1e-9)] = -1
        usable = self._usable(view, w)
        self._reclaim(usable, alloc)
        self.expiry[self.owner < 0] = -np.inf
        free = np.flatnonzero(self.owner < 0)
        held = np.bincount(self.owner[self.owner >= 0], minlength=usable.size)
        room = usable - held
        wanting = apps[room[apps] > 0]
        if free.size and wanting.size:
            states = [self._state(a, view, w, before, int(room[a])) for a in wanting]
            out = self.arbiter.auction_round(
                self.decide_cluster,
                states,
                cluster.ids(free),
                t,
                self.k,
                cache=self.cache,
                n_active=int(apps.size),
            )
            self.cache = {**self.cache, **out.tables}
            self.auctions.append((t, len(out.participants), int(free.size)))
            end = out.lease_expiry
            pos = {w.app_ids[a]: a for a in wanting}
            won = {pos[a]: cluster.indices(g) for a, g in out.auction.items() if g}
            grant = self._keep_previous(won, before)
            extra: dict = {}
            for part in (out.leftover_given, out.filled):
                for a, g in part.items():
                    extra[pos[a]] = extra.get(pos[a], 0) + len(g)
            taken = {g for gs in won.values() for g in gs.tolist()}
            spare = np.asarray(sorted(set(free.tolist()) - taken), np.int64)
            for a, idx in self._leftover_back(extra, spare, before).items():
                grant[a] = np.concatenate([grant.get(a, np.zeros(0, np.int64)), idx])
            for a, idx in grant.items():
                self.owner[idx] = a
                self.expiry[idx] = end
        self.k += 1
        return self._split(view, w, alloc)

    def summary_extra(self, gpus: int) -> dict[str, float]:
        """Per-run auction statistics for the simulation summary: auctions held, mean bidders per
        auction, share of auctions with a single bidder (who pays nothing: PA degenerates), mean
        fraction of the cluster offered (re-auctioned) per auction."""
        if not self.auctions:
            return {"auctions": 0, "mean_bidders": 0.0, "single_bidder_share": 0.0,
                    "mean_offered_fraction": 0.0}  # fmt: skip
        _, bidders, offered = (np.asarray(c, float) for c in zip(*self.auctions, strict=True))
        return {
            "auctions": len(self.auctions),
            "mean_bidders": float(bidders.mean()),
            "single_bidder_share": float(np.mean(bidders == 1)),
            "mean_offered_fraction": float(offered.mean() / gpus),
        }

    def _usable(self, view: SchedView, w) -> np.ndarray:
        """GPUs each app can use now: the demand of its running phase's active jobs (per app index)."""
        act = view.active
        app = w.app[act]
        out = np.zeros(len(w.app_ids), np.int64)
        if act.size:
            cur = np.full(len(w.app_ids), np.iinfo(np.int64).max)
            np.minimum.at(cur, app, w.phase[act])
            now = w.phase[act] == cur[app]
            np.add.at(out, app[now], w.demand[act[now]])
        return out

    def _reclaim(self, usable: np.ndarray, alloc) -> None:
        """Work-conserving leases: an app holding more GPUs than its running jobs can use (jobs
        finished before its lease ended) gives the excess back now, idle GPUs first, from the
        machines where it holds fewest."""
        held = np.bincount(self.owner[self.owner >= 0], minlength=usable.size)
        over = np.flatnonzero(held > usable)
        if not over.size:
            return
        busy = np.zeros(len(self.owner), bool)
        for gs in alloc.values():
            busy[np.asarray(gs, np.int64)] = True
        for a in over.tolist():
            mine = np.flatnonzero(self.owner == a)
            per_machine = np.bincount(self._mi[mine], minlength=int(self._mi.max()) + 1)
            order = np.lexsort((mine, per_machine[self._mi[mine]], busy[mine]))
            self.owner[mine[order[: held[a] - usable[a]]]] = -1

    def _keep_previous(self, grant: dict, before: np.ndarray) -> dict:
        """Swap granted GPUs within groups of interchangeable GPUs (same machine and same decision
        scores: the same bundle value for every app) so that apps get back the GPUs they held."""
        key = self._group_key
        by_group: dict = {}
        for a, idx in grant.items():
            for g in idx.tolist():
                by_group.setdefault(key[g], []).append((a, g))
        out: dict = {a: [] for a in grant}
        for items in by_group.values():
            owners = [a for a, _ in items]
            pool = sorted(g for _, g in items)
            left = []
            for a in owners:  # first: a GPU of the group this app held before
                mine = [g for g in pool if before[g] == a]
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
        for a, n in sorted(counts.items()):
            mine = sorted(g for g in pool if before[g] == a)[:n]
            pool -= set(mine)
            machines = set(self._mi[mine].tolist()) if mine else set()
            rest = sorted(pool, key=lambda g: (int(self._mi[g]) not in machines, g))
            take = mine + rest[: n - len(mine)]
            pool -= set(take)
            out[a] = np.asarray(sorted(take), np.int64)
        return out

    def _state(self, a: int, view: SchedView, w, before: np.ndarray, room: int):
        from fairplace.sim.rounds import AppState

        held = tuple(self.decide_cluster.ids(np.flatnonzero(self.owner == a)))
        app = self._agent(a, view, w, held)
        jobs = self._jobs[a]
        if jobs[2] is None:  # the optimiser's view changes only with the running jobs
            self._jobs[a] = jobs = (*jobs[:2], optimizer_of(app))
        model = ftf_model(app, self.decide_cluster, jobs[2])
        had = np.flatnonzero(before == a)
        rho = bundle_rho(model, self.decide_cluster, had, app.cls) if had.size else None
        return AppState(app, held=held, rho=rho, room=room, model=model)

    def _static(self, a: int, w) -> dict:
        """What the agent description of app ``a`` takes from the workload alone (computed once)."""
        out = self._statics.get(a)
        if out is None:
            mine = np.flatnonzero(w.app == a)
            ph = w.phase[mine]
            phases, per_phase = [], []
            for p in np.unique(ph):
                jp = mine[ph == p]
                phases.append((int(jp.size), float(w.iters[jp[0]]), int(w.demand[jp[0]])))
                per_phase.append(
                    (float(np.sum(w.iters[jp] * w.t_iter[jp] * w.demand[jp])), int(w.demand[jp].sum()))
                )  # fmt: skip
            j0 = int(mine[0])
            out = self._statics[a] = {
                "mine": mine,
                "phase_ids": np.unique(ph),
                "phases": tuple(phases),
                "per_phase": tuple(per_phase),
                "work_total": float(np.sum(w.iters[mine] * w.t_iter[mine] * w.demand[mine])),
                "locality": (1.0, float(w.l_machine[j0]), float(w.l_rack[j0])),
                "cls": w.cls[j0],
                "model": w.model[j0],
            }
        return out

    def _agent(self, a: int, view: SchedView, w, held: tuple = ()) -> AgentApp:
        st = self._static(a, w)
        mine = st["mine"]
        run = view.active[w.app[view.active] == a]
        cur = int(w.phase[run].min())
        run = run[w.phase[run] == cur]
        rem = view.remaining[run]
        key = (run.tobytes(), rem.tobytes())
        jobs = self._jobs.get(a)
        if jobs is None or jobs[0] != key:  # the running jobs or their progress changed
            serial = w.t_iter[run] * w.demand[run]
            jobs = (
                key,
                tuple(AgentJob(float(r), float(x)) for r, x in zip(rem, serial, strict=True)),
                None,  # the optimiser, built on first use (``_state``)
            )
            self._jobs[a] = jobs
        t_start = float(view.arrival[mine].min())
        many = len(st["phases"]) > 1
        return AgentApp(
            id=w.app_ids[a],
            jobs=jobs[1],
            t_start=t_start,
            t_now=view.t,
            d_max=int(w.demand[run].max()),
            locality=st["locality"],
            cls=st["cls"],
            model=st["model"],
            stopping="successive-halving" if many else "none",
            phases=st["phases"] if many else (),
            current_phase=int(np.searchsorted(st["phase_ids"], cur)) if many else 0,
            work_total=st["work_total"],
            demand_max=int(self._dmax(w)[a]),
            t_id={
                "variant": self.t_id,
                "n_avg": max(1.0, self.steps.mean(t_start, view.t)),
                "phases": st["per_phase"] if self.t_id == "themis" else (),
            },
            held=held,
        )

    def _split(self, view: SchedView, w, alloc) -> dict:
        """THEMIS' even split of each app's GPUs among its running jobs (module doc). An app whose
        GPUs and running jobs are those of the previous decision, each job still on what the split
        gave it, keeps that split (the split of the same input is the same: the remainder stays
        where it is), so only apps that changed are split again."""
        out: dict[int, np.ndarray] = {}
        act = view.active
        cur = np.full(len(w.app_ids), np.iinfo(np.int64).max)
        np.minimum.at(cur, w.app[act], w.phase[act])
        run_all = act[w.phase[act] == cur[w.app[act]]]
        by_app = _groups_of(w.app[run_all], run_all)
        owned = np.flatnonzero(self.owner >= 0)
        gpus_of = _groups_of(self.owner[owned], owned)
        memo = {}
        for a, gpus in gpus_of.items():
            run = by_app.get(a, np.zeros(0, np.int64))
            key = (gpus.tobytes(), run.tobytes())
            last = self._split_memo.get(a)
            if (
                last is not None
                and last[0] == key
                and all(tuple(alloc.get(j, ())) == g for j, g in last[2].items())
            ):
                split, lists = last[1], last[2]
            else:
                split = self._split_app(gpus, run, view, w, alloc)
                lists = {j: tuple(g.tolist()) for j, g in split.items()}
            memo[a] = (key, split, lists)
            out.update(split)
        self._split_memo = memo
        return out

    def _split_app(self, gpus: np.ndarray, run: np.ndarray, view: SchedView, w, alloc) -> dict:
        """One app's even split: {job: sorted GPU indices} for its jobs that get GPUs."""
        out = {}
        n = gpus.size
        work = view.remaining[run] * w.t_iter[run]
        mine = set(gpus.tolist())
        cur = np.array([sum(g in mine for g in alloc.get(int(j), ())) for j in run], np.int64)
        # the remainder stays with the jobs holding it (a lease renewal moves no job), then
        # goes to the jobs with most work left
        target = even_split(n, w.demand[run], np.lexsort((run, -work, -cur)))
        pool = set(mine)
        for k, j in enumerate(run):
            keep = [g for g in alloc.get(int(j), ()) if g in pool][: target[k]]
            out[int(j)] = keep
            pool -= set(keep)
        for k in np.argsort(-(target - [len(out[int(j)]) for j in run]), kind="stable"):
            j = int(run[k])
            need = int(target[k]) - len(out[j])
            if need > 0:
                take = best_fit(pool, need, self._mi)
                out[j] = out[j] + take
                pool -= set(take)
        return {j: np.asarray(sorted(g), np.int64) for j, g in out.items() if len(g)}

    def _dmax(self, w) -> np.ndarray:
        if not hasattr(self, "_dmax_"):
            self._dmax_ = w.app_demand_max()
        return self._dmax_

    def bind(self, cluster: Cluster) -> None:
        self._mi = cluster.machine_index

    @property
    def _group_key(self) -> list:
        if not hasattr(self, "_keys"):
            cl = self.decide_cluster
            self._keys = [
                (int(cl.machine_index[k]), tuple(sorted(g.pm.items())))
                for k, g in enumerate(cl.gpus)
            ]
        return self._keys
