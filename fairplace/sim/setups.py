"""Named simulation set-ups: one name fixes every modelling choice of a published experiment.

* ``pal-paper`` — PAL's paper (§III-B, §IV, §V-B): per-run Longhorn PM-scores sampled per GPU
  without repetition, the measured per-model locality penalties (§IV-D) at runtime and for PAL's
  decisions (one locality model per run: a policy decides with the L a job runs with), no
  checkpoint cost (§IV-A1: "typically negligible"), 300 s epochs (§V-C); where the paper is silent,
  fairplace's choices (:data:`SOURCES` says which and why).
* ``pal-artifact`` — the PAL artifact (hal-uw/blox-pal, branch ``artifact``) as it runs: its seeded
  cluster draw (``longhorn-artifact``, per-run rows with replacement, classes A-D), its K-means
  rule with slow-only outliers, no restart cost, 360 s rounds from t = 0, completions stamped at
  the end of their round, its per-iteration times, constant L = 1.7, its recycled jobs after the
  trace (2 per hour, ``random.seed(1)``) and its tie-breaks (PM-First: best match per score level;
  PAL: its order).

Both set-ups name every option (:func:`setup_options`; the same keys), each with its source in
:data:`SOURCES` (docs/pal-setups.md prints the table). An option the caller gives explicitly
(``SimulationConfig.given``: a keyword, a CLI flag) wins over the set-up, also when it equals the
library default.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from fairplace.core.errors import UnknownName
from fairplace.core.registry import Entry, Registry

from .config import SimulationConfig

_P, _A = "pal-paper", "pal-artifact"
_ART = "blox-pal"  # hal-uw/blox-pal, branch artifact

#: option -> (pal-paper value, its source; pal-artifact value, its source)
_TABLE: dict[str, tuple[object, str, object, str]] = {
    "profile": (
        "longhorn-runs",
        '§IV-C: "randomly sample this profiling data" (per-run rows, one draw per seed)',
        "longhorn-artifact",
        f"{_ART} blox/cluster_state.py: random.seed(42), random.choice over all runs",
    ),
    "with_replacement": (
        None,
        "§IV-C samples without repetition; fairplace's choice: repeat only when the cluster "
        "outgrows the profile",
        True,
        f"{_ART} blox/cluster_state.py: random.choice (with replacement)",
    ),
    "classes": (
        "paper",
        "Table II: classes A, B, C",
        "artifact",
        f"{_ART} workload/workload.py get_perfclass: A-D",
    ),
    "binning": (
        "silhouette",
        "§III-B: K by silhouette over 2..11, outliers binned apart",
        "artifact",
        f"{_ART} placement/pal.py get_optimal_k: its early return gives K = 2 + outliers",
    ),
    "outlier_side": (
        "both",
        '§III-B ">3σ outliers"; fairplace\'s choice: read two-sided (the paper names no side)',
        "upper",
        f"{_ART} placement/pal.py identify_outliers: data > mean + 3 std (slow GPUs only)",
    ),
    "locality_penalty": (
        1.7,
        '§IV-D: "initially estimated a locality penalty to be 1.7"; the constant of the experiments '
        "that run a constant L (Fig. 13, Synergy); with the measured table PAL decides with the L "
        "each job runs with (1.0 for every 2-4 GPU job: PAL ~ PM-First)",
        1.7,
        f"{_ART} placement/pal.py lf_across = 1.7",
    ),
    "locality_model": (
        "measured",
        '§IV-D: "we estimate per-model locality penalties ... and use these in simulation '
        "experiments in Sections V-A and V-B\" (the artifact's Frontera table)",
        "constant",
        f"{_ART} blox/blox_manager.py _get_locality_penalty: const_lf = 1.7 if spread",
    ),
    "round_length": (
        300.0,
        '§V-C (placement time): "the 300 second epoch duration"',
        360.0,
        f"{_ART} simulator_sia.py round_duration=360",
    ),
    "checkpoint": (
        0.0,
        '§IV-A1: checkpointing overheads "are typically negligible relative to the overall job '
        'run-time"',
        0.0,
        f"{_ART} blox/deployment/grpc_client_rm.py: simulated launches cost nothing "
        '("TODO: Add time for checkpoint and restore")',
    ),
    "restart": (
        0.0,
        "§IV-A1 (as checkpoint)",
        0.0,
        f"{_ART} (as checkpoint)",
    ),
    "grid_origin": (
        "first-arrival",
        "fairplace's choice (the paper is silent): decisions start with the first job",
        "zero",
        f"{_ART} fifo_*.py: rounds from simulator time 0",
    ),
    "stamping": (
        "exact",
        "fairplace's choice (the paper is silent): a job finishes when its work is done",
        "round-end",
        f"{_ART} blox/blox_manager.py update_metrics: completion stamped at the round's time",
    ),
    "iter_times": (
        "artifact",
        "fairplace's choice: the paper prints none; the artifact's are the only source",
        "artifact",
        f"{_ART} workload/workload.py get_per_iter_time",
    ),
    "recycle_jobs_per_hour": (
        0.0,
        '§IV-B1: traces of 160 jobs, metrics "across these 160 jobs" (no further arrivals)',
        2.0,
        f"{_ART} workload/workload.py replay mode: copies of the trace's jobs keep arriving; "
        "simulator_sia.py load list np.arange(2.0, 4.0, 2.0)",
    ),
    "recycle_seed": (
        1,
        "unused (no recycled jobs)",
        1,
        f"{_ART} simulator_sia.py: random.seed(self.random_seed), random_seed = 1",
    ),
}
#: per placement policy: (pal-paper tie-break, source, pal-artifact tie-break, source)
_TIES: dict[str, tuple[str, str, str, str]] = {
    "pal": (
        "fewest-machines",
        "fairplace's choice: Alg. 2 leaves LV-equal sets open; take the least fragmenting",
        "artifact",
        f"{_ART} placement/pal.py: (score, best match) order",
    ),
    "pm-first": (
        "machine",
        "Alg. 1 \"best-match locality\"; fairplace's choice: count the machine's free GPUs",
        "level",
        f"{_ART} placement/pal.py _return_pmfirst_gpus: groupby(['sf', 'Node_ID'])",
    ),
}

#: per set-up and option, where the value comes from (a paper passage, an artifact file, or
#: "fairplace's choice (why)"); placement tie-breaks under ``placement_options.ties.<policy>``
SOURCES: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        _P: MappingProxyType(
            {k: v[1] for k, v in _TABLE.items()}
            | {f"placement_options.ties.{p}": v[1] for p, v in _TIES.items()}
        ),
        _A: MappingProxyType(
            {k: v[3] for k, v in _TABLE.items()}
            | {f"placement_options.ties.{p}": v[3] for p, v in _TIES.items()}
        ),
    }
)
#: per set-up and placement policy, the tie-break option a set-up adds to ``placement_options``
SETUP_TIES: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {s: MappingProxyType({p: v[2 * i] for p, v in _TIES.items()}) for i, s in enumerate((_P, _A))}
)


def _apply(setup: str):
    def apply(cfg: SimulationConfig, placement) -> SimulationConfig:
        """``cfg`` with the set-up's value for every option not in ``cfg.given``; its tie-break for
        ``placement`` (a policy name) joins ``placement_options`` unless the caller gave ``ties``."""
        out = {k: v for k, v in setup_options(setup).items() if k not in cfg.given}
        ties = SETUP_TIES[setup].get(str(placement)) if isinstance(placement, str) else None
        opts = dict(cfg.placement_options or {})
        if ties is not None and "ties" not in opts:
            out["placement_options"] = {**opts, "ties": ties}
        return cfg.with_overrides(**out)

    return apply


def _setup(name: str, column: int, doc: str) -> Entry:
    values = MappingProxyType({k: v[column] for k, v in _TABLE.items()})
    return Entry(_apply(name), (), doc, (), {"options": values})


#: the set-ups (module docstring): name -> entry whose factory ``apply(cfg, placement)`` sets its
#: options (``capabilities["options"]``: every option's value, the same keys in both)
SETUPS = Registry(
    "set-up",
    {
        _P: _setup(_P, 0, "PAL's paper: its values, fairplace's choices where it is silent"),
        _A: _setup(_A, 2, "the PAL artifact exactly as it runs"),
    },
    where="setup",
)


def setup_options(setup: str) -> Mapping[str, object]:
    """Every option's value under ``setup`` (:class:`UnknownName` listing the set-ups)."""
    return SETUPS.get(setup).capabilities["options"]


