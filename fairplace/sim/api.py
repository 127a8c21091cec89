"""``fairplace.simulate(trace, scheduler, placement, config=None, **overrides)``: resolve names
(trace, profile, scheduler, placement, T_id) or take objects (:mod:`fairplace.sim.protocols`), build
the cluster and run the driver."""

from __future__ import annotations

import copy
import time
from pathlib import Path

import numpy as np
import pandas as pd

from fairplace.core.errors import DataError, OptionError, TraceError, UnknownName
from fairplace.core.progress import progress_bar
from fairplace.instances.trace_generators import (
    TRACE_GENERATORS,
    check_options,
    check_trace_name,
    make_trace,
)

from . import metrics
from .config import BINNINGS, DEFAULT_PROFILE, SimulationConfig
from .engine import Driver, DriverConfig
from .ideal_time import add_rho
from .isolated import isolated_jct
from .protocols import AllocatingScheduler, PlacementPolicy, Scheduler
from .recycle import run_recycled
from .result import SimulationResult
from .schedulers import ALLOCATING_SCHEDULERS, SCHEDULERS, make_scheduler
from .workload import Workload, workload_from_trace


def models_table(
    names, classes: str = "paper", source: str = "<trace>", iter_times: str = "rounded"
) -> dict[str, dict]:
    """{model name as written in the trace: {"t_iter", "cls"}} from ``instances.models``
    (per-iteration seconds from the ``iter_times`` table)."""
    from fairplace.instances.models import iter_seconds, model

    out = {}
    for k, name in enumerate(names):
        if name in out:
            continue
        try:
            spec = model(name)
        except DataError:
            raise TraceError(
                f"{source}: row {k + 1} column 'model'", f"unknown model {name!r}"
            ) from None
        out[name] = {"t_iter": iter_seconds(spec.name, iter_times), "cls": spec.cls(classes)}
    return out


def binned_scores(
    cluster, classes, binning: str, seed: int, outlier_side: str = "both"
) -> dict[str, np.ndarray]:
    """Per class the PM-scores placement decides on: K-means bins (PAL) or the raw scores."""
    raw = np.column_stack([cluster.pm_vector(c) for c in classes])
    if binning == "none" or (raw.size and np.all(raw == raw[:1])):  # homogeneous: nothing to bin
        B = raw
    elif binning in BINNINGS:
        from fairplace.formulations.pm_score import PMScoreBinner

        binner = PMScoreBinner(k_rule=binning, outlier_side=outlier_side, random_state=seed)
        B = binner.fit_transform(raw)
    else:
        raise OptionError("binning", f"expected one of {', '.join(BINNINGS)}, got {binning!r}")
    return {c: B[:, k].copy() for k, c in enumerate(classes)}


#: a GPU is *slow* for a class when its raw PM-score is at least this (1.5x the median GPU)
SLOW_PM = 1.5


def draw_descriptors(cluster) -> dict[str, float | int]:
    """What the cluster draw offers to avoid, per class c: ``draw_slow_c`` (GPUs with raw PM-score
    >= :data:`SLOW_PM`) and ``draw_max_c`` (the slowest GPU's score)."""
    out: dict[str, float | int] = {}
    for c in cluster.classes:
        v = cluster.pm_vector(c)
        out[f"draw_slow_{c}"] = int(np.count_nonzero(v >= SLOW_PM))
        out[f"draw_max_{c}"] = float(v.max())
    return out


def _trace_frame(trace, seed: int, gpus: int | None, options) -> pd.DataFrame:
    """The trace as a frame: a generated name (``themis-1``, ...) is made with ``options`` and the
    simulation's seed exactly as a sweep makes it; a bundled name, a CSV path or a frame is loaded."""
    from fairplace.instances.traces import load_trace

    opts = dict(options or {})
    if isinstance(trace, str) and trace in TRACE_GENERATORS:
        check_options(trace, opts)
        kw = opts if gpus is None else {**opts, "gpus": gpus}
        return make_trace(trace, seed, kw)[0]
    if opts:
        raise OptionError(
            "trace_options", f"only generated traces ({', '.join(TRACE_GENERATORS)}) take options"
        )
    if isinstance(trace, (str, Path, pd.DataFrame)):
        check_trace_name(trace)
        return load_trace(trace)
    raise OptionError("trace", f"expected a trace name, a CSV path or a DataFrame, got {trace!r}")


