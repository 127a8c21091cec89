"""One spec per parameter (``fairplace.core.params``): the check, the JSON Schema and every entry
point that takes the parameter agree; out-of-range values (the spec's own, and random ones) are
rejected everywhere with an error naming the parameter."""

from __future__ import annotations

import inspect
import json
import math

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairplace.core.domain import GPU, Cluster, Job, PlacementInstance
from fairplace.core.errors import OptionError
from fairplace.core.params import Interval, Items, Options, Param
from fairplace.core.shared_params import LOCALITY_PENALTY, THEMIS_F
from fairplace.instances.io import from_dict
from fairplace.instances.workloads import themis_workload
from fairplace.sim import SimulationConfig, simulate
from fairplace.sim.schedulers import make_scheduler
from fairplace.sim.themis.params import THEMIS_LEASE
from fairplace.solvers.placement.policies import make_policy

SPECS = (LOCALITY_PENALTY, THEMIS_F)
SETTINGS = settings(max_examples=150, derandomize=True, deadline=None)


def _schema_ok(schema: dict, value) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def _outside(spec: Param):
    """The spec's own out-of-range values, and random floats its range does not contain."""
    return st.one_of(
        st.sampled_from(spec.invalid_values()),
        st.floats(allow_nan=True, allow_infinity=True).filter(
            lambda x: not spec.constraint.contains(x)
        ),
    )


@SETTINGS
@given(
    lo=st.floats(-10, 10),
    width=st.floats(0, 10),
    closed=st.sampled_from(["both", "left", "right", "neither"]),
    x=st.floats(-30, 30),
)
def test_interval_check_agrees_with_its_json_schema(lo, width, closed, x):
    iv = Interval(lo, lo + width, closed=closed)
    assert iv.contains(x) == _schema_ok(iv.schema(), x)


@SETTINGS
@given(
    lo=st.integers(-10, 10), width=st.integers(0, 10), x=st.integers(-30, 30) | st.floats(-30, 30)
)
def test_integer_interval_check_agrees_with_its_json_schema(lo, width, x):
    iv = Interval(lo, lo + width, integer=True)
    is_int = isinstance(x, int) or (isinstance(x, float) and x.is_integer())
    # JSON Schema counts 2.0 as an integer; the check wants a Python int (no silent truncation)
    assert iv.contains(x) == (_schema_ok(iv.schema(), x) and isinstance(x, int))
    assert not iv.contains(x) or is_int


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.name)
def test_every_invalid_value_is_outside_the_schema_and_the_check(spec):
    for v in spec.invalid_values():
        with pytest.raises(OptionError) as exc:
            spec.check(v)
        assert exc.value.path == spec.where
        json_like = not (isinstance(v, float) and not math.isfinite(v))
        if json_like:
            assert not _schema_ok(spec.schema(), v), v
    assert spec.check(spec.default) == spec.default
    assert _schema_ok(spec.schema(), spec.default)


def test_options_constraint():
    opt = Param("ties", "machine", Options(("machine", "level")), "ties")
    assert opt.check("level") == "level"
    for v in opt.invalid_values():
        with pytest.raises(OptionError, match="expected one of machine, level"):
            opt.check(v)


@pytest.mark.parametrize(
    "items",
    [Items(Interval(0.0, 10.0, closed="right"), min_items=2), Items(Interval(1, 8, integer=True))],
    ids=["numbers", "integers"],
)
def test_items_check_agrees_with_its_json_schema(items):
    spec = Param("levels", [1, 2], items, "levels")
    assert spec.check([1, 2]) == (1, 2) and spec.check((3, 4, 5)) == (3, 4, 5)
    assert _schema_ok(spec.schema(), [1, 2])
    for v in spec.invalid_values():
        with pytest.raises(OptionError):
            spec.check(v)
        try:
            json.dumps(v, allow_nan=False)
        except (TypeError, ValueError):
            continue  # not JSON
        assert not _schema_ok(spec.schema(), v), v


