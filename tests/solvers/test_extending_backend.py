"""The worked example "A solver back end" (docs) runs: its python blocks are executed in order, in one
namespace (they assert their own results)."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
SECTION = "## A solver back end"


def section_code(title: str = SECTION) -> list[str]:
    """The ```python blocks of the section ``title`` of docs/extending.md."""
    for name in ("extending.md",):
        path = DOCS / name
        text = path.read_text() if path.exists() else ""
        if title in text:
            body = text.split(title, 1)[1]
            body = re.split(r"^## ", body, maxsplit=1, flags=re.M)[0]
            return re.findall(r"^```python\n(.*?)^```", body, flags=re.M | re.S)
    raise AssertionError(f"no section {title!r} in {DOCS}")


def test_backend_example_runs(capsys, monkeypatch):
    blocks = section_code()
    assert len(blocks) >= 3
    module = types.ModuleType("extending_backend_example")  # dataclasses look their module up
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for code in blocks:
        exec(compile(code, "docs: A solver back end", "exec"), module.__dict__)  # noqa: S102
    out = capsys.readouterr().out
    assert out.startswith("scipy optimal")
    assert "back end 'scipy' does not take a warm start" in out
