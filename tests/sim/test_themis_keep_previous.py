"""``Themis._keep_previous``: within each group of interchangeable GPUs (same machine, same decision
scores) each granted GPU's app in turn takes the lowest GPU of the group it held before, the others
the rest, lowest first; the GPUs per group and the counts per app and group are kept."""

from __future__ import annotations

import numpy as np
import pytest

from fairplace.core.domain import GPU, Cluster
from fairplace.sim.themis.scheduler import Themis


def _reference(cluster: Cluster, grant: dict, before: np.ndarray) -> dict:
    """The rule, written out: groups keyed by (machine, scores), GPUs in grant order."""
    key = [(int(cluster.machine_index[k]), tuple(sorted(g.pm.items())))
           for k, g in enumerate(cluster.gpus)]  # fmt: skip
    held = before.tolist()
    by_group: dict = {}
    for a, idx in grant.items():
        for g in idx.tolist():
            by_group.setdefault(key[g], []).append((a, g))
    out: dict = {a: [] for a in grant}
    for items in by_group.values():
        pool = sorted(g for _, g in items)
        left = []
        for a, _ in items:
            mine = [g for g in pool if held[g] == a]
            if mine:
                out[a].append(mine[0])
                pool.remove(mine[0])
            else:
                left.append(a)
        for a, g in zip(left, pool, strict=True):
            out[a].append(g)
    return {a: sorted(g) for a, g in out.items()}


@pytest.mark.parametrize("seed", range(60))
def test_keep_previous_follows_the_rule(seed):
    rng = np.random.default_rng(seed)
    machines, per = int(rng.integers(1, 5)), int(rng.choice([2, 4, 8]))
    cluster = Cluster(
        tuple(
            GPU(f"g{m}-{k}", f"m{m}", "r0", {"A": float(rng.choice([1.0, 1.0, 1.5]))})
            for m in range(machines)
            for k in range(per)
        )
    )
    G = len(cluster)
    th = Themis()
    th.decide_cluster = cluster
    apps = int(rng.integers(1, 5))
    before = rng.integers(-1, apps + 1, G)  # app indices 0..apps (one app that is granted none)
    pick = rng.permutation(G)[: int(rng.integers(0, G + 1))]
    owner = rng.integers(0, apps, pick.size)
    grant = {a: np.sort(pick[owner == a]) for a in range(apps) if (owner == a).any()}
    got = th._keep_previous(grant, before)
    assert list(got) == list(grant)
    assert {a: g.tolist() for a, g in got.items()} == _reference(cluster, grant, before)
    assert all(g.dtype == np.int64 for g in got.values())


def _leftover_reference(mi: list, counts: dict, spare: np.ndarray, before: np.ndarray) -> dict:
    """Leftover recipients in app order: GPUs they held first, then on the machines of those,
    then the lowest indices."""
    pool, out, held = set(spare.tolist()), {}, before.tolist()
    for a, n in sorted(counts.items()):
        mine = sorted(g for g in pool if held[g] == a)[:n]
        pool -= set(mine)
        machines = {mi[g] for g in mine}
        rest = sorted(pool, key=lambda g: (mi[g] not in machines, g))
        take = mine + rest[: n - len(mine)]
        pool -= set(take)
        out[a] = sorted(take)
    return out


@pytest.mark.parametrize("seed", range(60))
def test_leftover_back_follows_the_rule(seed):
    rng = np.random.default_rng(seed)
    machines, per = int(rng.integers(1, 6)), int(rng.choice([2, 4, 8]))
    cluster = Cluster(
        tuple(GPU(f"g{m}-{k}", f"m{m}", "r0", {}) for m in range(machines) for k in range(per))
    )
    th = Themis()
    th.bind(cluster)
    G, apps = len(cluster), int(rng.integers(1, 5))
    before = rng.integers(-1, apps, G)
    spare = np.sort(rng.permutation(G)[: int(rng.integers(0, G + 1))])
    counts, left = {}, spare.size
    for a in rng.permutation(apps).tolist():
        counts[a] = int(rng.integers(0, left + 1))
        left -= counts[a]
    got = th._leftover_back(counts, spare, before)
    want = _leftover_reference(th._mi_list, counts, spare, before)
    assert {a: g.tolist() for a, g in got.items()} == want
