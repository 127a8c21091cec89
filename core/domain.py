"""Domain model: frozen dataclasses for GPUs, clusters, bids, apps, jobs and instances.

The mathematics works on numpy views (``Cluster.machine_index``, ``Cluster.pm_matrix``); the dataclasses
are the user-facing, hashable, immutable description.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from fairplace.core.shared_params import LOCALITY_PENALTY

#: Spread levels of a GPU set (ARCHITECTURE.md): one machine, several machines in one rack, several racks.
SPREAD_MACHINE, SPREAD_RACK, SPREAD_CLUSTER = 0, 1, 2
SPREAD_NAMES = ("machine", "rack", "cluster")


@dataclass(frozen=True, slots=True)
class GPU:
    """One GPU: its id, the machine and rack that hold it, and its PM-score per application class."""

    id: str
    machine: str
    rack: str = "r0"
    pm: Mapping[str, float] = field(default_factory=dict)

    def __hash__(self) -> int:  # pm is a dict; identity is the id
        return hash(self.id)

    def pm_score(self, cls: str | None) -> float:
        """V_class(g); 1.0 (the median GPU) when the class has no score."""
        if cls is None:
            return 1.0
        return float(self.pm.get(cls, 1.0))


@dataclass(frozen=True)
class Cluster:
    """An ordered tuple of GPUs with index views for the mathematics."""

    gpus: tuple[GPU, ...]

    def __len__(self) -> int:
        return len(self.gpus)

    @cached_property
    def index(self) -> dict[str, int]:
        """GPU id -> position."""
        return {g.id: k for k, g in enumerate(self.gpus)}

    @cached_property
    def machines(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(g.machine for g in self.gpus))

    @cached_property
    def racks(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(g.rack for g in self.gpus))

    @cached_property
    def machine_index(self) -> np.ndarray:
        """m(g) as integers, shape (G,)."""
        pos = {m: k for k, m in enumerate(self.machines)}
        return np.array([pos[g.machine] for g in self.gpus], dtype=np.int64)

    @cached_property
    def machine_slots(self) -> np.ndarray:
        """GPU indices per machine, shape (M, max GPUs per machine), ascending, padded with G."""
        mi, G = self.machine_index, len(self.gpus)
        counts = np.bincount(mi, minlength=len(self.machines))
        order = np.argsort(mi, kind="stable")
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        slots = np.full((len(self.machines), max(int(counts.max()) if G else 0, 1)), G, np.int64)
        slots[mi[order], np.arange(G) - starts[mi[order]]] = order
        slots.flags.writeable = False
        return slots

    @cached_property
    def rack_index(self) -> np.ndarray:
        """k(g) as integers, shape (G,)."""
        pos = {r: k for k, r in enumerate(self.racks)}
        return np.array([pos[g.rack] for g in self.gpus], dtype=np.int64)

    @cached_property
    def classes(self) -> tuple[str, ...]:
        return tuple(sorted({c for g in self.gpus for c in g.pm}))

    def pm_vector(self, cls: str | None) -> np.ndarray:
        """V_class(g) for every GPU, shape (G,); 1.0 where absent (read-only, built once per class:
        the simulator and the agents read it per round)."""
        v = self._per_class.get(("pm", cls))
        if v is None:
            v = self._keep(("pm", cls), np.array([g.pm_score(cls) for g in self.gpus], dtype=float))
        return v

    def pm_levels(self, cls: str | None) -> np.ndarray:
        """The distinct V_class values of the whole cluster, rounded to 12 digits and sorted
        (read-only, built once per class): one value on a homogeneous cluster, where every bundle
        has the same levels."""
        v = self._per_class.get(("levels", cls))
        if v is None:
            v = np.unique(np.round(self.pm_vector(cls), 12)) if len(self.gpus) else np.ones(1)
            v = self._keep(("levels", cls), v)
        return v

    def _keep(self, key: tuple, v: np.ndarray) -> np.ndarray:
        v.flags.writeable = False
        self._per_class[key] = v
        return v

    @cached_property
    def _per_class(self) -> dict:
        return {}

    def indices(self, ids: Iterable[str]) -> np.ndarray:
        return np.array([self.index[i] for i in ids], dtype=np.int64)

    def ids(self, idx: Iterable[int]) -> list[str]:
        names = self._id_list
        if isinstance(idx, np.ndarray) and idx.dtype.kind in "iu":
            return [names[k] for k in idx.tolist()]
        return [names[int(k)] for k in idx]

    @cached_property
    def smallest_machine(self) -> int:
        """GPUs of the smallest machine (0 for an empty cluster)."""
        return int(np.bincount(self.machine_index).min()) if self.gpus else 0

    @cached_property
    def _id_list(self) -> list[str]:
        return [g.id for g in self.gpus]

    def spread(self, gpu_idx: Iterable[int]) -> int:
        """Spread of a GPU set: 0 one machine, 1 one rack, 2 several racks (ARCHITECTURE.md)."""
        return spread(
            self.machine_index, self.rack_index, np.asarray(list(gpu_idx), dtype=np.int64)
        )


def spread(machine_index: np.ndarray, rack_index: np.ndarray, gpu_idx: np.ndarray) -> int:
    """spread(G) = 0 if |m(G)| <= 1, 1 if |k(G)| == 1, else 2."""
    if gpu_idx.size == 0:
        return SPREAD_MACHINE
    if gpu_idx.size <= 32:  # a bundle's few GPUs: a Python set is ~7x faster than NumPy's calls
        if len(set(machine_index[gpu_idx].tolist())) == 1:
            return SPREAD_MACHINE
        return SPREAD_RACK if len(set(rack_index[gpu_idx].tolist())) == 1 else SPREAD_CLUSTER
    m = machine_index[gpu_idx]
    if (m == m[0]).all():  # one machine (no sort, unlike np.unique)
        return SPREAD_MACHINE
    k = rack_index[gpu_idx]
    if (k == k[0]).all():
        return SPREAD_RACK
    return SPREAD_CLUSTER


def locality(model: str | None, by_model: Mapping[str, float], default: float) -> float:
    """L_across of a job running ``model``: ``by_model[model]`` (the name as written, else
    lower-cased: a trace's ``BERT`` finds ``bert``), else the constant ``default``. The one look-up
    of a job's L (placement instances, the policies and their compiled kernel, the simulator's
    workload); L = 1 within one machine is :func:`slowdown`'s."""
    if model is not None and by_model:
        v = by_model.get(model)
        if v is None:
            v = by_model.get(model.lower())
        if v is not None:
            return float(v)
    return float(default)


