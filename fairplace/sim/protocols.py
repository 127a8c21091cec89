"""What :func:`fairplace.simulate` accepts besides names: a scheduler, a placement policy and a T_id
model, each an object with the methods below (structural typing: no base class to inherit).

A **scheduler** orders the active jobs at each decision (queue schedulers: FIFO, LAS, ...)::

    name: str
    order(view: SchedView) -> np.ndarray      # indices of view.active, most urgent first
    next_change(view: SchedView) -> float     # earliest time the order may change without an
                                              # arrival or a completion (np.inf: never)

Optional: ``bind(cluster)`` (called once before the run); ``allocates = True`` with
``allocate(...)`` / ``next_event(t)`` for a scheduler that places jobs itself, as THEMIS' arbiter
and Optimus do (:mod:`fairplace.sim.themis`, :mod:`fairplace.sim.schedulers.optimus`; the driver then
skips the placement policy). What a scheduler sees, :class:`SchedView`, is defined here: the driver,
the baselines and THEMIS import it from one module that imports none of them.

A **placement policy** turns the ordered queue into GPU sets::

    name: str
    place(state: ClusterState, queue: Sequence[Job]) -> Decision

Optional (``IncrementalPolicy``, what the driver reads to skip or shorten decisions):
``resumable`` (True: a decision depends on the queue only, and ``place(state, queue,
previous=Decision)`` continues from the previous decision) and ``repeatable`` (True: the same queue
and holdings give the same decision; a policy that draws per round is not). A policy without them
is asked afresh at every decision. ``ClusterState``, ``Decision`` and the built-in policies are in
:mod:`fairplace.solvers.placement.policies`; the two policy Protocols are defined with the policies'
round (:mod:`fairplace.solvers.placement.policy_round`, whose registry checks objects by them) and
exported by :mod:`fairplace.sim`.

A **T_id model** gives the ideal time of finish-time fairness rho = T_sh / T_id (THEMIS Eq. 1) of
every job (each taken as its own app) and every app::

    name: str
    ideal_time(entities: pd.DataFrame, gpus: int) -> np.ndarray   # T_id per row, seconds

``entities`` has one row per job or app with ``arrival``, ``finish`` (s), ``work`` (serial
GPU-seconds on median GPUs), ``demand_max`` (GPUs), ``n_avg`` (time-averaged number of active
apps over the row's life) and ``n_arrival`` (active apps at its arrival). The result becomes the
columns ``rho_<name>`` of the jobs and apps frames and the summary's ``max_rho`` / ``median_rho``.
docs/extending.md has a worked example of each.

The driver checks every decision of a scheduler and a placement policy against this contract
(:mod:`fairplace.sim.contract`): ``order`` returns distinct indices of active jobs; ``place``
returns a ``Decision`` whose ``allocation`` maps ids of jobs in the queue to sorted tuples of GPU
indices (not ids), as many as each job's demand, no GPU twice; ``allocate`` maps indices of active
jobs to 1..demand GPU indices, no GPU twice; ``next_change`` returns a number, ``next_event(t)`` one
> t. A broken rule raises :class:`~fairplace.core.errors.ExtensionError` naming the object and the
rule; a run without progress for ``DriverConfig.max_stalled`` decisions stops with
:class:`~fairplace.core.errors.SimulationStalled`. ``debug=True`` adds the expensive checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "AllocatingScheduler",
    "IdealTimeModel",
    "SchedView",
    "Scheduler",
]


@dataclass(frozen=True)
class SchedView:
    """What a scheduler may look at, at time ``t`` (arrays have one entry per workload job).

    ``running`` and ``waiting_since`` are the driver's own arrays, live and read only: a scheduler
    that keeps them past its call must copy them."""

    t: float
    active: np.ndarray  # indices of released, unfinished jobs
    arrival: np.ndarray  # release time of each job (s)
    demand: np.ndarray  # GPUs per job
    remaining: np.ndarray  # iterations left
    total: np.ndarray  # iterations in all
    t_iter: np.ndarray  # seconds per iteration on median GPUs, within a machine
    attained: np.ndarray  # GPU-seconds held so far (Tiresias' attained service)
    running: np.ndarray  # bool: holds GPUs now
    app: np.ndarray  # app index of each job
    gpus: int  # cluster size
    round_length: float
    held: np.ndarray | None = None  # seconds each job has held GPUs
    t_isolated: np.ndarray | None = None  # Gavel's isolated-equivalent time of each job's work done
    waiting_since: np.ndarray | None = None  # when each job last stopped holding GPUs (or arrived)


@runtime_checkable
class Scheduler(Protocol):
    """Orders the active jobs; see the module docstring."""

    name: str

    def order(self, view: Any) -> np.ndarray: ...

    def next_change(self, view: Any) -> float: ...


@runtime_checkable
class AllocatingScheduler(Protocol):
    """A scheduler that places jobs itself (``allocates = True``; THEMIS' arbiter, Optimus)."""

    name: str
    allocates: bool

    def allocate(
        self, view: Any, w: Any, cluster: Any, scores: Any, alloc: Any, grid: Any
    ) -> dict: ...

    def next_change(self, view: Any) -> float: ...


@runtime_checkable
class IdealTimeModel(Protocol):
    """T_id of rho = T_sh / T_id per job and app; see the module docstring."""

    name: str

    def ideal_time(self, entities: Any, gpus: int) -> np.ndarray: ...
