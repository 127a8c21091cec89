"""Old path of :mod:`fairplace.solvers.placement.policies` (moved in issue 22), kept importable for user code."""

# fairplace: old module path kept importable (move_solvers.py)
from fairplace.solvers.placement.policies import *  # noqa: F403
from fairplace.solvers.placement.policies import __all__  # noqa: F401
