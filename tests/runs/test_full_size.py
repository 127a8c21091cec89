"""Stored full-size results (papers/<paper>/full-size.csv) and claims judged next to them."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from fairplace.analysis.claims import against_full, evaluate
from fairplace.core.errors import DataError
from fairplace.runs import full_size
from fairplace.runs.reproduce import _full_size, load_claims

ROOT = Path(__file__).resolve().parents[2]
CLAIM = {
    "id": "x", "text": "t", "paper": "p", "experiment": "contention", "measure": "max_of",
    "args": {"metric": "max_rho"}, "paper_range": [2.0, 3.0], "direction": "higher",
    "null_value": 1.0, "caveat": "c",
}  # fmt: skip


def _frames(*rho: float) -> dict:
    return {"summary": pd.DataFrame({"max_rho": list(rho), "seed": list(range(len(rho)))})}


def test_store_then_load_round_trip(tmp_path):
    runs = {
        "contention": {"summary": pd.DataFrame({
            "seed": [0, 1], "contention": [1, 2], "max_rho": [1.5, 2.5], "draw_slow_A": [1, 2],
            "message": ["", ""]})},
        "network": {"summary": pd.DataFrame({"seed": [0], "network_fraction": [1.0], "max_rho": [3.0]})},
        "strategyproofness": {"strategyproofness": pd.DataFrame({"x": [0, 50], "liar": [1.0, 1.1]})},
        "empty": {"summary": pd.DataFrame()},
    }  # fmt: skip
    path = full_size.store(runs, tmp_path / "f.csv", "made by\na test")
    assert path.read_text().startswith("# made by a test\nexperiment,frame,")
    frames, source = full_size.load(path)
    assert source == "made by a test"
    assert {k: list(v) for k, v in frames.items()} == {
        "contention": ["summary"], "network": ["summary"], "strategyproofness": ["strategyproofness"]
    }  # fmt: skip
    c, n = frames["contention"]["summary"], frames["network"]["summary"]
    assert list(c.columns) == ["seed", "contention", "max_rho"]  # draws and free text dropped
    assert list(n.columns) == ["seed", "max_rho", "network_fraction"]  # no contention: not its own
    assert c["max_rho"].tolist() == [1.5, 2.5]
    assert frames["strategyproofness"]["strategyproofness"]["liar"].tolist() == [1.0, 1.1]
    assert full_size.load(tmp_path / "absent.csv") is None
    (tmp_path / "bad.csv").write_text("seed,max_rho\n0,1\n")
    with pytest.raises(DataError, match="provenance"):
        full_size.load(tmp_path / "bad.csv")


def test_against_full_says_why_a_smaller_size_differs():
    quick = evaluate(CLAIM, _frames(1.2, 1.4))  # direction only
    row = against_full(quick, CLAIM, _frames(2.5, 2.7), "one seed, 8 hours", "f.csv")
    assert row["full_size"].startswith("reproduces (2.70, 2.5..2.7")  # max over seeds, spread
    assert row["reason"].startswith(quick["reason"])
    assert row["reason"].endswith("this size differs: one seed, 8 hours")
    same = against_full(quick, CLAIM, _frames(1.1, 1.3), "n", "f.csv")
    assert same["full_size"].startswith("direction only") and same["reason"] == quick["reason"]
    none = against_full(quick, CLAIM, None, "n", "f.csv")  # nothing stored: marked as such
    assert none == quick | {"full_size": "not judged at full size", "full_outcome": "",
                            "full_ours": ""}  # fmt: skip
    assert row["full_outcome"] == "reproduces" and row["full_ours"] == "2.70"
    not_run = evaluate(CLAIM, None, "not run: not part of this size")
    assert "differs" not in against_full(not_run, CLAIM, _frames(2.5), "n", "f.csv")["reason"]


def test_stored_themis_results_match_the_claims_in_the_docs():
    """docs/themis-results.md's claims table and papers/themis/full-size.csv say the same."""
    stored = _full_size("themis")
    assert stored is not None, "papers/themis/full-size.csv is packaged with fairplace.papers"
    frames, source = stored
    assert "docs/themis-results.md" in source and {"contention", "strategyproofness"} <= set(frames)
    doc = (ROOT / "docs" / "themis-results.md").read_text()
    table = doc.split("### Claims judged on these runs", 1)[1]
    judged = dict(re.findall(r"^\| ([a-z0-9-]+) +\|.*\| ([a-z ]+?) +\|$", table, re.M))
    checked = 0
    for c in load_claims("themis"):
        if c["experiment"] in frames:
            assert evaluate(c, frames[c["experiment"]])["outcome"] == judged[c["id"]], c["id"]
            checked += 1
    assert checked >= 13  # the sweeps', strategy-proofness' and solver-gap claims
