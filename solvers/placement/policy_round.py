"""One placement round behind every policy: queue handling, stickiness, preemption, misfits and resuming.

A policy maps the cluster state (per-class scores, current allocations) and the scheduler's ordered queue
(highest priority first, running and waiting jobs) to the next round's allocation. Sticky (Blox
semantics): running jobs keep their GPUs; a waiting job that does not fit preempts running jobs of lower
priority, lowest first, only if that makes it fit. Non-sticky: every selected job is placed afresh each
round. A job that does not fit stops the round (artifact, ``backfill=False``) or is skipped
(``backfill=True``). ``Decision.preempted`` lists running jobs in the queue that get no GPUs next round;
running jobs absent from the queue are simply released. Policies are frozen and keep no state; the
concrete ones (which GPUs a job gets, ``_pick``) are in :mod:`.policies`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter
from typing import Any, Protocol, runtime_checkable

import numpy as np

from fairplace.core.domain import Cluster, Job, locality, slowdown, spread
from fairplace.core.errors import DataError
from fairplace.core.shared_params import LOCALITY_PENALTY

from . import round_kernel
from .allocation import Allocation
from .cache import PlacementCache
from .free_pool import FreePool
from .job_queue import JobQueue, check_jobs
from .resume import NO_PICKS, join, replay, replay_arrays


@dataclass(frozen=True)
class ClusterState:
    """What a policy sees: the cluster, per-class (binned) scores of shape (G,), running allocations.

    ``round`` (optional) is the scheduling round; the random policies seed their draw with it.
    ``cache`` (optional): a :class:`.cache.PlacementCache` the caller keeps across rounds on this
    cluster (the simulator's run, a benchmark), so each class's scores are sorted once; None: the
    round builds a throw-away one.
    """

    cluster: Cluster
    scores: Mapping[str, np.ndarray]
    allocation: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    round: int = 0
    cache: PlacementCache | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Decision:
    """Every job that runs next round -> its GPU indices (disjoint); running jobs that lost their GPUs.

    ``allocation``: job id -> sorted tuple of GPU indices, in the order of the decisions (a dict, or
    from the compiled kernel an :class:`.allocation.Allocation` over the round's arrays: read only)."""

    allocation: Mapping[str, tuple[int, ...]]
    preempted: tuple[str, ...]
    #: how the round went, for resuming the next one (:meth:`PolicyBase.place`): the job ids in
    #: processing order, how many of them were decided, whether a misfit stopped the round, and
    #: (cluster, scores, the round's :class:`.cache.PlacementCache`)
    trail: tuple | None = field(default=None, compare=False, repr=False)
    #: which pick loop ran: ``"c"`` (the compiled kernel, :mod:`.round_kernel`) or ``"python"``
    kernel: str = field(default="python", compare=False, repr=False)

    def migrated(self, state: ClusterState) -> tuple[str, ...]:
        """Running jobs that keep running on a different GPU set (non-sticky re-placement)."""
        return tuple(
            j
            for j, g in self.allocation.items()
            if j in state.allocation and tuple(sorted(state.allocation[j])) != g
        )


@runtime_checkable
class PlacementPolicy(Protocol):
    """Places the ordered queue on GPUs (``fairplace.sim.protocols``: the contract of every
    placement policy, built-in or not)."""

    name: str

    def place(self, state: Any, queue: Sequence[Any]) -> Any: ...


@runtime_checkable
class IncrementalPolicy(PlacementPolicy, Protocol):
    """A placement policy that tells the driver when a decision may be reused or resumed (the
    built-in policies, ``fairplace.solvers.placement.policies.PolicyBase``); ``fairplace.sim.protocols``."""

    resumable: bool
    repeatable: bool

    def place(self, state: Any, queue: Sequence[Any], previous: Any = None) -> Any: ...


class _LowerHeld:
    """The running jobs a sticky round holds, by their position in its order, lowest priority
    first (``desc``), and the GPUs of those still below the current position (``total``): what
    ``_preempt_lower`` may release, kept up to date as the round passes held jobs or releases them
    (a round with backfill asks for every job that does not fit)."""

    def __init__(self, order: Sequence[Job], held: Mapping[str, np.ndarray]):
        self.pos = {j.id: i for i, j in enumerate(order) if j.id in held}
        self.desc = sorted(self.pos, key=self.pos.__getitem__, reverse=True)
        self.total = int(sum(held[j].size for j in self.pos))


@dataclass(frozen=True)
class PolicyBase:
    """Base policy: queue handling, stickiness and misfits; subclasses choose GPUs in ``_pick``."""

    name: str = "policy"
    sticky: bool = False
    seed: int = 0
    locality_penalty: float = LOCALITY_PENALTY.default
    locality_by_model: tuple[tuple[str, float], ...] = ()
    backfill: bool = False
    migrate: str = "always"

    def locality(self, job: Job) -> float:
        """L_across of a job: its own runtime L (``job.locality``, set by the simulator) when given,
        else :func:`fairplace.core.domain.locality` (per-model table first, then the constant);
        the compiled kernel asks it too."""
        if job.locality is not None:
            return job.locality
        return locality(job.model, self._locality_table, self.locality_penalty)

    @cached_property
    def _locality_table(self) -> dict[str, float]:
        return dict(self.locality_by_model)

    @property
    def resumable(self) -> bool:
        """True if a round depends only on the queue (not on running allocations or the round
        number): non-sticky, ``migrate="always"``, no per-round randomness. Such a policy can resume
        from a previous :class:`Decision` (``place(..., previous=...)``)."""
        return not self.sticky and self.migrate == "always" and not self._round_seeded

    @property
    def repeatable(self) -> bool:
        """True if the same queue, holdings, cluster and scores give the same decision (every
        policy but one that draws per round)."""
        return not self._round_seeded

    _round_seeded = False

    def place(
        self, state: ClusterState, queue: Sequence[Job], previous: Decision | None = None
    ) -> Decision:
        """The next round's allocation for ``queue`` (highest priority first).

        ``previous`` (a decision of this policy on the same cluster and scores, used only if
        :attr:`resumable`): the jobs that head both processing orders get the same GPUs as then
        (a job's pick depends only on the picks before it), so only the rest is placed again."""
        jobs, in_queue = _validate(state, queue, _known_allocation(state, previous))
        G = len(state.cluster)
        # a JobQueue's processing order from its arrays (no pass over the jobs)
        jq = queue if isinstance(queue, JobQueue) and not self.sticky else None
        rows = None if jq is None else self._order_rows(jq, G)
        if jq is not None and rows is not None:
            _, demand, codes = jq.fields()
            ids = jq.ids_for(rows)
        if in_queue is None and self.sticky:
            in_queue = set(map(_ID, jobs))
        running: Mapping[str, Any]
        arrays: dict[str, np.ndarray] = {}  # running jobs' GPUs, where they are read
        if self.sticky or self.migrate != "always":
            running = arrays = {
                j: np.asarray(g, dtype=np.int64) for j, g in state.allocation.items()
            }
        else:  # only the keys are read (the state's mapping itself: no copy)
            running = state.allocation
        held: dict[str, np.ndarray] = {}
        if self.sticky:
            assert in_queue is not None  # made above for a sticky round
            held = {j: g for j, g in arrays.items() if j in in_queue}
        free = np.ones(G, dtype=bool)
        for g in held.values():
            free[g] = False
        alloc: dict[str, tuple[int, ...]] = {}
        if rows is None:
            order = jobs if self.sticky else self._order(list(jobs), G)
            ids = tuple(map(_ID, order))
            lower = _LowerHeld(order, held) if held else None
        else:
            lower = None  # non-sticky: nothing held
        cache = PlacementCache() if state.cache is None else state.cache
        singles = self._singles_count() if not self.sticky and self.migrate == "always" else None
        spec = self._kernel_spec() if singles is not None else None
        kernel = (
            spec is not None
            and round_kernel.wanted()
            and round_kernel.fits(G, cache.layout(state.cluster)[1], len(state.cluster.machines))
        )
        k, stopped, picks = -1, False, NO_PICKS
        if previous is not None and previous.trail is not None and self.resumable:
            cl, sc, _ = previous.trail[3]
            if cl is state.cluster and sc is state.scores:
                if kernel:  # the head's picks as arrays (the kernel's form)
                    k, stopped, picks = replay_arrays(previous, ids, free)
                else:
                    k, stopped = replay(previous, ids, alloc, free)
        pool = FreePool(state.cluster, state.scores, free, cache=cache)
        self._prepare(pool, state)
        fields = None
        if jq is not None and rows is not None and kernel:  # the kernel reads the queue's arrays
            order, fields = jobs, (demand, codes, jq.table.classes, rows, jq.localities())
        elif rows is not None:
            order = list(map(jobs.__getitem__, rows.tolist()))
        if kernel and not stopped:  # the same picks, compiled (round_kernel)
            k, stopped, got = round_kernel.run(
                pool, order, k + 1, spec, self.backfill, self, ids, fields
            )
            picks = got if picks is NO_PICKS else join(picks, got)
        while not kernel and not stopped and k + 1 < len(ids):
            k += 1
            if not self.sticky and pool.n_free == 0:  # every later job fails: nothing to preempt
                k -= 1
                break
            job = order[k]
            if singles is not None and job.gpus == 1:  # a run of single-GPU jobs of one class
                run = self._single_run(order, k)
                got = pool.pm_first_singles(job.cls, len(run), singles).tolist()
                alloc.update((j.id, (g,)) for j, g in zip(run, got, strict=False))
                if len(got) < len(run) and not self.backfill:
                    k, stopped = k + len(got), True
                    break
                k += len(run) - 1
                continue
            if job.id in held:
                assert lower is not None  # held jobs exist
                lower.total -= held[job.id].size  # passed: no longer below the current job
                alloc[job.id] = _sorted_ids(held[job.id])
                continue
            if lower is not None and pool.n_free < job.gpus:
                self._preempt_lower(pool, held, lower, k, job.gpus)
            gpus = self._pick(pool, job) if job.gpus <= pool.n_free else None
            if self.migrate == "if-better" and job.id in running:
                gpus = self._keep(pool, job, arrays[job.id], gpus)
            if gpus is None:
                if self.backfill:
                    continue
                stopped = True
                break
            pool.take(gpus)
            alloc[job.id] = tuple(np.sort(gpus).tolist())
        for j, g in held.items():  # running jobs not reached before a stop keep their GPUs
            if j not in alloc:
                alloc[j] = _sorted_ids(g)
        allocation: Mapping[str, tuple[int, ...]] = alloc
        if kernel:
            allocation = Allocation(ids, *picks, cache.gpu_tuples(state.cluster))
        # running jobs without GPUs next round, in their order: O(running), not O(placed)
        lost: list = []
        if running:  # (a C-level pass over the dict)
            member = (alloc if not kernel else allocation.dict).__contains__  # type: ignore[attr-defined]
            lost = list(itertools.filterfalse(member, running))
        if lost:
            queued = set(ids) if in_queue is None else in_queue
            lost = [j for j in lost if j in queued]
        preempted = tuple(lost)
        return Decision(
            allocation,
            preempted,
            (ids, k + 1, stopped, (state.cluster, state.scores, cache)),
            "c" if kernel else "python",
        )

    def _preempt_lower(self, pool, held, lower: _LowerHeld, k: int, n: int) -> None:
        """Release running jobs of lower priority than ``order[k]``, lowest first, until ``n`` fit
        (none if even all of them would not make room)."""
        if pool.n_free + lower.total < n:
            return
        for j in lower.desc:
            if lower.pos[j] <= k:  # the rest rank above order[k]
                return
            if j in held:
                g = held.pop(j)
                lower.total -= g.size
                pool.release(g)
                if pool.n_free >= n:
                    return

    def _keep(self, pool: FreePool, job: Job, old: np.ndarray, new: np.ndarray | None):
        """``migrate="if-better"``: a running job keeps its GPUs (if still free) unless ``new`` has a
        strictly lower LV-product L(spread) * max V on the binned scores."""
        if old.size != job.gpus or not pool.free[old].all():
            return new
        if new is None or self.lv_product(pool, job, old) <= self.lv_product(pool, job, new):
            return old
        return new

    def lv_product(self, pool: FreePool, job: Job, idx: np.ndarray) -> float:
        """PAL's LV-product of ``job`` on GPUs ``idx`` (binned scores): the slowdown S = L(spread) *
        max V (:func:`fairplace.core.domain.slowdown`), with L = 1 on one machine, else L_across."""
        L = self.locality(job)
        idx = np.asarray(idx, dtype=np.int64)
        level = spread(pool.mi, pool.cluster.rack_index, idx)
        return slowdown((1.0, L, L), level, pool.score(job.cls)[idx])

    @staticmethod
    def _single_run(order: Sequence[Job], k: int) -> Sequence[Job]:
        """The single-GPU jobs of ``order[k]``'s class from ``k`` on, up to the first other job."""
        cls, e = order[k].cls, k
        while e < len(order) and order[e].gpus == 1 and order[e].cls == cls:
            e += 1
        return order[k:e]

    def _singles_count(self) -> str | None:
        """If a single-GPU job's pick is ``FreePool.pm_first(cls, 1, count)``, that ``count`` (runs of
        such jobs are then placed in one step by ``FreePool.pm_first_singles``); else None."""
        return None

    def _kernel_spec(self) -> tuple[int, str, str] | None:
        """(kernel mode, multi-GPU count, singles count) if the compiled kernel
        (:mod:`.round_kernel`) implements this policy's non-sticky round; else None."""
        return None

    def _order(self, jobs: list[Job], cluster_size: int) -> list[Job]:
        return jobs

    def _order_rows(self, queue: JobQueue, cluster_size: int) -> np.ndarray | None:
        """:meth:`_order` as positions in ``queue``, from its arrays; None where ``_order`` is
        overridden (a subclass's order is only known from its ``_order``)."""
        if type(self)._order is not PolicyBase._order:
            return None
        return np.arange(len(queue))

    def _prepare(self, pool: FreePool, state: ClusterState) -> None:
        """Per-round set-up (e.g. the random permutation)."""

    def _pick(self, pool: FreePool, job: Job) -> np.ndarray | None:
        raise NotImplementedError


_ID, _GPUS = attrgetter("id"), attrgetter("gpus")


def _known_allocation(state: ClusterState, previous: Decision | None) -> Mapping | None:
    """``previous``'s allocation when it was placed on ``state``'s cluster (then its GPUs are
    valid there: in range, none twice), else None."""
    if previous is None or previous.trail is None or previous.trail[3][0] is not state.cluster:
        return None
    return previous.allocation


def _validate(
    state: ClusterState, queue: Sequence[Job], known: Mapping | None = None
) -> tuple[Sequence[Job], set | None]:
    """The queue as a list (a :class:`JobQueue`: itself, a tuple) and its set of job ids (None
    for a :class:`JobQueue`: checked when it was made); a DataError naming the first bad field. A
    running allocation inside ``known`` (a previous decision's on this cluster, less the jobs that
    finished since) is valid as it is."""
    G = len(state.cluster)
    for c, v in state.scores.items():
        if np.shape(v) != (G,):
            raise DataError(f"scores[{c!r}]", f"expected shape ({G},), got {np.shape(v)}")
    if isinstance(queue, JobQueue):
        held = state.allocation
        if known is None or not (held is known or held.items() <= known.items()):
            _check_allocation(state, G)
        return queue, None
    jobs = list(queue)
    in_queue = set(map(_ID, jobs))
    gpus = list(map(_GPUS, jobs))
    if len(in_queue) == len(jobs) and (
        not gpus or (set(map(type, gpus)) == {int} and min(gpus) >= 1)
    ):
        bad: Sequence[Job] = ()  # the common case, checked in one pass
    else:
        bad = jobs
    check_jobs(bad)
    if known is None or not state.allocation.items() <= known.items():
        _check_allocation(state, G)
    return jobs, in_queue


def _check_allocation(state: ClusterState, G: int) -> None:
    """A DataError if a running job's GPU index is out of range or two running jobs share one."""
    if state.allocation:
        flat = np.fromiter(itertools.chain.from_iterable(state.allocation.values()), np.int64)
        if flat.size and (flat.min() < 0 or flat.max() >= G):
            raise DataError("allocation", f"GPU index out of range 0..{G - 1}")
        used = np.zeros(G, bool)  # O(G) marks, not a sort
        used[flat] = True
        if flat.size != np.count_nonzero(used):
            raise DataError("allocation", "running jobs share GPUs")


def _sorted_ids(g: np.ndarray) -> tuple[int, ...]:
    """GPU indices as a sorted tuple of ints (a held job's GPUs, usually sorted already)."""
    if g.size > 1 and (g[1:] < g[:-1]).any():
        g = np.sort(g)
    return tuple(g.tolist())
