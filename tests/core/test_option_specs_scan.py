"""Every option a registry entry takes is a :class:`~fairplace.core.params.Param` (issue 50 item 2):
the solver-specific options of every :class:`~fairplace.solvers.options.SolverEntry` (rejected by
``fairplace.solve`` naming the option, before any solver runs) and the options of every scheduler
and placement policy (rejected by their registry naming ``scheduler_options.<option>`` /
``placement_options.<option>``), and every argument of a trace generator (rejected naming
``trace_options.<argument>``, as ``--trace-option`` and a sweep's tables read it). That every
registry of names is a :class:`~fairplace.core.registry.Registry` is
``tests/core/test_registries.py``."""

from __future__ import annotations

import pytest
from conftest import tiny_auction, tiny_placement

import fairplace
from fairplace.core.errors import OptionError
from fairplace.core.params import Param
from fairplace.sim.schedulers.registry import QUEUE_SCHEDULERS, SCHEDULER_REGISTRY
from fairplace.solvers.options import COMMON_PARAMS, SolverEntry
from fairplace.solvers.placement.policies import POLICY_REGISTRY
from fairplace.solvers.registry import SOLVER_REGISTRY, solver_table

INSTANCES = {"auction": tiny_auction(0), "placement": tiny_placement(0)}
ENTRIES = [(n, k, e) for n, kinds in solver_table().items() for k, e in kinds.items()]
OPTION_REGISTRIES = [SCHEDULER_REGISTRY, QUEUE_SCHEDULERS, POLICY_REGISTRY]


def _one_spec_per_name(specs) -> None:
    for spec in specs:
        assert isinstance(spec, Param), spec
        assert spec.doc and "\n" not in spec.doc, spec.name
        assert spec.accepts(spec.default), spec.name


def test_every_solver_option_has_one_spec():
    for name, kind, entry in ENTRIES:
        assert isinstance(entry, SolverEntry)
        assert entry.options == tuple(p.name for p in entry.params), (name, kind)
        _one_spec_per_name(entry.params)
    _one_spec_per_name(COMMON_PARAMS)
    shared: dict[str, set] = {}  # a name two solvers take means one thing, but for ``method``
    for _, _, entry in ENTRIES:
        for spec in entry.params:
            shared.setdefault(spec.name, set()).add(spec)
    assert {n for n, s in shared.items() if len(s) > 1} == {"method"}
    for name, entry in SOLVER_REGISTRY.items():  # a name's entry: its kinds' specs
        kinds = entry.capabilities["kinds"].values()
        assert set(entry.params) == {p for e in kinds for p in e.params}, name


@pytest.mark.parametrize(
    ("solver", "kind", "entry"), ENTRIES, ids=[f"{n}-{k}" for n, k, _ in ENTRIES]
)
def test_fairplace_solve_rejects_each_invalid_option_value_naming_it(solver, kind, entry):
    for spec in (*entry.params, *COMMON_PARAMS):
        for value in spec.invalid_values():
            with pytest.raises(OptionError) as exc:
                fairplace.solve(INSTANCES[kind], solver, validate=False, **{spec.name: value})
            assert exc.value.path == spec.name, (spec.name, value)
            with pytest.raises(OptionError) as exc:
                entry.check_values({spec.name: value})
            assert exc.value.path == spec.name, (spec.name, value)


def test_an_entry_without_a_spec_for_an_option_is_refused():
    with pytest.raises(ValueError, match="without a spec"):
        SolverEntry(lambda inst, opts, colour="red": None, ("colour",))


def _option_entries():
    for registry in OPTION_REGISTRIES:
        for name, entry in registry.items():
            yield pytest.param(registry, name, entry, id=f"{registry.kind}-{name}")


@pytest.mark.parametrize(("registry", "name", "entry"), list(_option_entries()))
def test_every_scheduler_and_policy_option_is_a_spec_its_registry_checks(registry, name, entry):
    options = registry.option_names(name)
    assert all(entry.spec(o) is not None for o in options), (name, options)
    _one_spec_per_name(entry.params)
    for spec in entry.params:
        assert spec.name in options
        path = registry.path(spec.name)
        assert spec.where in (spec.name, path), spec.where
        registry.check(name, {spec.name: spec.default})
        for value in spec.invalid_values():
            with pytest.raises(OptionError) as exc:
                registry.check(name, {spec.name: value})
            assert exc.value.path == path, (spec.name, value)


def test_las_and_gavel_check_their_options_when_made_directly():
    from fairplace.sim.schedulers.gavel import GAVEL_TOL, GavelFTF
    from fairplace.sim.schedulers.queue import LAS, LAS_STARVE_FACTOR, LAS_THRESHOLD

    for cls, spec in ((LAS, LAS_THRESHOLD), (LAS, LAS_STARVE_FACTOR), (GavelFTF, GAVEL_TOL)):
        for value in spec.invalid_values():
            with pytest.raises(OptionError) as exc:
                cls(**{spec.name: value})
            assert exc.value.path == spec.where == f"scheduler_options.{spec.name}"


# --- the trace generators' arguments (``trace_options``, a sweep's tables, ``--trace-option``) ---


def _generator_specs():
    from fairplace.instances.trace_generators import TRACE_GENERATORS

    for name, entry in TRACE_GENERATORS.items():
        for spec in entry.params:
            yield pytest.param(name, spec, id=f"{name}-{spec.name}")


