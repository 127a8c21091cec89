"""Bounds and the Gavel-style finish-time-fairness policy: solvers ``relaxation`` and ``gavel-ftf``.

``relaxation`` (status ``bound``): an upper bound on the exact PF objective (sum -log rho) of an auction
instance, from :class:`~fairplace.formulations.relaxation.PFRelaxation`. ``method='lp'`` solves the LP
relaxation with HiGHS (the tight bound on explicit bid tables), ``'eg'`` the Eisenberg-Gale relaxation with
CVXPY + Clarabel (divisible GPUs; never tighter than the LP), ``'both'`` (default) solves both and reports
the LP one as ``objective`` (EG >= LP by concavity, so the LP bound is the tighter; EG is kept in
``extra['eg_bound']``). Row (*) of the relaxation uses ``n_min`` = the number of unbounded apps served by
``greedy-log`` (a lower bound on the exact n*), or the exact n* when the exact optimum is computed.
``extra['integrality_gap'] = bound - exact`` when ``exact_objective=`` is passed or ``compute_exact=True``.

``gavel-ftf``: :class:`~fairplace.formulations.gavel.GavelFTFProgram` solved exactly: in closed form when
it is separable (``method='waterfill'``, :mod:`.waterfill`), by rho-bisection over HiGHS LPs
(``method='bisection'``) or as one CVXPY SOCP (``method='socp'``); ``'auto'`` (default) takes the
closed form where it applies, else the bisection.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np

from fairplace.core.domain import AuctionInstance
from fairplace.core.errors import OptionError, ProgramInfeasible, SolverFailed
from fairplace.core.params import Options, Param
from fairplace.core.solution import Solution
from fairplace.formulations.gavel import GavelFTFProgram
from fairplace.formulations.pf import PFProgram
from fairplace.formulations.relaxation import PFRelaxation

from . import backends
from .auction import solve_pf
from .heuristics import greedy_log_choice
from .options import SolveOptions, SolverEntry
from .solver_params import BACKEND, COMPUTE_EXACT, EXACT_OBJECTIVE, N_MIN
from .waterfill import separable_configs, waterfill

#: solve_gavel's methods (see its docstring)
GAVEL_METHODS = ("auto", "waterfill", "bisection", "socp")
#: the relaxation's methods: the LP, the Eisenberg-Gale program, or both (the tighter bound)
RELAXATION_METHODS = ("lp", "eg", "both")
#: the ``method`` option of ``relaxation`` and of ``gavel-ftf`` (two options of one name)
RELAXATION_METHOD = Param(
    "method", "both", Options(RELAXATION_METHODS), "the bound: LP, Eisenberg-Gale or both"
)
GAVEL_METHOD = Param(
    "method", "auto", Options(GAVEL_METHODS), "how Gavel's min max rho program is solved"
)
_CLARABEL_TIGHT = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}


# --- bounds -------------------------------------------------------------------------------------
def lp_bound(
    relax: PFRelaxation,
    opts: SolveOptions = SolveOptions(),
    backend: str | backends.Backend = "highs",
) -> tuple[float, np.ndarray]:
    """(optimum, x) of the LP relaxation (on ``backend``; default HiGHS simplex)."""
    res = backends.run(relax.to_lp(), backend, opts.with_(time_limit=None))
    if res.status != "optimal":
        raise SolverFailed(f"LP relaxation: {res.status} ({res.message})")
    assert res.x is not None and res.objective is not None  # optimal: a point and its value
    return float(res.objective), res.x


def eg_bound(relax: PFRelaxation) -> tuple[float, np.ndarray]:
    """(optimum, x) of the Eisenberg-Gale relaxation (CVXPY, Clarabel)."""
    import cvxpy as cp  # heavy: imported on use

    prob, x = relax.to_cvxpy()
    with warnings.catch_warnings():  # "inaccurate" is reported through the status below
        warnings.simplefilter("ignore", UserWarning)
        prob.solve(solver=cp.CLARABEL)
    if prob.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        raise SolverFailed(f"EG relaxation: {prob.status}")
    xv = np.zeros(len(relax.columns)) if x.value is None else np.asarray(x.value, dtype=float)
    return float(prob.value), xv


def solve_relaxation(
    inst: AuctionInstance,
    opts: SolveOptions = SolveOptions(),
    method: str = "both",
    exact_objective: float | None = None,
    compute_exact: bool = False,
    n_min: int | None = None,
    name: str | None = None,
    backend: str | backends.Backend = "highs",
) -> Solution:
    """Upper bound on sum -log rho (status ``bound``); see the module docstring. ``backend`` solves
    the LP relaxation and (``compute_exact``) the exact PF program."""
    RELAXATION_METHOD.check(method)
    if method != "lp":  # one-time import outside the timed region
        import cvxpy  # heavy: imported on use  # noqa: F401
    t0 = time.perf_counter()
    exact_served = None
    if compute_exact and exact_objective is None:
        res, choice, prog = solve_pf(inst, backend, opts)
        if res.status == "optimal" and choice is not None:
            val = prog.value(choice)
            exact_objective, exact_served = val.log_sum, val.n_unbounded_served
    if n_min is None:
        if exact_served is not None:
            n_min = exact_served
        else:
            choice = greedy_log_choice(inst)
            n_min = sum(inst.apps[i].rho_empty is None for i in choice)
    relax = PFRelaxation(inst, n_min=int(n_min))
    extra: dict = {"method": method, "n_min": int(n_min)}
    bounds, xs = [], []
    if method in ("lp", "both"):
        v, x = lp_bound(relax, opts, backend)
        extra["lp_bound"] = v
        bounds.append(v)
        xs.append(x)
    if method in ("eg", "both"):
        v, x = eg_bound(relax)
        extra["eg_bound"] = v
        bounds.append(v)
        xs.append(x)
    k = 0  # 'both': the LP bound (LP <= EG by concavity of log; EG is reported in extra)
    bound = bounds[k]
    ids = [a.id for a in inst.apps]
    frac: dict[str, dict[int, float]] = {}
    for (i, b), v in zip(relax.columns, xs[k], strict=True):
        if v > 1e-9:
            frac.setdefault(ids[i], {})[b] = float(v)
    extra["fractions"] = frac
    if exact_objective is not None:
        extra["exact_objective"] = float(exact_objective)
        extra["integrality_gap"] = float(bound - exact_objective)
    return Solution(
        kind="auction",
        status="bound",
        solver=name or "relaxation",
        seconds=time.perf_counter() - t0,
        objective=bound,
        allocation={},
        bound=bound,
        gap=extra.get("integrality_gap"),
        message=f"{['lp', 'eg'][k] if method == 'both' else method} relaxation (upper bound)",
        extra=extra,
    )


# --- Gavel-style FTF ----------------------------------------------------------------------------
@dataclass(frozen=True)
class GavelResult:
    """Time fractions X (n, K), rho per job, max rho, method, LP/SOCP solves, seconds, status."""

    X: np.ndarray
    rho: np.ndarray
    max_rho: float
    method: str
    solves: int
    seconds: float
    status: str = "optimal"  # or Clarabel's "optimal_inaccurate"


def _lp_at(
    prob: GavelFTFProgram, t: float, opts: SolveOptions, backend: str | backends.Backend = "highs"
) -> tuple[float, np.ndarray]:
    res = backends.run(prob.feasibility_lp(t), backend, opts.with_(time_limit=None))
    if res.status != "optimal":
        raise SolverFailed(f"gavel-ftf LP at t={t:g}: {res.status} ({res.message})")
    assert res.x is not None and res.objective is not None  # optimal: a point and its value
    return float(res.objective), prob.scatter(res.x[:-1])


def solve_gavel(
    prob: GavelFTFProgram,
    method: str = "auto",
    tol: float = 1e-10,
    opts=SolveOptions(),
    backend: str | backends.Backend = "highs",
) -> GavelResult:
    """min max rho exactly. ``waterfill``: the closed form of a separable program
    (:mod:`~fairplace.solvers.waterfill`: no LP, X the water-filling optimum). ``bisection`` keeps lo
    (infeasible t, or the lower bound) and hi = max rho(X) of the best LP point found (always
    achievable; each LP on ``backend``); it stops when hi - lo <= tol (1 + hi). ``socp`` is one
    CVXPY + Clarabel conic solve (not a back end's LP). ``auto`` (default): ``waterfill`` where the
    program is separable, else ``bisection``."""
    GAVEL_METHOD.check(method)
    if method == "socp":  # one-time import outside the timed region
        import cvxpy  # heavy: imported on use  # noqa: F401
    t0 = time.perf_counter()
    if method in ("auto", "waterfill"):
        cfg = separable_configs(prob)
        if cfg is not None:
            X, t = waterfill(prob, cfg)
            return GavelResult(X, prob.rho(X), t, "waterfill", 0, time.perf_counter() - t0)
        if method == "waterfill":
            raise OptionError(
                "method",
                "'waterfill' needs a separable program (each job with work left has one "
                "configuration, used by no other job); use 'bisection' or 'socp'",
            )
        method = "bisection"
    if method == "socp":
        import cvxpy as cp  # heavy: imported on use

        p, X, t = prob.to_cvxpy()
        with warnings.catch_warnings():  # "inaccurate" is kept in GavelResult.status
            warnings.simplefilter("ignore", UserWarning)
            p.solve(solver=cp.CLARABEL, **_CLARABEL_TIGHT)
        if p.status == cp.INFEASIBLE:
            raise ProgramInfeasible("gavel-ftf: no allocation gives every job a positive rate")
        if p.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
            raise SolverFailed(f"gavel-ftf SOCP: {p.status}")
        Xv = prob.scatter(np.maximum(np.asarray(X.value, dtype=float), 0.0))
        rho = prob.rho(Xv)
        return GavelResult(
            Xv, rho, float(t.value), "socp", 1, time.perf_counter() - t0, str(p.status)
        )
    lo = prob.lower_bound()
    if not np.any(prob.work > 0):
        X = np.zeros_like(prob.throughput)
        return GavelResult(X, prob.rho(X), lo, method, 0, time.perf_counter() - t0)
    t = 2.0 * lo if lo > 0 else 1.0
    lam, X = _lp_at(prob, t, opts, backend)
    if lam <= 0:
        raise ProgramInfeasible("gavel-ftf: no allocation gives every job a positive rate")
    best_X, hi = X, float(np.max(prob.rho(X)))
    solves = 1
    while hi - lo > tol * (1.0 + hi) and solves < 200:
        t = 0.5 * (lo + hi)
        lam, X = _lp_at(prob, t, opts, backend)
        solves += 1
        r = float(np.max(prob.rho(X))) if lam > 0 else np.inf
        if r < hi:
            best_X, hi = X, r
        if lam >= 1.0 - 1e-12:
            hi = min(hi, max(t, r))
        else:
            lo = t
    return GavelResult(best_X, prob.rho(best_X), hi, method, solves, time.perf_counter() - t0)


def auction_to_gavel(
    inst: AuctionInstance,
) -> tuple[GavelFTFProgram, list[tuple[int, int | None]], list]:
    """Map an auction instance to :class:`GavelFTFProgram`.

    Every kept PF column (app i, bid b) is a configuration of app i with throughput 1/rho_ib using the
    GPUs of B_ib (each GPU a resource of capacity 1); a finite ``rho_empty`` adds a free configuration of
    throughput 1/rho_empty. With work = t_id = 1 and elapsed = 0, rho_i = 1 / sum_k X_ik / rho_ik: an app
    holding bundle b all the time has its reported rho_ib, and time-sharing mixes the *rates* 1/rho.
    Apps with unbounded ``rho_empty`` and no bid cannot be served and are left out.
    Returns (program, configs [(app, bid or None)], apps kept).
    """
    prog = PFProgram(inst)
    cl = inst.cluster
    apps = [
        i
        for i in range(len(inst.apps))
        if inst.apps[i].rho_empty is not None or any(j == i for j, _ in prog.columns)
    ]
    configs: list[tuple[int, int | None]] = list(prog.columns)
    configs += [(i, None) for i in apps if inst.apps[i].rho_empty is not None]
    pos = {i: r for r, i in enumerate(apps)}
    thr = np.zeros((len(apps), len(configs)))
    use = np.zeros((len(configs), len(cl)))
    for k, (i, b) in enumerate(configs):
        app = inst.apps[i]
        rho = app.rho_empty if b is None else app.bids[b].rho
        assert rho is not None  # configs list "nothing" only for a finite rho_empty
        thr[pos[i], k] = 1.0 / rho
        if b is not None:
            use[k, cl.indices(app.bids[b].gpus)] = 1.0
    n = len(apps)
    g = GavelFTFProgram(thr, use, np.ones(len(cl)), np.ones(n), np.zeros(n), np.ones(n))
    return g, configs, apps


def solve_gavel_auction(
    inst: AuctionInstance,
    opts: SolveOptions = SolveOptions(),
    method: str = "auto",
    name: str | None = None,
    backend: str | backends.Backend = "highs",
) -> Solution:
    """``gavel-ftf`` on an auction instance: status ``heuristic`` (its own program, min max rho, is
    solved to optimality: ``extra.solver_status``; the PF objective is not its goal). ``objective``
    = sum_i -log rho_i of the time-shared allocation; ``allocation`` = a conflict-free integral rounding (largest time fraction first);
    ``extra``: ``max_rho``, ``rho`` and ``time_fractions`` {app: {bid index or 'empty': X}}."""
    t0 = time.perf_counter()
    ids = [a.id for a in inst.apps]
    unserved = [a.id for a in inst.apps if a.rho_empty is None]
    if not inst.apps:
        return Solution("auction", "optimal", name or "gavel-ftf", 0.0, 0.0, {})
    g, configs, apps = auction_to_gavel(inst)
    if not apps:
        res = None
    else:
        res = solve_gavel(g, method=method, opts=opts, backend=backend)
    fractions: dict[str, dict] = {}
    order = []
    if res is not None:
        for r, i in enumerate(apps):
            for k, (j, b) in enumerate(configs):
                if j == i and res.X[r, k] > 1e-9:
                    fractions.setdefault(ids[i], {})["empty" if b is None else b] = float(
                        res.X[r, k]
                    )
                    if b is not None:
                        order.append((-res.X[r, k], inst.apps[i].bids[b].rho, i, b))
    alloc: dict = {}
    used: set = set()
    for _, _, i, b in sorted(order):
        gs = inst.apps[i].bids[b].gpus
        if ids[i] not in alloc and not used.intersection(gs):
            alloc[ids[i]] = list(gs)
            used.update(gs)
    rho = {ids[i]: float(res.rho[r]) for r, i in enumerate(apps)} if res is not None else {}
    unserved = [a for a in unserved if a not in rho]
    objective = float(sum(-np.log(v) for v in rho.values()))
    # status "heuristic": optimal for Gavel's own program (extra.solver_status), not for the
    # auction's PF objective, which it reports (an "optimal" there read as a wrong optimum)
    return Solution(
        kind="auction",
        status="heuristic",
        solver=name or "gavel-ftf",
        seconds=time.perf_counter() - t0,
        objective=objective,
        allocation=alloc,
        message="Gavel's min max rho over time fractions, solved to optimality; a heuristic for "
        "the PF objective (sum -log rho), which objective reports",
        extra={
            "max_rho": float(res.max_rho) if res is not None else None,
            "rho": rho,
            "time_fractions": fractions,
            "method": res.method if res is not None else method,
            "solves": res.solves if res is not None else 0,
            "solver_status": res.status if res is not None else "optimal",
            "unserved_unbounded": unserved,
        },
    )


#: the solver entries (``solvers/registry.py`` names them ``relaxation`` and ``gavel-ftf``)
RELAXATION_ENTRY = SolverEntry(
    solve_relaxation,
    doc="PF upper bound: LP and/or Eisenberg-Gale relaxation",
    params=(RELAXATION_METHOD, EXACT_OBJECTIVE, COMPUTE_EXACT, N_MIN, BACKEND),
)
GAVEL_ENTRY = SolverEntry(
    solve_gavel_auction,
    doc="Gavel's min max rho over time fractions",
    params=(GAVEL_METHOD, BACKEND),
)
