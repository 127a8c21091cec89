"""Placement policies of PAL's evaluation behind one interface, and their ``fairplace solve`` entries.

A policy maps the cluster state (per-class scores, current allocations) and the scheduler's ordered queue
(highest priority first, running and waiting jobs) to the next round's allocation:

* ``pm-first`` (PAL §III-B, Alg. 1): cut the queue where cumulative demand first exceeds the cluster
  size, stable-sort that prefix by class (A first), then give each job the free GPUs with the lowest
  score; ties go by best-match locality |c - N_j|, then GPU index, where ``c`` counts the free GPUs on
  the machine (``ties="machine"``, default) or only those of the same score level (``ties="level"``,
  the artifact's ``groupby(['sf', 'Node_ID'])``); :meth:`~.free_pool.FreePool.pm_first`.
  Non-sticky.
* ``pal`` (§III-C, Alg. 2): like PM-First, but a job with 1 < N_j <= GPUs per machine takes the first
  feasible cell of its class's L×V walk (closed form :func:`~fairplace.formulations.lv.choose_cell`):
  the best packed set on one machine if its max score w* <= L_across * a*, else PM-First (max score a*).
* ``packed-sticky`` (Tiresias) / ``packed-non-sticky`` (Gandiva): exact-fit machine, else best fit,
  else spill over the machines with the most free GPUs. ``random-sticky`` / ``random-non-sticky``:
  a uniformly random set of free GPUs, seeded by (seed, ``ClusterState.round``).

The round itself (queue, stickiness, preemption, misfits, resuming) is :mod:`.policy_round`, whose
names (:class:`ClusterState`, :class:`Decision`, :class:`PolicyBase`) are re-exported here; the
free-GPU queries are :class:`~.free_pool.FreePool`'s.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import cast

import numpy as np

from fairplace.core.params import Boolean, Options, Param
from fairplace.core.registry import Entry, Registry
from fairplace.core.shared_params import LOCALITY_PENALTY
from fairplace.core.solution import Solution
from fairplace.formulations.lv import choose_cell
from fairplace.formulations.placement import slowdowns

from . import round_kernel
from .policy_round import ClusterState, Decision, PlacementPolicy, PolicyBase

__all__ = [
    "MIGRATE",
    "PAL_TIES",
    "PM_FIRST_TIES",
    "POLICY_NAMES",
    "POLICY_REGISTRY",
    "policy_solver",
    "ClusterState",
    "Decision",
    "PALPolicy",
    "PMFirstPolicy",
    "PackedPolicy",
    "PolicyBase",
    "RandomPolicy",
    "instance_scores",
    "make_policy",
]


_GPUS = attrgetter("gpus")


@dataclass(frozen=True)
class PMFirstPolicy(PolicyBase):
    """PM-First: class-sorted guaranteed prefix, lowest-score free GPUs."""

    name: str = "pm-first"
    ties: str = "machine"

    def _order(self, jobs, cluster_size):
        demand = np.cumsum(np.fromiter(map(_GPUS, jobs), np.int64, len(jobs)))
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

    def _order_rows(self, queue, cluster_size):
        if type(self)._order is not PMFirstPolicy._order:
            return None
        # (made once per queue and cluster size: a queue placed again is not sorted again)
        return queue.memo(("pm-first rows", cluster_size), lambda: self._rows(queue, cluster_size))

    @staticmethod
    def _rows(queue, cluster_size):
        _, gpus, codes = queue.fields()  # codes: ranks of the classes in _order's class order
        cut = int(gpus.cumsum().searchsorted(cluster_size, side="right"))  # (methods: no wrappers)
        key = codes[:cut]
        if len(queue.table.classes) <= 2**16:  # a stable sort of 16-bit keys is a radix sort
            key = key.astype(np.uint16)
        head = key.argsort(kind="stable")
        if cut == len(queue):  # the whole queue fits
            return head
        return np.concatenate([head, np.arange(cut, len(queue))])

    def _singles_count(self):
        return self.ties  # a single-GPU job's pick is pm_first(cls, 1, count=ties), as in _pick

    def _kernel_spec(self):
        if not _stock(self, PMFirstPolicy):
            return None
        return (round_kernel.PM_FIRST, self.ties, self.ties)

    def _pick(self, pool, job):
        return pool.pm_first(job.cls, job.gpus, count=self.ties)


@dataclass(frozen=True)
class PALPolicy(PMFirstPolicy):
    """PAL: PM-First's queue plus the L×V walk for 1 < N_j <= GPUs per machine.

    Every pick has the LV-product of Algorithm 2. ``ties="fewest-machines"`` (default) chooses among
    LV-equal sets the one that fragments least: a single GPU of the lowest level on the fullest
    machine, a spread set on as few machines as possible. ``ties="artifact"`` is the artifact's
    best-match order (score, then |same-score free GPUs on the machine - N_j|) and, packed, its
    node order (the machine with the most free GPUs at or below the level, its first GPUs)."""

    name: str = "pal"
    ties: str = "fewest-machines"

    def _singles_count(self):
        return "level" if self.ties == "artifact" else "machine"

    def _kernel_spec(self):
        if not _stock(self, PALPolicy):
            return None
        if self.ties == "artifact":
            return (round_kernel.PAL_ARTIFACT, "level", "level")
        return (round_kernel.PAL_FEWEST, "machine", "machine")

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
            within = pool.best_within(job.cls, job.gpus, "artifact" if artifact else "best-fit")
            if within is not None and choose_cell(within[0], a_star, self.locality(job)):
                return within[1]
        return across if artifact else pool.fewest_machines(job.cls, job.gpus, a_star)


def _stock(policy, base) -> bool:
    """True if ``policy`` picks as ``base`` does (a subclass overriding a pick, the singles rule or
    the locality is not what the compiled kernel implements: it runs on the Python path)."""
    t = type(policy)
    return all(getattr(t, m) is getattr(base, m) for m in ("_pick", "_singles_count", "locality"))


@dataclass(frozen=True)
class PackedPolicy(PolicyBase):
    """Tiresias (sticky) / Gandiva (non-sticky) consolidated placement; ignores scores."""

    name: str = "packed-sticky"
    sticky: bool = True

    def _pick(self, pool, job):
        return pool.packed(job.gpus)


@dataclass(frozen=True)
class RandomPolicy(PolicyBase):
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

#: the policies' option specs (``--placement-option KEY=VALUE``; ``fairplace solve --solver pal``
#: takes ``backfill`` too, the same spec)
BACKFILL_OPTION = Param(
    "backfill", False, Boolean(), "skip a job that does not fit (False: stop there, the artifact)"
)
MIGRATE_OPTION = Param(
    "migrate",
    "always",
    Options(MIGRATE),
    "move a running job whenever its pick differs (the artifact) or only for a lower LV-product",
)
PAL_TIES_OPTION = Param(
    "ties", "fewest-machines", Options(PAL_TIES), "PAL's tie-break among LV-equal GPU sets"
)
PM_FIRST_TIES_OPTION = Param(
    "ties", "machine", Options(PM_FIRST_TIES), "PM-First's best-match count: per machine or level"
)


def _policy(cls: type, sticky: bool, doc: str, *params: Param) -> Entry:
    """A policy's entry: ``cls`` made with ``sticky``; options ``backfill``, ``migrate`` and
    ``params``; capability ``sticky`` (a running job keeps its GPUs)."""

    def make(*, name, seed=0, locality_penalty=LOCALITY_PENALTY.default, locality_by_model=None,
             backfill=False, **options):  # fmt: skip
        locality_penalty = LOCALITY_PENALTY.check(locality_penalty)
        for m, v in (locality_by_model or {}).items():
            LOCALITY_PENALTY.check(v, f"locality_by_model.{m}")
        table = tuple(sorted((str(k), float(v)) for k, v in (locality_by_model or {}).items()))
        return cls(
            name=name,
            sticky=sticky,
            seed=int(seed),
            locality_penalty=locality_penalty,
            locality_by_model=table,
            backfill=bool(backfill),
            **options,
        )

    return Entry(make, (), doc, (BACKFILL_OPTION, MIGRATE_OPTION, *params), {"sticky": sticky})


#: every placement policy: name -> entry (factory, option specs, doc, capabilities: ``sticky``).
#: Options (``placement_options``; errors name ``placement_options.<option>``): ``backfill`` (true
#: or false, default False = stop at the first job that does not fit, as the artifact does),
#: ``migrate`` (:data:`MIGRATE`), ``ties`` (pal: :data:`PAL_TIES`, pm-first:
#: :data:`PM_FIRST_TIES`). The context every policy takes: its name, the seed, L and L per model.
POLICY_REGISTRY = Registry(
    "placement policy",
    {
        "pal": _policy(PALPolicy, False, "PAL: PM-First plus the LxV walk", PAL_TIES_OPTION),
        "pm-first": _policy(
            PMFirstPolicy, False, "PM-First: lowest PM-scores first", PM_FIRST_TIES_OPTION
        ),
        "packed-sticky": _policy(PackedPolicy, True, "Tiresias' consolidated placement"),
        "packed-non-sticky": _policy(PackedPolicy, False, "Gandiva's consolidated placement"),
        "random-sticky": _policy(RandomPolicy, True, "uniformly random free GPUs, sticky"),
        "random-non-sticky": _policy(RandomPolicy, False, "uniformly random free GPUs"),
    },
    where="placement",
    options_path="placement_options",
    context=("name", "seed", "locality_penalty", "locality_by_model"),
    protocols=(PlacementPolicy,),
    shape="name and place(state, queue) (fairplace.sim.protocols.PlacementPolicy)",
)
#: The placement policy names (one list: the registry's).
POLICY_NAMES = POLICY_REGISTRY.names()


def make_policy(
    name: str,
    *,
    seed: int = 0,
    locality_penalty: float = LOCALITY_PENALTY.default,
    locality_by_model: Mapping[str, float] | None = None,
    **options,
) -> PolicyBase:
    """A policy by name (:data:`POLICY_NAMES`) with its keyword ``options``
    (:data:`POLICY_REGISTRY`)."""
    made = POLICY_REGISTRY.make(
        name,
        options,
        name=POLICY_REGISTRY.key(name),
        seed=seed,
        locality_penalty=locality_penalty,
        locality_by_model=locality_by_model,
    )
    return cast(PolicyBase, made)  # a name makes a built-in


# ---- fairplace solve placement.json --solver <policy> ------------------------------------------


def instance_scores(inst, bin: bool = False, seed: int = 0) -> dict[str, np.ndarray]:
    """Per class (of the cluster and the jobs) the instance's PM-scores, K-means binned if ``bin``."""
    cl = inst.cluster
    classes = dict.fromkeys([*cl.classes, *(j.cls for j in inst.jobs if j.cls is not None)])
    raw = {c: cl.pm_vector(c) for c in classes}
    if not bin:
        return raw
    from fairplace.formulations.pm_score import bin_scores  # heavy: imported on use (scikit-learn)

    return bin_scores(raw, random_state=int(seed))[0]


def policy_solver(policy_name: str):
    """``fairplace solve placement.json --solver <policy>``: the policy's solve of a placement
    instance, ``f(instance, opts, name=, seed=0, bin=False, backfill=False) -> Solution``."""

    def run(inst, opts=None, name=None, seed=0, bin=False, backfill=False, **_ignored):

        if bin:  # one-time import (scikit-learn, seconds) outside the timed region
            import fairplace.formulations.pm_score  # heavy: imported on use (scikit-learn)  # noqa: F401

        # binning is set-up, as in a simulation (once per cluster, not per round): timed apart
        t_bin = time.perf_counter()
        cl = inst.cluster
        scores = instance_scores(inst, bin=bin, seed=seed or 0)
        t0 = time.perf_counter()
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
            "binning_seconds": t0 - t_bin,
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
