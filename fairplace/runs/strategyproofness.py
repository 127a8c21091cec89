"""THEMIS §6.3 truth-telling experiment (Fig. 18) in the simulator's own THEMIS: one app lies about
its slowdowns by X%; its completion time against its truthful run of the same seed.

The paper's set-up: "64 GPUs, 8 identical apps with equivalent placement preferences; the cluster has
a single 8-GPU machine and the rest are 2-GPU machines, making the 8-GPU machine the most preferred
allocation. There is 1 strategically lying app and 7 truthful apps." The lying app "over-reports
slowdown for staggered placement or under-reports slowdown for dense placement by X%" in each round
it joins. What it leaves open, fairplace's choices:

* the cluster (:func:`cluster`): one 8-GPU machine and 28 2-GPU machines, one rack, identical GPUs
  (``SimulationConfig.cluster``);
* the apps (:func:`workload`): 8 apps arriving at t = 0, each one job of ``job_gpus`` = 8 GPUs (its
  1/N share, the size of the big machine) with ``gpu_hours`` of serial work (16: 2 h on the big
  machine), network-intensive (S = 1.5 across machines, THEMIS' ``LOCALITY_SENSITIVE``), so the
  big machine is every app's best bundle;
* THEMIS with its defaults (``fairplace.sim.themis``) at f = ``f`` = 0.8: §6.3 gives no f, and 0.8
  is the paper's operating point for every evaluation (§6.2, §6.4); 10-minute leases;
* the lie: ``rho_error_kind="strategic"`` with ``liar`` = the lying app (``fairplace.sim.themis.estimate_error``):
  its reported remaining time is scaled by 1 - X on one machine and 1 + X across machines, in its
  bids and in the current rho it reports for the ranking; every other app's estimates are the truth;
* the liar is drawn per seed (:func:`liar_of`), so it wins no tie by its position or id; the run with
  X = 0 is the truthful run (no error at all), and each X > 0 changes only the liar's reports.

:func:`strategyproofness` returns one row per (X, seed): ``X`` (%), ``seed``, ``liar`` (its app id),
``liar_completion`` and ``others_avg_completion`` (s, arrival to finish), ``liar_gain`` (%, (its
truthful time - its time lying) / its truthful time: > 0 = lying helped), ``liar_placement_score``
(its GPU-time-weighted 1 / S) and ``liar_restarts``. The claims read it through
``fairplace.analysis.claims.liar_gain_bound`` and ``tipping_point``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np
import pandas as pd

import fairplace
from fairplace.core.domain import GPU, Cluster
from fairplace.core.errors import OptionError
from fairplace.core.limits import MAX_GPUS, MAX_TRACE_APPS
from fairplace.core.params import Boolean, Interval, Param
from fairplace.core.shared_params import THEMIS_F
from fairplace.instances.generators import LOCALITY_SENSITIVE
from fairplace.sim.config import SIM_PARAM
from fairplace.sim.themis.params import THEMIS_LEASE

_GPUS = Interval(1, MAX_GPUS, integer=True)

#: the parameters of one run (defaults: the paper's cluster and apps, module doc); THEMIS' f and
#: lease take the ranges of ``scheduler_options.f`` / ``.lease``
SETUP_PARAMS: tuple[Param, ...] = (
    Param("n_apps", 8, Interval(1, MAX_TRACE_APPS, integer=True), "identical apps, one lying"),
    Param("big", 8, _GPUS, "GPUs of the one big machine"),
    Param("small_machines", 28, _GPUS, "2-GPU machines (8 + 2 x 28 = 64 GPUs)"),
    Param("job_gpus", 8, _GPUS, "GPUs of each app's one job (its 1/N share)"),
    Param("gpu_hours", 16.0, Interval(0.0, 1e6, closed="right"), "serial GPU-hours per app"),
    Param("f", THEMIS_F.default, THEMIS_F.constraint, THEMIS_F.doc),
    Param("lease", THEMIS_LEASE.default, THEMIS_LEASE.constraint, THEMIS_LEASE.doc),
)
_SETUP = {p.name: p for p in SETUP_PARAMS}

#: an item of :func:`strategyproofness`'s ``xs`` (default 0-50, quick 0, 20, 40): a misreport X
#: in percent, THEMIS' ``rho_error`` x 100
MISREPORT = Param(
    "xs", 0.0, Interval(0.0, 100.0, closed="left"), "a misreport X of the liar in % (X / 100)"
)
#: an item of :func:`strategyproofness`'s ``seeds`` (default 0-4, quick 0-1): a
#: ``SimulationConfig.seed``
SEEDS = Param("seeds", 0, SIM_PARAM["seed"].constraint, "a seed; each draws its liar")
#: :func:`strategyproofness` ``quick``
QUICK = Param("quick", False, Boolean(), "fewer X and seeds when xs / seeds are not given")


@dataclass(frozen=True)
class Setup:
    """Parameters of one run (:data:`SETUP_PARAMS`, each checked by its spec)."""

    n_apps: int = _SETUP["n_apps"].default
    big: int = _SETUP["big"].default  # GPUs of the one big machine
    small_machines: int = _SETUP["small_machines"].default  # 8 + 2 x 28 = 64 GPUs
    job_gpus: int = _SETUP["job_gpus"].default  # one job per app on this many GPUs (1/N share)
    gpu_hours: float = _SETUP["gpu_hours"].default  # serial work per app
    f: float = _SETUP["f"].default
    lease: float = _SETUP["lease"].default

    def __post_init__(self):
        for spec in SETUP_PARAMS:
            object.__setattr__(self, spec.name, spec.check(getattr(self, spec.name)))


def _each(spec: Param, values) -> list:
    """Every item of the list ``values`` checked by ``spec`` (an error names ``xs[1]``)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise OptionError(spec.name, f"expected a list, got {values!r}")
    return [spec.check(v, f"{spec.name}[{i}]") for i, v in enumerate(values)]


