"""``SimulationConfig``: every option of :func:`fairplace.simulate` besides the trace, the scheduler
and the placement policy, as one frozen dataclass (its defaults are ``simulate``'s defaults), and the
name lists of the options that take a name (the CLI and the sweep schema read them)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from fairplace.core.errors import OptionError
from fairplace.core.limits import (
    MAX_COUNT,
    MAX_GPUS,
    MAX_SEED,
    MAX_TIME,
    check_value,
)
from fairplace.core.params import BASELINE_LEASE, DECISION_TICK, LOCALITY_PENALTY
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


_GPUS = {"type": "integer", "minimum": 1, "maximum": MAX_GPUS}
_SECONDS = {"type": "number", "minimum": 0, "maximum": MAX_TIME}
_NULL = {"type": "null"}


def field_schemas() -> dict[str, dict]:
    """Value schemas (JSON Schema) of the :class:`SimulationConfig` fields that hold plain values:
    checked when a config is made and by the sweep spec schema (``runs/sweep_schema.py``), so a
    value is valid from Python exactly when it is valid in a spec."""
    enum = lambda values: {"enum": list(values)}  # noqa: E731
    return {
        "gpus": {"anyOf": [_GPUS, _NULL]},
        "gpus_per_machine": _GPUS,
        "machines_per_rack": {
            "anyOf": [{"type": "integer", "minimum": 1, "maximum": MAX_COUNT}, _NULL]
        },
        "profile": {"anyOf": [enum(PROFILE_NAMES), _NULL]},
        "classes": enum(CLASS_MAPS),
        "with_replacement": {"type": ["boolean", "null"]},
        "binning": enum(BINNINGS),
        "locality_penalty": LOCALITY_PENALTY.schema(),
        "locality_by_model": {
            "type": ["object", "null"],
            "additionalProperties": LOCALITY_PENALTY.constraint.schema(),
        },
        "locality_model": enum(LOCALITY_MODELS),
        "round_length": {
            "anyOf": [{"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TIME}, _NULL]
        },
        DECISION_TICK.name: {"anyOf": [DECISION_TICK.constraint.schema(), _NULL]},
        BASELINE_LEASE.name: {"anyOf": [BASELINE_LEASE.constraint.schema(), _NULL]},
        "checkpoint": _SECONDS,
        "restart": _SECONDS,
        "seed": {"type": "integer", "minimum": 0, "maximum": MAX_SEED},
        "rho_variant": enum(RHO_VARIANT_NAMES),
        "isolated": {"type": "boolean"},
        "solo": {"type": ["boolean", "null"]},
        "debug": {"type": "boolean"},
        "skip_quiet": {"type": "boolean"},
        "grid_origin": enum(GRID_ORIGINS),
        "stamping": enum(STAMPINGS),
        "iter_times": enum(ITER_TIME_TABLES),
        "outlier_side": enum(OUTLIER_SIDES),
        "recycle_jobs_per_hour": _SECONDS,  # jobs per hour, >= 0
        "recycle_seed": {"type": "integer", "minimum": 0, "maximum": MAX_SEED},
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

    gpus: int | None = None
    gpus_per_machine: int = 4
    machines_per_rack: int | None = None
    profile: str | None = None
    classes: str = "paper"
    with_replacement: bool | None = None
    binning: str = "silhouette"
    locality_penalty: float = LOCALITY_PENALTY.default
    locality_by_model: Mapping[str, float] | None = None
    locality_model: str = "constant"
    round_length: float | None = None
    decision_tick: float | None = DECISION_TICK.default
    baseline_lease: float | None = BASELINE_LEASE.default
    checkpoint: float = 10.0
    restart: float = 35.0
    seed: int = 0
    rho_variant: str | IdealTimeModel = "themis"
    isolated: bool = False
    solo: bool | None = None
    debug: bool = False
    skip_quiet: bool = True
    progress: Any = None  # bool | ProgressBar | None (fairplace.core.progress.progress_bar)
    cluster: Any = None  # a fairplace.core.domain.Cluster with PM-scores
    scheduler_options: Mapping[str, object] | None = None
    placement_options: Mapping[str, object] | None = None
    trace_options: Mapping[str, object] | None = None
    grid_origin: str = "first-arrival"
    stamping: str = "exact"
    iter_times: str = "rounded"
    outlier_side: str = "both"
    recycle_jobs_per_hour: float = 0.0
    recycle_seed: int = 1
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
        seed = self.seed
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise OptionError("seed", f"must be an integer in [0, 2^63 - 1], got {seed!r}")
        if not 0 <= seed <= MAX_SEED:
            raise OptionError("seed", f"must be an integer in [0, 2^63 - 1], got {seed!r}")
        for name, known in (
            ("classes", CLASS_MAPS),
            ("binning", BINNINGS),
            ("locality_model", LOCALITY_MODELS),
            ("iter_times", ITER_TIME_TABLES),
            ("outlier_side", OUTLIER_SIDES),
        ):
            if getattr(self, name) not in known:
                raise OptionError(
                    name, f"expected one of {', '.join(known)}, got {getattr(self, name)!r}"
                )
        rv = self.rho_variant
        if isinstance(rv, str):
            if rv not in RHO_VARIANT_NAMES:
                raise OptionError(
                    "rho_variant", f"expected one of {', '.join(RHO_VARIANT_NAMES)}, got {rv!r}"
                )
        elif not isinstance(rv, IdealTimeModel):
            raise OptionError(
                "rho_variant", "expected a T_id variant name or an object with ideal_time()"
            )
        LOCALITY_PENALTY.check(self.locality_penalty)
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
        for name, schema in field_schemas().items():  # the rest: type and range, as in a spec
            value = getattr(self, name)
            if name == "rho_variant" and not isinstance(value, str):
                continue  # an IdealTimeModel object (checked above)
            if name == LOCALITY_PENALTY.name:
                continue  # its spec's check, above
            check_value(name, value, schema)

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
