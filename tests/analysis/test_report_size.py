"""The size that can judge leads: quick and full-size outcomes side by side, a headline
that counts the full size where stored, fixed 'not run' phrases, one load point never judged, every
section's size, reasons cut to 160 characters with the whole text in a footnote / <details>."""

from __future__ import annotations

import json

import pandas as pd

from fairplace.analysis.claims import (
    NOT_RUN_PHRASES,
    against_full,
    evaluate,
    not_run_reason,
)
from fairplace.analysis.report import (
    REASON_CHARS,
    footnoted,
    headline,
    headline_counts,
    headline_lines,
    html_table,
    short_text,
)
from fairplace.core.errors import DataError
from fairplace.runs.experiments import Experiment
from fairplace.runs.reproduce import size_line

GAIN = {
    "id": "g", "kind": "paper", "text": "PAL beats packed across loads", "paper": "up to 15%",
    "figure": "Fig. 16", "experiment": "synergy", "measure": "geomean_gain",
    "args": {"policy": "pal", "baseline": "packed-sticky", "by": ["jobs_per_hour"]},
    "paper_range": [0.0, 15.0], "direction": "higher", "null_value": 0.0, "unit": "%",
}  # fmt: skip


def _loads(*loads: float) -> dict:
    rows = [{"placement": p, "jobs_per_hour": x, "avg_jct": j, "seed": 0, "status": "ok", "trace": "s"}
            for x in loads for p, j in (("pal", 95.0), ("packed-sticky", 100.0))]  # fmt: skip
    return {"summary": pd.DataFrame(rows)}


def test_not_run_reasons_are_fixed_phrases():
    assert not_run_reason(DataError("scheduler", "no results for gavel-ftf")) == (
        "needs gavel-ftf cells"
    )
    where = not_run_reason(DataError("where", "no rows match {'contention': 4}"))
    assert where.startswith("not run at this size: ")
    one = not_run_reason(DataError("round_length", "only 1 value of round_length was run"))
    assert one.startswith("not run at this size: ")
    assert not_run_reason("not run: not part of this size (run without --quick)") == (
        "needs the full size"
    )
    assert (
        not_run_reason("not run: RuntimeError: boom") == "the experiment failed: RuntimeError: boom"
    )
    heads = ("not run at this size", "needs the full size", "needs ", "the experiment failed")
    assert len(NOT_RUN_PHRASES) == 4
    for r in (where, one, not_run_reason(KeyError("summary")), not_run_reason("")):
        assert r.startswith(heads), r


def test_one_load_point_is_not_run_at_this_size_never_reproduces():
    one = evaluate(GAIN, _loads(10.0))  # the measure gives 5%, inside [0, 15]: still not judged
    assert one["outcome"] == "not run"
    assert one["reason"].startswith("not run at this size: one jobs_per_hour value (10.0)")
    two = evaluate(GAIN, _loads(8.0, 10.0))
    assert two["outcome"] == "reproduces" and two["ours"].startswith("5.0")
    # a claim over cluster draws (its experiment is its draws) with one draw
    draws = GAIN | {"args": {"policy": "pal", "baseline": "packed-sticky"}, "draws": "synergy"}
    assert evaluate(draws, _loads(10.0))["reason"].startswith("not run at this size: one cluster")


def _table() -> pd.DataFrame:
    rows = [
        ("themis", "paper", "reproduces", "does not reproduce"),  # quick says yes, full says no
        ("themis", "paper", "reproduces", "reproduces"),
        ("themis", "check", "not run", "passes"),
        ("pal", "paper", "reproduces", ""),  # never judged at full size
        ("pal", "paper", "not run", ""),
    ]
    return pd.DataFrame([
        {"id": f"c{i}", "study": s, "kind": k, "outcome": o, "full_outcome": f,
         "full_size": f or "not judged at full size"}
        for i, (s, k, o, f) in enumerate(rows)
    ])  # fmt: skip