def cluster(setup: Setup = Setup()) -> Cluster:
    """One ``big``-GPU machine and ``small_machines`` 2-GPU machines, one rack, identical GPUs."""
    pm = {"A": 1.0}
    gpus = [GPU(f"big/{g}", "big", "r0", pm) for g in range(setup.big)]
    gpus += [
        GPU(f"s{m}/{g}", f"s{m}", "r0", pm) for m in range(setup.small_machines) for g in range(2)
    ]
    return Cluster(tuple(gpus))


def workload(setup: Setup = Setup()) -> pd.DataFrame:
    """``n_apps`` identical apps ``a0``.. as a trace frame: all arrive at t = 0, one job each on
    ``job_gpus`` GPUs (1 s per iteration) with ``gpu_hours`` of serial work, network-intensive."""
    _, l_machine, l_rack = LOCALITY_SENSITIVE
    iters = setup.gpu_hours * 3600.0 / setup.job_gpus
    frame = pd.DataFrame(
        [
            {
                "job_id": f"a{a}-j0",
                "num_gpus": setup.job_gpus,
                "submit_time": 0.0,
                "duration": iters,
                "model": "VGG16",
                "app_id": f"a{a}",
                "phase": 0,
                "t_iter": 1.0,
                "cls": "A",
                "locality": l_machine,
                "locality_rack": l_rack,
                "category": "cv",
            }
            for a in range(setup.n_apps)
        ]
    )
    frame.attrs["name"] = f"themis-sp-{setup.n_apps}apps"
    frame.attrs["decision_tick"] = 60.0  # the THEMIS workloads' clock (instances/workloads.py)
    frame.attrs["baseline_lease"] = 600.0
    return frame


def liar_of(setup: Setup, seed: int) -> str:
    """The lying app of a run: a seeded uniform draw over the apps (its app id)."""
    return f"a{int(np.random.default_rng([int(seed), 99]).integers(setup.n_apps))}"


def simulate(setup: Setup, x: float, seed: int = 0, liar: str | None = None):
    """One simulator run (``fairplace.simulate``, THEMIS) with ``liar`` (default
    :func:`liar_of`) lying by ``x`` (a fraction in [0, 1)); the :class:`SimulationResult`."""
    liar = liar_of(setup, seed) if liar is None else liar
    opts = {"f": setup.f, "lease": setup.lease, "rho_error": float(x),
            "rho_error_kind": "strategic", "liar": liar}  # fmt: skip
    return fairplace.simulate(
        workload(setup), "themis", "packed-sticky", cluster=cluster(setup), seed=int(seed),
        scheduler_options=opts, progress=False,
    )  # fmt: skip


def _row(apps: pd.DataFrame, liar: str) -> dict:
    me = apps["app_id"] == liar
    return {
        "liar": liar,
        "liar_completion": float(apps.loc[me, "jct"].iloc[0]),
        "others_avg_completion": float(apps.loc[~me, "jct"].mean()),
        "liar_placement_score": float(apps.loc[me, "placement_score"].iloc[0]),
        "liar_restarts": int(apps.loc[me, "restarts"].iloc[0]),
    }


def strategyproofness(
    xs=None, seeds=None, quick: bool = False, setup: Setup = Setup(), **overrides
) -> pd.DataFrame:
    """Completion times vs the liar's misreport X in percent (module docstring): ``xs`` (each
    a :data:`MISREPORT`), ``seeds`` (each a :data:`SEEDS`), ``quick`` (:data:`QUICK`);
    ``overrides``: :class:`Setup` fields (:data:`SETUP_PARAMS`; the spec's sizes set
    ``gpu_hours``). X = 0 is always run (the truthful run each gain is measured against)."""
    QUICK.check(quick)
    known = {f.name for f in fields(Setup)}
    for k in overrides:
        if k not in known:
            raise OptionError(k, f"unknown strategy-proofness parameter; known: {sorted(known)}")
    setup = replace(setup, **overrides)
    if xs is None:
        xs = (0, 20, 40) if quick else (0, 5, 10, 20, 30, 40, 50)
    if seeds is None:
        seeds = range(2) if quick else range(5)
    xs = sorted({0, *(int(x) if x.is_integer() else x for x in _each(MISREPORT, xs))})
    seeds = _each(SEEDS, seeds)
    rows = []
    for s in seeds:
        liar = liar_of(setup, s)
        base = None
        for X in xs:
            row = {"X": X, "seed": int(s), **_row(simulate(setup, X / 100.0, s, liar).apps, liar)}
            base = row["liar_completion"] if base is None else base
            row["liar_gain"] = 100.0 * (base - row["liar_completion"]) / base
            rows.append(row)
    return pd.DataFrame(rows).sort_values(["X", "seed"], ignore_index=True)


def tipping_point(df: pd.DataFrame, jump: float = 0.05) -> float | None:
    """Smallest X whose mean liar completion exceeds the X = 0 mean by more than ``jump``
    (relative); None if there is none."""
    m = df.groupby("X")["liar_completion"].mean()
    worse = m[m > float(m.iloc[0]) * (1.0 + jump)]
    return None if worse.empty else float(worse.index.min())
