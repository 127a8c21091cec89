"""The stored THEMIS results (papers/themis/results/): a reproduction's journals stored as Parquet
with their provenance, full-size.csv written from them, and docs/themis-results.md's generated
blocks rebuilt from the stored rows ('not run' for the cells of the grid no row holds)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest

from fairplace.core.errors import DataError
from fairplace.runs import full_size
from fairplace.runs.batch_results import append_row
from fairplace.runs.sweep import cell_id, fixed_key, results_paths
from fairplace.runs.sweep_spec import load_spec

EXPERIMENTS = Path(__file__).resolve().parents[2] / "papers" / "themis" / "experiments"
SPEC = {
    "name": "themis-contention", "schedulers": ["themis", "las"], "placements": ["packed-sticky"],
    "traces": ["themis-2"], "seeds": [0, 1], "frames": ["apps"], "params": {"contention": [1, 2]},
    "fixed": {"scale": "paper"},
}  # fmt: skip
RHO = {"themis": 2.0, "las": 5.0}


def _stored():
    spec = importlib.util.spec_from_file_location("themis_stored", EXPERIMENTS / "themis_stored.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _journal(out: Path, spec) -> None:
    """A sweep journal of every cell of ``spec`` but THEMIS at x2 seed 1, plus a failed cell and
    a cell journaled under other [fixed] arguments (neither stored)."""
    paths = results_paths(out / "data" / "themis-contention")
    paths["jsonl"].parent.mkdir(parents=True)
    key = fixed_key(spec.fixed)
    with paths["jsonl"].open("a") as rows, paths["apps.jsonl"].open("a") as apps:
        for c in spec.cells():
            cid = cell_id(c)
            if c["scheduler"] == "themis" and c["contention"] == 2 and c["seed"] == 1:
                continue
            rho = RHO[c["scheduler"]] * c["contention"] + c["seed"]
            status, k = ("error", key) if (c["scheduler"], c["seed"], c["contention"]) == (
                "las", 1, 2) else ("ok", key)  # fmt: skip
            if (c["scheduler"], c["seed"], c["contention"]) == ("las", 0, 2):
                k = "stale"  # made under other [fixed] arguments: not part of this grid
            per_app = [{"app_id": a, "jobs": 1 + a, "gpu_time": 3600.0 * (1 + a),
                        "migrations": a, "rho_solo": rho * (a + 1) / 3, "rho_themis": rho,
                        "jct": 1.0, **c} for a in range(3)]  # fmt: skip
            append_row(apps, {"cell_id": cid, "rows": per_app})
            append_row(rows, {**c, "cell_id": cid, "fixed_key": k, "status": status,
                              "message": "", "max_rho": rho, "rho_variant": "solo",
                              "restarts_per_job": 0.5, "restart_gpu_share": 0.01,
                              "idle_gpu_hours_while_waiting": 7.0, "draw_slow_A": 1.0,
                              "mean_bidders": 1.5, "auctions": 10})  # fmt: skip


def test_store_then_regenerate_the_blocks(tmp_path):
    mod = _stored()
    spec = load_spec(SPEC)
    _journal(tmp_path / "out", spec)
    folder = tmp_path / "papers" / "results"
    written = mod.store(tmp_path / "out", "abc1234", ["contention", "network"], folder=folder,
                        date="2026-12-06", specs={"contention": spec})  # fmt: skip
    assert {p.name for p in written} == {
        "contention.parquet", "contention-apps.parquet", "meta.json", "full-size.csv"
    }  # fmt: skip
    meta = json.loads((folder / "meta.json").read_text())["contention"]
    assert (meta["commit"], meta["date"], meta["cells"], meta["grid_cells"]) == (
        "abc1234",
        "2026-12-06",
        5,
        8,
    )  # 8 cells: 1 never run, 1 failed, 1 stale
    frames, _ = full_size.load_results(folder)
    s, apps = frames["contention"]["summary"], frames["contention"]["apps"]
    assert len(s) == 5 and len(apps) == 15  # the stale cell's apps are not kept
    assert not {"draw_slow_A", "message", "cell_id", "fixed_key"} & set(s)
    assert "jct" not in apps and {"app_id", "rho_solo", "contention"} <= set(apps)
    csv, source = full_size.load(tmp_path / "papers" / "full-size.csv")
    assert list(csv) == ["contention"] and "abc1234 (2026-12-06)" in source
    assert sorted(csv["contention"]["summary"]["max_rho"]) == sorted(s["max_rho"])

    made = mod.blocks(*full_size.load_results(folder))
    c = made["contention"]
    assert "5 of the full grid's 8 cells" in c and "| W2 x1 " in c
    themis = next(line for line in c.splitlines() if line.startswith("| themis ") and "±" in line)
    assert [x.strip() for x in themis.split("|")[2:4]] == ["2.50 ± 0.71 (2)", "4.00 (1)"]
    las = [line for line in c.splitlines() if line.startswith("| las ")][0]
    assert "not run" in las.split("|")[3]  # x2: one seed failed, the other stale
    assert "2.25 (2.00..2.50; 2 seeds)" in c  # las / THEMIS at x1; x2: no seed has both
    assert "| W2 x2      | not run" in c
    doc = ("# Page\n\nprose\n\n<!-- generated:contention -->\nold\n<!-- /generated -->\n\nmore\n"
           "<!-- generated:provenance -->\n<!-- /generated -->\n"
           "<!-- generated:claims -->\nx\n<!-- /generated -->\n")  # fmt: skip
    out = mod.replace_blocks(doc, made)
    assert out.startswith("# Page\n\nprose\n\n<!-- generated:contention -->\n" + c.split("\n")[0])
    assert "old" not in out and "\n\nmore\n" in out and out.count("<!-- /generated -->") == 3
    assert "| abc1234 " in out and "themis-max-rho" in out  # provenance, claims judged
    assert mod.replace_blocks(out, made) == out  # idempotent
    with pytest.raises(DataError, match="no <!-- generated:NAME --> marker for claims"):
        mod.replace_blocks(doc.split("<!-- generated:claims")[0], made)


def test_store_keeps_other_experiments_and_rejects_bad_meta(tmp_path):
    one = {"summary": pd.DataFrame({"seed": [0], "max_rho": [1.5]})}
    full_size.store_results({"a": one}, tmp_path, {"a": {"commit": "x"}})
    full_size.store_results({"b": one}, tmp_path, {"b": {"commit": "y"}})
    frames, meta = full_size.load_results(tmp_path)
    assert sorted(frames) == ["a", "b"] and meta["a"]["commit"] == "x"
    assert meta["a"]["frames"] == {"summary": "a.parquet"} and meta["b"]["rows"] == {"summary": 1}
    assert full_size.load_results(tmp_path / "absent") is None
    (tmp_path / "meta.json").write_text('{"a": {}}')
    with pytest.raises(DataError, match="name no 'frames'"):
        full_size.load_results(tmp_path)


def test_store_merge_keeps_the_stored_cells_a_later_piece_lacks(tmp_path):
    """A grid stored piece by piece: with ``merge`` the stored cells the new journals do not hold
    stay (their apps too), a cell in both takes the new rows; without it the new piece replaces."""
    mod = _stored()
    spec = load_spec(SPEC)
    _journal(tmp_path / "one", spec)
    folder = tmp_path / "results"
    mod.store(tmp_path / "one", "a", ["contention"], folder=folder, specs={"contention": spec})
    later = load_spec({**SPEC, "seeds": [1]})  # seed 1 again, THEMIS x2 now run too
    paths = results_paths(tmp_path / "two" / "data" / "themis-contention")
    paths["jsonl"].parent.mkdir(parents=True)
    with paths["jsonl"].open("a") as rows, paths["apps.jsonl"].open("a") as apps:
        for c in later.cells():
            append_row(apps, {"cell_id": cell_id(c), "rows": [{"app_id": 0, "rho_solo": 9.0, **c}]})
            append_row(rows, {**c, "cell_id": cell_id(c), "fixed_key": fixed_key(spec.fixed),
                              "status": "ok", "message": "", "max_rho": 9.0})  # fmt: skip
    mod.store(tmp_path / "two", "a, b", ["contention"], folder=folder, specs={"contention": spec},
              merge=True)  # fmt: skip
    frames, meta = full_size.load_results(folder)
    s, a = frames["contention"]["summary"], frames["contention"]["apps"]
    assert meta["contention"]["cells"] == len(s) == 7  # seed 0: 3 of 4 kept; seed 1: all 4 new
    assert (s[s["seed"] == 1]["max_rho"] == 9.0).all() and (s[s["seed"] == 0]["max_rho"] < 9).all()
    assert len(a) == 3 * 3 + 4 and (a[a["seed"] == 1]["rho_solo"] == 9.0).all()
    mod.store(tmp_path / "two", "b", ["contention"], folder=folder, specs={"contention": spec})
    assert set(full_size.load_results(folder)[0]["contention"]["summary"]["seed"]) == {1}
