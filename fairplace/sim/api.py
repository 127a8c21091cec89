"""``fairplace.simulate(trace, scheduler, placement, config=None, **overrides)``: resolve names
(trace, profile, scheduler, placement, T_id) or take objects (:mod:`fairplace.sim.protocols`), build
the cluster and run the driver: a :class:`Plan` (what one run needs, resolved from the config),
:func:`drive` (the driver, with recycled jobs or apps re-run alone where asked) and the result's
frames, summary and config record."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from fairplace.core.domain import Cluster
from fairplace.core.errors import OptionError
from fairplace.core.progress import progress_bar
from fairplace.core.registry import Entry
from fairplace.instances.models import measured_locality
from fairplace.solvers.placement import policies
from fairplace.solvers.placement.cache import PlacementCache
from fairplace.solvers.placement.policies import ClusterState
from fairplace.solvers.placement.policy_round import PlacementPolicy

from . import metrics
from .accounting import Timeline
from .config import SimulationConfig
from .engine import Driver, DriverConfig
from .ideal_time import add_rho
from .isolated import add_solo_rho, isolated_jct, solo_runner
from .leases import Leased
from .protocols import AllocatingScheduler, Scheduler
from .recycle import run_recycled
from .resolve import (
    binned_scores,
    cluster_size,
    draw_cluster,
    draw_descriptors,
    models_table,
    trace_frame,
    trace_profile,
)
from .result import SimulationResult
from .schedulers import SCHEDULER_REGISTRY, make_scheduler
from .setups import apply_setup
from .workload import Workload, workload_from_trace

__all__ = ["Plan", "drive", "plan", "simulate"]

#: the round length when neither the config nor the scheduler's round option sets one (s)
ROUND_LENGTH = 300.0


def _check_objects(scheduler, placement) -> None:
    """A name or an object satisfying the registry's Protocols (:class:`UnknownName` otherwise)."""
    SCHEDULER_REGISTRY.check_object(scheduler)
    policies.POLICY_REGISTRY.check_object(placement)


def simulate(
    trace="workload-1",
    scheduler: str | Scheduler | AllocatingScheduler = "fifo",
    placement: str | PlacementPolicy = "pal",
    config: SimulationConfig | None = None,
    **overrides,
) -> SimulationResult:
    """Simulate ``trace`` (a bundled name ``workload-1..8``, a generated name ``themis-1``,
    ``themis-2``, ``synergy``, a CSV path, a frame or a :class:`Workload`) with a job-ordering
    ``scheduler`` composed with a ``placement`` policy, each a name (:data:`SCHEDULERS`,
    ``fairplace.solvers.placement.policies.POLICY_NAMES``) or an object satisfying
    :mod:`fairplace.sim.protocols`. Every other option comes from ``config``
    (:class:`SimulationConfig`, defaults if None) updated with keyword ``overrides`` of the same
    names: ``simulate("workload-1", "fifo", "pal", gpus=64, seed=1)``.

    Returns a :class:`SimulationResult`; a bad option raises :class:`OptionError` naming the
    parameter (``gpus``, ``scheduler``, ``placement_options.ties``, ...), a bad trace
    :class:`TraceError`."""
    if config is not None and not isinstance(config, SimulationConfig):
        raise OptionError("config", f"expected a SimulationConfig, got {type(config).__name__}")
    cfg = (config if config is not None else SimulationConfig()).with_overrides(**overrides)
    _check_objects(scheduler, placement)
    if cfg.setup is not None:
        res = _run(trace, scheduler, placement, apply_setup(cfg, placement))
        res.config["setup"] = cfg.setup
        return res
    return _run(trace, scheduler, placement, cfg)


