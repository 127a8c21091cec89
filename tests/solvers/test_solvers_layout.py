"""The solvers' subpackages by concern: packaged, reachable, and no module left at an old path
that only re-exports a moved one."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_package_folder_is_listed_in_pyproject():
    """A folder with an ``__init__.py`` that ``packages`` omits is missing from the wheel (an
    editable install still finds it, so nothing else would notice)."""
    found = set()
    for package, src in SETUPTOOLS["package-dir"].items():
        for init in (ROOT / src).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / src).parts
            if "__pycache__" not in rel:
                found.add(".".join((package, *rel)))
    assert found - set(SETUPTOOLS["packages"]) == set()


@pytest.mark.parametrize("package", ["compact", "placement", "backends"])
def test_a_submodule_is_the_attribute_of_its_package(package):
    """Importing a submodule sets the package's attribute of that name: a name the package's
    ``__init__`` binds as well (``formulations.pa`` as ``pa``) would be overwritten, or would
    hide the module from ``import fairplace.solvers.compact.x as m``."""
    pkg = importlib.import_module(f"fairplace.solvers.{package}")
    names = [m.name for m in pkgutil.iter_modules(pkg.__path__)]
    assert names
    assert _bound_in_init(Path(pkg.__file__)) & set(names) == set()
    for name in names:
        mod = importlib.import_module(f"{pkg.__name__}.{name}")
        assert getattr(pkg, name) is mod, f"{pkg.__name__}.{name} is shadowed in its __init__"


@pytest.mark.parametrize(
    "old, new",
    [
        ("policies", "placement.policies"),
        ("policy_round", "placement.policy_round"),
        ("highs", "backends.highs"),
    ],
)
def test_a_moved_module_has_one_path(old, new):
    importlib.import_module(f"fairplace.solvers.{new}")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"fairplace.solvers.{old}")


def _bound_in_init(init: Path) -> set[str]:
    """Top-level names an ``__init__.py`` binds, less ``from . import x`` (x: the submodule)."""
    bound = set()
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None:
                continue
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return bound
