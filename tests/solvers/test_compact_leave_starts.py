"""The who-leaves route's warm starts (``solvers/compact/pa_leave.py``): its LP started from the
PF LP's basis, and its MILPs given a feasible point, settle the same PF_{-j} as the cold route and
as each PF_{-j} solved as its own MILP."""

import numpy as np
import pytest

from fairplace.formulations.agents import free_gpus
from fairplace.formulations.compact import compact_apps
from fairplace.instances.generators import random_agent_auction
from fairplace.solvers.backends import get_backend, highs
from fairplace.solvers.budget import budget_for
from fairplace.solvers.compact import pa_leave, solve_compact_pf
from fairplace.solvers.compact.pa_leave import leave_max
from fairplace.solvers.compact.pa_payments import values_without
from fairplace.solvers.options import SolveOptions

OPTS = SolveOptions(parallel=False)

#: (apps, machines, machines per rack, seed): every app holds a PF bundle and pays
CASES = [(24, 8, 4, 0), (32, 16, 4, 1)]


def _pf(apps, machines, per_rack, seed):
    inst = random_agent_auction(apps=apps, machines=machines, machines_per_rack=per_rack, seed=seed)
    offer = tuple(int(g) for g in free_gpus(inst))
    res, choice, prog = solve_compact_pf(inst.cluster, offer, compact_apps(inst, offer), OPTS)
    assert res.status == "optimal"
    return prog, choice


@pytest.mark.parametrize("apps,machines,per_rack,seed", CASES)
def test_leave_max_from_the_pf_basis_equals_each_leave_one_out_milp(
    apps, machines, per_rack, seed, monkeypatch
):
    """Warm: the LP from the PF basis, the MILPs started from the LP points' placements (each a
    feasible point of the who-leaves MILP); cold: neither."""
    prog, choice = _pf(apps, machines, per_rack, seed)
    h = highs.build(prog.milp.relaxed(), OPTS)
    h.run()
    basis = h.getBasis()
    todo = sorted(choice)
    points = []
    real = pa_leave._LPPoints.point

    def point(self, G, x, *bounds):
        got = real(self, G, x, *bounds)
        if got is not None:
            assert G.is_feasible(got[0]) and abs(G.value(got[0]) - got[1]) <= 1e-12
            points.append(got[1])
        return got

    monkeypatch.setattr(pa_leave._LPPoints, "point", point)
    warm = leave_max(prog, choice, todo, OPTS, budget_for(OPTS, None), basis=basis)
    assert points  # the route used LP points
    monkeypatch.setattr(pa_leave._LPPoints, "point", lambda *a: None)
    cold = leave_max(prog, choice, todo, OPTS, budget_for(OPTS, None))
    assert len(warm) >= 0.9 * len(todo)
    assert warm.keys() == cold.keys()
    for j, v in warm.items():
        assert np.isfinite(v.log_sum)
        assert abs(v.log_sum - cold[j].log_sum) <= 1e-9, j
    # the cold route equals every PF_{-j} MILP (``test_compact_leave.py``); a few here as well
    for j in sorted(warm)[:: max(1, len(warm) // 3)]:
        own = get_backend("highs").solve(prog.excluding({j}).milp, SolveOptions())
        assert own.status == "optimal"
        assert abs(warm[j].log_sum - own.objective) <= 1e-9, j


@pytest.mark.parametrize("apps,machines,per_rack,seed", CASES + [(48, 8, 4, 2)])
def test_values_without_sums_as_value_without(apps, machines, per_rack, seed):
    """c_i's numerators for every app at once: the same terms in the same order (equal floats)."""
    prog, choice = _pf(apps, machines, per_rack, seed)
    got = values_without(prog, choice)
    assert got.keys() == choice.keys()
    assert all(got[i] == prog.value_without(choice, i) for i in choice)
