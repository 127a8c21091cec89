"""Old path of :mod:`fairplace.solvers.placement.policy_round` (moved in issue 22), kept importable for user code."""

# fairplace: old module path kept importable (move_solvers.py)
from fairplace.solvers.placement.policy_round import *  # noqa: F403
