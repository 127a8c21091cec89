"""Placement policies of PAL's evaluation behind one interface, and their ``fairplace solve`` entries.

A policy maps the cluster state (per-class scores, current allocations) and the scheduler's ordered queue
(highest priority first, running and waiting jobs) to the next round's allocation:

* ``pm-first`` (PAL §III-B, Alg. 1): cut the queue where cumulative demand first exceeds the cluster
  size, stable-sort that prefix by class (A first), then give each job the free GPUs with the lowest
  score; ties go by best-match locality |c - N_j|, then GPU index, where ``c`` counts the free GPUs on
  the machine (``ties="machine"``, default) or only those of the same score level (``ties="level"``,
  the artifact's ``groupby(['sf', 'Node_ID'])``); :meth:`~.placement_engine.FreePool.pm_first`.
  Non-sticky.
* ``pal`` (§III-C, Alg. 2): like PM-First, but a job with 1 < N_j <= GPUs per machine takes the first
  feasible cell of its class's L×V walk (closed form :func:`~fairplace.formulations.lv.choose_cell`):
  the best packed set on one machine if its max score w* <= L_across * a*, else PM-First (max score a*).
* ``packed-sticky`` (Tiresias) / ``packed-non-sticky`` (Gandiva): exact-fit machine, else best fit,
  else spill over the machines with the most free GPUs. ``random-sticky`` / ``random-non-sticky``:
  a uniformly random set of free GPUs, seeded by (seed, ``ClusterState.round``).

Sticky (Blox semantics): running jobs keep their GPUs; a waiting job that does not fit preempts running
jobs of lower priority, lowest first, only if that makes it fit. Non-sticky: every selected job is placed
afresh each round. A job that does not fit stops the round (artifact, ``backfill=False``) or is skipped
(``backfill=True``). ``Decision.preempted`` lists running jobs in the queue that get no GPUs next round;
running jobs absent from the queue are simply released. Policies are frozen and keep no state.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from fairplace.core.domain import Cluster, Job
from fairplace.core.errors import DataError, OptionError, UnknownSolver
from fairplace.formulations.lv import choose_cell

from .placement_engine import FreePool

POLICY_NAMES = (
    "pal",
    "pm-first",
    "packed-sticky",
    "packed-non-sticky",
    "random-sticky",
    "random-non-sticky",
)


@dataclass(frozen=True)
class ClusterState:
    """What a policy sees: the cluster, per-class (binned) scores of shape (G,), running allocations.

    ``round`` (optional) is the scheduling round; the random policies seed their draw with it.
    """

    cluster: Cluster
    scores: Mapping[str, np.ndarray]
    allocation: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    round: int = 0


@dataclass(frozen=True)
class Decision:
    """Every job that runs next round -> its GPU indices (disjoint); running jobs that lost their GPUs."""

    allocation: dict[str, tuple[int, ...]]
    preempted: tuple[str, ...]
    #: how the round went, for resuming the next one (:meth:`PlacementPolicy.place`): the job ids in
    #: processing order, how many of them were decided, whether a misfit stopped the round, and
    #: (cluster, scores, per-class score orders) so the next round need not sort them again
    trail: tuple | None = field(default=None, compare=False, repr=False)

    def migrated(self, state: ClusterState) -> tuple[str, ...]:
        """Running jobs that keep running on a different GPU set (non-sticky re-placement)."""
        return tuple(
            j
            for j, g in self.allocation.items()
            if j in state.allocation and tuple(sorted(state.allocation[j])) != g
        )


@dataclass(frozen=True)
class PlacementPolicy:
    """Base policy: queue handling, stickiness and misfits; subclasses choose GPUs in ``_pick``."""

    name: str = "policy"
    sticky: bool = False
    seed: int = 0
    locality_penalty: float = 1.7
    locality_by_model: tuple[tuple[str, float], ...] = ()
    backfill: bool = False
    migrate: str = "always"

    def locality(self, job: Job) -> float:
        """L_across of a job: per-model table first, then the constant."""
        if job.model is not None:
            for m, v in self.locality_by_model:
                if m == job.model:
                    return v
        return self.locality_penalty

    @property
    def resumable(self) -> bool:
        """True if a round depends only on the queue (not on running allocations or the round
        number): non-sticky, ``migrate="always"``, no per-round randomness. Such a policy can resume
        from a previous :class:`Decision` (``place(..., previous=...)``)."""
        return not self.sticky and self.migrate == "always" and not self._round_seeded

    _round_seeded = False

    def place(
        self, state: ClusterState, queue: Sequence[Job], previous: Decision | None = None
    ) -> Decision:
        """The next round's allocation for ``queue`` (highest priority first).

        ``previous`` (a decision of this policy on the same cluster and scores, used only if
        :attr:`resumable`): the jobs that head both processing orders get the same GPUs as then
        (a job's pick depends only on the picks before it), so only the rest is placed again."""
        jobs = _validate(state, queue)
        if self.sticky or self.migrate != "always":
            running = {j: np.asarray(g, dtype=np.int64) for j, g in state.allocation.items()}
        else:  # only the keys are read
            running = dict.fromkeys(state.allocation)
        in_queue = {j.id for j in jobs}
        held = {j: g for j, g in running.items() if j in in_queue and self.sticky}
        free = np.ones(len(state.cluster), dtype=bool)
        for g in held.values():
            free[g] = False
        alloc: dict[str, tuple[int, ...]] = {}
        order = jobs if self.sticky else self._order(jobs, len(state.cluster))
        ids = tuple(j.id for j in order)
        k, stopped, cache = -1, False, {}
        if previous is not None and previous.trail is not None and self.resumable:
            cl, sc, cached = previous.trail[3]
            if cl is state.cluster and sc is state.scores:
                k, stopped = _replay(previous, ids, alloc, free)
                cache = cached
        pool = FreePool(state.cluster, state.scores, free, sorted_cache=cache)
        self._prepare(pool, state)
        singles = self._singles_count() if not self.sticky and self.migrate == "always" else None
        while not stopped and k + 1 < len(order):
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
                alloc[job.id] = tuple(int(x) for x in np.sort(held[job.id]))
                continue
            if self.sticky and pool.n_free < job.gpus:
                self._preempt_lower(pool, held, order, k, job.gpus)
            gpus = self._pick(pool, job) if job.gpus <= pool.n_free else None
            if self.migrate == "if-better" and job.id in running:
                gpus = self._keep(pool, job, running[job.id], gpus)
            if gpus is None:
                if self.backfill:
                    continue
                stopped = True
                break
            pool.take(gpus)
            alloc[job.id] = tuple(np.sort(gpus).tolist())
        for j, g in held.items():  # running jobs not reached before a stop keep their GPUs
            alloc.setdefault(j, tuple(int(x) for x in np.sort(g)))
        preempted = tuple(j for j in running if j in in_queue and j not in alloc)
        return Decision(
            alloc, preempted, (ids, k + 1, stopped, (state.cluster, state.scores, cache))
        )

    def _preempt_lower(self, pool, held, order, k, n) -> None:
        """Release running jobs of lower priority than ``order[k]``, lowest first, until ``n`` fit."""
        lower = [j.id for j in reversed(order[k + 1 :]) if j.id in held]
        if pool.n_free + sum(held[j].size for j in lower) < n:
            return
        for j in lower:
            pool.release(held.pop(j))
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
        """L(spread) * max V of ``job`` on GPUs ``idx`` (binned scores): PAL's LV-product."""
        spread = np.unique(pool.mi[idx]).size > 1
        return (self.locality(job) if spread else 1.0) * float(pool.score(job.cls)[idx].max())

    @staticmethod
    def _single_run(order: list[Job], k: int) -> list[Job]:
        """The single-GPU jobs of ``order[k]``'s class from ``k`` on, up to the first other job."""
        cls, e = order[k].cls, k
        while e < len(order) and order[e].gpus == 1 and order[e].cls == cls:
            e += 1
        return order[k:e]

    def _singles_count(self) -> str | None:
        """If a single-GPU job's pick is ``FreePool.pm_first(cls, 1, count)``, that ``count`` (runs of
        such jobs are then placed in one step by ``FreePool.pm_first_singles``); else None."""
        return None

    def _order(self, jobs: list[Job], cluster_size: int) -> list[Job]:
        return jobs

    def _prepare(self, pool: FreePool, state: ClusterState) -> None:
        """Per-round set-up (e.g. the random permutation)."""

    def _pick(self, pool: FreePool, job: Job) -> np.ndarray | None:
        raise NotImplementedError


@dataclass(frozen=True)
class PMFirstPolicy(PlacementPolicy):
    """PM-First: class-sorted guaranteed prefix, lowest-score free GPUs."""

    name: str = "pm-first"
    ties: str = "machine"

    def _order(self, jobs, cluster_size):
        demand = np.cumsum(np.fromiter((j.gpus for j in jobs), np.int64, len(jobs)))
        cut = int(np.searchsorted(demand, cluster_size, side="right"))
        by_cls: dict = {}  # a stable sort by class (A first, None last) as one pass of buckets
        for j in jobs[:cut]:
            b = by_cls.get(j.cls)
            if b is None:
                by_cls[j.cls] = [j]
            else:
                b.append(j)
        head = [j for c in sorted(by_cls, key=lambda c: (c is None, c or "")) for j in by_cls[c]]
        return head + jobs[cut:]

    def _singles_count(self):
        return "machine"

    def _pick(self, pool, job):
        return pool.pm_first(job.cls, job.gpus, count=self.ties)


@dataclass(frozen=True)
class PALPolicy(PMFirstPolicy):
    """PAL: PM-First's queue plus the L×V walk for 1 < N_j <= GPUs per machine.

    Every pick has the LV-product of Algorithm 2. ``ties="fewest-machines"`` (default) chooses among
    LV-equal sets the one that fragments least: a single GPU of the lowest level on the fullest
    machine, a spread set on as few machines as possible. ``ties="artifact"`` is the artifact's
    best-match order (score, then |same-score free GPUs on the machine - N_j|)."""

    name: str = "pal"
    ties: str = "fewest-machines"

    def _singles_count(self):
        return "level" if self.ties == "artifact" else "machine"

    def _pick(self, pool, job):
        artifact = self.ties == "artifact"
        if job.gpus == 1 and not artifact:  # the lowest level, on the fullest machine
            return pool.pm_first(job.cls, 1, count="machine")
        if artifact:
            across = pool.pm_first(job.cls, job.gpus, count="level")
        else:
            across = pool.first_free(job.cls, job.gpus)
        if across is None:
            return None
        a_star = float(pool.score(job.cls)[across].max())
        if 1 < job.gpus <= pool.P:
            within = pool.best_within(job.cls, job.gpus)
            if within is not None and choose_cell(within[0], a_star, self.locality(job)):
                return within[1]
        return across if artifact else pool.fewest_machines(job.cls, job.gpus, a_star)


@dataclass(frozen=True)
class PackedPolicy(PlacementPolicy):
    """Tiresias (sticky) / Gandiva (non-sticky) consolidated placement; ignores scores."""

    name: str = "packed-sticky"
    sticky: bool = True

    def _pick(self, pool, job):
        return pool.packed(job.gpus)


@dataclass(frozen=True)
class RandomPolicy(PlacementPolicy):
    """Uniformly random free GPUs: the first free ones of a permutation seeded by (seed, round)."""

    name: str = "random-sticky"
    sticky: bool = True

    _round_seeded = True

    def _prepare(self, pool, state):
        rng = np.random.default_rng([int(self.seed), int(state.round)])
        pool.set_order("__random__", rng.permutation(pool.G))

    def _pick(self, pool, job):
        return pool.first_free("__random__", job.gpus)


#: PAL's tie-breaks among LV-equal allocations (see :class:`PALPolicy`).
PAL_TIES = ("fewest-machines", "artifact")
#: PM-First's best-match count: free GPUs on the machine, or of the same score level (the artifact).
PM_FIRST_TIES = ("machine", "level")
#: Non-sticky re-placement: move a running job whenever its pick differs (artifact) or only when the
#: pick has a strictly lower LV-product.
MIGRATE = ("always", "if-better")

_POLICIES = {
    "pal": (PALPolicy, False),
    "pm-first": (PMFirstPolicy, False),
    "packed-sticky": (PackedPolicy, True),
    "packed-non-sticky": (PackedPolicy, False),
    "random-sticky": (RandomPolicy, True),
    "random-non-sticky": (RandomPolicy, False),
}


def make_policy(
    name: str,
    *,
    seed: int = 0,
    locality_penalty: float = 1.7,
    locality_by_model: Mapping[str, float] | None = None,
    **options,
) -> PlacementPolicy:
    """A policy by name (:data:`POLICY_NAMES`). Options: ``backfill`` (bool, default False = stop at the
    first job that does not fit, as the artifact does); ``ties``: for ``pal`` :data:`PAL_TIES`, for
    ``pm-first`` :data:`PM_FIRST_TIES`."""
    if name not in _POLICIES:
        raise UnknownSolver(
            "placement", f"unknown placement policy {name!r}; known: {', '.join(POLICY_NAMES)}"
        )
    known = {"backfill", "migrate"} | ({"ties"} if name in ("pal", "pm-first") else set())
    unknown = set(options) - known
    if unknown:
        raise OptionError(sorted(unknown)[0], f"unknown policy option; known: {sorted(known)}")
    extra = {}
    if "ties" in options:
        allowed = PAL_TIES if name == "pal" else PM_FIRST_TIES
        if options["ties"] not in allowed:
            raise OptionError("ties", f"expected one of {allowed}, got {options['ties']!r}")
        extra["ties"] = options["ties"]
    if "migrate" in options:
        if options["migrate"] not in MIGRATE:
            raise OptionError("migrate", f"expected one of {MIGRATE}, got {options['migrate']!r}")
        extra["migrate"] = options["migrate"]
    if not np.isfinite(locality_penalty) or locality_penalty <= 0:
        raise OptionError(
            "locality_penalty", f"must be a positive number, got {locality_penalty!r}"
        )
    table = tuple(sorted((str(k), float(v)) for k, v in (locality_by_model or {}).items()))
    cls, sticky = _POLICIES[name]
    return cls(
        name=name,
        sticky=sticky,
        seed=int(seed),
        locality_penalty=float(locality_penalty),
        locality_by_model=table,
        backfill=bool(options.get("backfill", False)),
        **extra,
    )


def _replay(previous: Decision, ids: tuple[str, ...], alloc: dict, free: np.ndarray):
    """Copy into ``alloc`` the picks of ``previous`` for the jobs heading both processing orders and
    mark their GPUs busy in ``free``; returns (index of the last job decided, whether the round is
    over: the previous round stopped at a misfit inside the common head)."""
    old_ids, decided, stopped, _ = previous.trail
    p = 0
    n = min(decided, len(ids))
    while p < n and old_ids[p] == ids[p]:
        p += 1
    prev = previous.allocation
    for j in ids[:p]:
        g = prev.get(j)
        if g is not None:
            alloc[j] = g
    if alloc:
        free[np.fromiter(itertools.chain.from_iterable(alloc.values()), np.int64)] = False
    return p - 1, stopped and p == decided


def _validate(state: ClusterState, queue: Sequence[Job]) -> list[Job]:
    G = len(state.cluster)
    for c, v in state.scores.items():
        if np.shape(v) != (G,):
            raise DataError(f"scores[{c!r}]", f"expected shape ({G},), got {np.shape(v)}")
    jobs = list(queue)
    if len({j.id for j in jobs}) == len(jobs) and all(
        type(j.gpus) is int and j.gpus >= 1 for j in jobs
    ):
        bad = ()  # the common case, checked in one pass
    else:
        bad = jobs
    seen = set()
    for k, j in enumerate(bad):
        if j.id in seen:
            raise DataError(f"queue[{k}].id", f"duplicate job id {j.id!r}")
        seen.add(j.id)
        if isinstance(j.gpus, bool) or not isinstance(j.gpus, (int, np.integer)) or j.gpus < 1:
            raise DataError(f"queue[{k}].gpus", f"must be a positive integer, got {j.gpus!r}")
    if state.allocation:
        flat = np.fromiter(itertools.chain.from_iterable(state.allocation.values()), np.int64)
        if flat.size and (flat.min() < 0 or flat.max() >= G):
            raise DataError("allocation", f"GPU index out of range 0..{G - 1}")
        if flat.size != np.unique(flat).size:
            raise DataError("allocation", "running jobs share GPUs")
    return jobs


# ---- fairplace solve placement.json --solver <policy> ------------------------------------------


def instance_scores(inst, bin: bool = False, seed: int = 0) -> dict[str, np.ndarray]:
    """Per class (of the cluster and the jobs) the instance's PM-scores, K-means binned if ``bin``."""
    cl = inst.cluster
    classes = dict.fromkeys([*cl.classes, *(j.cls for j in inst.jobs if j.cls is not None)])
    raw = {c: cl.pm_vector(c) for c in classes}
    if not bin:
        return raw
    from fairplace.formulations.pm_score import bin_scores

    return bin_scores(raw, random_state=int(seed))[0]


def _solver(policy_name: str):
    def run(inst, opts=None, name=None, seed=0, bin=False, backfill=False, **_ignored):
        from fairplace.core.solution import Solution
        from fairplace.formulations.placement import slowdowns

        if bin:  # one-time import (scikit-learn, seconds) outside the timed region
            import fairplace.formulations.pm_score  # noqa: F401

        t0 = time.perf_counter()
        cl = inst.cluster
        scores = instance_scores(inst, bin=bin, seed=seed or 0)
        policy = make_policy(
            policy_name,
            seed=int(seed or 0),
            locality_penalty=inst.locality_penalty,
            locality_by_model=inst.locality_by_model,
            backfill=backfill,
        )
        decision = policy.place(ClusterState(cl, scores, {}), inst.jobs)
        alloc = {j: cl.ids(g) for j, g in decision.allocation.items()}
        S = slowdowns(inst, alloc, scores)
        extra = {
            "placed": len(alloc),
            "unplaced": [j.id for j in inst.jobs if j.id not in alloc],
            "weighted_objective": sum(j.weight * S[j.id] for j in inst.jobs if j.id in S),
            "binned": bool(bin),
        }
        if bin:
            extra["objective_raw_scores"] = float(sum(slowdowns(inst, alloc).values()))
        return Solution(
            kind="placement",
            status="heuristic",
            solver=name or policy_name,
            seconds=time.perf_counter() - t0,
            objective=float(sum(S.values())),
            allocation=alloc,
            slowdown=S,
            extra=extra,
        )

    return run


SOLVERS = {name: {"placement": _solver(name)} for name in POLICY_NAMES}
