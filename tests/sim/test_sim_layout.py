"""Where things live: ``fairplace/sim`` is the driver plus two packages, ``themis/`` and
``schedulers/``; the scheduler registry imports every scheduler directly (no ``Lazy`` names) and no
scheduler imports it back; a module's ``__all__`` names only what it defines (a package's
``__init__`` gathers its modules' names) and nothing private."""

from __future__ import annotations

import ast
from pathlib import Path

from fairplace.sim.schedulers import SCHEDULER_REGISTRY

ROOT = Path(__file__).resolve().parents[2]
SIM = ROOT / "fairplace" / "sim"
#: the package's source folders (pyproject's package-dir)
SOURCES = ("fairplace", "core", "formulations", "solvers", "instances", "analysis", "papers")
#: modules whose __all__ still lists names they import, each left to its owner to trim
REEXPORTS_LEFT = {
    "fairplace/sim/engine.py": {"InvariantError", "Timeline"},
    "fairplace/runs/batch.py": {
        "IN_PROCESS_MAX_TASKS",
        "DriverSlot",
        "local_cluster",
        "solve_task",
        "read_journal",
        "resolve_suite",
        "journal_path",
        "to_frame",
        "summarize",
    },  # fmt: skip
    "solvers/placement/policies.py": {"ClusterState", "Decision", "PolicyBase"},
}


def _modules():
    for src in SOURCES:
        for path in sorted((ROOT / src).rglob("*.py")):
            if "__pycache__" not in path.parts:
                yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text())


def _exported(tree: ast.Module) -> tuple[list[str], set[str], set[str]]:
    """(``__all__``, names the module imports, names it defines), top level only."""
    names: list[str] = []
    imported: set[str] = set()
    defined: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for name in (n for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)):
                defined.add(name.id)
                if name.id == "__all__" and node.value is not None:
                    names = list(ast.literal_eval(node.value))
    return names, imported, defined


def test_sim_has_a_themis_and_a_schedulers_package_and_no_flat_themis_modules():
    for package in ("themis", "schedulers"):
        assert (SIM / package / "__init__.py").is_file()
    flat = {p.name for p in SIM.glob("*.py")}
    gone = {"themis.py", "themis_apps.py", "themis_renewal.py", "rounds.py", "schedulers.py",
            "optimus.py", "estimate_error.py"}  # fmt: skip
    assert flat & gone == set()
    assert not any(p.name.startswith("themis") for p in SIM.glob("*.py"))


def test_the_scheduler_registry_holds_classes_not_lazy_names():
    for name, entry in SCHEDULER_REGISTRY.items():
        assert isinstance(entry.factory, type), name
    for path in SIM.rglob("*.py"):
        assert "Lazy(" not in path.read_text(), path


def _imports(path: Path) -> set[str]:
    """Every module a file imports, anywhere in it, relative imports resolved."""
    parts = ("fairplace", *path.relative_to(ROOT / "fairplace").parent.parts)
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            out.add(str(node.module))
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(parts[: len(parts) - node.level + 1])
            heads = [node.module] if node.module else [a.name for a in node.names]
            out |= {f"{base}.{h}" for h in heads}
    return out


def test_themis_imports_no_scheduler_registry():
    """The registry imports THEMIS; nothing of THEMIS imports the registry back (no hidden circle)."""
    for path in (SIM / "themis").rglob("*.py"):
        bad = {m for m in _imports(path) if m.startswith("fairplace.sim.schedulers")}
        assert bad == set(), (path, bad)
    assert "fairplace.sim.themis.outcome" in _imports(SIM / "themis" / "agents.py")  # resolves


def test_the_view_and_protocols_import_nothing_of_the_simulator():
    """``SchedView`` and the Protocols, which the driver, the baselines and THEMIS all import."""
    assert {m for m in _imports(SIM / "protocols.py") if m.startswith("fairplace")} == set()


def test_a_module_exports_only_its_own_public_names():
    reexports, private = {}, {}
    for rel, tree in _modules():
        names, imported, defined = _exported(tree)
        hidden = [n for n in names if n.startswith("_") and not n.startswith("__")]
        if hidden:
            private[rel] = hidden
        if not rel.endswith("__init__.py"):
            again = {n for n in names if n in imported and n not in defined}
            if again - REEXPORTS_LEFT.get(rel, set()):
                reexports[rel] = sorted(again)
            star = any(
                isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)
                for n in tree.body
            )
            assert not star, f"{rel} re-exports a module with *"
    assert reexports == {}
    assert private == {}
