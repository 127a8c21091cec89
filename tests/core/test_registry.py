"""The one registry type (core/registry.py) behind the scheduler, placement-policy, back-end and
solver names: unknown names list the known ones, options are checked against the entry's specs
and named by their path, and a user's object takes the same path as a built-in name."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairplace
from fairplace.core.errors import OptionError, UnknownName
from fairplace.core.registry import Entry, Registry
from fairplace.core.shared_params import THEMIS_F
from fairplace.sim.schedulers import FIFO, LAS, SCHEDULER_REGISTRY, SCHEDULERS
from fairplace.solvers.placement.policies import POLICY_REGISTRY, make_policy

SMALL = {"gpus": 32, "trace_options": {"n_apps": 4, "scale": "small"}, "progress": False}


def test_unknown_names_list_the_known_ones():
    for reg, where in ((SCHEDULER_REGISTRY, "scheduler"), (POLICY_REGISTRY, "placement")):
        with pytest.raises(UnknownName) as e:
            reg.get("nope")
        assert e.value.path == where and "known: " + ", ".join(reg.names()) in e.value.problem


@settings(deadline=None, max_examples=50)
@given(option=st.text(st.characters(whitelist_categories=("Ll",)), min_size=1, max_size=12))
def test_an_option_no_entry_takes_is_named_by_its_path(option):
    for reg, path, name in (
        (SCHEDULER_REGISTRY, "scheduler_options", "las"),
        (POLICY_REGISTRY, "placement_options", "pal"),
    ):
        if option in reg.option_names(name):
            continue
        with pytest.raises(OptionError) as e:
            reg.check(name, {option: 1})
        assert e.value.path == f"{path}.{option}"


def test_specs_check_values_and_name_the_option():
    with pytest.raises(OptionError) as e:
        SCHEDULER_REGISTRY.make("themis", {"f": 1.5})
    assert e.value.path == "scheduler_options.f" == THEMIS_F.where
    with pytest.raises(OptionError) as e:
        make_policy("pal", ties="machine")  # pm-first's ties, not pal's
    assert e.value.path == "placement_options.ties" and "fewest-machines" in e.value.problem
    assert make_policy("pm-first", ties="machine").ties == "machine"


def test_the_context_is_given_but_is_never_an_option():
    assert "seed" not in SCHEDULER_REGISTRY.option_names("srtf")
    with pytest.raises(OptionError, match="scheduler_options.seed"):
        SCHEDULER_REGISTRY.make("fifo", {"seed": 3})
    assert isinstance(SCHEDULER_REGISTRY.make("fifo", {}, seed=3), FIFO)  # FIFO takes no seed
    assert make_policy("random-sticky", seed=7).seed == 7


def test_names_fold_case_where_the_registry_says_so():
    assert "FIFO" in SCHEDULER_REGISTRY and SCHEDULER_REGISTRY.key("LAS") == "las"
    assert "PAL" not in POLICY_REGISTRY


def test_capabilities_are_data_of_the_entries():
    caps = {n: dict(e.capabilities) for n, e in SCHEDULER_REGISTRY.items()}
    assert caps["themis"] == {
        "allocates": True,
        "placed_by": "arbiter",
        "round_option": ("lease", 600.0),
    }
    assert caps["optimus"]["allocates"] and not caps["fifo"]
    for name, entry in SCHEDULER_REGISTRY.items():  # the entry says what the object does
        made = SCHEDULER_REGISTRY.make(name, {}, seed=0)
        assert bool(getattr(made, "allocates", False)) == entry.capabilities.get("allocates", False)
    assert {n for n, e in POLICY_REGISTRY.items() if e.capabilities["sticky"]} == {
        "packed-sticky",
        "random-sticky",
    }
    assert all(
        make_policy(n).sticky == e.capabilities["sticky"] for n, e in POLICY_REGISTRY.items()
    )


def test_an_object_takes_the_same_path_as_a_name():
    name, entry = SCHEDULER_REGISTRY.entry_of(LAS(threshold=100.0))
    assert name == "las" and not entry.capabilities.get("allocates", False)

    class Mine(FIFO):
        """An allocating scheduler of the user's."""

        name = "mine"
        allocates = True

    name, entry = SCHEDULER_REGISTRY.entry_of(Mine())
    assert name == "mine" and entry.capabilities["allocates"] is True
    assert entry.doc == "An allocating scheduler of the user's."
    obj = LAS()
    assert SCHEDULER_REGISTRY.resolve(obj) is obj
    with pytest.raises(OptionError) as e:
        SCHEDULER_REGISTRY.resolve(obj, {"threshold": 1.0})
    assert e.value.path == "scheduler_options"
    with pytest.raises(UnknownName) as e:
        SCHEDULER_REGISTRY.entry_of(object())
    assert e.value.path == "scheduler" and "order()" in e.value.problem


