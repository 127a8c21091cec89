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
  (THEMIS: the next per-allocation lease expiry), or on the grid when it has no ``next_event``;
* one decision clock (``DriverConfig.tick`` > 0, THEMIS' experiments: 60 s): every scheduler, queue or
  allocating, decides only at ticks ``t0 + k * tick`` and only at the first tick at or after an event
  (an arrival or a released phase, a completion, the scheduler's ``next_event`` / ``next_change``:
  lease ends, priority changes), so events within one tick are decided together (at most one
  decision per tick). A queue decision that changed the holdings is probed at once (the policy asked
  again with the new holdings, nothing applied): when it would keep them, the decision is a fixed
  point and the next one waits for the next event; otherwise (or for a policy that draws per round)
  the next tick decides again. ``tick = 0``: each scheduler's own clock, as above.

Incremental decisions (``DriverConfig.incremental``, on by default; off = place every job afresh at every
decision, the reference the tests compare with): a decision whose queue is the previous one's, in the
same order, reuses the previous decision without calling the policy when that is exactly what the
policy would return: a *resumable* policy (its picks depend on the queue only:
``IncrementalPolicy.resumable``), or a *repeatable* policy (``IncrementalPolicy.repeatable``: not
seeded by the round) whose previous decision changed nothing (same queue, same holdings: same
input). Otherwise a resumable policy continues from the previous decision (``place(...,
previous=...)``: the jobs heading both processing orders keep their picks).

Each row of the rounds frame carries ``place_seconds``: the wall seconds spent in the placement
policy's ``place`` calls for that decision (one ``perf_counter`` pair per call; 0 when the previous
decision was kept, or when the scheduler allocates itself; a probe or a debug re-check counts too).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from time import perf_counter

import numpy as np

from fairplace.core.domain import Cluster
from fairplace.core.errors import ExtensionError, OptionError
from fairplace.solvers.placement.job_queue import JobTable

from . import accounting as acc
from .accounting import Timeline
from .contract import Contract

# (GRID_ORIGINS, STAMPINGS, SimConfig: re-exported, the old import path of .driver_config's names)
from .driver_config import GRID_ORIGINS, STAMPINGS, DriverConfig, SimConfig  # noqa: F401
from .progress_step import ProgressStep
from .protocols import SchedView
from .run_state import RunState
from .running import HeldGPUs, InvariantError, check_holdings
from .slowdown_model import SlowdownModel
from .workload import Workload

__all__ = ["Driver", "InvariantError", "Timeline"]


