"""The worker side of a batch: solve one (instance, solver) task or a chunk of them, never raising;
:func:`warm`, the one-time imports done before any task is timed; and :class:`DriverSlot`, the
driver process as one more solver of a local batch.

Local clusters start their workers with this module as a Dask *preload* (``dask_setup`` runs
:func:`warm` while the worker starts, in parallel on every worker), and an in-process batch calls
:func:`warm` before its first task, so neither a row's ``seconds`` (the solver's own clock) nor its
``wall_seconds`` (the whole task) includes importing the solver stack (~0.5-1 s once per process).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence

import fairplace
from fairplace.core.blas import one_blas_thread
from fairplace.core.errors import UnknownName
from fairplace.instances import suites
from fairplace.solvers.registry import solver_table

#: a one-GPU auction and a one-job placement: :func:`warm` solves them once with each solver
TINY = (
    {
        "kind": "auction",
        "gpus": [{"id": "m0/0", "machine": "m0", "rack": "r0", "pm": {"A": 1.0}}],
        "apps": [{"id": "A", "rho_empty": 2.0, "bids": [{"gpus": ["m0/0"], "rho": 1.0}]}],
    },
    {
        "kind": "placement",
        "locality_penalty": 1.7,
        "gpus": [{"id": "m0/0", "machine": "m0", "rack": "r0", "pm": {"A": 1.0}}],
        "jobs": [{"id": "j", "gpus": 1, "class": "A"}],
    },
)


def warm(solvers: Sequence[str] = ("exact",)) -> None:
    """One-time set-up of this process: import the solver stack (fairplace, HiGHS, the auction /
    placement / compact solvers, policies, heuristics) and solve :data:`TINY` once with each of
    ``solvers`` (``threads=1`` as the tasks do), which also performs the imports and first-call
    initialisations a solver does lazily inside its clock (Pyomo's plugins: ~1 s, CVXPY's
    canonicaliser); errors are ignored here (the real tasks report them)."""
    import highspy  # heavy: imported on use (warms the process)  # noqa: F401

    from fairplace.solvers import (  # heavy: imported on use (warms the process)  # noqa: F401
        auction,
        compact,
        heuristics,
        placement,
    )
    from fairplace.solvers.placement import policies  # heavy: imported on use (warms the process)  # noqa: F401

    table = solver_table()  # imports the relaxation module too
    for s in dict.fromkeys(solvers):
        for doc in TINY:
            if doc["kind"] not in table.get(s, {}):
                continue
            try:
                fairplace.solve(suites.load_item(doc), s, threads=1, parallel=False)
            except Exception:  # noqa: BLE001, S110 - a warm-up, not a result
                pass


def warm_plugin(solvers: Sequence[str]):
    """A Dask ``WorkerPlugin`` running :func:`warm` for ``solvers`` on every worker, present and
    future (a restarted one too), before it runs a task."""
    from distributed import WorkerPlugin  # heavy: imported on use

    class Warm(WorkerPlugin):
        name = "fairplace-warm-" + ",".join(sorted(set(solvers)))

        def __init__(self):
            self.solvers = tuple(solvers)

        def setup(self, worker=None) -> None:
            warm(self.solvers)

    return Warm()


def dask_setup(worker=None) -> None:
    """Dask preload hook: one BLAS thread for the worker's life (``core/blas.py``: an idle
    OpenBLAS thread spins on the core the other workers need), then warm the HiGHS stack
    (``exact``) while the worker starts."""
    one_blas_thread()
    warm()


def _finite(v):
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v


def solve_task(instance: str, solver: str, payload, time_limit: float | None = None) -> dict:
    """Solve one (instance, solver) pair on a worker with HiGHS ``threads=1``; never raises."""

    t0 = time.perf_counter()
    row: dict = {"instance": instance, "solver": solver}
    try:
        inst = suites.load_item(payload)
        row |= suites.summary(inst)
        row["optimum"] = suites.stored_optimum(inst)
    except Exception as exc:  # noqa: BLE001 - a bad instance is a row, not a crash
        return row | {"status": "error", "message": f"{type(exc).__name__}: {exc}"}
    try:
        sol = fairplace.solve(  # loaded and checked by load_item
            inst, solver, time_limit=time_limit, threads=1, parallel=False, validate=False
        )
    except UnknownName as exc:
        row |= {"status": "skipped", "message": str(exc)}
    except Exception as exc:  # noqa: BLE001
        row |= {"status": "error", "message": f"{type(exc).__name__}: {exc}"}
    else:
        row |= {
            "status": sol.status,
            "objective": _finite(sol.objective),
            "bound": _finite(sol.bound),
            "seconds": sol.seconds,
            "message": sol.message or "",
        }
        row |= _primary(inst, sol)
    row["wall_seconds"] = time.perf_counter() - t0
    return row


def solve_chunk(tasks: Sequence[tuple], time_limit: float | None = None) -> list[dict]:
    """The rows of (instance, solver, payload) tasks solved one after the other (one Dask task)."""
    return [solve_task(n, s, p, time_limit) for n, s, p in tasks]


def _primary(inst, sol) -> dict:
    """The first, lexicographic part of the objective: unbounded apps left without GPUs (auctions) or
    jobs placed (placements), for the row and for the stored optimum."""
    opt = dict((inst.meta or {}).get("optimum") or {})
    if inst.kind == "auction":
        n_null = sum(a.rho_empty is None for a in inst.apps)
        out = {"unserved_unbounded": len(sol.extra.get("unserved_unbounded", []))}
        if "n_unbounded_served" in opt:
            out["optimum_unserved_unbounded"] = n_null - int(opt["n_unbounded_served"])
        return out
    out = {"placed": len(sol.allocation)}
    if "placed" in opt:
        out["optimum_placed"] = int(opt["placed"])
    return out


class DriverSlot:
    """This process as one more solver of a local batch: a daemon thread that takes groups of tasks
    from ``source`` (a callable returning the next (key, [task, ...]) or None; shared with the Dask
    submitter, so it must be thread-safe) and solves them until it returns None, from before the
    cluster is up (imports and first calls first, :func:`warm`, outside every row's clock). The
    driver loop journals what :meth:`drain` returns. :meth:`stop` (the batch ends, e.g. on Ctrl-C)
    lets the running group finish, so its rows can still be journaled and the process never exits
    under a running solver, and takes no further group."""

    def __init__(self, solvers: Sequence[str], time_limit: float | None):
        self.solvers, self.time_limit = tuple(solvers), time_limit
        self._done: list[list[dict]] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()

    def stop(self) -> None:
        """Take no further group; wait for the running one."""
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()

    def start(self, source) -> None:
        """Claim the first group now (the largest: this process starts it, whenever the cluster
        comes up), then warm up and solve in the thread."""
        first = source()

        def run() -> None:
            group = first
            try:  # the thread must outlive a failed warm-up: it owes the batch its last groups
                warm(self.solvers)
            except Exception:  # noqa: BLE001, S110 - the tasks report what is broken
                pass
            while group is not None and not self._stopped.is_set():
                tasks = group[1]
                try:
                    rows = [solve_task(n, s, p, self.time_limit) for n, s, p in tasks]
                except BaseException as exc:  # noqa: BLE001 - a row, as a worker's failure is
                    msg = f"{type(exc).__name__}: {exc}"
                    rows = [
                        {"instance": n, "solver": s, "status": "error", "message": msg}
                        for n, s, _ in tasks
                    ]
                with self._lock:
                    self._done.append(rows)
                group = None if self._stopped.is_set() else source()

        self._thread = threading.Thread(target=run, daemon=True, name="fairplace-driver-solver")
        self._thread.start()

    @property
    def solving(self) -> bool:
        """The thread still runs (it stops only when the source is used up or on :meth:`stop`)."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def busy(self) -> bool:
        """Still solving, or holding rows not yet drained."""
        alive = self._thread is not None and self._thread.is_alive()
        return alive or bool(self._done)

    def drain(self) -> list[dict]:
        """The rows finished since the last call (each group's rows once)."""
        with self._lock:
            done, self._done = self._done, []
        return [r for rows in done for r in rows]


class GroupSource:
    """A batch's task groups in submission order (largest first), shared by the Dask submitter and
    the driver's solver thread (:class:`DriverSlot` calls it): thread-safe, each group handed out
    once. ``take()``: the next (key, [task, ...]), None at the end. ``take(reserve)`` (the Dask
    submitter of a local cluster): None instead once the groups left, this one included, are
    estimated at <= ``reserve`` seconds, so the driver solves them while the cluster closes.
    Estimated seconds = the groups' effort (:func:`~fairplace.runs.batch_plan.effort`) times the
    wall seconds per effort unit of the rows finished so far (:meth:`observe`); none before."""

    def __init__(self, groups: Sequence[tuple], effort_of: dict):
        self._groups = list(groups)
        self._effort_of = dict(effort_of)  # (instance, solver) -> estimated effort
        efforts = [sum(self._effort_of.get((n, s), 0.0) for n, s, _ in g[1]) for g in self._groups]
        self._suffix = [0.0] * (len(efforts) + 1)  # effort of the groups from position i on
        for i in range(len(efforts) - 1, -1, -1):
            self._suffix[i] = self._suffix[i + 1] + efforts[i]
        self._next = 0
        self._seconds = self._effort = 0.0
        self._lock = threading.Lock()

    def __call__(self):
        return self.take()

    def take(self, reserve: float = 0.0):
        with self._lock:
            if self._next >= len(self._groups) or (reserve > 0 and self.left_seconds() <= reserve):
                return None
            self._next += 1
            return self._groups[self._next - 1]

    def left_seconds(self) -> float:
        """Estimated seconds of the groups not taken yet (inf before any finished row)."""
        if not (self._effort > 0 and self._seconds > 0):
            return math.inf
        return self._suffix[self._next] * self._seconds / self._effort

    def seconds(self, tasks: Sequence[tuple]) -> float:
        """Estimated seconds of (instance, solver, ...) tasks (0 before any finished row)."""
        with self._lock:
            if not (self._effort > 0 and self._seconds > 0):
                return 0.0
            effort = sum(self._effort_of.get((t[0], t[1]), 0.0) for t in tasks)
            return effort * self._seconds / self._effort

    def observe(self, rows: Sequence[dict]) -> None:
        """Finished rows: their ``wall_seconds`` against their estimated effort."""
        with self._lock:
            for r in rows:
                e, w = (
                    self._effort_of.get((r.get("instance"), r.get("solver"))),
                    r.get("wall_seconds"),
                )
                if e and isinstance(w, (int, float)) and math.isfinite(w) and w >= 0:
                    self._effort += e
                    self._seconds += w
