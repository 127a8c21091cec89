"""What settles a payment c_i = PF_{-i} at the allocation / PF_{-i} of the compact arbiter
(:mod:`.pa_payments`) without closing PF_{-i}, or bounds it: the values of PF minus i for every
app, c_i = 1 when every other app already gets its best value alone or when the leave-one-out LP
proves it, and the lottery's floor and ceiling on c_i (from the leave-one-out LP and from a
feasible start)."""

from __future__ import annotations

import math

from fairplace.formulations import pa
from fairplace.formulations.compact import CompactProgram
from fairplace.formulations.compact_milp import Choice
from fairplace.formulations.pf import PFValue


def _best(prog: CompactProgram, j: int) -> float:
    """best_j = max(w_j0, max_{c fits alone} w_jc): app j's value alone with the whole offer, an
    upper bound on its value in any allocation of the offer (only cells that fit the offer alone,
    ``CompactProgram.feasible_cells``, can be part of one)."""
    app = prog.apps[j]
    t = app.table
    w = [-math.log(t.rho[c]) for c in prog.feasible_cells(j)]
    if app.w_empty is not None:
        w.append(app.w_empty)
    return max(w) if w else -math.inf


def _without_solve(prog, choice, value_with, c, status, routes) -> list[int]:
    """c_i = 1 without a solve when app i's GPUs help nobody: every other app j already gets
    best_j (its value alone with the whole offer) in PF. Then PF_{-i} <= sum_{j != i} best_j =
    value of PF minus i <= PF_{-i} (PF minus i is feasible for PF_{-i}), so PF_{-i} is PF minus
    i and c_i = 1 exactly. Fills ``c``, ``status``, ``routes`` for those; returns the others."""
    apps = prog.apps
    todo = []
    best = {j: _best(prog, j) for j in prog.active}
    for i in choice:
        others = [j for j in prog.active if j != i]
        if all(a.w_empty is not None for a in (apps[j] for j in others)):
            ub = sum(best[j] for j in others)
            if value_with[i].log_sum >= ub - 1e-9:
                c[i], status[i] = 1.0, "optimal"  # the others cannot do better without i
                routes[i] = "best_values"
                continue
        todo.append(i)
    return todo


def _lp_proves_one(prog: CompactProgram, i: int, lp_value: float, with_i: PFValue) -> bool:
    """c_i = 1 from the leave-one-out LP alone (cells need not be integral): the LP of PF with i's
    gains set to 0 bounds PF_{-i} + w_i0 from above (PF_{-i}'s points, i given nothing, are
    feasible for it), and PF minus i (value ``with_i``) is feasible for PF_{-i}; so when the LP
    value minus w_i0 is at most ``with_i``, PF_{-i} = ``with_i`` and c_i = 1 exactly (up to the
    LP's 1e-9). Only for finite rho(nothing) everywhere (no big-M served-count objective)."""
    apps = prog.apps
    w0 = apps[i].w_empty
    if w0 is None or any(apps[j].w_empty is None for j in prog.active):
        return False
    return lp_value - w0 <= with_i.log_sum + 1e-9


def lottery_floor(prog: CompactProgram, i: int, lp_value: float, with_i: PFValue) -> float | None:
    """A lower bound on c_i from the leave-one-out LP (value ``lp_value`` with i's gains zeroed),
    or None. The LP value minus w_i0 (0 for unbounded i) is V >= M s* + L* for PF_{-i}'s
    optimum (s* unbounded apps served, log-sum L*; M = ``big_m`` when some app is unbounded, else
    0). PF minus i (``with_i``: s, L) is feasible, so s* >= s; and s* > s would need
    V >= M (s + 1) - S (S = ``log_sum_range`` >= |L*|): when V is below that, s* = s and
    L* <= V - M s, so c_i = exp(L - L*) >= exp(L - V + M s). A slack of 1e-5 (1 + |V|) covers the
    LP's tolerances; the bound holds for the c_i of any PF_{-i} solved to optimality."""
    apps = prog.apps
    w0 = apps[i].w_empty
    v = lp_value - (w0 if w0 is not None else 0.0)
    v += 1e-5 * (1.0 + abs(v))
    m = prog.big_m if any(apps[j].w_empty is None for j in prog.active) else 0.0
    s = with_i.n_unbounded_served
    if m and v >= m * (s + 1) - prog.log_sum_range:  # PF_{-i} might serve one more
        return None
    return math.exp(min(0.0, with_i.log_sum - (v - m * s)))


def lottery_ceiling(prog: CompactProgram, i: int, start: Choice, with_i: PFValue) -> float:
    """An upper bound on c_i from a point ``start`` feasible for PF_{-i} (the fixing route's
    incumbent, ``rc.best_start``): PF_{-i} is at least its value, so c_i <=
    ``pa.payment(with_i, value)``; the factor 1 + 1e-7 covers the 1e-9 MIP gap of an exact
    PF_{-i}."""
    return pa.payment(with_i, prog.value_without(start, i)) * (1.0 + 1e-7) + 1e-12


def _others(prog: CompactProgram, choice: Choice, i: int) -> PFValue:
    return prog.value_without(choice, i)


def values_without(prog: CompactProgram, choice: Choice) -> dict[int, PFValue]:
    """{i: ``prog.value_without(choice, i)``} for every app of ``choice`` (c_i's numerators): the
    same terms summed in the same order, each -log rho taken once (256 apps: ~0.15 s less
    than one program and 255 logarithms per app)."""
    terms = prog.value_terms(choice)
    out = {}
    for i in choice:
        served, log_sum = 0, 0.0
        for j, unb, w in terms:
            if j != i:
                log_sum += w
                served += unb
        out[i] = PFValue(served, log_sum)
    return out
