"""Every public option of ``SolveOptions`` and ``SimulationConfig`` is a
:class:`~fairplace.core.params.Param` (issue 50 item 2): each field has one spec (except the listed
fields no spec can express), the field's default is the spec's, the sweep schema is the spec's,
and the real constructors reject every value the spec calls invalid with an
:class:`~fairplace.core.errors.OptionError` naming the field."""

from __future__ import annotations

import argparse
from dataclasses import fields

import jsonschema
import pytest

from fairplace.core.errors import OptionError
from fairplace.core.params import Param
from fairplace.instances.trace_generators import arg_schemas
from fairplace.runs.sweep_schema import known
from fairplace.sim import SimulationConfig
from fairplace.sim.config import NOT_PARAMS, SIM_PARAMS, field_schemas
from fairplace.solvers.options import SOLVE_PARAMS, SolveOptions

CASES = [(SolveOptions, SOLVE_PARAMS, ()), (SimulationConfig, SIM_PARAMS, NOT_PARAMS)]


@pytest.mark.parametrize(
    ("cls", "specs", "exceptions"), CASES, ids=["SolveOptions", "SimulationConfig"]
)
def test_every_field_has_one_spec_with_its_default(cls, specs, exceptions):
    names = [f.name for f in fields(cls)]
    assert [p.name for p in specs] == [n for n in names if n not in exceptions]  # field order
    assert set(exceptions) <= set(names)  # no stale exception
    defaults = {f.name: f.default for f in fields(cls)}
    for spec in specs:
        assert isinstance(spec, Param)
        assert defaults[spec.name] == spec.default and spec.accepts(spec.default), spec.name
        assert spec.doc and "\n" not in spec.doc, spec.name


def _cases():
    for cls, specs, _ in CASES:
        for spec in specs:
            for v in spec.invalid_values():
                yield pytest.param(cls, spec, v, id=f"{cls.__name__}.{spec.name}={v!r}"[:80])


@pytest.mark.parametrize(("cls", "spec", "value"), list(_cases()))
def test_the_constructor_rejects_each_invalid_value_naming_the_field(cls, spec, value):
    with pytest.raises(OptionError) as exc:
        cls(**{spec.name: value})
    assert exc.value.path == spec.where == spec.name


def test_the_sweep_schema_is_the_specs():
    table, mine, generated = known(), field_schemas(), arg_schemas()
    for spec in SIM_PARAMS:
        assert mine[spec.name] == spec.schema()
        # a trace generator's argument of the same name (gpus_per_machine) has its own schema
        assert table[spec.name] == (generated.get(spec.name) or spec.schema())
        validator = jsonschema.Draft202012Validator(spec.schema())
        assert validator.is_valid(spec.default)
        for v in spec.invalid_values():
            if isinstance(v, float) and v != v or v in (float("inf"), float("-inf")):
                continue  # not JSON
            if (
                isinstance(v, float)
                and v.is_integer()
                and spec.constraint.schema().get("type") == "integer"
            ):
                continue  # JSON Schema counts 2.0 as an integer; the check does not
            assert not validator.is_valid(v), (spec.name, v)


def test_a_nullable_spec_takes_none_and_says_so():
    for spec in (*SOLVE_PARAMS, *SIM_PARAMS):
        assert spec.accepts(None) == spec.nullable
        assert (None in spec.invalid_values()) != spec.nullable


def _flags(command: str) -> set[str]:
    from fairplace.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {s for a in sub.choices[command]._actions for s in a.option_strings}


def test_each_flag_a_spec_names_is_a_flag_of_its_command():
    from fairplace.commands.simulate import flag_path

    simulate = _flags("simulate")
    for spec in SIM_PARAMS:
        if spec.flag:
            assert spec.flag in simulate and flag_path(spec.name) == spec.flag, spec.name
    for command in ("solve", "batch"):
        assert {p.flag for p in SOLVE_PARAMS if p.flag} <= _flags(command)