def slowdown(locality, spread_level, pm_scores):
    """S_j(G) = L_j(spread(G)) * max_{g in G} V_class(j)(g)  (ARCHITECTURE.md; PAL Eq. 1; THEMIS S(G)).

    ``locality`` = (L at spread 0, 1, 2) (one machine = 1 in both papers), ``pm_scores`` the scores
    of the bundle's GPUs (an empty bundle has max V = 1). The one home of this product: a float for
    one bundle; vectorised over n bundles with ``locality`` (n, 3) or (3,), ``spread_level`` (n,) and
    ``pm_scores`` (n, k) (equal-size bundles), an (n,) array."""
    if isinstance(spread_level, int) or np.ndim(spread_level) == 0:
        v = np.asarray(pm_scores)
        if v.size <= 32:  # a bundle's few scores: Python's max is ~4x faster than NumPy's call
            vmax = float(max(v.ravel().tolist(), default=1.0))
        else:
            vmax = float(v.max())
        return float(locality[int(spread_level)]) * vmax
    level = np.asarray(spread_level, dtype=np.int64)
    L = np.broadcast_to(np.asarray(locality, dtype=float), (level.size, 3))
    V = np.asarray(pm_scores, dtype=float).reshape(level.size, -1)
    vmaxes = V.max(axis=1) if V.shape[1] else np.ones(level.size)
    return L[np.arange(level.size), level] * vmaxes


@dataclass(frozen=True)
class Bid:
    """One row of an app's bid table: a GPU bundle and the app's finish-time fairness rho on it."""

    gpus: tuple[str, ...]
    rho: float


@dataclass(frozen=True)
class App:
    """A THEMIS app in explicit form: its bid table and rho if it gets nothing (None = unbounded)."""

    id: str
    bids: tuple[Bid, ...]
    rho_empty: float | None = None


@dataclass(frozen=True)
class Job:
    """A job to place (PAL): GPU demand, application class, weight in the joint objective."""

    id: str
    gpus: int
    cls: str | None = None
    weight: float = 1.0
    model: str | None = None
    #: the job's own L_across as it runs (the simulator's runtime penalty); a policy decides with it
    #: when given, so a run decides and runs with one locality model (None: the policy's table)
    locality: float | None = None