def test_headline_counts_the_full_size_where_stored_and_this_run_apart():
    t = _table()
    c = headline_counts(t)
    assert (
        c["themis"]["paper"]["reproduces"] == 1 and c["themis"]["paper"]["does not reproduce"] == 1
    )
    assert c["themis"]["check"]["passes"] == 1  # the stored full size, not this run's "not run"
    assert c["themis"]["at_full_size"] == {"paper": 2, "check": 1}
    assert c["themis"]["this_run"]["paper"]["reproduces"] == 2  # this run alone, counted apart
    assert c["pal"]["paper"]["reproduces"] == 1 and c["pal"]["at_full_size"]["paper"] == 0
    lines = headline_lines(t, "quick")
    assert lines[0].startswith("THEMIS: paper claims: 1 of 2 reproduce, 0 in direction, 1 do not")
    assert lines[0].endswith("(judged at full size: 2 of 2 paper claims, 1 of 1 checks)")
    assert lines[1].endswith("(none judged at full size: all at quick)")
    assert lines[2].endswith("; the rest at quick)")
    assert headline_lines(t, "quick", this_run=True)[0].startswith(
        "THEMIS: paper claims: 2 of 2 reproduce"
    )
    # a table without stored full-size outcomes counts as before, without the note
    plain = t.drop(columns=["full_outcome", "full_size"])
    assert "judged at full size" not in headline(plain)


def test_against_full_marks_a_claim_never_judged_at_full_size():
    row = evaluate(GAIN, _loads(8.0, 10.0))
    out = against_full(row, GAIN, None, "", "papers/pal/full-size.csv")
    assert out["full_size"] == "not judged at full size" and out["full_outcome"] == ""


def test_command_prints_full_size_and_quick_side_by_side(monkeypatch, capsys, tmp_path):
    from fairplace.cli import main
    from fairplace.runs import reproduce as rep

    t = _table().assign(ours=["3.21x", "2.5x", "", "40%", ""], paper_range="",
                        full_ours=["0.894x", "2.4x", "100%", "", ""])  # fmt: skip
    stub = {"md": tmp_path / "r.md", "html": tmp_path / "r.html", "claims": tmp_path / "c.csv",
            "table": t, "headline": headline(t, "quick"), "headlines": headline_lines(t, "quick"),
            "counts": headline_counts(t), "seconds": 1.0}  # fmt: skip
    monkeypatch.setattr(rep, "reproduce", lambda *a, **k: stub)
    assert main(["reproduce", "all", "--quick", "--out", str(tmp_path), "--no-progress"]) == 0
    out = capsys.readouterr().out.splitlines()
    head = out[0].split()
    assert head[:4] == ["kind", "claim", "full", "size"] and head[4] == "quick"  # full size leads
    row = next(x for x in out if " c0 " in x)
    assert row.index("does not reproduce (0.894x)") < row.index("reproduces (3.21x)")
    assert "not judged at full size" in next(x for x in out if " c3 " in x)
    assert any(x.startswith("this run alone (quick): THEMIS paper claims: 2 of 2") for x in out)
    assert main(["reproduce", "all", "--quick", "--out", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["counts"]["themis"]["at_full_size"] == {"paper": 2, "check": 1}


def test_reasons_are_cut_to_160_characters_with_the_whole_text_apart():
    long = "right direction: " + "a reason that goes on " * 20
    df = pd.DataFrame({"id": ["a", "b"], "reason": ["short", long]})
    short, notes = footnoted(df, "c0")
    assert short["reason"].iloc[0] == "short"
    cell = short["reason"].iloc[1]
    assert len(cell) <= REASON_CHARS and cell.endswith("… [^c0-1]")
    assert notes == [f"[^c0-1]: {' '.join(long.split())}"]
    assert len(short_text(long)) <= REASON_CHARS
    html = html_table(df, details=("reason",))
    assert html.count("<details>") == 1 and "goes on a reason" in html


def test_every_section_says_its_size_in_the_same_words():
    full = Experiment("pal", "synergy", "t", "sweep", {"seeds": [0, 1, 2],
                      "params": {"jobs_per_hour": [4.0, 8.0]}, "fixed": {"n_jobs": 1000}})  # fmt: skip
    quick = Experiment("pal", "synergy", "t", "sweep", {"seeds": [0],
                       "params": {"jobs_per_hour": [10.0]}, "fixed": {"n_jobs": 600}})  # fmt: skip
    line = size_line(quick, full, "quick")
    assert line.startswith("Quick size: differs from the full size in: ")
    assert "1 seed (full size: 3)" in line and "params.jobs_per_hour 10 (full size: 4, 8)" in line
    noted = Experiment("themis", "x", "t", "sweep", quick.spec, note="one seed, 8 hours")
    assert size_line(noted, full, "quick").startswith("Quick size: one seed, 8 hours (differs")
    off = Experiment("pal", "x", "t", "sweep", {}, runs=False)
    assert size_line(off, full, "quick") == "Quick size: not run (needs the full size)."
    assert size_line(full, full, "full").startswith("Full size: ")
