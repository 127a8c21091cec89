"""Joint placement IP (PAL, exact): place all jobs of a round at once.

    minimise   sum_j w_j * L_j(spread(G_j)) * max_{g in G_j} V_{class(j)}(g)

with L_j = 1 within one machine and L_j = ``locality_penalty`` (or the job's per-model value) across
machines. When not every job fits, the program first maximises the number of placed jobs, then the
slowdown sum (a weight BIG > any slowdown sum on the count).

Symmetry reduction: GPUs on one machine with the same score for every class in play are interchangeable,
so the program uses integer *counts* n_jq per (job, group q) instead of one binary per (job, GPU).
The max and the spread are linearised with one binary per LxV cell (s, v) per job, exactly the PAL
LxV matrix: s in {within, across}, v a score level of the job's class.

    sum_q n_jq = n_j p_j                       (demand met iff placed)
    sum_j n_jq <= |q|                          (no GPU used twice)
    sum_{s,v} z_jsv = p_j                      (one cell per placed job)
    sum_{q: V_j(q) > v} n_jq <= n_j * sum_{s, v' > v} z_jsv'   for each level v
                                               (only GPUs at or below the cell's score)
    sum_m y_jm = sum_v z_j,within,v            (a within cell picks one machine)
    sum_{q on m} n_jq <= n_j * (y_jm + sum_v z_j,across,v)   for each machine m

The two linking families are the aggregated (cumulative) forms of the per-group big-M rows
n_jq <= u_jq * (...): the same integer points, a much tighter LP (64 jobs on 256 GPUs: 60 s -> 4 s).
A single-GPU job has no cells: its slowdown is its GPU's score, so its cost sits on n_jq directly
(an assignment); single-GPU jobs of one (class, weight) type share integer counts (no job symmetry).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from fairplace.core.domain import SPREAD_MACHINE, PlacementInstance, slowdown
from fairplace.formulations.pyomo_matrix import milp_to_cvxpy, milp_to_pyomo

from .program import MILP, Rows


@dataclass(frozen=True)
class PlacementProgram:
    """The joint placement IP of ``instance``; ``scores`` overrides V per class (e.g. binned scores)."""

    instance: PlacementInstance
    scores: Mapping[str, np.ndarray] = field(default_factory=dict)
    free: np.ndarray | None = None  # boolean mask of usable GPUs (default: all)

    def score(self, cls: str | None) -> np.ndarray:
        if cls is not None and cls in self.scores:
            return np.asarray(self.scores[cls], dtype=float)
        return self.instance.cluster.pm_vector(cls)

    @cached_property
    def classes(self) -> tuple:
        return tuple(dict.fromkeys(j.cls for j in self.instance.jobs))

    @cached_property
    def groups(self) -> tuple[tuple[int, tuple[float, ...], tuple[int, ...]], ...]:
        """(machine index, score per class, GPU indices) of interchangeable GPUs."""
        cl = self.instance.cluster
        V = (
            np.stack([self.score(c) for c in self.classes])
            if self.classes
            else np.ones((1, len(cl)))
        )
        free = np.ones(len(cl), bool) if self.free is None else np.asarray(self.free, bool)
        buckets: dict[tuple, list[int]] = {}
        for g in np.flatnonzero(free):
            key = (int(cl.machine_index[g]), tuple(np.round(V[:, g], 12)))
            buckets.setdefault(key, []).append(int(g))
        return tuple((m, s, tuple(gs)) for (m, s), gs in sorted(buckets.items()))

    @cached_property
    def layout(self):
        """Column layout: per entry the column starts and metadata. An entry is one multi-GPU job, or
        all single-GPU jobs of one (class, weight) type: they are interchangeable, so one integer count
        per group (and p = how many of them are placed) replaces a binary per job."""
        jobs = self.instance.jobs
        Q = len(self.groups)
        n_machines = len(self.instance.cluster.machines)
        machine_cap = np.zeros(n_machines, int)
        for m, _, gs in self.groups:
            machine_cap[m] += len(gs)
        cols = 0
        meta = []
        types: dict[tuple, dict] = {}
        for j, job in enumerate(jobs):
            if job.gpus == 1 and (job.cls, job.weight) in types:
                types[(job.cls, job.weight)]["jobs"].append(j)
                continue
            ci = self.classes.index(job.cls)
            levels = np.unique([s[ci] for _, s, _ in self.groups]) if Q else np.zeros(0)
            within_ok = job.gpus <= (machine_cap.max() if n_machines else 0)
            spreads = [0] if job.gpus == 1 else ([0, 1] if within_ok else [1])
            # a single-GPU job's slowdown is its GPU's score: costs sit on its counts, no cells
            cells = [] if job.gpus == 1 else [(s, v) for s in spreads for v in levels]
            machines = (
                [m for m in range(n_machines) if machine_cap[m] >= job.gpus]
                if 0 in spreads and job.gpus > 1
                else []
            )
            entry = {
                "n": cols,
                "p": cols + Q,
                "z": cols + Q + 1,
                "cells": cells,
                "y": cols + Q + 1 + len(cells),
                "machines": machines,
                "ci": ci,
                "jobs": [j],
            }
            if job.gpus == 1:
                types[(job.cls, job.weight)] = entry
            cols += Q + 1 + len(cells) + len(machines)
            meta.append(entry)
        return cols, meta

    def cell_cost(self, j: int, cell: tuple[int, float]) -> float:
        job = self.instance.jobs[j]
        L = 1.0 if cell[0] == 0 else self.instance.locality(job)
        return job.weight * L * float(cell[1])

    @cached_property
    def worst(self) -> float:
        """An upper bound on the weighted slowdown sum of any placement (every job in its worst cell)."""
        top = max((max(s) for _, s, _ in self.groups), default=1.0)
        jobs = self.instance.jobs
        return float(
            sum(
                self.cell_cost(e["jobs"][0], e["cells"][-1])
                if e["cells"]
                else len(e["jobs"]) * jobs[e["jobs"][0]].weight * top
                for e in self.layout[1]
            )
        )

    @cached_property
    def big(self) -> float:
        """Weight of one more placed job: the program minimises weighted - big * placed."""
        return 1.0 + 2.0 * self.worst

    def to_milp(self) -> MILP:
        n_cols, meta = self.layout
        jobs, groups = self.instance.jobs, self.groups
        Q = len(groups)
        c = np.zeros(n_cols)
        lb, ub = np.zeros(n_cols), np.ones(n_cols)
        rows = Rows()
        add = rows.add

        machines_of: dict[int, list[int]] = {}
        for q, (m, _, _) in enumerate(groups):
            machines_of.setdefault(m, []).append(q)
        for e in meta:
            j, job, count = e["jobs"][0], jobs[e["jobs"][0]], len(e["jobs"])
            for q, (_, _, gs) in enumerate(groups):
                ub[e["n"] + q] = min(job.gpus * count, len(gs))
            ub[e["p"]] = count
            c[e["p"]] = -self.big
            add([(e["n"] + q, 1.0) for q in range(Q)] + [(e["p"], -float(job.gpus))], 0.0, 0.0)
            if not e["cells"]:  # single GPU: S = V(q), an assignment
                for q, (_, s, _) in enumerate(groups):
                    c[e["n"] + q] = job.weight * s[e["ci"]]
                continue
            N = float(job.gpus)
            for k, cell in enumerate(e["cells"]):
                c[e["z"] + k] = self.cell_cost(j, cell)
            add([(e["z"] + k, 1.0) for k in range(len(e["cells"]))] + [(e["p"], -1.0)], 0.0, 0.0)
            within = [e["z"] + k for k, (s, _) in enumerate(e["cells"]) if s == SPREAD_MACHINE]
            across = [e["z"] + k for k, (s, _) in enumerate(e["cells"]) if s != SPREAD_MACHINE]
            if e["machines"]:
                add(
                    [(e["y"] + t, 1.0) for t in range(len(e["machines"]))]
                    + [(z, -1.0) for z in within],
                    0.0,
                    0.0,
                )
            # only GPUs at or below the cell's score level, in cumulative form: the GPUs taken above
            # each level are at most N_j times the weight of the cells above that level
            levels = sorted({v for _, v in e["cells"]})
            for lev in levels[:-1]:
                above = [q for q, (_, s, _) in enumerate(groups) if s[e["ci"]] > lev + 1e-12]
                cells_above = [e["z"] + k for k, (_, v) in enumerate(e["cells"]) if v > lev + 1e-12]
                add(
                    [(e["n"] + q, 1.0) for q in above] + [(z, -N) for z in cells_above],
                    -np.inf,
                    0.0,
                )
            if within:  # a within cell uses one machine: at most N_j GPUs per machine, y's machine
                mpos = {m: t for t, m in enumerate(e["machines"])}
                for m, qs in machines_of.items():
                    ys = [(e["y"] + mpos[m], -N)] if m in mpos else []
                    add(
                        [(e["n"] + q, 1.0) for q in qs] + ys + [(z, -N) for z in across],
                        -np.inf,
                        0.0,
                    )
        for q, (_, _, gs) in enumerate(groups):
            add([(e["n"] + q, 1.0) for e in meta], -np.inf, float(len(gs)))
        return rows.integer_program(c, lb, ub, "min")

    def decode(self, x: np.ndarray) -> dict[str, tuple[str, ...]]:
        """GPU ids per placed job (groups handed out in cluster order; of interchangeable single-GPU
        jobs the first ones in instance order are placed)."""
        _, meta = self.layout
        cl = self.instance.cluster
        jobs = self.instance.jobs
        taken = [0] * len(self.groups)
        out: dict[str, tuple[str, ...]] = {}
        for e in meta:
            placed = int(round(x[e["p"]]))
            if placed < 1:
                continue
            ids: list[str] = []
            for q, (_, _, gs) in enumerate(self.groups):
                k = int(round(x[e["n"] + q]))
                ids.extend(cl.gpus[g].id for g in gs[taken[q] : taken[q] + k])
                taken[q] += k
            if jobs[e["jobs"][0]].gpus > 1:
                out[jobs[e["jobs"][0]].id] = tuple(ids)
            else:
                for j, gid in zip(e["jobs"][:placed], ids, strict=True):
                    out[jobs[j].id] = (gid,)
        return dict(sorted(out.items(), key=lambda kv: self._order[kv[0]]))

    def start_vector(self, allocation: Mapping[str, tuple[str, ...]]) -> np.ndarray:
        """The program's point for a placement {job id: GPU ids} (a warm start, e.g. PAL's): counts
        per group, each multi-GPU job in its own L x V cell (within a machine when it is on one);
        jobs not in ``allocation`` are unplaced. Feasible when the placement is (free GPUs, each
        used once, exactly the demand); callers check with ``MILP.is_feasible``."""
        n_cols, meta = self.layout
        cl, jobs = self.instance.cluster, self.instance.jobs
        group_of = {g: q for q, (_, _, gs) in enumerate(self.groups) for g in gs}
        x = np.zeros(n_cols)
        for e in meta:
            placed = [j for j in e["jobs"] if allocation.get(jobs[j].id)]
            x[e["p"]] = len(placed)
            for j in placed:
                for g in cl.indices(allocation[jobs[j].id]):
                    x[e["n"] + group_of.get(int(g), 0)] += 1.0
            if not placed or not e["cells"]:
                continue
            idx = cl.indices(allocation[jobs[placed[0]].id])
            level = max(self.groups[group_of.get(int(g), 0)][1][e["ci"]] for g in idx)
            within = cl.spread(idx) == SPREAD_MACHINE
            cell: tuple[int, int] | None = (SPREAD_MACHINE, level) if within else None
            if cell is None or cell not in e["cells"]:
                cell = next(c for c in e["cells"] if c[0] != SPREAD_MACHINE and c[1] == level)
            x[e["z"] + e["cells"].index(cell)] = 1.0
            if cell[0] == SPREAD_MACHINE:
                x[e["y"] + e["machines"].index(int(cl.machine_index[idx[0]]))] = 1.0
        return x

    @cached_property
    def _order(self) -> dict[str, int]:
        return {j.id: k for k, j in enumerate(self.instance.jobs)}

    def to_pyomo(self):
        """The same program as a Pyomo model (columns x[k], rows con[r]) built from the matrix form."""
        return milp_to_pyomo(self.to_milp())

    def from_pyomo(self, model) -> np.ndarray:
        return np.array([model.x[k].value or 0.0 for k in model.x], dtype=float)

    def to_cvxpy(self):
        return milp_to_cvxpy(self.to_milp())


def slowdowns(
    instance: PlacementInstance,
    allocation: Mapping[str, tuple[str, ...]],
    scores: Mapping[str, np.ndarray] | None = None,
) -> dict[str, float]:
    """S_j = L_j(spread) * max V per placed job (the quantity the program minimises)."""
    cl = instance.cluster
    out = {}
    for job in instance.jobs:
        ids = allocation.get(job.id)
        if not ids:
            continue
        idx = cl.indices(ids)
        V = (
            np.asarray(scores[job.cls])
            if scores and job.cls is not None and job.cls in scores
            else cl.pm_vector(job.cls)
        )[idx]
        L = instance.locality(job)
        out[job.id] = slowdown((1.0, L, L), cl.spread(idx), V)
    return out
