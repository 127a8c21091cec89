"""One list per name set: scheduler names, T_id variants, option enums, generated trace names; the
CLI help, the sweep schema and simulate() read the same registries; CLI errors name flags."""

from __future__ import annotations

import json

import pytest

import fairplace
from fairplace.cli import main
from fairplace.core.errors import OptionError, UnknownName
from fairplace.formulations.ftf import T_ID_VARIANTS
from fairplace.instances.models import LOCALITY_MODELS
from fairplace.instances.trace_generators import TRACE_GENERATORS
from fairplace.instances.traces import SIA_PHILLY
from fairplace.instances.variability import PROFILE_NAMES
from fairplace.runs import sweep_schema
from fairplace.runs.sweep import load_spec
from fairplace.sim import SCHEDULERS, SimulationConfig
from fairplace.sim.config import BINNINGS, CLASS_MAPS, RHO_VARIANT_NAMES
from fairplace.sim.engine import GRID_ORIGINS, STAMPINGS
from fairplace.sim.schedulers import make_scheduler
from fairplace.sim.setups import SETUPS
from fairplace.solvers.placement.policies import POLICY_NAMES, make_policy


def test_every_listed_name_is_made_and_an_unknown_one_is_unknown_name():
    for name in SCHEDULERS:  # every listed name is makeable and says its name
        assert make_scheduler(name).name == name
    for name in POLICY_NAMES:
        assert make_policy(name).name == name
    with pytest.raises(UnknownName, match="known: " + ", ".join(SCHEDULERS)):
        make_scheduler("nope")
    with pytest.raises(UnknownName, match="known: " + ", ".join(POLICY_NAMES)):
        make_policy("nope")


BASE = {"schedulers": ["fifo"], "placements": ["pal"], "traces": ["themis-1"]}
#: a 4-app THEMIS workload at its named small scale (~60 jobs over 8 hours; paper scale: ~260 jobs
#: over 14 days, ~5 s a simulation)
SMALL_THEMIS = {"n_apps": 4, "scale": "small"}


@pytest.mark.parametrize(
    "field,names",
    [
        ("binning", BINNINGS),
        ("classes", CLASS_MAPS),
        ("rho_variant", RHO_VARIANT_NAMES),
        ("stamping", STAMPINGS),
        ("grid_origin", GRID_ORIGINS),
        ("locality_model", LOCALITY_MODELS),
        ("profile", PROFILE_NAMES),
    ],
)
def test_simulate_and_a_sweep_accept_exactly_the_listed_names(field, names):
    """A name is valid in simulate() exactly when it is valid in a sweep spec (one list each)."""
    for n in names:
        assert getattr(SimulationConfig(**{field: n}), field) == n
        assert len(load_spec({**BASE, "fixed": {field: n}})) == 1
    for bad in ("nope", names[0].upper() + "x"):
        with pytest.raises(OptionError) as lib:
            SimulationConfig(**{field: bad})
        assert lib.value.path == field
        with pytest.raises(OptionError) as spec:
            load_spec({**BASE, "fixed": {field: bad}})
        assert spec.value.path == f"fixed.{field}"
    assert {*sweep_schema.known()[field].get("enum", names)} >= set(names)


def test_every_T_id_variant_is_reported():
    """Each rho_variant name gives the summary's max_rho / median_rho of that variant."""
    res = fairplace.simulate(
        "themis-1", "fifo", "pm-first", gpus=16, trace_options=SMALL_THEMIS, progress=False
    )
    for v in T_ID_VARIANTS:
        assert f"rho_{v}" in res.apps.columns and f"max_rho_{v}" in res.summary


def test_simulate_help_lists_every_registry_name(capsys):
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    names = (
        *SCHEDULERS,
        *POLICY_NAMES,
        *PROFILE_NAMES,
        *SETUPS,
        *GRID_ORIGINS,
        *STAMPINGS,
        *LOCALITY_MODELS,
        *CLASS_MAPS,
        *BINNINGS,
        *RHO_VARIANT_NAMES,
        *SIA_PHILLY,
        *TRACE_GENERATORS,
    )
    assert [n for n in names if n not in text] == []


def test_cli_generated_trace_with_options_matches_the_library(capsys):
    import fairplace

    argv = ["simulate", "--trace", "themis-1", "--gpus", "32"]
    argv += ["--trace-option", "n_apps=4", "--trace-option", "scale=small"]
    assert main([*argv, "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    lib = fairplace.simulate(
        "themis-1", "fifo", "pal", gpus=32, trace_options=SMALL_THEMIS, progress=False
    ).summary
    assert cli["jobs"] == lib["jobs"] and cli["avg_jct"] == pytest.approx(lib["avg_jct"])


@pytest.mark.parametrize(
    "args,flag",
    [
        (["--trace", "themis-1", "--trace-option", "bogus=1"], "--trace-option bogus"),
        (["--trace", "workload-1", "--trace-option", "n_apps=3"], "--trace-option"),
        (["--trace", "workload-1", "--setup", "nope"], "--setup"),
        (["--trace", "workload-1", "--stamping", "nope"], "--stamping"),
        (
            ["--trace", "workload-1", "--scheduler", "themis", "--stamping", "round-end"],
            "--stamping",
        ),
        (["--trace", "workload-1", "--grid-origin", "nope"], "--grid-origin"),
        (["--trace", "workload-1", "--placement-option", "bogus=1"], "--placement-option bogus"),
    ],
)
def test_cli_errors_name_the_flag(args, flag, capsys):
    assert main(["simulate", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"error: {flag}" in err


def test_sweep_checks_keys_against_the_simulation_config():
    base = {"schedulers": ["fifo"], "placements": ["pal"], "traces": ["themis-1"]}
    ok = load_spec({**base, "fixed": {"gpus": 32, "n_apps": 4, "setup": "pal-paper"}})
    assert len(ok) == 1
    from fairplace.core.errors import OptionError

    with pytest.raises(OptionError, match="fixed.gpu_count"):
        load_spec({**base, "fixed": {"gpu_count": 32}})
    with pytest.raises(OptionError, match="fixed.stamping"):
        load_spec({**base, "fixed": {"stamping": "never"}})


def test_sweep_trace_options_make_the_frame_simulate_makes():
    """``fixed.trace_options`` in a sweep and ``trace_options=`` in simulate give the same cell."""
    import fairplace
    from fairplace.runs.sweep import run_cell

    cell = {"scheduler": "fifo", "placement": "pal", "trace": "themis-1", "seed": 4}
    fixed = {"gpus": 32, "trace_options": SMALL_THEMIS}
    row, _ = run_cell(cell, fixed)
    res = fairplace.simulate("themis-1", "fifo", "pal", seed=4, progress=False, **fixed)
    assert row["status"] == "ok" and row["avg_jct"] == res.summary["avg_jct"]
    row, _ = run_cell(cell, {"gpus": 32, **SMALL_THEMIS})  # the generator's own keys, as before
    assert row["avg_jct"] == res.summary["avg_jct"]
