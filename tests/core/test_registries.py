"""Every set of names is a :class:`~fairplace.core.registry.Registry` built once (issue 50 item 1).

The rule: a set of names that selects code (a name -> a function, a class, a case to run) is a
``Registry``; a set of allowed words that code only compares against (THEMIS' ``pricing``, a
claim's ``kind``) is a tuple, the values of an ``Options`` spec of a
:class:`~fairplace.core.params.Param` of the same module, which checks it. A module-level set of
names is found two ways: by name (a public name that the package uses for sets of names, or one
ending in ``_REGISTRY``), and by shape (a public mapping from names to functions or classes, which
selects code by name). Each is a ``Registry`` or, found by name, an ``Options`` spec's words; there
are no exceptions and no ``Lazy("module:attr")`` name in the package. That no module re-exports
another's names (except a package ``__init__``) is
``tests/sim/test_sim_layout.py::test_a_module_exports_only_its_own_public_names``."""

from __future__ import annotations

import ast
import importlib
import inspect
import tomllib
from collections.abc import Mapping
from pathlib import Path

from fairplace.core.params import Options, Param
from fairplace.core.registry import Registry

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIR = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
    "package-dir"
]
#: the names the package gives its sets of names
REGISTRY_NAMES = {
    "SOLVERS", "TRACE_GENERATORS", "SETUPS", "PRICING", "RENEWAL", "LEFTOVER_RULES",
    "ROUNDING_RULES", "PAPER_INSTANCES", "SUITES", "CHOOSERS", "CASES", "COMMANDS", "RUNNERS",
    "KINDS", "MEASURES", "PAL_MEASURES", "PAL_WAIT_MEASURES",
}  # fmt: skip


def _sources():
    """(module name, path) of every module of the package, in its installed layout."""
    for package, src in PACKAGE_DIR.items():
        base = ROOT / src
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(base).with_suffix("").parts
            if "__pycache__" in rel:
                continue
            parts = rel[:-1] if rel[-1] == "__init__" else rel
            yield ".".join((package, *parts)), path


def _assigned(path: Path) -> set[str]:
    """Public upper-case names a module assigns at its top level."""
    out = set()
    for node in ast.parse(path.read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        out |= {t.id for t in targets if isinstance(t, ast.Name)}
    return {n for n in out if n.isupper() and not n.startswith("_")}


def _selects_code(value) -> bool:
    """A mapping of two or more names to functions or classes (not builtin types)."""
    if isinstance(value, Registry) or not isinstance(value, Mapping) or len(value) < 2:
        return False
    if not all(isinstance(k, str) for k in value):
        return False
    return all(
        (inspect.isfunction(v) or inspect.isclass(v)) and getattr(v, "__module__", "") != "builtins"
        for v in value.values()
    )


def _option_words(mod) -> set[tuple]:
    """The values of the ``Options`` specs of ``mod``'s module-level Params."""
    return {
        tuple(v.constraint.values)
        for v in vars(mod).values()
        if isinstance(v, Param) and isinstance(v.constraint, Options)
    }


def _registries_of_names():
    """(module, name, value, allowed words) of every set of names found, by name or by shape."""
    for module, path in _sources():
        names = _assigned(path)
        wanted = {n for n in names if n in REGISTRY_NAMES or n.endswith("_REGISTRY")}
        if not names:
            continue
        mod = importlib.import_module(module)
        for name in sorted(names):
            value = getattr(mod, name)
            if name in wanted or _selects_code(value):
                yield module, name, value, _option_words(mod)


def _is_option_words(value, words: set[tuple]) -> bool:
    """A tuple of two or more words that an ``Options`` spec of its module checks."""
    return (
        isinstance(value, tuple)
        and len(value) >= 2
        and all(isinstance(v, str) for v in value)
        and value in words
    )


def test_every_registry_of_names_is_a_registry():
    found = {(m, n): (v, w) for m, n, v, w in _registries_of_names()}
    assert ("fairplace.solvers.registry", "SOLVER_REGISTRY") in found
    assert ("fairplace.benchmarks.registry", "BENCH_REGISTRY") in found
    assert ("fairplace.analysis.claims", "MEASURES") in found
    bad = {
        key
        for key, (v, words) in found.items()
        if not isinstance(v, Registry) and not _is_option_words(v, words)
    }
    assert bad == set()


def test_a_set_of_allowed_words_is_an_options_spec():
    """THEMIS' pricing / renewal / leftover rules and a claim's kind are words their specs check,
    compared against where they are read; the measures and bench cases select code: Registries."""
    from fairplace.analysis import claims, claims_schema
    from fairplace.benchmarks.registry import BENCH_REGISTRY
    from fairplace.sim.themis import params

    found = {(m, n): v for m, n, v, _ in _registries_of_names()}
    words = {k: v for k, v in found.items() if not isinstance(v, Registry)}
    assert set(words) == {
        ("fairplace.sim.themis.params", "PRICING"),
        ("fairplace.sim.themis.params", "RENEWAL"),
        ("fairplace.sim.themis.params", "LEFTOVER_RULES"),
        ("fairplace.analysis.claims_schema", "KINDS"),
    }
    assert params.THEMIS_PRICING.constraint.values == params.PRICING
    assert claims_schema.CLAIM_KIND.constraint.values == claims_schema.KINDS
    assert "gain" in claims.MEASURES and "wait_gain" in claims.MEASURES  # PAL's, merged in
    assert claims.MEASURES.option_names("tipping_point") == ("jump",)
    assert "pal_place_256" in BENCH_REGISTRY


def test_no_lazy_names_in_the_package():
    for _, path in _sources():
        assert "Lazy(" not in path.read_text(), path


def test_one_paper_instances_and_the_solvers_built_once():
    from fairplace.instances import paper, suite_paper
    from fairplace.solvers import registry

    assert not hasattr(paper, "PAPER_INSTANCES") and not hasattr(suite_paper, "PAPER_INSTANCES")
    assert registry.solver_registry() is registry.SOLVER_REGISTRY
    assert registry.get("exact", "auction") is registry.get("exact", "auction")