def apply_setup(cfg: SimulationConfig, placement) -> SimulationConfig:
    """``cfg`` with its set-up's value for every option not in ``cfg.given``; the set-up's tie-break
    for ``placement`` (a policy name) joins ``placement_options`` unless the caller gave ``ties``."""
    if not isinstance(cfg.setup, str):
        raise UnknownName("setup", f"unknown set-up {cfg.setup!r}; known: {', '.join(SETUPS)}")
    return SETUPS.get(cfg.setup).factory(cfg, placement)


def _cell(v) -> str:
    return "none (automatic)" if v is None else f"`{v}`"


def markdown_table() -> str:
    """The set-ups as a Markdown table: option, pal-paper value, pal-artifact value, their sources
    (docs/pal-setups.md prints it; a test keeps the two equal)."""
    rows = [
        "| option | `pal-paper` | source | `pal-artifact` | source |",
        "|---|---|---|---|---|",
    ]
    paper, artifact = setup_options(_P), setup_options(_A)
    for k in paper:
        p, a = paper[k], artifact[k]
        rows.append(f"| `{k}` | {_cell(p)} | {SOURCES[_P][k]} | {_cell(a)} | {SOURCES[_A][k]} |")
    for pol in SETUP_TIES[_P]:
        k = f"placement_options.ties.{pol}"
        p, a = SETUP_TIES[_P][pol], SETUP_TIES[_A][pol]
        rows.append(
            f"| `ties` ({pol}) | {_cell(p)} | {SOURCES[_P][k]} | {_cell(a)} | {SOURCES[_A][k]} |"
        )
    return "\n".join(rows) + "\n"
