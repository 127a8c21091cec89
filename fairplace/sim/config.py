"""``SimulationConfig``: every option of :func:`fairplace.simulate` besides the trace, the scheduler
and the placement policy, as one frozen dataclass (its defaults are ``simulate``'s defaults), and the
name lists of the options that take a name (the CLI and the sweep schema read them)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar

from fairplace.core.errors import OptionError
from fairplace.core.limits import MAX_COUNT, MAX_GPUS, MAX_SEED, MAX_TIME
from fairplace.core.params import Boolean, Interval, Options, Param
from fairplace.core.shared_params import BASELINE_LEASE, DECISION_TICK, LOCALITY_PENALTY
from fairplace.instances.models import ITER_TIME_TABLES, LOCALITY_MODELS
from fairplace.instances.variability import PROFILE_NAMES

from . import metrics
from .engine import GRID_ORIGINS, STAMPINGS
from .protocols import IdealTimeModel

#: PM-score binning before placement (PAL §IV-C): K by silhouette, the artifact's rule, or raw scores
BINNINGS = ("silhouette", "artifact", "none")
#: model -> application class maps (``instances.models``): PAL's paper (A/B/C) or its artifact (A-D)
CLASS_MAPS = ("paper", "artifact")
#: the variability profile of a trace that names none (PAL's per-run Longhorn sampling)
DEFAULT_PROFILE = "longhorn-runs"
#: every T_id variant ``rho_variant`` may name: IdealTime's variants, then apps re-simulated alone
RHO_VARIANT_NAMES = (*metrics.T_ID_VARIANTS, *metrics.RESIMULATED)
#: which PM-scores count as outliers when binning: both sides of the mean (>3 sigma), or only slow
#: ones (the PAL artifact's ``identify_outliers``)
OUTLIER_SIDES = ("both", "upper")


_SECONDS = Interval(0.0, MAX_TIME)
_SEED = Interval(0, MAX_SEED, integer=True)
#: one spec per :class:`SimulationConfig` field that holds a plain value, in field order: the
#: defaults, the check when a config is made and the sweep spec's value schemas
#: (:func:`field_schemas`) are read from them. ``rho_variant`` may also be an
#: :class:`~fairplace.sim.protocols.IdealTimeModel` object (its spec checks names).
SIM_PARAMS: tuple[Param, ...] = (
    Param(
        "gpus",
        None,
        Interval(1, MAX_GPUS, integer=True),
        "cluster size (None: the trace's attrs['gpus'], else 64)",
        flag="--gpus",
        nullable=True,
    ),
    Param(
        "gpus_per_machine",
        4,
        Interval(1, MAX_GPUS, integer=True),
        "GPUs per machine",
        flag="--gpus-per-machine",
    ),  # fmt: skip
    Param(
        "machines_per_rack",
        None,
        Interval(1, MAX_COUNT, integer=True),
        "machines per rack (None: one rack)",
        nullable=True,
    ),
    Param(
        "profile",
        None,
        Options(PROFILE_NAMES),
        f"variability (None: the trace's own - uniform for THEMIS workloads - else "
        f"{DEFAULT_PROFILE})",
        flag="--profile",
        nullable=True,
    ),
    Param("classes", "paper", Options(CLASS_MAPS), "model -> class map", flag="--classes"),
    Param(
        "with_replacement",
        None,
        Boolean(),
        "sample PM-scores with replacement (the artifact does; None: only if the profile is too "
        "small)",
        flag="--with-replacement",
        nullable=True,
    ),
    Param("binning", "silhouette", Options(BINNINGS), "PM-score bins", flag="--binning"),
    LOCALITY_PENALTY,
    Param(
        "locality_model",
        "constant",
        Options(LOCALITY_MODELS),
        "runtime L",
        flag="--locality-model",
    ),
    Param(
        "round_length",
        None,
        Interval(0.0, MAX_TIME, closed="right"),
        "round length in s (None: 300; Python: round_length)",
        flag="--round",
        nullable=True,
    ),
    DECISION_TICK,
    BASELINE_LEASE,
    Param(
        "checkpoint",
        10.0,
        _SECONDS,
        "checkpoint seconds per GPU-set change (--restart-cost S: checkpoint 0, restart S)",
        flag="--restart-cost",
    ),
    Param(
        "restart",
        35.0,
        _SECONDS,
        "restart seconds per GPU-set change (--restart-cost S: checkpoint 0, restart S)",
        flag="--restart-cost",
    ),
    Param("seed", 0, _SEED, "seed of every random draw", flag="--seed"),
    Param(
        "rho_variant",
        "themis",
        Options(RHO_VARIANT_NAMES),
        "T_id of the summary's rho (or an object with ideal_time())",
        flag="--rho-variant",
    ),
    Param("isolated", False, Boolean(), "also report rho_isolated (each app re-simulated alone)"),
    Param(
        "solo",
        None,
        Boolean(),
        "also report rho_solo (None: the trace's attrs['solo'], else off)",
        nullable=True,
    ),
    Param(
        "debug",
        False,
        Boolean(),
        "add the expensive checks: a reused decision is re-asked of the policy, the driver's "
        "holdings are checked every decision (every decision is always checked against the "
        "scheduler / policy contract)",
        flag="--debug",
    ),
    Param("skip_quiet", True, Boolean(), "skip rounds in which nothing can change"),
    Param(
        "incremental",
        True,
        Boolean(),
        "reuse or resume the previous decision when the queue allows (off: the policy places every "
        "job afresh at every decision; same results, slower)",
    ),
    Param(
        "grid_origin",
        "first-arrival",
        Options(GRID_ORIGINS),
        "decision grid origin",
        flag="--grid-origin",
    ),
    Param("stamping", "exact", Options(STAMPINGS), "completion time", flag="--stamping"),
    Param(
        "iter_times",
        "rounded",
        Options(ITER_TIME_TABLES),
        "per-iteration seconds of the models",
        flag="--iter-times",
    ),
    Param(
        "outlier_side",
        "both",
        Options(OUTLIER_SIDES),
        "PM-scores binned apart as >3 sigma outliers",
        flag="--outlier-side",
    ),
    Param(
        "recycle_jobs_per_hour",
        0.0,
        _SECONDS,
        "after the trace, copies of its jobs keep arriving at R per hour until every trace job "
        "has finished, as the PAL artifact does (0: off; the artifact: 2)",
        flag="--recycle-jobs-per-hour",
    ),
    Param(
        "recycle_seed",
        1,
        _SEED,
        "seed of Python's random for the recycled arrivals (the artifact's: 1)",
        flag="--recycle-seed",
    ),
)
#: the specs by field name
SIM_PARAM = {p.name: p for p in SIM_PARAMS}
#: the fields no :class:`Param` can express (objects, mappings, a name of a registry that imports
#: this module), each checked by its own code in :meth:`SimulationConfig.__post_init__` or where
#: it is used: ``locality_by_model`` (model -> L, each checked by :data:`LOCALITY_PENALTY`),
#: ``progress`` (a bool or a progress bar), ``cluster`` (a Cluster), the three ``*_options``
#: mappings (their registries' specs) and ``setup`` (``fairplace.sim.setups``' registry)
NOT_PARAMS = (
    "locality_by_model", "progress", "cluster", "scheduler_options", "placement_options",
    "trace_options", "setup",
)  # fmt: skip


def field_schemas() -> dict[str, dict]:
    """Value schemas (JSON Schema) of the :class:`SimulationConfig` fields that hold plain values
    (their specs', :data:`SIM_PARAMS`, and ``locality_by_model``'s): read by the sweep spec schema
    (``runs/sweep_schema.py``), so a value is valid from Python exactly when it is valid in a
    spec."""
    return {
        **{p.name: p.schema() for p in SIM_PARAMS},
        "locality_by_model": {
            "type": ["object", "null"],
            "additionalProperties": LOCALITY_PENALTY.constraint.schema(),
        },
    }


@dataclass(frozen=True, init=False)
class SimulationConfig:
    """Cluster, runtime model, round grid and reporting options of one simulation.

    ``gpus`` None: the trace's ``attrs["gpus"]`` or 64; ``profile`` None: the trace's
    ``attrs["profile"]`` (THEMIS workloads: ``uniform``, homogeneous GPUs) or :data:`DEFAULT_PROFILE`;
    ``cluster`` (a
    :class:`~fairplace.core.domain.Cluster` with PM-scores) overrides ``gpus``, ``gpus_per_machine``
    and ``profile``. ``round_length`` None: 300 s (THEMIS: its lease, 600 s).
    ``decision_tick`` (s): one decision clock for every scheduler, queue or allocating: decisions
    only at ticks t0 + k * tick at or after an event (arrival, completion, lease end, a scheduler's
    ``next_change`` / ``next_event``), at most one per tick; 0: each scheduler its own clock (queue
    schedulers every ``round_length`` with quiet rounds skipped, THEMIS and Optimus at each event);
    None: the trace's ``attrs["decision_tick"]`` (THEMIS workloads: 60 s), else 0 (PAL set-ups keep
    their rounds). ``baseline_lease`` (s): a queue scheduler's running job is not preempted before
    its lease (granted when it starts or resumes, renewed when it keeps running at its end) ends
    (:mod:`fairplace.sim.leases`); 0: no lease; None: the trace's ``attrs["baseline_lease"]``
    (THEMIS workloads: 600 s, §6.2), else 0. THEMIS' own lease stays its option.
    ``locality_model``: ``constant`` (a spread job runs ``locality_penalty`` x slower) or
    ``measured`` (the runtime penalty is PAL's per-(model, GPUs) Frontera table, §IV-D); a trace's
    own ``locality`` column wins; placement policies decide with the L each job runs with.
    ``rho_variant``: a T_id variant name (:data:`RHO_VARIANT_NAMES`) or an object satisfying
    :class:`~fairplace.sim.protocols.IdealTimeModel`. ``isolated`` / ``solo``: also report
    ``rho_isolated`` / ``rho_solo`` (each app re-simulated alone, :mod:`fairplace.sim.isolated`;
    implied when ``rho_variant`` names them; ``solo`` None: the trace's ``attrs["solo"]``, THEMIS
    workloads on, else off). ``trace_options``: keyword arguments of a
    generated trace's generator (``themis-1``: ``n_apps``, ``contention``, ...).
    ``iter_times``: per-iteration seconds of the trace's models, ``rounded`` (four digits) or the
    PAL artifact's (``artifact``, :data:`fairplace.instances.models.ARTIFACT_ITER_SECONDS`).
    ``outlier_side``: PM-scores binned apart as outliers (:data:`OUTLIER_SIDES`).
    ``recycle_jobs_per_hour`` > 0: after the trace's jobs the PAL artifact's recycled copies keep
    arriving at that Poisson rate (``random.Random(recycle_seed)``,
    :func:`fairplace.instances.traces.recycled_jobs`) until every trace job has finished; they
    compete for GPUs but are not reported. ``setup``: a named set-up (``fairplace.sim.setups``)
    filling every field not given explicitly.

    Keyword-only; the names given explicitly are :attr:`given` (a set-up never overrides them, also
    when they equal the default). Field values are checked when the config is made
    (:class:`OptionError` naming the field)."""

    gpus: int | None = SIM_PARAM["gpus"].default
    gpus_per_machine: int = SIM_PARAM["gpus_per_machine"].default
    machines_per_rack: int | None = SIM_PARAM["machines_per_rack"].default
    profile: str | None = SIM_PARAM["profile"].default
    classes: str = SIM_PARAM["classes"].default
    with_replacement: bool | None = SIM_PARAM["with_replacement"].default
    binning: str = SIM_PARAM["binning"].default
    locality_penalty: float = SIM_PARAM["locality_penalty"].default
    locality_by_model: Mapping[str, float] | None = None
    locality_model: str = SIM_PARAM["locality_model"].default
    round_length: float | None = SIM_PARAM["round_length"].default
    decision_tick: float | None = SIM_PARAM["decision_tick"].default
    baseline_lease: float | None = SIM_PARAM["baseline_lease"].default
    checkpoint: float = SIM_PARAM["checkpoint"].default
    restart: float = SIM_PARAM["restart"].default
    seed: int = SIM_PARAM["seed"].default
    rho_variant: str | IdealTimeModel = SIM_PARAM["rho_variant"].default
    isolated: bool = SIM_PARAM["isolated"].default
    solo: bool | None = SIM_PARAM["solo"].default
    debug: bool = SIM_PARAM["debug"].default
    skip_quiet: bool = SIM_PARAM["skip_quiet"].default
    incremental: bool = SIM_PARAM["incremental"].default
    progress: Any = None  # bool | ProgressBar | None (fairplace.core.progress.progress_bar)
    cluster: Any = None  # a fairplace.core.domain.Cluster with PM-scores
    scheduler_options: Mapping[str, object] | None = None
    placement_options: Mapping[str, object] | None = None
    trace_options: Mapping[str, object] | None = None
    grid_origin: str = SIM_PARAM["grid_origin"].default
    stamping: str = SIM_PARAM["stamping"].default
    iter_times: str = SIM_PARAM["iter_times"].default
    outlier_side: str = SIM_PARAM["outlier_side"].default
    recycle_jobs_per_hour: float = SIM_PARAM["recycle_jobs_per_hour"].default
    recycle_seed: int = SIM_PARAM["recycle_seed"].default
    setup: str | None = None

    #: the constructor's signature for inspect (set below the class)
    __signature__: ClassVar[inspect.Signature]
    if TYPE_CHECKING:  # set by __init__; not a field (the fields are the options)
        _given: frozenset[str] = frozenset()

    def __init__(self, **options):
        known = _defaults()
        for name in options:
            if name not in known:
                raise OptionError(
                    name, f"unknown simulation parameter; known: {', '.join(sorted(known))}"
                )
        for name, default in known.items():
            object.__setattr__(self, name, options.get(name, default))
        object.__setattr__(self, "_given", frozenset(options))
        self.__post_init__()

    @property
    def given(self) -> frozenset[str]:
        """The fields set explicitly (by the constructor or :meth:`with_overrides`)."""
        return self._given

    def __post_init__(self):
        for spec in SIM_PARAMS:  # type and range, as in a spec: an OptionError naming the field
            value = getattr(self, spec.name)
            if spec.name == "rho_variant" and not isinstance(value, str):
                if not isinstance(value, IdealTimeModel):
                    raise OptionError(
                        "rho_variant", "expected a T_id variant name or an object with ideal_time()"
                    )
                continue
            spec.check(value)
        if self.locality_by_model is not None and not isinstance(self.locality_by_model, Mapping):
            raise OptionError("locality_by_model", "must be a mapping of model names to L")
        for m, v in dict(self.locality_by_model or {}).items():
            LOCALITY_PENALTY.check(v, f"locality_by_model.{m}")
        for name in ("scheduler_options", "placement_options", "trace_options"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), Mapping):
                raise OptionError(name, "must be a mapping of option names to values")
        if LOCALITY_PENALTY.name in (self.placement_options or {}):  # one L: policies and runtime
            raise OptionError(
                f"placement_options.{LOCALITY_PENALTY.name}",
                f"not a policy option: L is the simulation parameter {LOCALITY_PENALTY.name} "
                f"({LOCALITY_PENALTY.flag})",
            )

    def with_overrides(self, **overrides) -> SimulationConfig:
        """A copy with ``overrides`` applied (and counted as given); an unknown name raises
        :class:`OptionError` naming it."""
        if not overrides:
            return self
        mine = {k: getattr(self, k) for k in self._given}
        return SimulationConfig(**{**mine, **overrides})

    def as_kwargs(self) -> dict[str, Any]:
        """``{field: value}`` (shallow: the objects themselves, no copies)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _defaults() -> dict[str, Any]:
    """{field: default} of :class:`SimulationConfig`, in field order."""
    return {f.name: f.default for f in fields(SimulationConfig)}


def field_names() -> tuple[str, ...]:
    """The names ``simulate`` accepts as keyword options (the fields, in order)."""
    return tuple(f.name for f in fields(SimulationConfig))


# keyword-only parameters with the fields' defaults and annotations: what inspect (the sweep schema,
# the docs) reads as the constructor's signature
SimulationConfig.__signature__ = inspect.Signature(
    [
        inspect.Parameter(
            f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=f.type
        )
        for f in fields(SimulationConfig)
        if f.default is not MISSING
    ]
)
