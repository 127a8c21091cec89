"""PAL's packed pick under ``ties="artifact"`` (``--setup pal-artifact``): the artifact's node order
(placement/pal.py: ``value_counts`` of the GPUs at or below the level, then the first
``itertools.combinations``), not fairplace's best fit; cases where the two orders differ."""

from __future__ import annotations

import numpy as np
import pytest

from fairplace.core.domain import Job
from fairplace.instances.generators import grid_cluster
from fairplace.solvers.placement import round_kernel
from fairplace.solvers.placement.free_pool import FreePool
from fairplace.solvers.placement.policies import ClusterState, make_policy

#: machine 0: 1.0, 1.0, 0.9, 2.0 (three GPUs at or below 1.0); machine 1: four at 1.0
TWO = np.array([1.0, 1.0, 0.9, 2.0, 1.0, 1.0, 1.0, 1.0])
#: machine 1 slow: only machine 0 can pack two GPUs at 1.0
ONE = np.array([1.0, 1.0, 0.9, 2.0, 2.0, 2.0, 2.0, 2.0])


def _pool(pm):
    cl = grid_cluster(2, 4, pm={"A": pm})
    return FreePool(cl, {"A": pm}, np.ones(len(pm), bool))


@pytest.mark.parametrize(
    "pm, best_fit, artifact",
    [
        # a tie between machines: best fit takes machine 0 (both have 4 free, lower index), the
        # artifact the machine with the most GPUs at or below 1.0 (machine 1: four)
        (TWO, (1.0, [2, 0]), (1.0, [4, 5])),
        # one machine: best fit its lowest scores (0.9, then 1.0), the artifact its first two GPUs
        # at or below 1.0 by index (every pair there has max 1.0)
        (ONE, (1.0, [2, 0]), (1.0, [0, 1])),
    ],
)
def test_best_within_breaks_ties_in_the_artifacts_node_order(pm, best_fit, artifact):
    for ties, want in (("best-fit", best_fit), ("artifact", artifact)):
        w, gpus = _pool(pm).best_within("A", 2, ties)
        assert (w, gpus.tolist()) == want


def test_a_machine_with_fewer_eligible_gpus_than_free_loses_under_the_artifact():
    """The artifact counts GPUs at or below the level, not free GPUs. Machine 0: 2 of its 4 free
    GPUs at 1.0; machine 1: 3 free (one busy), all at 1.0: both rules take machine 1. With one of
    those 3 slow, 2 and 2 tie under the artifact (machine 0: lower index) while best fit still
    takes machine 1 (3 free < 4)."""
    pm = np.array([1.0, 1.0, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0])
    free = np.array([1, 1, 1, 1, 0, 1, 1, 1], bool)
    cl = grid_cluster(2, 4, pm={"A": pm})
    assert FreePool(cl, {"A": pm}, free).best_within("A", 2, "artifact")[1].tolist() == [5, 6]
    pm2 = pm.copy()
    pm2[7] = 2.0
    cl2 = grid_cluster(2, 4, pm={"A": pm2})
    assert FreePool(cl2, {"A": pm2}, free).best_within("A", 2, "artifact")[1].tolist() == [0, 1]
    assert FreePool(cl2, {"A": pm2}, free).best_within("A", 2)[1].tolist() == [5, 6]


@pytest.mark.parametrize("path", ["python", "c"])
@pytest.mark.parametrize("pm, fewest, artifact", [(TWO, (0, 2), (4, 5)), (ONE, (0, 2), (0, 1))])
def test_pal_policy_packs_in_the_artifacts_order(monkeypatch, path, pm, fewest, artifact):
    if path == "c" and not round_kernel.available():
        pytest.skip("the compiled round kernel is not built")
    monkeypatch.setenv(round_kernel.ENV, path)
    state = ClusterState(grid_cluster(2, 4, pm={"A": pm}), {"A": pm}, {})
    job = [Job("j", 2, "A")]
    assert make_policy("pal", ties="artifact").place(state, job).allocation == {"j": artifact}
    assert make_policy("pal").place(state, job).allocation == {"j": fewest}


def test_unknown_ties_are_an_error():
    with pytest.raises(ValueError, match="ties"):
        _pool(ONE).best_within("A", 2, "sideways")