@dataclass(frozen=True)
class Plan:
    """What one run needs, resolved from the config: the workload (and ``workload_of``, which makes
    one from a trace frame: the recycled runs make more), the cluster and its binned scores, the
    policy, a maker of fresh schedulers, the driver's config, and the T_id choice; the run's
    placement rounds share ``placement_cache`` (each class's score order, sorted once)."""

    cfg: SimulationConfig
    frame: pd.DataFrame | None
    workload: Workload
    workload_of: Callable[[pd.DataFrame], Workload]
    gpus: int
    gpus_per_machine: int
    cluster: Cluster
    with_replacement: bool | None
    profile: str
    scores: dict[str, np.ndarray]
    policy: Any
    sched_name: str
    sched_entry: Entry  # the scheduler's registry entry (a user's object: one making it)
    sched_obj: Any
    sched_opts: dict
    driver: DriverConfig
    isolated: bool
    custom_tid: Any  # an IdealTimeModel object, or None for a named variant
    baseline_lease: float = 0.0  # a queue scheduler's lease (s; 0: none)
    placement_cache: PlacementCache = field(
        default_factory=PlacementCache, compare=False, repr=False
    )

    @property
    def allocates(self) -> bool:
        """The scheduler places jobs itself (its capability ``allocates``)."""
        return bool(self.sched_entry.capabilities.get("allocates", False))

    @property
    def placed_by(self) -> str:
        """Who places the jobs (a result's ``placed_by``): the scheduler's capability, else its
        name when it allocates, else the placement policy."""
        own = self.sched_name if self.allocates else "policy"
        return str(self.sched_entry.capabilities.get("placed_by", own))

    def scheduler(self):
        """A fresh scheduler (a copy of the user's object, or one made by name), leased."""
        if self.sched_obj is not None:
            return self.leased(copy.deepcopy(self.sched_obj))
        return self.leased(make_scheduler(self.sched_name, seed=self.cfg.seed, **self.sched_opts))

    def leased(self, sched):
        """``sched`` under the baselines' lease (:class:`~fairplace.sim.leases.Leased`) when the
        run has one and ``sched`` is a queue scheduler; else ``sched`` itself."""
        if self.baseline_lease > 0 and not self.allocates:
            grid = self.driver.tick if self.driver.tick > 0 else self.driver.round_length
            return Leased(sched, self.baseline_lease, grid)
        return sched

    def driver_for(self, w: Workload, sched, progress=None) -> Driver:
        state = partial(ClusterState, cache=self.placement_cache)  # every round of the run
        return Driver(
            w, self.cluster, self.scores, sched, self.policy, state, self.driver, progress
        )


def _run(trace, scheduler, placement, cfg: SimulationConfig) -> SimulationResult:
    """One simulation of a resolved config (the round length, the cluster, the policies)."""
    p = plan(trace, scheduler, placement, cfg)
    t_start = time.perf_counter()
    w, tr, recycled, sched = drive(p)
    seconds = time.perf_counter() - t_start
    jobs = metrics.job_frame(w, tr, p.gpus)
    apps = metrics.app_frame(w, tr, jobs, p.gpus)
    _add_rho(p, w, tr, jobs, apps)
    summ = _summary(p, sched, jobs, apps, tr)
    if recycled is not None:
        summ["recycled_jobs"] = recycled
    summ["wall_seconds"] = seconds
    record = _config_record(p, placement, w)
    return SimulationResult(jobs, apps, metrics.round_frame(tr), summ, record)


