"""The specs (:class:`~fairplace.core.params.Param`) of the solver-specific options, one per option
name where the name means the same thing for every solver that takes it (``seed``, common to all,
is ``options.SEED``; the auctions' ``rounding`` and ``payments`` are ``options.ROUNDING`` /
``options.PAYMENTS``, which the compact solver's settings read too; the relaxations' ``method`` is theirs, ``solvers/relaxation.py``). A
:class:`~.options.SolverEntry` lists the specs it takes; ``fairplace.solve`` checks each value
against its spec before any solver runs (an :class:`~fairplace.core.errors.OptionError` naming the
option), and ``fairplace solve --rounding`` / ``--seed`` read their help from them. Options given
from Python only (a back-end object, a time budget, scores, a solution) are :class:`InstanceOf`
specs: no JSON form."""

from __future__ import annotations

from collections.abc import Mapping

from fairplace.core.limits import MAX_COUNT
from fairplace.core.params import AnyOf, Boolean, InstanceOf, Interval, Options, Param
from fairplace.core.solution import Solution

from .backends import BACKEND_REGISTRY, Backend
from .budget import Budget
from .placement.policies import BACKFILL_OPTION

__all__ = [
    "BACKEND",
    "BACKFILL",
    "BIN",
    "BUDGET",
    "COMPUTE_EXACT",
    "EXACT",
    "EXACT_OBJECTIVE",
    "N_MIN",
    "SCORES",
    "TIE_BREAK",
    "WARM_START",
]

#: PA's tie-break among PF optima (on a back end that takes a warm start)
TIE_BREAK = Param("tie_break", True, Boolean(), "break ties among PF optima (warm-start back ends)")
#: the time budget of the whole solve (``solvers/budget.py``): ``fairplace.solve`` starts one from
#: ``time_limit``; a caller gives its own to count set-up it did before
BUDGET = Param(
    "budget",
    None,
    InstanceOf((Budget,), "a Budget (solvers/budget.py)"),
    "the time budget of the whole solve (None: time_limit from now)",
    nullable=True,
)
#: the back end of the exact solves: a name or a :class:`~.backends.Backend` object
BACKEND = Param(
    "backend",
    "highs",
    AnyOf((Options(BACKEND_REGISTRY), InstanceOf((Backend,), "a Backend object"))),
    "the back end of the exact solves: a name or a Backend object",
)
#: placements: K-means binned PM-scores (``formulations/pm_score.py``), seeded by ``seed``
BIN = Param("bin", False, Boolean(), "placements: bin the PM-scores by K-means (seeded)")
#: placements: a job that does not fit is skipped (True) or stops the round (False, PAL's artifact);
#: the policies' own option (``placement_options.backfill`` in a simulation)
BACKFILL = BACKFILL_OPTION
#: placements: the decision scores per class (None: the instance's PM-scores)
SCORES = Param(
    "scores",
    None,
    InstanceOf((Mapping,), "a mapping class -> scores per GPU"),
    "placements: the decision scores per class (None: the instance's)",
    nullable=True,
)
#: the exact placement: PAL's placement as the fallback and the MILP's first incumbent
WARM_START = Param("warm_start", True, Boolean(), "placements: start the MILP from PAL's placement")
#: the heuristics' and relaxations' reference: the exact PF objective (sum -log rho), for the gap
EXACT_OBJECTIVE = Param(
    "exact_objective",
    None,
    Interval(None, None),
    "the exact PF objective, for the gap (None: none)",
    nullable=True,
)
#: the heuristics' reference: the exact solution (its objective and unserved apps), for the gap
EXACT = Param(
    "exact",
    None,
    InstanceOf((Solution,), "a Solution"),
    "the exact solution, for the gap (None: none)",
    nullable=True,
)
#: solve the exact PF program for the gap when no reference is given
COMPUTE_EXACT = Param("compute_exact", False, Boolean(), "solve the exact PF program for the gap")
#: the relaxation's number of unbounded apps served (None: the exact solve's, else its own bound)
N_MIN = Param(
    "n_min",
    None,
    Interval(0, MAX_COUNT, integer=True),
    "relaxation: apps with unbounded rho(empty) to serve (None: from the exact solve)",
    nullable=True,
)
