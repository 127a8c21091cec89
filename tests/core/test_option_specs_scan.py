"""Every option a registry entry takes is a :class:`~fairplace.core.params.Param` (issue 50 item 2):
the solver-specific options of every :class:`~fairplace.solvers.options.SolverEntry` (rejected by
``fairplace.solve`` naming the option, before any solver runs) and the options of every scheduler
and placement policy (rejected by their registry naming ``scheduler_options.<option>`` /
``placement_options.<option>``). That every registry of names is a
:class:`~fairplace.core.registry.Registry` is ``tests/core/test_registries.py``."""

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
