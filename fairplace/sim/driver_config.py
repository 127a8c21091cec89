"""The round driver's options (:class:`DriverConfig`, seconds) and the names of its grid origins and
completion stampings (:mod:`.engine` describes the time model they set)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from fairplace.core.errors import OptionError

from .stall import MAX_STALLED

__all__ = ["GRID_ORIGINS", "STAMPINGS", "DriverConfig", "SimConfig"]

#: where the decision grid starts: the first release, or t = 0 (the PAL artifact)
GRID_ORIGINS = ("first-arrival", "zero")
#: when a completion is stamped: its exact time, or the end of its round (the PAL artifact)
STAMPINGS = ("exact", "round-end")


@dataclass(frozen=True)
class DriverConfig:
    """Driver options (seconds). ``incremental=False`` re-places every job at every decision (the
    reference for the incremental driver; same results, slower). Every decision is checked against
    the contract (:mod:`.contract`); ``debug`` adds the expensive checks (a reused decision is
    what the policy returns afresh; the holdings agree with themselves). ``max_stalled``
    consecutive decisions without progress over more than ``checkpoint + restart`` s stop the run
    (:class:`~fairplace.core.errors.SimulationStalled`)."""

    round_length: float = 300.0
    checkpoint: float = 10.0
    restart: float = 35.0
    debug: bool = False
    skip_quiet: bool = True
    max_decisions: int = 10_000_000
    max_stalled: int = MAX_STALLED
    grid_origin: str = "first-arrival"
    stamping: str = "exact"
    incremental: bool = True
    tick: float = 0.0  # one decision clock for every scheduler (s); 0: each its own (module doc)

    def __post_init__(self):
        for k, known in (("grid_origin", GRID_ORIGINS), ("stamping", STAMPINGS)):
            if getattr(self, k) not in known:
                raise OptionError(k, f"expected one of {known}, got {getattr(self, k)!r}")
        if not 0 < self.round_length < math.inf:
            raise OptionError("round_length", f"must be finite and > 0, got {self.round_length}")
        if not 0 <= self.tick < math.inf:
            raise OptionError("decision_tick", f"must be finite and >= 0, got {self.tick}")
        for k in ("checkpoint", "restart"):
            if not 0 <= getattr(self, k) < math.inf:
                raise OptionError(k, f"must be >= 0, got {getattr(self, k)}")
        if not (isinstance(self.max_stalled, int) and self.max_stalled >= 1):
            raise OptionError("max_stalled", f"must be an integer >= 1, got {self.max_stalled!r}")


#: the former name of :class:`DriverConfig` (next to ``SimulationConfig`` it read as the same thing)
SimConfig = DriverConfig
