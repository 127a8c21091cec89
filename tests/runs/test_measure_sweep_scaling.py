"""examples/measure_sweep_scaling.py (the scaling table of docs/dask.md) runs end to end at 1 and 2
workers on its tiny grid: a fresh cluster per worker count, start-up apart from the solve phase,
a Markdown table on stdout and the JSON file it was asked for."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "measure_sweep_scaling.py"


@pytest.mark.slow
def test_scaling_script_at_1_and_2_workers(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("measure_sweep_scaling", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "scaling.json"
    assert mod.main([str(out), "--workers", "1,2", "--tiny"]) == 0
    doc = json.loads(out.read_text())
    assert [r["workers"] for r in doc["runs"]] == [1, 2]  # each count in a cluster of its own
    for r in doc["runs"]:
        assert r["cells"] == doc["grid"]["cells"] == 2 and r["failed"] == 0
        assert r["startup_seconds"] > 0 and r["solve_seconds"] > 0 and r["close_seconds"] >= 0
    assert doc["runs"][0]["speedup"] == 1.0 and doc["same_results"] is True
    table = capsys.readouterr().out
    assert table.startswith("| workers | cells | start-up (s) | solve phase (s) |")
    assert len([line for line in table.splitlines() if line.startswith("| 2 |")]) == 1
    assert mod.grid(4, tiny=False)["seeds"] == [0, 1, 2, 3]  # 4 x 4 x 4 = 64 cells by default
