"""The small typed error hierarchy of fairplace (modelled on cvxportfolio's).

Every error a user can provoke with bad data or an unsolvable program is a
:class:`FairplaceError`; the CLI turns those into one line on stderr and exit 2.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class FairplaceError(Exception):
    """Base class of every error fairplace raises on purpose."""


class DataError(FairplaceError, ValueError):
    """Input data (an instance, a trace, a profile, an option) is malformed."""

    def __init__(self, path: str, problem: str):
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}" if path else problem)

    def __reduce__(self):  # picklable across processes and Dask workers
        return (type(self), (self.path, self.problem))


class InstanceError(DataError):
    """An instance JSON document breaks the contract; ``path`` is its JSON path (``$.apps[0].bids[1].rho``)."""


class TraceError(DataError):
    """A workload trace CSV is malformed."""


class OptionError(DataError):
    """A solver / simulator option has an invalid value."""


class UnknownName(OptionError):
    """A name is not in its registry (solver, back end, scheduler, placement policy, set-up); the
    message lists the known names."""


#: the former name of :class:`UnknownName` (public API: ``fairplace.UnknownSolver``)
UnknownSolver = UnknownName


class ClusterUnavailable(DataError):
    """The Dask cluster has no worker left (a batch stops; its journal keeps every finished row)."""


class ExtensionError(DataError):
    """A scheduler or placement policy broke its contract (:mod:`fairplace.sim.protocols`): a
    decision of the wrong type, a job or GPU index out of range, a GPU given twice, an inactive job
    ordered or placed. ``path`` is the parameter that took the object (``scheduler`` /
    ``placement``); the message names the object and the rule broken."""


class SimulationStalled(ExtensionError):
    """A simulation made no progress (no job started, finished or advanced) for a bounded number of
    consecutive decisions (``DriverConfig.max_stalled``); it stops instead of running forever."""


class ProgramInfeasible(FairplaceError):
    """The mathematical program has no feasible point."""


class SolverFailed(FairplaceError):
    """The back end crashed or returned a status fairplace cannot interpret."""


@contextmanager
def naming(path: str | Path) -> Iterator[None]:
    """An :class:`OSError` raised inside that names no file (a full disk: ``ENOSPC`` from a write,
    a flush or an fsync) gets ``path`` as its ``filename``, so the CLI's one line names the file."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None:
            exc.filename = str(path)
        raise
