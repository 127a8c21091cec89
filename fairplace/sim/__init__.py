"""Trace-driven cluster simulation (the round driver): ``simulate``, its ``SimulationConfig`` and
the Protocols a user's scheduler, placement policy or T_id model satisfies (docs/extending.md)."""

from fairplace.solvers.placement.policy_round import IncrementalPolicy, PlacementPolicy

from .api import simulate
from .config import SimulationConfig
from .engine import Driver, DriverConfig
from .protocols import AllocatingScheduler, IdealTimeModel, Scheduler, SchedView
from .result import SimulationResult
from .running import InvariantError
from .schedulers import SCHEDULERS
from .workload import Workload, workload_from_trace

__all__ = [
    "SCHEDULERS",
    "AllocatingScheduler",
    "Driver",
    "IdealTimeModel",
    "IncrementalPolicy",
    "InvariantError",
    "PlacementPolicy",
    "DriverConfig",
    "SchedView",
    "Scheduler",
    "SimulationConfig",
    "SimulationResult",
    "Workload",
    "simulate",
    "workload_from_trace",
]