@dataclass(frozen=True)
class AgentJob:
    """One running job of an agent-form app (THEMIS Figure 7's JobInfo plus curve forecasts)."""

    iters_left: float
    t_iter: float  # serial seconds per iteration
    locality_sensitivity: float = 1.0
    forecasts: tuple[float, ...] = ()  # performance-curve stopping: remaining-iteration forecasts

    @classmethod
    def many(cls, iters_left: list[float], t_iter: list[float]) -> tuple[AgentJob, ...]:
        """``tuple(AgentJob(r, x) for r, x in zip(iters_left, t_iter))`` (default sensitivity, no
        forecasts), each filled in directly instead of through the frozen ``__init__``: the
        simulator describes every running job of every bidding app at every decision."""
        new, out = object.__new__, []
        for r, x in zip(iters_left, t_iter, strict=True):
            job = new(cls)
            d = job.__dict__
            d["iters_left"], d["t_iter"], d["locality_sensitivity"], d["forecasts"] = r, x, 1.0, ()
            out.append(job)
        return tuple(out)

    # the hyper-parameter optimiser's names for the same numbers (``formulations.hyperopt.JobInfo``), so
    # that an optimiser can hold an agent's jobs as they are instead of a copy of each
    @property
    def iters_remaining(self) -> float:
        return self.iters_left

    @property
    def avg_time_per_iter(self) -> float:
        return self.t_iter

    @property
    def work(self) -> float:
        """Serial GPU-seconds left: iters_left * t_iter (``JobInfo.work``)."""
        return float(self.iters_left) * float(self.t_iter)


@dataclass(frozen=True)
class AgentApp:
    """A THEMIS app in agent form: its jobs and clock instead of a bid table; the AGENT
    (``fairplace.formulations.agents``) prices bundles with finish-time fairness (Eq. 1 / Eq. 2).

    ``stopping``: ``none`` (single job or independent jobs), ``successive-halving`` (``phases`` =
    ((n_jobs, iterations), ...)), ``perf-curve``. ``t_id``: the fields of
    ``fairplace.formulations.ftf.IdealTime``. ``held``: GPU ids the app already holds (rounds).
    """

    id: str
    jobs: tuple[AgentJob, ...]
    t_start: float = 0.0
    t_now: float = 0.0
    d_max: int = 1
    locality: tuple[float, float, float] = (1.0, 1.1, 1.3)
    cls: str | None = None
    model: str | None = None
    stopping: str = "none"
    phases: tuple[tuple, ...] = ()  # (n_jobs, iterations[, GPUs per job]) per phase
    current_phase: int = 0
    phase_model: str = "actual"
    future: str = "median"
    split: str = "even"
    work_total: float | None = None
    demand_max: int | None = None
    t_id: Mapping[str, object] = field(default_factory=dict)
    rho_empty: float | None = None
    held: tuple[str, ...] = ()


@dataclass(frozen=True)
class AuctionInstance:
    """``kind: auction`` — a cluster and apps with explicit bid tables (``apps``) and/or apps in agent
    form (``agents``, priced by the AGENT when solved)."""

    cluster: Cluster
    apps: tuple[App, ...]
    name: str = ""
    meta: Mapping[str, object] = field(default_factory=dict)
    agents: tuple[AgentApp, ...] = ()

    kind = "auction"


@dataclass(frozen=True)
class PlacementInstance:
    """``kind: placement`` — a cluster with PM-scores and jobs to place jointly.

    ``locality_penalty`` is L for a set spread over several machines (L=1 within a machine); a per-class
    or per-model override can be given in ``locality_by_model``.
    """

    cluster: Cluster
    jobs: tuple[Job, ...]
    locality_penalty: float = LOCALITY_PENALTY.default
    locality_by_model: Mapping[str, float] = field(default_factory=dict)
    name: str = ""
    meta: Mapping[str, object] = field(default_factory=dict)

    kind = "placement"

    def locality(self, job: Job) -> float:
        """L_across for a job (:func:`locality`: per-model table first, then the constant)."""
        return locality(job.model, self.locality_by_model, self.locality_penalty)


Instance = AuctionInstance | PlacementInstance
