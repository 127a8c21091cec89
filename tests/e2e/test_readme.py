"""The README's REPL tour runs as written (docs that cannot rot)."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_starts_with_the_two_setup_commands():
    first_block = (
        re.search(r"```bash\n(.*?)```", README.read_text(), re.S).group(1).strip().splitlines()
    )
    assert len(first_block) == 2
    assert "fairplace reproduce --quick" in first_block[0]
    assert "pytest" in first_block[1]
    ci = (README.parent / ".ci" / "run").read_text()
    assert "python -m pytest -q" in ci and "pip install" in ci


@pytest.mark.slow
def test_readme_python_tour_runs():
    code = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    namespace: dict = {}
    exec(compile(code, str(README), "exec"), namespace)
    assert namespace["sol"].status == "optimal"
    assert namespace["res"].summary["avg_jct"] > 0
    # what the tour says about the exact-vs-PAL line: exact places one job more, hence its sum
    exact, pal = namespace["exact"], namespace["pal"]
    assert len(exact.allocation) == len(pal.allocation) + 1
    assert exact.objective > pal.objective
    assert len(namespace["axes"]) == 3 and len(namespace["res"].to_frame()) == 1


def test_readme_links_the_docs():
    text = README.read_text()
    for doc in ("docs/extending.md", "docs/dask.md", "examples/quickstart.ipynb"):
        assert f"]({doc})" in text and (README.parent / doc).exists()