def test_simulate_records_who_placed_from_the_capabilities():
    by_name = fairplace.simulate("themis-1", "themis", "pal", seed=1, **SMALL)
    assert by_name.config["placed_by"] == "arbiter" and by_name.config["round_length"] == 600.0
    queue = fairplace.simulate("themis-1", "fifo", "pal", seed=1, **SMALL)
    assert queue.config["placed_by"] == "policy"


def test_a_small_registry_works():
    reg = Registry(
        "thing",
        {"las": Entry(LAS, doc="d", capabilities={"k": 1}), "fifo": Entry(FIFO)},
        options_path="thing_options",
        context=("seed",),
    )
    assert reg.option_names("las") == ("threshold", "starve_factor")
    assert isinstance(reg.make("las", {"threshold": 5.0}, seed=1), LAS)
    assert reg.names() == ("las", "fifo") and len(reg) == 2 and list(reg) == ["las", "fifo"]
    assert set(SCHEDULERS) == set(SCHEDULER_REGISTRY)


def test_the_t_id_choice_has_one_name_rho_variant():
    """THEMIS' apps bid with ``scheduler_options.rho_variant``, the name the metrics' choice has."""
    with pytest.raises(OptionError) as e:
        SCHEDULER_REGISTRY.make("themis", {"rho_variant": "gavel"})  # not an agent-form variant
    assert e.value.path == "scheduler_options.rho_variant" and "literal" in e.value.problem
    with pytest.raises(OptionError) as e:
        SCHEDULER_REGISTRY.make("themis", {"t_id": "literal"})
    assert e.value.path == "scheduler_options.t_id" and "rho_variant" in e.value.problem
    assert SCHEDULER_REGISTRY.make("themis", {"rho_variant": "literal"}).rho_variant == "literal"
    res = fairplace.simulate(
        "themis-1", "themis", "pal", seed=1, rho_variant="literal",
        scheduler_options={"rho_variant": "literal"}, **SMALL,
    )  # fmt: skip
    assert res.summary["rho_variant"] == "literal"


def test_back_ends_and_solvers_are_registries_too():
    from fairplace.solvers.backends import BACKEND_REGISTRY, BACKENDS, get_backend
    from fairplace.solvers.registry import solver_registry, solver_table

    assert BACKENDS == BACKEND_REGISTRY.names() == ("highs", "pyomo", "cvxpy")
    highs = get_backend("highs")
    assert get_backend(highs) is highs and BACKEND_REGISTRY.entry_of(highs)[0] == "highs"
    reg = solver_registry()
    assert tuple(solver_table()) == reg.names()
    assert set(reg.get("exact").capabilities["kinds"]) == {"auction", "placement"}
    assert set(reg.get("pal").capabilities["kinds"]) == {"placement"}
    with pytest.raises(UnknownName) as e:
        reg.get("gurobi")
    assert e.value.path == "solver" and "known: exact, highs" in e.value.problem
