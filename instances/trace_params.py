"""What the trace generators' argument specs (:class:`~fairplace.core.params.Param`) are made of:
the ranges two generators share (an argument of the same meaning has one range) and :func:`arg`;
``core.params.checked`` makes a generator check its arguments by its specs. Each generator declares
its own tuple next to it, with its defaults (``workloads.THEMIS_PARAMS`` for ``themis-1`` /
``themis-2``, ``traces.SYNERGY_PARAMS`` for ``synergy``); ``trace_options``
(``fairplace.simulate``, a sweep's tables, ``--trace-option``), the sweep schema and the CLI help
read them through ``instances.trace_generators``. Sizes are bounded by ``core/limits.py``."""

from __future__ import annotations

from typing import Any

from fairplace.core.limits import MAX_GPUS, MAX_SEED, MAX_TIME, MAX_TRACE_JOBS
from fairplace.core.params import Interval, Param

#: a GPU count
GPUS = Interval(1, MAX_GPUS, integer=True)
#: jobs of an app or of a trace
JOBS = Interval(1, MAX_TRACE_JOBS, integer=True)
#: a fraction of the apps
SHARE = Interval(0.0, 1.0)
#: hours of a window or of a task
HOURS = Interval(0.0, 1e6, closed="neither")
#: a log-normal spread
SIGMA = Interval(0.0, 5.0)
#: an arrival rate per hour
RATE = Interval(0.0, MAX_TIME, closed="right")

#: a generator's ``seed``: the run's, never a trace option (``trace_generators._RESERVED``)
SEED = Param("seed", 0, Interval(0, MAX_SEED, integer=True), "random seed")


def arg(name: str, default: Any, constraint, doc: str, nullable: bool = False) -> Param:
    """The spec of a generator argument: errors name ``name`` (``trace_options.name`` where
    ``trace_options`` gave it), the flag is ``--trace-option name``."""
    return Param(name, default, constraint, doc, "--trace-option " + name, None, nullable)
