"""Run mypy (config in pyproject.toml [tool.mypy]) on every module of the distribution: the
packages pyproject's ``[tool.setuptools] packages`` lists (scripts that no package holds, such as
``papers/<paper>/experiments/``, are not part of it).

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


def targets(tree: Path, packages: list[str]) -> list[str]:
    """The modules of ``packages`` (each package's own ``*.py`` files, not its subfolders'), as
    paths in ``tree`` (the installed layout)."""
    return sorted(
        str(f.relative_to(tree))
        for package in packages
        for f in Path(tree, *package.split(".")).glob("*.py")
    )


def _only_python(folder: str, names: list[str]) -> list[str]:
    return [
        n
        for n in names
        if n == "__pycache__" or (Path(folder, n).is_file() and not n.endswith((".py", ".typed")))
    ]


def main() -> int:
    config = ROOT / "pyproject.toml"
    setuptools = tomllib.loads(config.read_text())["tool"]["setuptools"]
    package_dir = setuptools["package-dir"]
    with tempfile.TemporaryDirectory() as tmp:
        back = {}
        for package, src in sorted(package_dir.items(), key=lambda kv: kv[0].count(".")):
            dest = Path(tmp, *package.split("."))
            shutil.copytree(ROOT / src, dest, ignore=_only_python, dirs_exist_ok=True)
            back["/".join(package.split(".")) + "/"] = src.rstrip("/") + "/"
        files = targets(Path(tmp), setuptools["packages"])
        cmd = [sys.executable, "-m", "mypy", "--config-file", str(config), *files]
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
