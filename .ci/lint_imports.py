"""Run import-linter (contracts in pyproject.toml [tool.importlinter]) on the package as installed.

pyproject's package-dir maps ``fairplace.formulations`` to ``formulations/`` (and so on), which
import-linter cannot follow, so the sources are copied into a temporary tree with the installed layout
(``fairplace/formulations/...``) and linted there. Usage: ``python .ci/lint_imports.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _only_python(folder: str, names: list[str]) -> list[str]:
    return [
        n
        for n in names
        if n == "__pycache__" or (Path(folder, n).is_file() and not n.endswith(".py"))
    ]


def main() -> int:
    config = ROOT / "pyproject.toml"
    package_dir = tomllib.loads(config.read_text())["tool"]["setuptools"]["package-dir"]
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"
    with tempfile.TemporaryDirectory() as tmp:
        for package, src in sorted(package_dir.items(), key=lambda kv: kv[0].count(".")):
            dest = Path(tmp, *package.split("."))
            shutil.copytree(ROOT / src, dest, ignore=_only_python, dirs_exist_ok=True)
        env = {**os.environ, "PYTHONPATH": tmp}
        return subprocess.call([exe, "--no-cache", str(config)], cwd=tmp, env=env)


if __name__ == "__main__":
    sys.exit(main())