def plan(trace, scheduler, placement, cfg: SimulationConfig) -> Plan:
    """Resolve ``cfg`` for one run: the trace, the scheduler and its options, the round, the
    cluster and scores, the workload and the policy."""
    custom_tid = None if isinstance(cfg.rho_variant, str) else cfg.rho_variant
    isolated = cfg.isolated or cfg.rho_variant == metrics.ISOLATED
    _check_combinations(trace, placement, cfg, isolated or _solo(cfg, None))
    policy_opts = dict(cfg.placement_options or {})
    policy = (
        policies.make_policy(  # by module: tests and users may replace it
            placement,
            seed=cfg.seed,
            locality_penalty=cfg.locality_penalty,
            locality_by_model=cfg.locality_by_model,
            **policy_opts,
        )
        if isinstance(placement, str)
        else policies.POLICY_REGISTRY.resolve(placement, policy_opts)  # the object as it is
    )
    frame = (
        None
        if isinstance(trace, Workload)
        else trace_frame(trace, cfg.seed, cfg.gpus, cfg.trace_options)
    )
    gpus, gpus_per_machine = cluster_size(cfg, frame)
    if cfg.locality_model == "measured" and frame is not None and "locality" not in frame.columns:
        frame = frame.assign(
            locality=[
                measured_locality(m, n)
                for m, n in zip(frame["model"], frame["num_gpus"], strict=True)
            ]
        )
    sched_name, sched_entry = SCHEDULER_REGISTRY.entry_of(scheduler)
    sched_opts, round_length = _scheduler_options(sched_entry, scheduler, cfg)
    if cfg.stamping != "exact" and sched_entry.capabilities.get("allocates", False):
        raise OptionError(
            "stamping", f"round-end stamping needs a queue scheduler, not {sched_name}"
        )
    own = frame.attrs if frame is not None else {}  # the trace's defaults (THEMIS workloads)
    tick, lease = (
        float(getattr(cfg, k) if getattr(cfg, k) is not None else own.get(k, 0.0))
        for k in ("decision_tick", "baseline_lease")
    )
    driver = DriverConfig(
        tick=tick,
        round_length=float(round_length if round_length is not None else ROUND_LENGTH),
        checkpoint=cfg.checkpoint,
        restart=cfg.restart,
        debug=cfg.debug,
        skip_quiet=cfg.skip_quiet,
        incremental=cfg.incremental,
        grid_origin=cfg.grid_origin,
        stamping=cfg.stamping,
    )

    def workload_of(f: pd.DataFrame) -> Workload:
        own = {"t_iter", "cls"} <= set(f.columns)
        source = f.attrs.get("name", "<trace>")
        models = {} if own else models_table(f["model"], cfg.classes, source, cfg.iter_times)
        return workload_from_trace(
            f, models, cfg.locality_penalty, cfg.locality_by_model, max_gpus=gpus
        )

    w = trace if frame is None else workload_of(frame)
    if cfg.cluster is None:
        profile = trace_profile(cfg, frame)
        cluster, repl = draw_cluster(cfg, gpus, gpus_per_machine, profile)
    else:
        cluster, repl, profile = cfg.cluster, cfg.with_replacement, "custom"
    cls_used = sorted({c for c in w.cls if c is not None})
    scores = binned_scores(cluster, cls_used, cfg.binning, cfg.seed, cfg.outlier_side)
    sched_obj = None if isinstance(scheduler, str) else scheduler
    return Plan(
        cfg, frame, w, workload_of, gpus, gpus_per_machine, cluster, repl, profile, scores,
        policy, sched_name, sched_entry, sched_obj, sched_opts, driver, isolated, custom_tid, lease,
    )  # fmt: skip


def _check_combinations(trace, placement, cfg: SimulationConfig, isolated: bool) -> None:
    """Options that do not go together (each is valid alone)."""
    if isinstance(trace, Workload) and cfg.trace_options:
        raise OptionError("trace_options", "only generated traces take options, not a Workload")
    if cfg.recycle_jobs_per_hour > 0 and (isinstance(trace, Workload) or isolated):
        raise OptionError(
            "recycle_jobs_per_hour",
            "recycled jobs need a trace (not a Workload) and no app re-simulated alone "
            "(isolated, solo)",
        )


def _scheduler_options(entry: Entry, scheduler, cfg: SimulationConfig) -> tuple[dict, Any]:
    """(the options of the scheduler, the round length): a scheduler whose round is an option of
    its own (its capability ``round_option``, THEMIS' lease) gets the config's round length as
    that option's default, and sets the round. A user's object takes no options."""
    sched_opts: dict[str, Any] = dict(cfg.scheduler_options or {})
    if not isinstance(scheduler, str) and sched_opts:
        SCHEDULER_REGISTRY.resolve(scheduler, sched_opts)  # the registry's error
    round_length = cfg.round_length
    if "round_option" in entry.capabilities:  # the round is the scheduler's option
        option, default = entry.capabilities["round_option"]
        value = sched_opts.pop(option, round_length if round_length is not None else default)
        spec = entry.spec(option)
        round_length = float(spec.check(value) if spec is not None else value)
        sched_opts[option] = round_length
    if isinstance(scheduler, str):  # checked before anything runs (made again for each run)
        SCHEDULER_REGISTRY.check(scheduler, sched_opts)
    return sched_opts, round_length


def drive(p: Plan) -> tuple[Workload, Timeline, int | None, Any]:
    """Run the driver on the plan (with the PAL artifact's recycled jobs when asked): (the
    reported workload, its timeline, recycled jobs that got GPUs or None, the scheduler)."""
    with progress_bar(len(p.workload), "simulating", p.cfg.progress) as bar:
        advance = bar.advance if bar.shown else None
        if p.cfg.recycle_jobs_per_hour > 0:

            def run(wl, attempt):  # a rerun (more recycled jobs): fresh scheduler, no progress
                return p.driver_for(wl, p.scheduler(), advance if attempt == 0 else None).run()

            rate, rseed = p.cfg.recycle_jobs_per_hour, p.cfg.recycle_seed
            w, tr, recycled = run_recycled(p.frame, rate, rseed, p.workload_of, run)
            return w, tr, recycled, None
        sched = p.leased(p.sched_obj) if p.sched_obj is not None else p.scheduler()
        return p.workload, p.driver_for(p.workload, sched, advance).run(), None, sched


