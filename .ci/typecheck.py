"""Run mypy (config in pyproject.toml [tool.mypy]) on the typed floors of the package: the ground
floor ``fairplace.core``, ``fairplace.formulations``, ``fairplace.solvers`` and the public API
(``fairplace/__init__.py``, ``fairplace/api.py``).

As in ``.ci/lint_imports.py``, pyproject's package-dir (``fairplace.formulations`` ->
``formulations/``) is something mypy cannot follow, so the sources are copied into a temporary tree
with the installed layout and checked there; reported paths are mapped back to the repository's.
Usage: ``python .ci/typecheck.py``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: what is checked, in the installed layout
TARGETS = (
    "fairplace/core",
    "fairplace/formulations",
    "fairplace/solvers",
    "fairplace/__init__.py",
    "fairplace/api.py",
)


def _only_python(folder: str, names: list[str]) -> list[str]:
    return [
        n
        for n in names
        if n == "__pycache__" or (Path(folder, n).is_file() and not n.endswith((".py", ".typed")))
    ]


def main() -> int:
    config = ROOT / "pyproject.toml"
    package_dir = tomllib.loads(config.read_text())["tool"]["setuptools"]["package-dir"]
    with tempfile.TemporaryDirectory() as tmp:
        back = {}
        for package, src in sorted(package_dir.items(), key=lambda kv: kv[0].count(".")):
            dest = Path(tmp, *package.split("."))
            shutil.copytree(ROOT / src, dest, ignore=_only_python, dirs_exist_ok=True)
            back["/".join(package.split(".")) + "/"] = src.rstrip("/") + "/"
        cmd = [sys.executable, "-m", "mypy", "--config-file", str(config), *TARGETS]
        proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
        for line in (proc.stdout + proc.stderr).splitlines():
            for inst, src in sorted(back.items(), key=lambda kv: -len(kv[0])):
                if line.startswith(inst):
                    line = src + line[len(inst) :]
                    break
            print(line)
        return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