class Driver(SlowdownModel, ProgressStep):
    """Runs one simulation; ``policy`` follows :class:`.protocols.PlacementPolicy`
    (``place(ClusterState, queue) -> Decision``) and ``scheduler`` the :mod:`.schedulers` protocol.
    Its runtime model is :class:`.slowdown_model.SlowdownModel`, its step between two decisions
    :class:`.progress_step.ProgressStep`."""

    def __init__(
        self,
        workload: Workload,
        cluster: Cluster,
        scores: Mapping[str, np.ndarray],
        scheduler,
        policy,
        state_factory: Callable,
        config: DriverConfig = DriverConfig(),
        progress: Callable[[int], None] | None = None,
    ):
        self.w, self.cluster, self.scores = workload, cluster, scores
        self.scheduler, self.policy, self.cfg = scheduler, policy, config
        self.state_factory, self.progress = state_factory, progress
        self.G = len(cluster)
        self.raw = {c: cluster.pm_vector(c) for c in set(workload.cls)}
        # the raw scores as one matrix (a row per class) and each job's row: rates set in one step
        classes = sorted(self.raw, key=str)  # str names (None: PM-scores without classes)
        self.raw_rows = np.array([self.raw[c] for c in classes], float).reshape(len(classes), -1)
        row = {c: k for k, c in enumerate(classes)}
        self.cls_row = np.fromiter(map(row.__getitem__, workload.cls), np.int64, len(workload))
        self.mi, self.ri = cluster.machine_index, cluster.rack_index
        self.allocates = bool(getattr(scheduler, "allocates", False))
        #: the decision grid: the common tick, else the round
        self.R = config.tick if config.tick > 0 else config.round_length
        # IncrementalPolicy's members, optional: a policy without them is asked at every decision
        self.resumable = bool(getattr(policy, "resumable", False))
        #: same input (queue, holdings, cluster, scores) -> same decision
        self.repeatable = bool(getattr(policy, "repeatable", False))
        if hasattr(scheduler, "move_cost"):  # a restart-aware scheduler prices moves as the run
            scheduler.move_cost = config.checkpoint + config.restart
        if hasattr(scheduler, "bind"):
            scheduler.bind(cluster)
        if (workload.demand > self.G).any():
            k = int(np.flatnonzero(workload.demand > self.G)[0])
            raise OptionError(
                "gpus", f"job {workload.ids[k]} needs {workload.demand[k]} GPUs > cluster {self.G}"
            )

    # -- helpers (the slowdowns: .slowdown_model) ---------------------------------------------
    def _groups(self):
        """The phase groups (one per app and phase): (each job's group, jobs per group, group ->
        the jobs of its app's next phase, whether a job waits for its app's previous phase), from
        the sorted group keys ``app * (max phase + 2) + phase`` (no Python step per job)."""
        w = self.w
        key = w.app * (int(w.phase.max()) + 2) + w.phase if len(w) else np.zeros(0, np.int64)
        keys, gid = np.unique(key, return_inverse=True)
        gid = gid.reshape(-1)
        left = np.bincount(gid, minlength=keys.size).astype(np.int64)
        has_next = np.flatnonzero(np.isin(keys + 1, keys))  # (the next phase: the next key)
        nxt = {}
        if has_next.size:
            members = np.argsort(gid, kind="stable")  # each group's jobs, ascending
            ends = np.cumsum(left)
            for g, h in zip(has_next.tolist(), (has_next + 1).tolist(), strict=True):
                nxt[g] = members[ends[h] - left[h] : ends[h]]
        blocked = (w.phase > 0) & np.isin(key - 1, keys)
        return gid, left, nxt, blocked

    # -- main loop -----------------------------------------------------------------------------
    def run(self) -> Timeline:
        """Decide, apply, advance until every tracked job has finished (the steps below)."""
        s = RunState.start(self.w, self._groups(), self.cfg.grid_origin)
        s.gpu_texts(self.G)
        self.contract = Contract(
            self.w.ids, self.w.demand, self.G, self.scheduler, self.policy, self.allocates,
            self.cfg.max_stalled, self.cfg.checkpoint + self.cfg.restart,
        )  # fmt: skip
        R, exact = self.R, self.allocates and not self.cfg.tick > 0
        while s.n_done < s.n_tracked:
            s.release_due(self.w)
            if s.active.size == 0:  # idle: the next arrival (THEMIS alone: its exact time)
                nxt_release = s.pending.next()
                s.t = nxt_release if exact else acc.grid(s.t0, nxt_release, s.t, R)
                continue
            view = self._view(s)
            new, new_key, record, placed = self._decide(s, view)
            counts = self._apply(s, new, new_key, placed)
            changed = bool(any(counts))
            if self.cfg.tick > 0:
                t_next = self._tick_horizon(s, changed)
            else:
                t_next = self._horizon(s, view, changed)
                s.fixed = not changed
            self._record(s, t_next, counts, record, placed)
            self._advance(s, t_next)
            if not t_next > s.t:
                raise InvariantError(f"time did not advance at t={s.t}")
            s.t = t_next
            s.decisions += 1
            if s.decisions > self.cfg.max_decisions:
                raise OptionError("max_decisions", f"simulation exceeded {self.cfg.max_decisions}")
        tr, w = s.tr, self.w
        tr.t_end = float(np.nanmax(tr.finish))
        done = ~np.isnan(tr.finish)  # every tracked job; untracked ones may still run
        if not np.allclose(tr.done_iters[done], w.iters[done], rtol=1e-9, atol=1e-6):
            raise InvariantError("work completed differs from the total work")
        return tr

    # -- the steps of a decision ---------------------------------------------------------------
    def _view(self, s: RunState) -> SchedView:
        """What the scheduler sees at ``s.t``."""
        w, run = self.w, s.run
        running = run.mask.view()  # the driver's mask, read only (O(1), not a copy per decision)
        running.flags.writeable = False
        return SchedView(
            t=s.t,
            active=s.active,
            arrival=s.release,
            demand=w.demand,
            remaining=s.rem,
            total=w.iters,
            t_iter=w.t_iter,
            attained=s.attained,
            running=running,
            app=w.app,
            gpus=self.G,
            round_length=self.cfg.round_length,
            held=s.tr.held,
            t_isolated=s.tr.t_isolated_job,
            waiting_since=s.waiting_view(),
        )

    def _decide(self, s: RunState, view: SchedView):
        """The next holdings (job -> GPU indices, job -> sorted tuple), the allocation to record and
        the placement's arrays (:attr:`.Contract.placed`; None for an allocating scheduler): the
        allocating scheduler's, or the policy's on the scheduler's order (the previous decision
        again, without asking, when the policy would return it)."""
        run, ck, t0, R = s.run, self.contract, s.t0, self.R
        if self.allocates:
            new = self.scheduler.allocate(
                view,
                self.w,
                self.cluster,
                self.scores,
                HeldGPUs(run.alloc),
                lambda x: t0 + np.ceil((x - t0) / R - 1e-12) * R,
            )
            return (*ck.allocation(new, s.is_active), None)
        order = ck.order(self.scheduler.order(view), s.is_active)
        same = (
            self.cfg.incremental
            and s.last_order is not None
            and (self.resumable or (self.repeatable and s.fixed))
            and np.array_equal(order, s.last_order)
        )
        if same:  # the policy would return the previous decision: keep it
            record, new_key, new = s.last_rec[0], run.key, run.alloc
            if s.last_placed is not None and s.last_placed[0].size != len(new_key):
                s.last_placed = None  # (the arrays of other holdings: read the dicts)
            if self.cfg.debug:
                self._recheck(order, s, record)
        else:  # record: sorted tuples of ints by job id (JSON arrays)
            s.last_dec, new_key, new, record, s.last_placed = self._place(order, s, s.last_dec)
            # the holdings by job id, as the next state shows them: the record itself until a job
            # finishes (then a copy: the driver never changes a record, :meth:`_finish`)
            s.held_ids, s.held_own = record, False
        s.last_order = order
        return new, new_key, record, s.last_placed

    def _apply(self, s: RunState, new, new_key, placed=None) -> tuple[int, int, int]:
        """Hold ``new`` (``placed``: its arrays, :attr:`.Contract.placed`): preempted jobs stop,
        started / moved ones pay their restart and get their rate; (preempted, started,
        migrated)."""
        w, t = self.w, s.t
        g, c, was, chg = s.run.apply(new, new_key, placed)
        if self.cfg.debug:
            check_holdings(s.run, self.G)
        if g.size:
            s.tr.preemptions[g] += 1
            s.waiting_since[g] = t
            s.rate[g] = 0.0
        if c.size:
            self._restart(c, was, t, s.tr, s.started, s.ready)
            if chg is None:
                k, sd = self.slowdowns(c, list(map(new.__getitem__, c.tolist())))
            else:  # the changed jobs' GPUs from the placement's arrays
                _, sizes, flat = placed
                k = sizes[chg]
                sd = self._slowdowns(c, k, flat[np.repeat(chg, sizes)])
            s.rate[c] = k / w.demand[c] / (w.t_iter[c] * sd)  # elastic if k < N_j
            s.inv_s[c] = 1.0 / sd
        n_was = int(np.count_nonzero(was))
        return int(g.size), was.size - n_was, n_was

    def _horizon(self, s: RunState, view: SchedView, changed: bool) -> float:
        """The next decision: the next grid point, or further when nothing can change before it
        (an allocating scheduler: its resource-available events)."""
        t, t0, R, ck, run = s.t, s.t0, self.cfg.round_length, self.contract, s.run
        t_next = t + R
        nxt_rel = s.pending.next()
        if self.allocates:  # resource-available events: completions, arrivals, the grid
            nxt_ev = getattr(self.scheduler, "next_event", None)  # per-allocation leases
            t_next = min(
                ck.time(nxt_ev(t), "next_event(t)", t)
                if nxt_ev
                else t0 + (np.floor((t - t0) / R + 1e-9) + 1) * R,
                nxt_rel,
                acc.next_completion(run.idx, t, s.rem, s.rate, s.ready),
            )
        elif self.cfg.skip_quiet and not changed and s.fixed:
            ev = min(
                nxt_rel,
                acc.next_completion(run.idx, t, s.rem, s.rate, s.ready),
                ck.time(self.scheduler.next_change(view), "next_change(view)"),
            )
            if np.isfinite(ev) and ev > t + R:
                t_next = acc.grid(t0, ev, t, R)
        return t_next

    def _tick_horizon(self, s: RunState, changed: bool) -> float:
        """One clock (``tick`` > 0): the first tick after ``s.t`` at or after the next event (an
        arrival or released phase, a completion, the scheduler's ``next_event`` (allocating) or
        ``next_change`` on the decision's outcome (queue)); the next tick when a queue decision is
        not known to be a fixed point (:meth:`_probe`). Sets ``s.fixed``."""
        t, ck, run = s.t, self.contract, s.run
        nxt_rel = s.pending.next()
        ev = min(nxt_rel, acc.next_completion(run.idx, t, s.rem, s.rate, s.ready))
        if self.allocates:
            s.fixed = not changed
            nxt_ev = getattr(self.scheduler, "next_event", None)
            if nxt_ev is not None:
                ev = min(ev, ck.time(nxt_ev(t), "next_event(t)", t))
        else:
            s.fixed = not changed or self._probe(s)
            if not (s.fixed and self.cfg.skip_quiet):
                return t + self.R
            view = self._view(s)  # after the decision: what the scheduler sees until the next one
            ev = min(ev, ck.time(self.scheduler.next_change(view), "next_change(view)"))
        return acc.grid(s.t0, ev, t, self.R) if np.isfinite(ev) else t + self.R

    def _probe(self, s: RunState) -> bool:
        """A queue decision that changed the holdings is a fixed point: the scheduler's order on the
        new holdings and the policy on that order keep them (nothing applied; a policy that draws
        per round is never probed). The probed order becomes the previous queue."""
        if not self.repeatable:
            return False
        order = self.contract.order(self.scheduler.order(self._view(s)), s.is_active)
        dec, new_key, _, _, _ = self._place(order, s, s.last_dec)
        if new_key != s.run.key:
            return False
        s.last_order, s.last_dec = order, dec
        return True

    def _record(self, s: RunState, t_next: float, counts, record, placed=None) -> None:
        """One row of the rounds table (the allocation as JSON, re-encoded only when it changed;
        from ``placed``, the placement's arrays, when given)."""
        n_pre, n_start, n_mig = counts
        run, r, R = s.run, s.tr.rounds, self.R
        r["t"].append(s.t)
        r["span"].append(max(int(round((t_next - s.t) / R)), 0 if self.allocates else 1))
        r["busy"].append(run.busy)
        r["queue"].append(int(s.active.size - len(run)))
        r["running"].append(len(run))
        r["started"].append(n_start)
        r["preempted"].append(n_pre)
        r["migrated"].append(n_mig)
        r["place_seconds"].append(s.place_seconds)
        s.place_seconds = 0.0
        r["allocation"].append(s.allocation_json(record, placed))

    # -- pieces ---------------------------------------------------------------------------------
    def _place(self, order, s: RunState, last_dec):
        """Ask the policy: (its decision, new holdings as sorted tuples (by job index, twice), the
        allocation to record, its arrays), checked against the contract
        (:meth:`.Contract.placement`, :attr:`.Contract.placed`). The state shows the holdings by
        job id (``s.held_ids``, never changed afterwards: a policy may keep it). The wall seconds
        of the ``place`` call are added to ``s.place_seconds`` (the rounds frame's
        ``place_seconds``)."""
        state = self.state_factory(
            self.cluster,
            self.scores,
            s.held_ids,
            round=int(round((s.t - s.t0) / self.R)),
        )
        s.held_own = False  # (shown to the policy: :meth:`_finish` changes a copy)
        queue = self.job_table.queue(list(map(s.jobs.__getitem__, order.tolist())), order, True)
        t_place = perf_counter()
        if self.resumable and self.cfg.incremental:
            dec = self.policy.place(state, queue, previous=last_dec)
        else:
            dec = self.policy.place(state, queue)
        s.place_seconds += perf_counter() - t_place
        return (dec, *self.contract.placement(dec), self.contract.placed)

    @cached_property
    def job_table(self) -> JobTable:
        """The workload's ids, demands, classes, models and L across machines (the L each job's
        object carries, :meth:`Workload.jobs`) as arrays, made at the first placement: each round's
        queue carries its rows, which a PM-First / PAL round reads instead of each job."""
        w = self.w
        return JobTable(w.ids, w.demand, w.cls, w.model, w.l_machine.astype(float).tolist())

    def _recheck(self, order, s: RunState, record) -> None:
        """debug: a reused decision (same queue) is what the policy returns afresh now."""
        t = s.t
        fresh = self._place(order, s, None)[3]
        if list(fresh.items()) != list(record.items()):
            raise ExtensionError(
                "placement",
                f"{self.contract.policy} returned another decision for the same queue at "
                f"t = {t:g} s than the one the driver reused: a policy that is resumable must "
                "depend on the queue only (debug check)",
            )

    def _restart(self, c, was, t, tr: Timeline, started, ready) -> None:
        """Jobs ``c`` start or move at ``t``: a move or a resume pays checkpoint + restart, a first
        start is free (and stamps the start)."""
        first = ~was & ~started[c]
        cost = np.where(first, 0.0, self.cfg.checkpoint + self.cfg.restart)
        tr.migrations[c[was]] += 1
        started[c[first]] = True
        tr.start[c[first]] = t
        tr.overhead[c] += cost
        ready[c] = t + cost