def _check_objects(scheduler, placement) -> None:
    if not isinstance(scheduler, str) and not isinstance(
        scheduler, (Scheduler, AllocatingScheduler)
    ):
        raise OptionError(
            "scheduler",
            f"expected a name ({', '.join(SCHEDULERS)}) or an object with name, order() and "
            f"next_change() (fairplace.sim.protocols.Scheduler), got {scheduler!r}",
        )
    if not isinstance(placement, (str, PlacementPolicy)):
        raise OptionError(
            "placement",
            "expected a name or an object with name and place(state, queue) "
            f"(fairplace.sim.protocols.PlacementPolicy), got {placement!r}",
        )


def simulate(
    trace="workload-1",
    scheduler: str | Scheduler | AllocatingScheduler = "fifo",
    placement: str | PlacementPolicy = "pal",
    config: SimulationConfig | None = None,
    **overrides,
) -> SimulationResult:
    """Simulate ``trace`` (a bundled name ``workload-1..4``, a generated name ``themis-1``,
    ``themis-2``, ``synergy``, a CSV path, a frame or a :class:`Workload`) with a job-ordering
    ``scheduler`` composed with a ``placement`` policy, each a name (:data:`SCHEDULERS`,
    ``fairplace.solvers.policies.POLICY_NAMES``) or an object satisfying
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
        from .setups import apply_setup

        res = _run(trace, scheduler, placement, apply_setup(cfg, placement))
        res.config["setup"] = cfg.setup
        return res
    return _run(trace, scheduler, placement, cfg)


def _cluster_size(cfg: SimulationConfig, frame) -> tuple[int, int]:
    """(gpus, gpus_per_machine) of the simulated cluster, checked."""
    from fairplace.core.limits import MAX_GPUS

    if cfg.cluster is not None:
        from fairplace.instances.objects import check_cluster

        check_cluster(cfg.cluster)  # a hand-built cluster meets the instance JSON contract
        return len(cfg.cluster), int(np.bincount(cfg.cluster.machine_index).max())
    gpus, gpm = cfg.gpus, cfg.gpus_per_machine
    if gpus is None:
        gpus = int(frame.attrs.get("gpus", 64)) if frame is not None else 64
    if not 1 <= gpus <= MAX_GPUS:
        raise OptionError("gpus", f"must be in [1, {MAX_GPUS}], got {gpus}")
    if int(gpus) < 1 or int(gpm) < 1 or gpus % gpm:
        raise OptionError("gpus", f"{gpus} GPUs is not a positive multiple of {gpm} per machine")
    return gpus, gpm


def trace_profile(cfg: SimulationConfig, frame) -> str:
    """The variability profile: ``cfg.profile``, else the trace's own (``attrs["profile"]``: THEMIS
    workloads run on homogeneous GPUs), else :data:`DEFAULT_PROFILE`."""
    if cfg.profile is not None:
        return cfg.profile
    own = frame.attrs.get("profile") if frame is not None else None
    return str(own) if own is not None else DEFAULT_PROFILE


def _make_cluster(cfg: SimulationConfig, gpus: int, gpus_per_machine: int, profile: str):
    """The cluster with PM-scores drawn from ``profile``; (cluster, with_replacement)."""
    from fairplace.instances.variability import make_cluster

    repl = cfg.with_replacement
    machines = gpus // gpus_per_machine
    if profile == "longhorn-artifact":  # the artifact's draw is always with replacement
        repl = True
    elif repl is None:  # the Longhorn BERT profile has 136 GPUs: larger clusters repeat scores
        repl = (
            profile == "longhorn"
            and gpus > 136
            or profile == "longhorn-runs"
            and gpus > 880  # the PageRank profile has 880 runs
            or profile == "frontera"
            and machines > 8
        )
    try:
        cluster = make_cluster(
            profile,
            machines,
            gpus_per_machine,
            seed=cfg.seed,
            classes=cfg.classes,
            with_replacement=repl,
            machines_per_rack=cfg.machines_per_rack,
        )
    except DataError as exc:
        raise OptionError("profile", f"{profile!r}: {exc.problem}") from None
    return cluster, repl


def _run(trace, scheduler, placement, cfg: SimulationConfig) -> SimulationResult:
    """One simulation of a resolved config (the round length, the cluster, the policies)."""
    from fairplace.instances.models import measured_locality
    from fairplace.solvers.policies import ClusterState, make_policy

    seed = cfg.seed
    rho_variant, isolated = cfg.rho_variant, cfg.isolated
    if rho_variant == metrics.ISOLATED:
        isolated = True
    custom_tid = None if isinstance(rho_variant, str) else rho_variant
    if isinstance(trace, Workload) and cfg.trace_options:
        raise OptionError("trace_options", "only generated traces take options, not a Workload")
    recycle = cfg.recycle_jobs_per_hour > 0
    if recycle and (isinstance(trace, Workload) or isolated):
        raise OptionError(
            "recycle_jobs_per_hour",
            "recycled jobs need a trace (not a Workload) and no re-simulation alone (isolated)",
        )
    frame = (
        None
        if isinstance(trace, Workload)
        else _trace_frame(trace, seed, cfg.gpus, cfg.trace_options)
    )
    gpus, gpus_per_machine = _cluster_size(cfg, frame)
    if cfg.locality_model == "measured" and frame is not None and "locality" not in frame.columns:
        frame = frame.assign(
            locality=[
                measured_locality(m, n)
                for m, n in zip(frame["model"], frame["num_gpus"], strict=True)
            ]
        )
    sched_obj = None if isinstance(scheduler, str) else scheduler
    sched_name = str(scheduler).lower() if sched_obj is None else str(sched_obj.name)
    sched_opts = dict(cfg.scheduler_options or {})
    if sched_obj is not None and sched_opts:
        raise OptionError(
            "scheduler_options", "set the options of a scheduler object on the object"
        )
    if not isinstance(placement, str) and cfg.placement_options:
        raise OptionError("placement_options", "set the options of a policy object on the object")
    round_length = cfg.round_length
    if sched_obj is None and sched_name == "themis":  # the round is the lease
        lease = float(sched_opts.pop("lease", round_length if round_length is not None else 600.0))
        round_length = lease
        sched_opts["lease"] = lease
    if sched_obj is None and sched_name not in SCHEDULERS:
        raise UnknownName(
            "scheduler", f"unknown scheduler {scheduler!r}; known: {', '.join(SCHEDULERS)}"
        )
    config = DriverConfig(
        round_length=float(round_length if round_length is not None else 300.0),
        checkpoint=cfg.checkpoint,
        restart=cfg.restart,
        debug=cfg.debug,
        skip_quiet=cfg.skip_quiet,
        grid_origin=cfg.grid_origin,
        stamping=cfg.stamping,
    )
    allocates = bool(getattr(sched_obj, "allocates", False)) or sched_name in ALLOCATING_SCHEDULERS
    if cfg.stamping != "exact" and allocates:
        raise OptionError(
            "stamping", f"round-end stamping needs a queue scheduler, not {sched_name}"
        )

    def workload_of(f: pd.DataFrame) -> Workload:
        models = (
            {}
            if {"t_iter", "cls"} <= set(f.columns)
            else models_table(
                f["model"], cfg.classes, f.attrs.get("name", "<trace>"), cfg.iter_times
            )
        )
        return workload_from_trace(
            f, models, cfg.locality_penalty, cfg.locality_by_model, max_gpus=gpus
        )

    w = trace if frame is None else workload_of(frame)
    if cfg.cluster is None:
        profile = trace_profile(cfg, frame)
        cluster, repl = _make_cluster(cfg, gpus, gpus_per_machine, profile)
    else:
        cluster, repl, profile = cfg.cluster, cfg.with_replacement, "custom"
    cls_used = sorted({c for c in w.cls if c is not None})
    scores = binned_scores(cluster, cls_used, cfg.binning, seed, cfg.outlier_side)
    policy = (
        make_policy(
            placement,
            seed=seed,
            locality_penalty=cfg.locality_penalty,
            locality_by_model=cfg.locality_by_model,
            **dict(cfg.placement_options or {}),
        )
        if isinstance(placement, str)
        else placement
    )

    def fresh_scheduler():
        if sched_obj is not None:
            return copy.deepcopy(sched_obj)
        return make_scheduler(sched_name, seed=seed, **sched_opts)

    t_start = time.perf_counter()
    recycled, sched = None, None
    with progress_bar(len(w), "simulating", cfg.progress) as bar:
        advance = bar.advance if bar.shown else None
        if recycle:

            def run(wl, attempt):  # a rerun (more recycled jobs): fresh scheduler, no progress
                bar_step = advance if attempt == 0 else None
                s = fresh_scheduler()
                return Driver(wl, cluster, scores, s, policy, ClusterState, config, bar_step).run()

            rate, rseed = cfg.recycle_jobs_per_hour, cfg.recycle_seed
            w, tr, recycled = run_recycled(frame, rate, rseed, workload_of, run)
        else:
            sched = sched_obj if sched_obj is not None else fresh_scheduler()
            tr = Driver(w, cluster, scores, sched, policy, ClusterState, config, advance).run()
    seconds = time.perf_counter() - t_start
    jobs = metrics.job_frame(w, tr, gpus)
    apps = metrics.app_frame(w, tr, jobs, gpus)
    if isolated:  # T_id = the JCT of each app re-simulated alone (same cluster, policies, grid)

        def run_alone(sub):
            t = Driver(sub, cluster, scores, fresh_scheduler(), policy, ClusterState, config).run()
            return t.release, t.finish

        job_alone, app_alone = isolated_jct(w, run_alone)
        jobs[f"rho_{metrics.ISOLATED}"] = jobs["jct"].to_numpy() / job_alone
        apps[f"rho_{metrics.ISOLATED}"] = apps["jct"].to_numpy() / app_alone
    if custom_tid is not None:
        add_rho(custom_tid, w, tr, jobs, apps, gpus)
    variant = rho_variant if custom_tid is None else str(custom_tid.name)
    summ = metrics.summary(jobs, apps, tr, gpus, variant)
    extra = getattr(sched, "summary_extra", None)  # an allocating scheduler's own statistics
    if callable(extra):
        summ.update(extra(gpus))
    if custom_tid is not None:  # as metrics.summary reports every built-in variant
        r = apps[f"rho_{variant}"].to_numpy()
        summ[f"max_rho_{variant}"] = float(np.max(r))
        summ[f"median_rho_{variant}"] = float(np.median(r))
    summ.update(draw_descriptors(cluster))
    if recycled is not None:
        summ["recycled_jobs"] = recycled
    summ["wall_seconds"] = seconds
    placed_by = {"themis": "arbiter", "optimus": "optimus"}.get(sched_name, "policy")
    if sched_obj is not None:
        placed_by = sched_name if allocates else "policy"
    out = {
        "trace": w.name,
        "scheduler": sched_name,
        "placement": placement if isinstance(placement, str) else str(policy.name),
        "placed_by": placed_by,
        "gpus": gpus,
        "gpus_per_machine": gpus_per_machine,
        "profile": profile,
        "classes": cfg.classes,
        "with_replacement": bool(repl),
        "binning": cfg.binning,
        "locality_penalty": cfg.locality_penalty,
        "locality_model": cfg.locality_model,
        "round_length": config.round_length,
        "checkpoint": cfg.checkpoint,
        "restart": cfg.restart,
        "seed": seed,
        "grid_origin": cfg.grid_origin,
        "stamping": cfg.stamping,
        "iter_times": cfg.iter_times,
        "outlier_side": cfg.outlier_side,
        "recycle_jobs_per_hour": cfg.recycle_jobs_per_hour,
        "recycle_seed": cfg.recycle_seed,
        "placement_options": dict(cfg.placement_options or {}),
    }
    return SimulationResult(jobs, apps, metrics.round_frame(tr), summ, out)