def _add_rho(p: Plan, w: Workload, tr: Timeline, jobs, apps) -> None:
    """rho of the T_id variants computed outside the metrics: apps re-simulated alone, a user's
    T_id model."""
    if p.isolated:  # T_id = the JCT of each app re-simulated alone (same cluster, policies, grid)

        def run_alone(sub):
            t = p.driver_for(sub, p.scheduler()).run()
            return t.release, t.finish

        job_alone, app_alone = isolated_jct(w, run_alone)
        jobs[f"rho_{metrics.ISOLATED}"] = jobs["jct"].to_numpy() / job_alone
        apps[f"rho_{metrics.ISOLATED}"] = apps["jct"].to_numpy() / app_alone
    if _solo(p.cfg, p.frame):  # T_id = the JCT of each app alone on its 1/N_avg share
        run = solo_runner(p.cluster, p.scores, p.policy, p.driver, p.cfg.seed)
        add_solo_rho(w, jobs, apps, p.gpus, run)
    if p.custom_tid is not None:
        add_rho(p.custom_tid, w, tr, jobs, apps, p.gpus)


def _solo(cfg: SimulationConfig, frame: pd.DataFrame | None) -> bool:
    """``rho_solo`` is computed (:mod:`fairplace.sim.isolated`): asked for, or ``solo`` None and
    the trace's default (``attrs["solo"]``: THEMIS workloads) without recycled jobs."""
    if cfg.solo or cfg.rho_variant == metrics.SOLO:
        return True
    own = frame.attrs.get("solo", False) if cfg.solo is None and frame is not None else False
    return bool(own) and cfg.recycle_jobs_per_hour == 0


def _summary(p: Plan, sched, jobs, apps, tr: Timeline) -> dict:
    """The summary: the metrics' (of the chosen T_id), the scheduler's own, the draw's."""
    rv = p.cfg.rho_variant  # an object exactly when p.custom_tid is one
    variant = rv if isinstance(rv, str) else str(rv.name)
    summ = metrics.summary(jobs, apps, tr, p.gpus, variant)
    extra = getattr(sched, "summary_extra", None)  # an allocating scheduler's own statistics
    if callable(extra):
        summ.update(extra(p.gpus))
    if p.custom_tid is not None:  # as metrics.summary reports every built-in variant
        r = apps[f"rho_{variant}"].to_numpy()
        summ[f"max_rho_{variant}"] = float(np.max(r))
        summ[f"median_rho_{variant}"] = float(np.median(r))
    summ.update(draw_descriptors(p.cluster))
    return summ


def _config_record(p: Plan, placement, w: Workload) -> dict:
    """What ran, as the result's ``config``."""
    cfg = p.cfg
    return {
        "trace": w.name,
        "scheduler": p.sched_name,
        "placement": placement if isinstance(placement, str) else str(p.policy.name),
        "placed_by": p.placed_by,
        "gpus": p.gpus,
        "gpus_per_machine": p.gpus_per_machine,
        "profile": p.profile,
        "classes": cfg.classes,
        "with_replacement": bool(p.with_replacement),
        "binning": cfg.binning,
        "locality_penalty": cfg.locality_penalty,
        "locality_model": cfg.locality_model,
        "round_length": p.driver.round_length,
        "decision_tick": p.driver.tick,
        "baseline_lease": p.baseline_lease if not p.allocates else 0.0,
        "checkpoint": cfg.checkpoint,
        "restart": cfg.restart,
        "seed": cfg.seed,
        "grid_origin": cfg.grid_origin,
        "stamping": cfg.stamping,
        "iter_times": cfg.iter_times,
        "outlier_side": cfg.outlier_side,
        "recycle_jobs_per_hour": cfg.recycle_jobs_per_hour,
        "recycle_seed": cfg.recycle_seed,
        "placement_options": dict(cfg.placement_options or {}),
    }
