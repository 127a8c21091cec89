"""``fairplace.simulate(...)``: resolve names (trace, profile, scheduler, placement) and run the driver."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from fairplace.core.errors import DataError, OptionError, TraceError
from fairplace.core.progress import ProgressBar, progress_bar

from . import metrics
from .engine import Driver, SimConfig
from .isolated import isolated_jct
from .result import SimulationResult
from .schedulers import QUEUE_SCHEDULERS, make_scheduler
from .workload import Workload, workload_from_trace

SCHEDULERS = (*QUEUE_SCHEDULERS, "optimus", "themis")


def models_table(names, classes: str = "paper", source: str = "<trace>") -> dict[str, dict]:
    """{model name as written in the trace: {"t_iter", "cls"}} from ``instances.models``."""
    from fairplace.instances.models import model

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
        out[name] = {"t_iter": spec.iter_seconds, "cls": spec.cls(classes)}
    return out


def binned_scores(cluster, classes, binning: str, seed: int) -> dict[str, np.ndarray]:
    """Per class the PM-scores placement decides on: K-means bins (PAL) or the raw scores."""
    raw = np.column_stack([cluster.pm_vector(c) for c in classes])
    if binning == "none":
        B = raw
    elif binning in ("silhouette", "artifact"):
        from fairplace.formulations.pm_score import PMScoreBinner

        B = PMScoreBinner(k_rule=binning, random_state=seed).fit_transform(raw)
    else:
        raise OptionError("binning", f"expected silhouette, artifact or none, got {binning!r}")
    return {c: B[:, k].copy() for k, c in enumerate(classes)}


def _trace_frame(trace) -> pd.DataFrame:
    from fairplace.instances.traces import load_trace

    if isinstance(trace, (str, Path, pd.DataFrame)):
        return load_trace(trace)
    raise OptionError("trace", f"expected a trace name, a CSV path or a DataFrame, got {trace!r}")


def simulate(
    trace="workload-1",
    scheduler: str = "fifo",
    placement: str = "pal",
    *,
    gpus: int | None = None,
    gpus_per_machine: int = 4,
    machines_per_rack: int | None = None,
    profile: str = "longhorn-runs",
    classes: str = "paper",
    with_replacement: bool | None = None,
    binning: str = "silhouette",
    locality_penalty: float = 1.7,
    locality_by_model: Mapping[str, float] | None = None,
    locality_model: str = "constant",
    round_length: float | None = None,
    checkpoint: float = 10.0,
    restart: float = 35.0,
    seed: int = 0,
    rho_variant: str = "themis",
    isolated: bool = False,
    debug: bool = False,
    skip_quiet: bool = True,
    progress: bool | ProgressBar | None = None,
    cluster=None,
    scheduler_options: Mapping[str, object] | None = None,
    placement_options: Mapping[str, object] | None = None,
    grid_origin: str = "first-arrival",
    stamping: str = "exact",
    setup: str | None = None,
) -> SimulationResult:
    """Simulate ``trace`` (bundled name, CSV path or frame) on a ``gpus``-GPU cluster
    (``gpus_per_machine`` per machine, PM-scores from ``profile``) with a job-ordering ``scheduler``
    composed with a ``placement`` policy (``cluster=`` a :class:`~fairplace.core.domain.Cluster` with
    PM-scores overrides ``gpus``, ``gpus_per_machine`` and ``profile``). Round length defaults to 300 s (THEMIS: its lease).

    ``gpus`` defaults to the trace's ``attrs["gpus"]`` (THEMIS workloads) or 64.
    ``locality_model``: ``constant`` (a spread job runs ``locality_penalty`` x slower, the artifact's
    later code and the issue's set-up) or ``measured`` (the runtime penalty is the artifact's Frontera
    table per (model, GPUs), PAL's Sia-Philly set-up, §IV-D; the placement policies still decide with
    ``locality_penalty``). A trace's own ``locality`` column wins over both.
    Returns a :class:`SimulationResult`; bad options raise :class:`OptionError`, bad traces
    :class:`TraceError`."""
    if setup is not None:
        args = {k: v for k, v in locals().items() if k != "setup"}
        from .setups import apply_setup

        res = simulate(**apply_setup(setup, args, simulate))
        res.config["setup"] = setup
        return res
    from fairplace.core.limits import MAX_GPUS, MAX_RATIO, MAX_SEED
    from fairplace.instances.variability import make_cluster
    from fairplace.solvers.policies import ClusterState, make_policy

    if (
        isinstance(seed, bool)
        or not isinstance(seed, (int, np.integer))
        or not 0 <= seed <= MAX_SEED
    ):
        raise OptionError("seed", f"must be an integer in [0, 2^63 - 1], got {seed!r}")
    if classes not in ("paper", "artifact"):
        raise OptionError("--classes", f"expected paper or artifact, got {classes!r}")
    if rho_variant == metrics.ISOLATED:
        isolated = True
    elif rho_variant not in metrics.RHO_VARIANTS:
        raise OptionError(
            "rho_variant", f"expected one of {(*metrics.RHO_VARIANTS, metrics.ISOLATED)}"
        )
    frame = None if isinstance(trace, Workload) else _trace_frame(trace)
    if cluster is not None:
        gpus = len(cluster)
        gpus_per_machine = int(np.bincount(cluster.machine_index).max())
        profile = "custom"
    else:
        if gpus is None:
            gpus = int(frame.attrs.get("gpus", 64)) if frame is not None else 64
        if not 1 <= gpus <= MAX_GPUS:
            raise OptionError("--gpus", f"must be in [1, {MAX_GPUS}], got {gpus}")
        if int(gpus) < 1 or int(gpus_per_machine) < 1 or gpus % gpus_per_machine:
            raise OptionError(
                "--gpus",
                f"{gpus} GPUs is not a positive multiple of {gpus_per_machine} per machine",
            )
    from fairplace.instances.models import LOCALITY_MODELS, measured_locality

    if locality_model not in LOCALITY_MODELS:
        raise OptionError(
            "--locality-model", f"expected one of {LOCALITY_MODELS}, got {locality_model!r}"
        )
    if locality_model == "measured" and frame is not None and "locality" not in frame.columns:
        frame = frame.assign(
            locality=[
                measured_locality(m, n)
                for m, n in zip(frame["model"], frame["num_gpus"], strict=True)
            ]
        )
    if not 1.0 <= locality_penalty <= MAX_RATIO:
        raise OptionError(
            "--locality-penalty", f"must be in [1, {MAX_RATIO:g}], got {locality_penalty}"
        )
    for m, v in dict(locality_by_model or {}).items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 1.0 <= v <= MAX_RATIO:
            raise OptionError(f"locality_by_model.{m}", f"must be in [1, {MAX_RATIO:g}], got {v!r}")
    sched_name = str(scheduler).lower()
    sched_opts = dict(scheduler_options or {})
    if sched_name == "themis":  # the round is the lease
        lease = float(sched_opts.pop("lease", round_length if round_length is not None else 600.0))
        round_length = lease
        sched_opts["lease"] = lease
    if sched_name not in SCHEDULERS:
        raise OptionError(
            "--scheduler", f"unknown scheduler {scheduler!r}; known: {', '.join(SCHEDULERS)}"
        )
    config = SimConfig(
        round_length=float(round_length if round_length is not None else 300.0),
        checkpoint=checkpoint,
        restart=restart,
        debug=debug,
        skip_quiet=skip_quiet,
        grid_origin=grid_origin,
        stamping=stamping,
    )
    if stamping != "exact" and sched_name == "themis":
        raise OptionError("--stamping", "round-end stamping needs a queue scheduler, not themis")
    if frame is None:
        w = trace
    else:
        models = (
            {}
            if {"t_iter", "cls"} <= set(frame.columns)
            else models_table(frame["model"], classes, frame.attrs.get("name", "<trace>"))
        )
        w = workload_from_trace(frame, models, locality_penalty, locality_by_model, max_gpus=gpus)
    repl = with_replacement
    if cluster is None:
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
                seed=seed,
                classes=classes,
                with_replacement=repl,
                machines_per_rack=machines_per_rack,
            )
        except DataError as exc:
            raise OptionError(f"--profile {profile}", exc.problem) from None
    cls_used = sorted({c for c in w.cls if c is not None})
    scores = binned_scores(cluster, cls_used, binning, seed)
    policy = make_policy(
        placement,
        seed=seed,
        locality_penalty=locality_penalty,
        locality_by_model=locality_by_model,
        **dict(placement_options or {}),
    )
    sched = make_scheduler(sched_name, seed=seed, **sched_opts)
    t_start = time.perf_counter()
    with progress_bar(len(w), "simulating", progress) as bar:
        advance = bar.advance if bar.shown else None
        tr = Driver(w, cluster, scores, sched, policy, ClusterState, config, advance).run()
    seconds = time.perf_counter() - t_start
    jobs = metrics.job_frame(w, tr, gpus)
    apps = metrics.app_frame(w, tr, jobs, gpus)
    if isolated:  # T_id = the JCT of each app re-simulated alone (same cluster, policies, grid)

        def run_alone(sub):
            fresh = make_scheduler(sched_name, seed=seed, **sched_opts)
            t = Driver(sub, cluster, scores, fresh, policy, ClusterState, config).run()
            return t.release, t.finish

        job_alone, app_alone = isolated_jct(w, run_alone)
        jobs[f"rho_{metrics.ISOLATED}"] = jobs["jct"].to_numpy() / job_alone
        apps[f"rho_{metrics.ISOLATED}"] = apps["jct"].to_numpy() / app_alone
    summ = metrics.summary(jobs, apps, tr, gpus, rho_variant)
    summ["wall_seconds"] = seconds
    cfg = {
        "trace": w.name,
        "scheduler": sched_name,
        "placement": placement,
        "placed_by": {"themis": "arbiter", "optimus": "optimus"}.get(sched_name, "policy"),
        "gpus": gpus,
        "gpus_per_machine": gpus_per_machine,
        "profile": profile,
        "classes": classes,
        "with_replacement": bool(repl),
        "binning": binning,
        "locality_penalty": locality_penalty,
        "locality_model": locality_model,
        "round_length": config.round_length,
        "checkpoint": checkpoint,
        "restart": restart,
        "seed": seed,
        "grid_origin": grid_origin,
        "stamping": stamping,
    }
    return SimulationResult(jobs, apps, metrics.round_frame(tr), summ, cfg)