def test_one_default_for_L_and_f():
    """Every entry point's default is the spec's (the Themis scheduler and its arbiter are built by
    the lead's THEMIS modules, whose signatures must keep the spec's f)."""
    from fairplace.sim.themis import Themis
    from fairplace.sim.themis.arbiter import Arbiter

    L = LOCALITY_PENALTY.default
    cl = Cluster((GPU("g", "m", "r", {"A": 1.0}),))
    assert SimulationConfig().locality_penalty == L
    assert PlacementInstance(cl, (Job("j", 1, "A"),)).locality_penalty == L
    assert make_policy("pal").locality_penalty == L
    doc = {"kind": "placement", "gpus": [{"id": "g", "machine": "m", "rack": "r", "pm": {"A": 1}}],
           "jobs": [{"id": "j", "gpus": 1, "class": "A"}]}  # fmt: skip
    assert from_dict(doc).locality_penalty == L
    assert inspect.signature(Themis).parameters["f"].default == THEMIS_F.default
    assert Arbiter().f == THEMIS_F.default


@SETTINGS
@given(v=_outside(LOCALITY_PENALTY))
def test_L_out_of_range_is_one_error_everywhere(v):
    with pytest.raises(OptionError) as exc:
        SimulationConfig(locality_penalty=v)
    assert exc.value.path == "locality_penalty"
    with pytest.raises(OptionError) as exc:
        make_policy("pal", locality_penalty=v)
    assert exc.value.path == "locality_penalty"
    with pytest.raises(OptionError) as exc:
        SimulationConfig(locality_by_model={"bert": v})
    assert exc.value.path == "locality_by_model.bert"


@SETTINGS
@given(v=st.floats(1.0, 1e6))
def test_L_in_range_is_accepted_everywhere(v):
    assert SimulationConfig(locality_penalty=v).locality_penalty == v
    assert make_policy("pm-first", locality_penalty=v).locality_penalty == v
    assert _schema_ok(LOCALITY_PENALTY.schema(), v)


def test_L_is_not_a_policy_option():
    with pytest.raises(OptionError) as exc:
        SimulationConfig(placement_options={"locality_penalty": 2.0})
    assert exc.value.path == "placement_options.locality_penalty"
    assert "--locality-penalty" in exc.value.problem


@SETTINGS
@given(v=_outside(THEMIS_F))
def test_f_out_of_range_names_scheduler_options_f(v):
    with pytest.raises(OptionError) as exc:
        make_scheduler("themis", f=v)
    assert exc.value.path == "scheduler_options.f"


@SETTINGS
@given(v=st.floats(0.0, 1.0, exclude_max=True))
def test_f_in_range_is_accepted(v):
    assert make_scheduler("themis", f=v).arbiter.f == v


@SETTINGS
@given(v=_outside(THEMIS_LEASE))
def test_lease_out_of_range_is_an_error_naming_scheduler_options_lease(v):
    """The lease is THEMIS' round: it is checked by its spec before anything runs (a non-number
    once reached float() unchecked)."""
    trace = themis_workload(2, scale="small", n_apps=2, seed=0)
    with pytest.raises(OptionError) as exc:
        simulate(trace, "themis", scheduler_options={"lease": v}, progress=False)
    assert exc.value.path == "scheduler_options.lease"


def test_sweep_schema_reads_the_specs():
    from fairplace.runs.sweep import load_spec

    base = {"schedulers": ["themis"], "placements": ["pal"], "traces": ["themis-1"]}
    assert len(load_spec({**base, "params": {"scheduler_options.f": [0.0, 0.5]}})) == 2
    for bad, where in [
        ({"params": {"scheduler_options.f": [0.5, 1.0]}}, "params.scheduler_options.f"),
        ({"fixed": {"scheduler_options": {"f": "x"}}}, "fixed.scheduler_options"),
        ({"fixed": {"locality_penalty": 0.5}}, "fixed.locality_penalty"),
        (
            {"fixed": {"placement_options.locality_penalty": 2}},
            "fixed.placement_options.locality_penalty",
        ),
    ]:
        with pytest.raises(OptionError) as exc:
            load_spec({**base, **bad})
        assert exc.value.path == where
