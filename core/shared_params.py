"""The specs (:class:`~fairplace.core.params.Param`) of parameters that more than one layer
reads, on the ground floor: :data:`LOCALITY_PENALTY` (PAL's L across machines: the simulator, the
placement policies, the placement instance JSON, ``--locality-penalty``), :data:`THEMIS_F`
(THEMIS' filter, ``scheduler_options.f``) and the simulator's clock, :data:`DECISION_TICK` and
:data:`BASELINE_LEASE` (``SimulationConfig``, the sweep schema and the CLI).
"""

from __future__ import annotations

from fairplace.core.limits import MAX_RATIO, MAX_TIME
from fairplace.core.params import Interval, Param, scheduler_option

#: PAL's locality penalty L: a job spread over several machines runs L x slower (§IV-D: "initially
#: estimated a locality penalty to be 1.7"; the artifact's constant ``lf_across``), 1 within one.
LOCALITY_PENALTY = Param(
    "locality_penalty",
    1.7,
    Interval(1.0, MAX_RATIO),
    "L: a job spread over several machines runs L x slower",
    flag="--locality-penalty",
)

#: THEMIS' filter (§5.1): each round the ceil((1 - f) N) apps with the worst rho bid.
THEMIS_F = scheduler_option(
    "f",
    0.8,
    Interval(0.0, 1.0, closed="left"),
    "THEMIS filter: each round the ceil((1 - f) N) apps with the worst rho bid",
)

#: one decision clock for every scheduler (THEMIS §6.2 judges every scheduler on the same events):
#: decisions at ticks t0 + k * tick, at the first tick at or after an event (``fairplace.sim.engine``)
DECISION_TICK = Param(
    "decision_tick",
    None,
    Interval(0.0, MAX_TIME),
    "decision tick in s, one clock for every scheduler (0: each its own; None: the trace's, else 0)",
    flag="--decision-tick",
    nullable=True,
)
#: the queue baselines' lease (THEMIS §6.2: "lease = 10 minutes"): a running job is not preempted
#: before its lease ends (``fairplace.sim.leases``)
BASELINE_LEASE = Param(
    "baseline_lease",
    None,
    Interval(0.0, MAX_TIME),
    "lease in s of a queue scheduler's running job (0: none; None: the trace's, else 0)",
    flag="--baseline-lease",
    nullable=True,
)
