"""The named model variants of the formulations, one list each (no imports: the instance schema,
loaded by ``import fairplace``, derives its enums from here; so do the simulator and the CLI).

* T_id (THEMIS Eq. 1; :class:`~fairplace.formulations.ftf.IdealTime`, ARCHITECTURE.md "T_id variants");
* the AGENT's successive-halving phase model, future-job estimate and GPU split (THEMIS §4.3.2,
  :mod:`fairplace.formulations.ftf`) and its stopping rule (:mod:`fairplace.formulations.agents`).
"""

#: T_id variants: ``themis`` (headline), ``literal`` (Eq. 1 / Eq. 2 as printed), ``static``, ``gavel``.
T_ID_VARIANTS = ("themis", "literal", "static", "gavel")
#: the variants an agent can price its own bids with (they need only the app and N_avg; ``static`` and
#: ``gavel`` need arrival counts / isolated-time bookkeeping that only the simulator's metrics keep).
AGENT_T_ID_VARIANTS = T_ID_VARIANTS[:2]
PHASE_MODELS = ("actual", "median")
FUTURE_JOBS = ("median", "slowest")
SPLITS = ("even", "balanced")
STOPPING = ("none", "successive-halving", "perf-curve")
