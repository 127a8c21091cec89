"""Trace-driven cluster simulation (the round driver)."""

from .api import SCHEDULERS, simulate
from .engine import Driver, InvariantError, SimConfig
from .result import SimulationResult
from .workload import Workload, workload_from_trace

__all__ = [
    "SCHEDULERS",
    "Driver",
    "InvariantError",
    "SimConfig",
    "SimulationResult",
    "Workload",
    "simulate",
    "workload_from_trace",
]
