"""What :func:`fairplace.simulate` resolves before it runs: the trace frame, the per-model table,
the cluster size and its PM-score draw, the binned scores placement decides on (and what the draw
offers to avoid, for the summary)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fairplace.core.errors import DataError, OptionError, TraceError
from fairplace.core.limits import MAX_GPUS
from fairplace.instances import variability
from fairplace.instances.models import iter_seconds, model
from fairplace.instances.objects import check_cluster
from fairplace.instances.trace_generators import (
    TRACE_GENERATORS,
    check_options,
    check_trace_name,
    make_trace,
)
from fairplace.instances.traces import load_trace

from .config import BINNINGS, DEFAULT_PROFILE, SimulationConfig


def models_table(
    names, classes: str = "paper", source: str = "<trace>", iter_times: str = "rounded"
) -> dict[str, dict]:
    """{model name as written in the trace: {"t_iter", "cls"}} from ``instances.models``
    (per-iteration seconds from the ``iter_times`` table)."""
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
        from fairplace.formulations.pm_score import PMScoreBinner  # heavy: imported on use

        binner = PMScoreBinner(k_rule=binning, outlier_side=outlier_side, random_state=seed)
        B = binner.fit_transform(raw)
    else:
        raise OptionError("binning", f"expected one of {', '.join(BINNINGS)}, got {binning!r}")
    out = {c: B[:, k].copy() for k, c in enumerate(classes)}
    for v in out.values():  # read only: placement rounds may keep what they derive from them
        v.flags.writeable = False
    return out


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


def trace_frame(trace, seed: int, gpus: int | None, options) -> pd.DataFrame:
    """The trace as a frame: a generated name (``themis-1``, ...) is made with ``options`` and the
    simulation's seed exactly as a sweep makes it; a bundled name, a CSV path or a frame is loaded."""
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


def cluster_size(cfg: SimulationConfig, frame) -> tuple[int, int]:
    """(gpus, gpus_per_machine) of the simulated cluster, checked."""
    if cfg.cluster is not None:
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


def draw_cluster(cfg: SimulationConfig, gpus: int, gpus_per_machine: int, profile: str):
    """The cluster with PM-scores drawn from ``profile``; (cluster, with_replacement)."""
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
        cluster = variability.make_cluster(
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
