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
    "UnknownSolver",
    "load",
    "solve",
    "__version__",
]


def __getattr__(name):  # late imports keep `import fairplace` light
    if name == "simulate":
        from fairplace.sim import simulate  # heavy (pandas): imported on use

        return simulate
    raise AttributeError(name)