def test_every_trace_generator_argument_is_a_spec_with_the_generators_default():
    import inspect

    from fairplace.instances.trace_generators import TRACE_GENERATORS, generator_params

    for name, entry in TRACE_GENERATORS.items():
        assert set(entry.option_names()) == generator_params(name) == {p.name for p in entry.params}
        _one_spec_per_name(entry.params)
        sig = inspect.signature(entry.capabilities["generator"]).parameters
        for spec in entry.params:
            assert spec.default == sig[spec.name].default, (name, spec.name)
            assert spec.flag == f"--trace-option {spec.name}"


@pytest.mark.parametrize(("trace", "spec"), list(_generator_specs()))
def test_each_invalid_trace_option_is_rejected_naming_it(trace, spec):
    from fairplace.core.errors import DataError
    from fairplace.instances.trace_generators import TRACE_GENERATORS, check_options

    check_options(trace, {spec.name: spec.default})
    generator = TRACE_GENERATORS.get(trace).capabilities["generator"]
    for value in spec.invalid_values():
        with pytest.raises(OptionError) as exc:
            check_options(trace, {spec.name: value})
        assert exc.value.path == f"trace_options.{spec.name}", value
        with pytest.raises(DataError) as exc:  # the public generator checks by the same spec
            generator(**{spec.name: value})
        assert exc.value.path == spec.name, value
    with pytest.raises(OptionError) as exc:  # simulate checks them before anything runs
        fairplace.simulate(
            trace, "fifo", "pal", trace_options={spec.name: spec.invalid_values()[0]}
        )
    assert exc.value.path == f"trace_options.{spec.name}"


def test_a_generators_seed_is_checked_by_its_spec():
    from fairplace.core.errors import DataError
    from fairplace.instances.trace_generators import TRACE_GENERATORS
    from fairplace.instances.trace_params import SEED

    for _, entry in TRACE_GENERATORS.items():
        for value in SEED.invalid_values():
            with pytest.raises(DataError) as exc:
                entry.capabilities["generator"](seed=value)
            assert exc.value.path == "seed", value


def test_the_sweep_schema_of_a_trace_option_is_its_spec():
    import json

    import jsonschema

    from fairplace.core.params import Interval, Options, Pair
    from fairplace.runs.sweep_schema import known, value_schema

    table = known()
    for _, spec in (p.values for p in _generator_specs()):
        assert table[spec.name] == spec.schema()  # a [params] / [fixed] key
        assert value_schema(f"trace_options.{spec.name}", []) == spec.schema()
        assert table["trace_options"]["properties"][spec.name] == spec.schema()
        validator = jsonschema.Draft202012Validator(spec.schema())
        assert validator.is_valid(spec.default)
        c = spec.constraint
        for v in spec.invalid_values():
            if isinstance(c, Pair) and isinstance(v, tuple) and len(v) == 2 and v[0] > v[1]:
                continue  # JSON Schema cannot say low <= high (the check does)
            whole = isinstance(v, float) and v.is_integer()
            if whole and (isinstance(c, Options) or isinstance(c, Interval) and c.integer):
                continue  # JSON Schema counts 2.0 as the integer 2; the check does not
            try:
                json.dumps(v, allow_nan=False)
            except ValueError:
                continue  # not JSON (the sweep's own check refuses non-finite numbers)
            assert not validator.is_valid(v), (spec.name, v)


def test_the_cli_reads_a_trace_option_as_its_spec_takes_it():
    from fairplace.commands.simulate import _trace_options
    from fairplace.instances.trace_generators import check_options

    opts = _trace_options(["n_apps=20", "load=2.5", "jobs_range=8,24", "scale=small"])
    assert opts == {"n_apps": 20, "load": 2.5, "jobs_range": [8, 24], "scale": "small"}
    check_options("themis-1", opts)
    with pytest.raises(OptionError) as exc:
        check_options("themis-1", _trace_options(["n_apps=20.5"]))
    assert exc.value.path == "trace_options.n_apps"


# --- the instance generators' arguments (``fairplace instances generate`` sets the sizes, seed) --


def test_each_invalid_argument_of_an_instance_generator_is_rejected_naming_it():
    import inspect

    from fairplace.commands.instances import FLAGS, KINDS

    for kind, entry in KINDS.items():
        sig = inspect.signature(entry.factory).parameters
        _one_spec_per_name(entry.params)
        assert set(sig) == {p.name for p in entry.params}, kind  # every argument has a spec
        assert {"machines", "gpus_per_machine", "seed", entry.capabilities["size"]} <= set(FLAGS)
        for spec in entry.params:
            assert spec.default == sig[spec.name].default, (kind, spec)
            for value in spec.invalid_values():
                with pytest.raises(OptionError) as exc:
                    entry.factory(**{spec.name: value})
                assert exc.value.path == spec.name, (kind, value)
                with pytest.raises(OptionError) as exc:  # what the CLI checks, naming the flag
                    KINDS.check(kind, {spec.name: value})
                assert exc.value.path == spec.name, (kind, value)


def test_instances_generate_flags_are_the_generators_specs(capsys):
    from fairplace.cli import main
    from fairplace.instances.generators import AUCTION_PARAMS

    with pytest.raises(SystemExit):
        main(["instances", "generate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for spec in AUCTION_PARAMS[1:4]:  # machines, gpus_per_machine, seed
        assert spec.help() in text, spec.name
    for flag in ("--machines", "--gpus-per-machine", "--seed"):
        with pytest.raises(SystemExit) as exc:
            main(["instances", "generate", "--kind", "auction", flag, "0.5", "-o", "x.json"])
        assert exc.value.code == 2
        assert f"{flag}: must be an integer" in capsys.readouterr().err
