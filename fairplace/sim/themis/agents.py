"""THEMIS' AGENTs in the driver (:mod:`fairplace.sim.themis`): how each app that can use more GPUs
describes itself to the ARBITER at a decision (:class:`Agents`: §4.3), all the decision's wanting
apps in one batched pass: each app's current rho from its running jobs' numbers alone
(:func:`~fairplace.formulations.ftf.running_rho`), its
:class:`~fairplace.core.domain.AgentApp` and FTF model built only when the arbiter reads them
(:class:`AgentState`: the bidders, apps tied on rho, leftover recipients without a cached
table).

The agents keep per app what does not move between rounds (its phases from the workload; its running
jobs and their optimiser while the jobs make no progress); N_avg comes from
:class:`~fairplace.sim.themis.apps.StepAverage`.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any, NamedTuple

import numpy as np

from fairplace.core.domain import AgentApp, AgentJob, Cluster
from fairplace.core.errors import OptionError
from fairplace.formulations.agents import machine_gpus, optimizer_of
from fairplace.formulations.ftf import FTFModel, IdealTime, ideal_time
from fairplace.formulations.hyperopt import SuccessiveHalving, model_job, model_job_of
from fairplace.formulations.phase_times import keep_works
from fairplace.formulations.running_app import RunningApp

from ..protocols import SchedView
from .agent_state import AgentState, filled_in
from .apps import StepAverage
from .outcome import AppState


def phases_ideal(phases: list[tuple[float, int]], r_c: int, n_avg: float) -> float:
    """:func:`~fairplace.formulations.ftf.ideal_time` of the ``themis`` variant with ``phases``
    ((W_p, d_p), ...): sum_p W_p / min(R_C / N_avg, d_p), the same terms summed in order."""
    share = r_c / max(n_avg, 1.0)
    return float(sum([w / (share if share <= d else d) for w, d in phases]))


class _Rows(NamedTuple):
    """The running jobs of one decision's wanting apps, app after app (:meth:`Agents.states`):
    app k's are entries lo:hi of the arrays and lists (bytes 8 lo:8 hi of the bytes)."""

    run: bytes  # the jobs' indices (int64)
    left: bytes  # their iterations left (float64)
    rem: np.ndarray  # their iterations left
    serial: np.ndarray  # t_iter x N_j: serial seconds per iteration
    work: list  # iterations left x serial seconds per iteration (AgentJob.work)
    phase: np.ndarray
    demand: np.ndarray


def _by_app(owner: np.ndarray, apps: list[int]) -> list[np.ndarray]:
    """The indices g with ``owner[g] == a`` (ascending) for each app a of ``apps``: one stable
    sort of ``owner``, each app's run found by bisection."""
    order = owner.argsort(kind="stable")
    keys = owner[order]
    lo = keys.searchsorted(apps, "left").tolist()
    hi = keys.searchsorted(apps, "right").tolist()
    return [order[i:j] for i, j in zip(lo, hi, strict=True)]


class RunningJobs(NamedTuple):
    """What an app's AGENT keeps of its running jobs while they make no progress (:class:`Agents`)."""

    run: bytes  # the running jobs' indices (``np.ndarray.tobytes``)
    left: bytes  # their iterations left, bitwise
    jobs: tuple[AgentJob, ...]  # the running jobs as AgentJobs
    d_max: int  # the most GPUs one of them asks for
    optimizer: Any = None  # the app's optimiser, built on first use (:meth:`Agents.state`)


