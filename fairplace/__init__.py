"""fairplace — fair (THEMIS) and variability-aware (PAL) GPU cluster scheduling, solved exactly."""

from fairplace.api import load, solve
from fairplace.core.domain import (
    GPU,
    App,
    AuctionInstance,
    Bid,
    Cluster,
    Job,
    PlacementInstance,
)
from fairplace.core.errors import (
    DataError,
    ExtensionError,
    FairplaceError,
    InstanceError,
    OptionError,
    ProgramInfeasible,
    SimulationStalled,
    SolverFailed,
    UnknownName,
    UnknownSolver,
)
from fairplace.core.solution import Solution

__version__ = "0.1.0"

__all__ = [
    "GPU",
    "App",
    "AuctionInstance",
    "Bid",
    "Cluster",
    "Job",
    "PlacementInstance",
    "Solution",
    "DataError",
    "ExtensionError",
    "FairplaceError",
    "InstanceError",
    "OptionError",
    "ProgramInfeasible",
    "SimulationStalled",
    "SolverFailed",
    "UnknownName",
    "UnknownSolver",
    "SimulationConfig",
    "SimulationResult",
    "load",
    "simulate",
    "solve",
    "__version__",
]

#: names imported on first use: the simulator needs pandas, which `import fairplace` avoids
_LATE = ("simulate", "SimulationConfig", "SimulationResult")


def __getattr__(name):  # late imports keep `import fairplace` light
    if name in _LATE:
        from fairplace import sim  # heavy (pandas): imported on use

        return getattr(sim, name)
    raise AttributeError(f"module 'fairplace' has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *_LATE})
