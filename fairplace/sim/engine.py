"""The thin round driver: advance time, ask the scheduler who comes first and the placement policy where,
apply the decision, account progress with exact event times, record what happened.

Time model:

* decisions happen on a grid ``t0 + k * round_length`` (``t0`` = first release, or 0 with
  ``grid_origin="zero"`` as the PAL artifact); arrivals and completions are stamped at their exact times
  inside a round (a job arriving mid-round waits for the next decision, its JCT counts from its
  arrival); ``stamping="round-end"`` (the artifact) stamps a completion at the end of its round
  instead (the GPUs are freed at that decision either way);
* a running job progresses at ``1 / (t_iter * L(spread) * max_{g in G} V_raw(g))`` iterations per second:
  placement decides on binned PM-scores, runtime uses the raw ones (PAL);
* a job that resumes after a preemption or migrates to another GPU set pays ``checkpoint + restart``
  seconds holding its new GPUs without progress (first starts are free);
* when a decision changes nothing (a fixed point) and no event can happen before the scheduler's
  ``next_change``, the driver jumps to the first grid point at or after the next event (an arrival, a
  completion or a priority change): the skipped decisions would have been identical;
* a scheduler that ``allocates`` itself decides at arrivals, completions and its own ``next_event(t)``
  (THEMIS: the next per-allocation lease expiry), or on the grid when it has no ``next_event``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from fairplace.core.domain import Cluster, spread
from fairplace.core.errors import FairplaceError, OptionError

from .schedulers import SchedView
from .workload import Workload


class InvariantError(FairplaceError, AssertionError):
    """A simulation invariant broke (debug mode)."""


#: where the decision grid starts: the first release, or t = 0 (the PAL artifact)
GRID_ORIGINS = ("first-arrival", "zero")
#: when a completion is stamped: its exact time, or the end of its round (the PAL artifact)
STAMPINGS = ("exact", "round-end")


@dataclass(frozen=True)
class SimConfig:
    """Driver options (seconds)."""

    round_length: float = 300.0
    checkpoint: float = 10.0
    restart: float = 35.0
    debug: bool = False
    skip_quiet: bool = True
    max_decisions: int = 10_000_000
    grid_origin: str = "first-arrival"
    stamping: str = "exact"

    def __post_init__(self):
        for k, known in (("grid_origin", GRID_ORIGINS), ("stamping", STAMPINGS)):
            if getattr(self, k) not in known:
                raise OptionError(k, f"expected one of {known}, got {getattr(self, k)!r}")
        if not 0 < self.round_length < math.inf:
            raise OptionError("round_length", f"must be finite and > 0, got {self.round_length}")
        for k in ("checkpoint", "restart"):
            if not 0 <= getattr(self, k) < math.inf:
                raise OptionError(k, f"must be >= 0, got {getattr(self, k)}")


@dataclass
class Timeline:
    """What the driver records (arrays over jobs, lists over decisions)."""

    release: np.ndarray
    start: np.ndarray
    finish: np.ndarray
    held: np.ndarray  # seconds holding GPUs
    gpu_seconds: np.ndarray  # GPU-seconds held
    run: np.ndarray  # seconds making progress
    score_time: np.ndarray  # integral of 1/S over progress time
    migrations: np.ndarray
    preemptions: np.ndarray
    overhead: np.ndarray  # seconds of checkpoint/restart paid
    done_iters: np.ndarray
    t_isolated: np.ndarray  # per app: Gavel's isolated-equivalent time of the work done
    t_isolated_job: np.ndarray  # the same per job (the job as its own app)
    rounds: dict[str, list] = field(default_factory=dict)
    busy_gpu_seconds: float = 0.0
    t0: float = 0.0
    t_end: float = 0.0


class Driver:
    """Runs one simulation; ``policy`` follows ``solvers.policies.PlacementPolicy``
    (``place(ClusterState, queue) -> Decision``) and ``scheduler`` the :mod:`.schedulers` protocol."""

    def __init__(
        self,
        workload: Workload,
        cluster: Cluster,
        scores: Mapping[str, np.ndarray],
        scheduler,
        policy,
        state_factory: Callable,
        config: SimConfig = SimConfig(),
        progress: Callable[[int], None] | None = None,
    ):
        self.w, self.cluster, self.scores = workload, cluster, scores
        self.scheduler, self.policy, self.cfg = scheduler, policy, config
        self.state_factory, self.progress = state_factory, progress
        self.G = len(cluster)
        self.raw = {c: cluster.pm_vector(c) for c in set(workload.cls)}
        self.mi, self.ri = cluster.machine_index, cluster.rack_index
        self.allocates = bool(getattr(scheduler, "allocates", False))
        if hasattr(scheduler, "bind"):
            scheduler.bind(cluster)
        if (workload.demand > self.G).any():
            k = int(np.flatnonzero(workload.demand > self.G)[0])
            raise OptionError(
                "gpus", f"job {workload.ids[k]} needs {workload.demand[k]} GPUs > cluster {self.G}"
            )

    # -- helpers -------------------------------------------------------------------------------
    def slowdown(self, j: int, idx: np.ndarray) -> float:
        """S_j(G) = L_j(spread(G)) * max_{g in G} V_raw,class(j)(g)."""
        s = spread(self.mi, self.ri, idx)
        L = (1.0, self.w.l_machine[j], self.w.l_rack[j])[s]
        return float(L * self.raw[self.w.cls[j]][idx].max())

    def _groups(self):
        w = self.w
        key = w.app * (int(w.phase.max()) + 2) + w.phase
        _, gid = np.unique(key, return_inverse=True)
        left = np.bincount(gid).astype(np.int64)
        nxt = {}
        prev_of = {(int(a), int(p)): int(g) for a, p, g in zip(w.app, w.phase, gid, strict=True)}
        for (a, p), g in prev_of.items():
            if (a, p + 1) in prev_of:
                nxt[g] = np.flatnonzero(gid == prev_of[(a, p + 1)])
        blocked = np.array(
            [p > 0 and (int(a), int(p) - 1) in prev_of for a, p in zip(w.app, w.phase, strict=True)]
        )
        return gid, left, nxt, blocked

    # -- main loop -----------------------------------------------------------------------------
    def run(self) -> Timeline:
        w, cfg, G, R = self.w, self.cfg, self.G, self.cfg.round_length
        J = len(w)
        gid, left, nxt, blocked = self._groups()
        release = np.where(blocked, np.inf, w.submit)
        rem = w.iters.astype(float).copy()
        done = np.zeros(J, bool)
        rate = np.zeros(J)
        inv_s = np.zeros(J)
        ready = np.zeros(J)
        started = np.zeros(J, bool)
        attained = np.zeros(J)
        app_dmax = w.app_demand_max().astype(float)
        tr = Timeline(
            release=release,
            start=np.full(J, np.nan),
            finish=np.full(J, np.nan),
            held=np.zeros(J),
            gpu_seconds=np.zeros(J),
            run=np.zeros(J),
            score_time=np.zeros(J),
            migrations=np.zeros(J, np.int64),
            preemptions=np.zeros(J, np.int64),
            overhead=np.zeros(J),
            done_iters=np.zeros(J),
            t_isolated=np.zeros(len(w.app_ids)),
            t_isolated_job=np.zeros(J),
            rounds={
                k: []
                for k in (
                    "t",
                    "span",
                    "busy",
                    "queue",
                    "running",
                    "started",
                    "preempted",
                    "migrated",
                    "allocation",
                )
            },
        )
        alloc: dict[int, np.ndarray] = {}
        key: dict[int, tuple] = {}  # each running job's GPUs as a sorted tuple
        resumable = bool(getattr(self.policy, "resumable", False))
        last_dec = None  # the previous decision, from which a resumable policy continues
        last_rec = (None, "{}")  # the previous recorded allocation and its JSON
        waiting_since = (
            release.copy()
        )  # when each job last stopped holding GPUs (else: its release)
        jobs = w.jobs()
        pos = {i: k for k, i in enumerate(w.ids)}
        t0 = 0.0 if cfg.grid_origin == "zero" else float(np.min(release))
        t = t0
        tr.t0 = t0
        n_done = 0
        fixed = False
        decisions = 0
        while n_done < J:
            active = np.flatnonzero((release <= t) & ~done)
            if active.size == 0:  # idle: the next arrival (THEMIS: its exact time, else the grid)
                nxt_release = float(np.min(release[~done]))
                t = nxt_release if self.allocates else self._grid(t0, nxt_release, t, R)
                continue
            running = np.zeros(J, bool)
            running[np.fromiter(alloc, np.int64, len(alloc))] = True
            view = SchedView(
                t=t,
                active=active,
                arrival=release,
                demand=w.demand,
                remaining=rem,
                total=w.iters,
                t_iter=w.t_iter,
                attained=attained,
                running=running,
                app=w.app,
                gpus=G,
                round_length=R,
                held=tr.held,
                t_isolated=tr.t_isolated_job,
                waiting_since=np.where(running, t, np.minimum(waiting_since, release)),
            )
            if self.allocates:
                new = self.scheduler.allocate(
                    view,
                    w,
                    self.cluster,
                    self.scores,
                    {j: g.tolist() for j, g in alloc.items()},
                    lambda x: t0 + np.ceil((x - t0) / R - 1e-12) * R,
                )
                new_key = {j: tuple(sorted(g.tolist())) for j, g in new.items()}
                record = {w.ids[j]: g.tolist() for j, g in new.items()}
            else:
                order = self.scheduler.order(view)
                state = self.state_factory(
                    self.cluster,
                    self.scores,
                    {w.ids[j]: key[j] for j in alloc},
                    round=int(round((t - t0) / R)),
                )
                queue = [jobs[j] for j in order.tolist()]
                if resumable:
                    dec = self.policy.place(state, queue, previous=last_dec)
                    last_dec = dec
                else:
                    dec = self.policy.place(state, queue)
                record = dec.allocation  # sorted tuples of ints: JSON arrays
                new_key = {pos[i]: g for i, g in record.items()}
                new = {
                    j: alloc[j] if key.get(j) == g else np.asarray(g, dtype=np.int64)
                    for j, g in new_key.items()
                }
            self._check(new, active, w)
            n_start = n_pre = n_mig = 0
            for j in list(alloc):
                if j not in new:
                    tr.preemptions[j] += 1
                    waiting_since[j] = t
                    n_pre += 1
                    rate[j] = 0.0
            for j, g in new.items():
                prev = alloc.get(j)
                if prev is not None and key[j] == new_key[j]:
                    continue
                cost = 0.0
                if prev is not None:
                    tr.migrations[j] += 1
                    n_mig += 1
                    cost = cfg.checkpoint + cfg.restart
                elif started[j]:
                    cost = cfg.checkpoint + cfg.restart
                else:
                    started[j] = True
                    tr.start[j] = t
                n_start += prev is None
                tr.overhead[j] += cost
                ready[j] = t + cost
                s = self.slowdown(j, g)
                rate[j] = g.size / w.demand[j] / (w.t_iter[j] * s)  # elastic (THEMIS) if k < N_j
                inv_s[j] = 1.0 / s
            alloc, key = new, new_key
            busy = int(sum(map(len, key.values())))
            changed = bool(n_start or n_pre or n_mig)
            # horizon: the next grid point, or further when nothing can change before it
            t_next = t + R
            if self.allocates:  # resource-available events: completions, arrivals, the grid
                nxt_ev = getattr(self.scheduler, "next_event", None)  # per-allocation leases
                t_next = min(
                    float(nxt_ev(t)) if nxt_ev else t0 + (np.floor((t - t0) / R + 1e-9) + 1) * R,
                    float(np.min(release[release > t], initial=np.inf)),
                    self._next_completion(alloc, t, rem, rate, ready),
                )
            elif cfg.skip_quiet and not changed and fixed:
                ev = min(
                    float(np.min(release[release > t], initial=np.inf)),
                    self._next_completion(alloc, t, rem, rate, ready),
                    float(self.scheduler.next_change(view)),
                )
                if np.isfinite(ev) and ev > t + R:
                    t_next = self._grid(t0, ev, t, R)
            fixed = not changed
            r = tr.rounds
            r["t"].append(t)
            r["span"].append(max(int(round((t_next - t) / R)), 0 if self.allocates else 1))
            r["busy"].append(busy)
            r["queue"].append(int(active.size - len(alloc)))
            r["running"].append(len(alloc))
            r["started"].append(n_start)
            r["preempted"].append(n_pre)
            r["migrated"].append(n_mig)
            if record != last_rec[0] or list(record) != list(last_rec[0]):  # same keys, same order
                last_rec = (record, json.dumps(record, separators=(",", ":")))
            r["allocation"].append(last_rec[1])
            # advance to t_next with exact completions
            finished, j_run, prog = self._advance(
                alloc, t, t_next, rem, rate, inv_s, ready, attained, tr, w
            )
            self._isolated(tr, w, self._active_apps(release, done, t, w), app_dmax, j_run, prog)
            for j in finished:
                done[j] = True
                n_done += 1
                del alloc[j], key[j]
                left[gid[j]] -= 1
                if left[gid[j]] == 0 and gid[j] in nxt:
                    for k in nxt[gid[j]]:
                        release[k] = max(w.submit[k], tr.finish[j])
            if finished:
                fixed = False
                if self.progress is not None:
                    self.progress(len(finished))
            if not t_next > t:
                raise InvariantError(f"time did not advance at t={t}")
            t = t_next
            decisions += 1
            if decisions > cfg.max_decisions:
                raise OptionError("max_decisions", f"simulation exceeded {cfg.max_decisions}")
        tr.t_end = float(np.nanmax(tr.finish))
        if not np.allclose(tr.done_iters, w.iters, rtol=1e-9, atol=1e-6):
            raise InvariantError("work completed differs from the total work")
        return tr

    # -- pieces ---------------------------------------------------------------------------------
    @staticmethod
    def _grid(t0: float, ev: float, t: float, R: float) -> float:
        """First decision time k R + t0 >= ev (and > t)."""
        k = np.ceil((ev - t0) / R - 1e-12)
        return max(t0 + k * R, t + R)

    @staticmethod
    def _next_completion(alloc, t, rem, rate, ready) -> float:
        if not alloc:
            return np.inf
        j = np.fromiter(alloc, np.int64)
        return float(np.min(np.maximum(ready[j], t) + rem[j] / rate[j]))

    def _advance(self, alloc, t, t1, rem, rate, inv_s, ready, attained, tr, w) -> list[int]:
        """Progress every running job over [t, t1]; completions stamped at their exact times."""
        if not alloc:
            return [], np.zeros(0, np.int64), np.zeros(0)
        j = np.fromiter(alloc, np.int64)
        begin = np.maximum(ready[j], t)
        finish_at = begin + rem[j] / rate[j]
        fin = finish_at <= t1 * (1 + 1e-15)
        stop = np.where(fin, finish_at, t1)
        prog_t = np.maximum(stop - begin, 0.0)
        prog = np.where(fin, rem[j], rate[j] * prog_t)
        held = np.maximum(stop - t, 0.0)
        k = np.array([alloc[int(x)].size for x in j], dtype=float)
        rem[j] -= prog
        rem[j[fin]] = 0.0
        tr.done_iters[j] += prog
        tr.held[j] += held
        tr.run[j] += prog_t
        tr.score_time[j] += prog_t * inv_s[j]
        attained[j] += held * k
        tr.gpu_seconds[j] += held * k
        tr.busy_gpu_seconds += float(np.sum(held * k))
        tr.finish[j[fin]] = self._stamp(finish_at[fin], tr.t0)
        return j[fin].tolist(), j, prog

    def _stamp(self, at: np.ndarray, t0: float) -> np.ndarray:
        """Completion stamps: exact, or the first grid point t0 + k R >= the exact time."""
        if self.cfg.stamping == "exact":
            return at
        R = self.cfg.round_length
        return t0 + np.ceil((at - t0) / R - 1e-9) * R

    @staticmethod
    def _active_apps(release, done, t, w) -> int:
        act = (release <= t) & ~done
        return max(int(np.unique(w.app[act]).size), 1)

    def _isolated(self, tr, w, m, app_dmax, j, prog) -> None:
        """Gavel's t_isolated += iters_done x t_iter_serial / min(R_C / m, d_max), per app and per job
        (t_iter_serial = t_iter x N_j: the trace's t_iter is per iteration on the job's N_j GPUs)."""
        if j.size:
            serial = prog * w.t_iter[j] * w.demand[j]
            np.add.at(tr.t_isolated, w.app[j], serial / np.minimum(self.G / m, app_dmax[w.app[j]]))
            tr.t_isolated_job[j] += serial / np.minimum(self.G / m, w.demand[j])

    def _check(self, new: dict[int, np.ndarray], active: np.ndarray, w: Workload) -> None:
        """Decision sanity (always cheap checks; full invariants in debug mode)."""
        js = np.fromiter(new, np.int64, len(new))
        size = np.fromiter((g.size for g in new.values()), np.int64, len(new))
        bad = (size != w.demand[js]) & ~(self.allocates & (size >= 1) & (size <= w.demand[js]))
        if bad.any():
            j, n = int(js[bad][0]), int(size[bad][0])
            raise InvariantError(f"job {w.ids[j]} got {n} GPUs, demand {w.demand[j]}")
        if not self.cfg.debug:
            return
        allg = np.concatenate([g for g in new.values()]) if new else np.zeros(0, np.int64)
        if np.unique(allg).size != allg.size:
            raise InvariantError("a GPU is held by two jobs")
        if allg.size > self.G or (allg.size and (allg.min() < 0 or allg.max() >= self.G)):
            raise InvariantError("busy GPUs exceed the cluster")
        act = set(active.tolist())
        for j in new:
            if j not in act:
                raise InvariantError(f"job {w.ids[j]} placed but not active")