class Agents:
    """THEMIS' AGENTs: the :class:`AppState` of each bidding app (T_id variant ``rho_variant``)."""

    def __init__(self, rho_variant: str, steps: StepAverage):
        self.rho_variant = rho_variant
        self.steps = steps  # active apps over time, for N_avg
        self._statics: dict = {}  # per app: its agent description's workload-only parts
        self._jobs: dict[int, RunningJobs] = {}  # per app: its running jobs as last described
        self._future: dict = {}  # per app: its optimisers' later-phase memo (future_memo)
        self._model_job: dict = {}  # per app: (its running jobs, their model job)
        self._works: dict = {}  # per app: (its running jobs, their progress, works, LPT memo)
        self._place_lists: dict = {}  # per (cluster, class): :meth:`_places`
        self._bundles: dict = {}  # per app: the GPUs it held just before, described (:meth:`_bundle`)
        t_id = IdealTime(variant=rho_variant)  # checked once
        if t_id.reads_work_left:  # THEMIS' variants (THEMIS_RHO_VARIANT) read W only
            raise OptionError("rho_variant", f"{rho_variant!r} is not a THEMIS T_id variant")
        self._ideal_fields = dict(t_id.__dict__)

    def states(
        self, apps, view: SchedView, w, owner, before, room, cluster: Cluster, running: dict
    ) -> list[AppState]:
        """:meth:`state` of every app of ``apps`` (indices; ``room``: per app index), with the GPUs
        each holds (``owner``) and held just before (``before``) grouped once, and their running
        jobs' numbers read in one NumPy pass for all of them (:class:`_Rows`)."""
        none = np.zeros(0, np.int64)
        runs = [running[a] for a in apps]
        every = np.concatenate(runs) if runs else none
        rem = view.remaining[every]
        serial = w.t_iter[every] * w.demand[every]
        rows = _Rows(
            every.astype(np.int64, copy=False).tobytes(), rem.tobytes(), rem, serial,
            (rem * serial).tolist(), w.phase[every], w.demand[every],
        )  # fmt: skip
        dec = (view, w, cluster, len(cluster), machine_gpus(cluster), rows)
        out, lo, rooms = [], 0, room[apps].tolist()
        for a, run, r, held, had in zip(
            apps, runs, rooms, _by_app(owner, apps), _by_app(before, apps), strict=True
        ):
            hi = lo + run.size
            out.append(self.state(a, held, had if had.size else None, r, dec, lo, hi))
            lo = hi
        return out

    def state(self, a: int, held_idx, had, room: int, dec: tuple, lo: int, hi: int) -> AppState:
        """App ``a``'s :class:`AgentState` at the decision ``dec`` (:meth:`states`: its view,
        workload, cluster, R_C, machine GPUs and running jobs' rows): the GPUs it holds (indices
        ``held_idx``), its ``room`` and its current rho with the GPUs it held just before
        (indices ``had``; None: none) from its numbers alone (:meth:`_pricer`, also what it bids
        with); its GPU ids, agent description and FTF model (:meth:`_describe`) are built when the
        arbiter first reads them. Its running jobs (its
        :func:`~fairplace.sim.themis.apps.running_jobs`) are ``rows[lo:hi]``."""
        view, w, cluster, _, _, rows = dec
        st = self._statics.get(a) or self._static(a, w)
        out = object.__new__(AgentState)  # an AppState filled in directly (:func:`filled_in`)
        pricer = self._pricer(a, st, dec, lo, hi)
        out.__dict__.update(room=room, rho=None, rho_spread=None, _id=w.app_ids[a],
                            _cls=st["cls"], _t_now=view.t, _held_idx=held_idx,
                            _cluster=cluster, _pricer=pricer)  # fmt: skip
        out.__dict__["_describe"] = lambda: self._describe(a, view, w, out.held, cluster, rows,
                                                           lo, hi)  # fmt: skip
        if had is not None:
            n, sp, vmax = self._bundle(a, had, cluster, st["cls"])
            out.__dict__["rho"] = pricer.rho(n, sp, vmax)
            out.__dict__["rho_spread"] = sp
        return out

    def _bundle(self, a: int, had: np.ndarray, cluster: Cluster, cls) -> tuple[int, int, float]:
        """(n, spread, max V) of the GPU indices ``had`` (``bundle_rho``'s: spread 0 one machine,
        1 one rack, else 2; S = L(spread) x max V with L = 1), kept per app while its GPUs are the
        same (an app keeps its GPUs over many decisions)."""
        key = had.tobytes()
        got = self._bundles.get(a)
        if got is not None and got[0] == key and got[1] is cluster:
            return got[2]
        mi, ri, pm = self._places(cluster, cls)
        idx = had.tolist()
        sp = 0 if len({mi[g] for g in idx}) == 1 else 1 if len({ri[g] for g in idx}) == 1 else 2
        out = (len(idx), sp, 1.0 * max([pm[g] for g in idx]))
        self._bundles[a] = (key, cluster, out)
        return out

    def _pricer(self, a: int, st: dict, dec: tuple, lo: int, hi: int) -> RunningApp:
        """App ``a`` priced from its numbers alone (:class:`RunningApp`: the numbers
        ``FTFModel.rho`` and the rho table of its :meth:`_describe` model give): its running
        phase's works (kept, with their per-count times, while its running jobs make no
        progress), its later phases with its model job (kept per app, as its optimisers keep
        them) and T_id (:func:`~fairplace.formulations.ftf.ideal_time`), without an object per
        job or app."""
        view, w, _, r_c, mg, rows = dec
        t_start = st.get("t_start")
        if t_start is None:
            t_start = self._t_start(st, view)
        many = st["many"]
        run_key, left = rows.run[8 * lo : 8 * hi], rows.left[8 * lo : 8 * hi]
        kept = self._works.get(a)
        if kept is None or kept[0] != run_key or kept[1] != left:  # its jobs moved
            works = rows.work[lo:hi]
            works.sort(reverse=True)
            if kept is not None and kept[0] == run_key:  # the same jobs: the same demands
                d_max = kept[4]
            else:
                d_max = int(rows.demand[lo:hi].max())
            kept = self._works[a] = (run_key, left, works, {}, d_max)
        mj, memo, cur = (0.0, 1.0), None, 0
        if many:  # successive halving: the later phases' k copies of the model job
            same, mj = self._model_job.get(a, (None, None))
            if same != run_key:  # other jobs: model_job of them, as :meth:`_describe` keeps it
                mj = model_job_of(rows.serial[lo:hi].tolist(), [1.0] * (hi - lo))
                self._model_job[a] = (run_key, mj)
            memo = self._future.setdefault(a, {})
            if len(memo) > 4096:  # bounded: a long-lived app prices many count ranges
                memo.clear()
            cur = st["phase_pos"][int(rows.phase[lo])]
        dmax = st["dmax"]
        n_avg = max(1.0, self.steps.mean(t_start, view.t))
        if st["t_id_phases"]:
            ideal = phases_ideal(st["t_id_phases"], r_c, n_avg)
        else:
            ideal = ideal_time(self.rho_variant, st["work_total"], 0.0, dmax, r_c, n_avg)
        return RunningApp(
            float(view.t - t_start), kept[2], kept[4], st["phases"] if many else (), cur, mj,
            ideal, r_c, st["locality"], mg, dmax, kept[3], memo,
        )  # fmt: skip

    def _describe(
        self, a: int, view: SchedView, w, held: tuple, cluster: Cluster, rows, lo: int, hi: int
    ) -> tuple[AgentApp, FTFModel]:
        """App ``a``'s AGENT description (:meth:`agent`) and FTF model (built once for the
        arbiter's rho table, its tie-break and its leftover rho), its optimiser kept while its
        running jobs make no progress."""
        app = self.agent(a, view, w, held, rows, lo, hi)
        jobs = self._jobs[a]
        if jobs.optimizer is None:  # the optimiser's view changes only with the running jobs
            memo = self._future.setdefault(a, {})
            if len(memo) > 4096:  # bounded: a long-lived app prices many count ranges
                memo.clear()
            same, mj = self._model_job.get(a, (None, None))
            if same != jobs.run and app.stopping == "successive-halving":  # other jobs
                mj = model_job(app.jobs, app.future)
                self._model_job[a] = (jobs.run, mj)
            opt = optimizer_of(app, memo, mj)
            if isinstance(opt, SuccessiveHalving) and opt.mode == "actual":
                # its running phase's works (iters left x t_iter: AgentJob.work), longest first
                work = sorted(rows.work[lo:hi], reverse=True)
                keep_works(opt.phase_memo, opt.current_phase, work)
            self._jobs[a] = jobs = jobs._replace(optimizer=opt)
        return app, self._model(app, cluster, jobs.optimizer)

    def _model(self, app: AgentApp, cluster: Cluster, opt) -> FTFModel:
        """:func:`~fairplace.formulations.agents.ftf_model` (``app``, ``cluster``, ``opt``), its
        T_id and the model filled in directly (:func:`filled_in`; T_id's fields from an IdealTime of
        the agents' variant that its constructor checked once)."""
        t_id = filled_in(IdealTime, **self._ideal_fields)
        t_id.__dict__.update(app.t_id)
        return filled_in(
            FTFModel,
            optimizer=opt,
            d_max=int(app.d_max),
            elapsed=float(app.t_now - app.t_start),
            locality=tuple(app.locality),
            t_id=t_id,
            work_total=app.work_total,
            demand_max=app.demand_max,
            split=app.split,
            machine_gpus=machine_gpus(cluster),
        )

    def _places(self, cluster: Cluster, cls) -> tuple[list, list, list]:
        """Per GPU of ``cluster`` its machine, its rack and its PM-score for ``cls`` as lists (kept
        per cluster and class: the decision cluster does not change)."""
        key = (id(cluster), cls)
        out = self._place_lists.get(key)
        if out is None or out[0] is not cluster:
            out = self._place_lists[key] = (
                cluster, cluster.machine_index.tolist(), cluster.rack_index.tolist(),
                cluster.pm_vector(cls).tolist(),
            )  # fmt: skip
        return out[1:]

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
                "phase_pos": {int(p): k for k, p in enumerate(np.unique(ph).tolist())},
                "phases": tuple(phases),
                "per_phase": tuple(per_phase),
                "work_total": float(np.sum(w.iters[mine] * w.t_iter[mine] * w.demand[mine])),
                "locality": (1.0, float(w.l_machine[j0]), float(w.l_rack[j0])),
                "cls": w.cls[j0],
                "model": w.model[j0],
                "many": len(phases) > 1,
                "dmax": int(self._dmax(w)[a]),
                "t_id_phases": [(float(w), int(d)) for w, d in per_phase]
                if self.rho_variant == "themis"
                else [],  # fmt: skip
            }
            out["fields"] = {  # AgentApp's defaults, then what the workload fixes (:meth:`agent`)
                **{f.name: f.default for f in fields(AgentApp) if f.default is not MISSING},
                "id": w.app_ids[a],
                "locality": out["locality"],
                "cls": out["cls"],
                "model": out["model"],
                "work_total": out["work_total"],
                "demand_max": int(self._dmax(w)[a]),
            }
        return out

    def agent(self, a: int, view: SchedView, w, held: tuple, rows, lo: int, hi: int) -> AgentApp:
        """App ``a`` as its AGENT describes it at ``view.t`` (:class:`AgentApp`): the running jobs of
        its current phase (``rows[lo:hi]``: its :func:`~fairplace.sim.themis.apps.running_jobs`), its successive-halving
        phases, T_id under ``rho_variant`` with N_avg so far."""
        st = self._static(a, w)
        cur = int(rows.phase[lo])
        run_key, left = rows.run[8 * lo : 8 * hi], rows.left[8 * lo : 8 * hi]
        jobs = self._jobs.get(a)
        # the running jobs or their progress changed: described again
        if jobs is None or (jobs.run, jobs.left) != (run_key, left):
            self._jobs[a] = jobs = RunningJobs(
                run_key,
                left,
                self._agent_jobs(jobs, run_key, left, rows, lo, hi),
                int(rows.demand[lo:hi].max()),
            )
        t_start = self._t_start(st, view)
        many = len(st["phases"]) > 1
        # AgentApp(**fields) filled in directly, as AgentJob.many does: the frozen __init__ sets
        # each of its fields through object.__setattr__, for every wanting app at every decision
        return filled_in(
            AgentApp,
            **dict(  # the fields that do not move (its workload's, the defaults), then the rest
                st["fields"],
                jobs=jobs.jobs,
                t_start=t_start,
                t_now=view.t,
                d_max=jobs.d_max,
                stopping="successive-halving" if many else "none",
                phases=st["phases"] if many else (),
                current_phase=st["phase_pos"][cur] if many else 0,
                t_id={
                    "variant": self.rho_variant,
                    "n_avg": max(1.0, self.steps.mean(t_start, view.t)),
                    "phases": st["per_phase"] if self.rho_variant == "themis" else (),
                },
                held=held,
            ),
        )

    @staticmethod
    def _agent_jobs(
        last: RunningJobs | None, run_key: bytes, left: bytes, rows, lo: int, hi: int
    ) -> tuple[AgentJob, ...]:
        """The running jobs (``rows[lo:hi]``) as :class:`AgentJob`s. With the same jobs as
        ``last`` (the app's previous entry), a job whose iterations left are bitwise the same
        (``left``: their bytes) keeps its AgentJob: only the jobs that ran since are built again
        (an app runs a few of its many jobs)."""
        if last is None or last.run != run_key:
            return AgentJob.many(rows.rem[lo:hi].tolist(), rows.serial[lo:hi].tolist())
        was = last.left
        moved = [k for k in range(hi - lo) if was[8 * k : 8 * k + 8] != left[8 * k : 8 * k + 8]]
        out = list(last.jobs)
        fresh = AgentJob.many(
            rows.rem[[lo + k for k in moved]].tolist(),
            rows.serial[[lo + k for k in moved]].tolist(),
        )
        for k, job in zip(moved, fresh, strict=True):
            out[k] = job
        return tuple(out)

    @staticmethod
    def _t_start(st: dict, view: SchedView) -> float:
        """The app's first release (later phases are released after it), kept in its statics."""
        t_start = st.get("t_start")
        if t_start is None:
            t_start = st["t_start"] = float(view.arrival[st["mine"]].min())
        return t_start

    def _dmax(self, w) -> np.ndarray:
        if not hasattr(self, "_dmax_"):
            self._dmax_ = w.app_demand_max()
        return self._dmax_
