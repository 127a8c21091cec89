"""Claims as the paper states them, counted apart from the package's own checks: the ``kind`` of a
claim (schema errors), the headline's split counts, Fig. 14's two-sided measure and the
strategy-proofness rule (a mean gain above 0 by more than its standard error does not reproduce)."""

from __future__ import annotations

import pandas as pd
import pytest

from fairplace.analysis.claims import (
    check_claims,
    evaluate,
    liar_gain_bound,
    sharing_incentive_only,
)
from fairplace.analysis.report import claim_counts, claims_tables, headline, headline_counts
from fairplace.core.errors import DataError
from fairplace.runs.reproduce import load_claims

BASE = {
    "id": "c", "text": "t", "experiment": "e", "measure": "max_of", "paper_range": [0.0, 0.0],
    "kind": "paper", "paper": "the paper's words", "section": "§6.2",
}  # fmt: skip


# ------------------------------------------------------------------ schema


@pytest.mark.parametrize(
    "claim, field, words",
    [
        ({k: v for k, v in BASE.items() if k != "kind"}, "c.kind", "missing"),
        (BASE | {"kind": "ours"}, "c.kind", "expected one of"),
        (BASE | {"paper": ""}, "c.paper", "paper's own words"),
        ({k: v for k, v in BASE.items() if k != "section"}, "c.section", "where the paper"),
        (BASE | {"kinds": "paper"}, "c.kinds", "unknown claim key"),
    ],
)
def test_claims_file_schema_errors_name_the_claim_and_field(claim, field, words):
    with pytest.raises(DataError) as e:
        check_claims([claim], "papers/x/claims.toml")
    assert e.value.path == field and words in e.value.problem


def test_claims_file_schema_accepts_kinds_and_rejects_duplicate_ids():
    check = {k: v for k, v in BASE.items() if k not in ("paper", "section")} | {"kind": "check"}
    assert check_claims([BASE, check | {"id": "d"}]) == [BASE, check | {"id": "d"}]
    assert check_claims([BASE | {"section": "", "figure": "Fig. 9"}])  # a figure says where too
    with pytest.raises(DataError, match="duplicate"):
        check_claims([BASE, BASE])


def test_every_shipped_claim_has_a_kind_and_themis_counts_its_paper_claims():
    themis = load_claims("themis")  # validated on load
    kinds = pd.Series([c["kind"] for c in themis])
    # 9 of §6.2-§6.4, the testbed headline, Fig. 17 and three of §6.2.3; 7 checks of ours
    assert kinds.eq("paper").sum() == 14 and kinds.eq("check").sum() == 7
    for c in themis:
        if c["kind"] == "paper":
            assert c["section"].startswith("§") and c["figure"].startswith(("Fig", "§")), c["id"]
        else:  # the package's own checks say so
            assert c["text"].startswith("Ours:"), c["id"]
    ids = {c["id"]: c for c in themis}
    assert ids["themis-sharing-incentive-under-contention"]["kind"] == "paper"
    assert "only scheme that maintains sharing incentive" in ids[
        "themis-sharing-incentive-under-contention"]["paper"]  # fmt: skip
    assert ids["themis-max-rho-under-contention"]["kind"] == "check"  # lowest max rho: ours
    assert "tolerance" not in ids["sp-lying-does-not-help"]
    pal = {c["id"]: c["kind"] for c in load_claims("pal")}
    assert pal["exact-placement-le-pal"] == "check" and pal["pal-sia-geomean"] == "paper"


def test_a_check_passes_or_fails_never_reproduces():
    claim = BASE | {"kind": "check", "args": {"metric": "idle"}, "caveat": "bug"}
    ok = evaluate(claim, {"summary": pd.DataFrame({"idle": [0.0, 0.0]})})
    bad = evaluate(claim, {"summary": pd.DataFrame({"idle": [0.0, 2.0]})})
    assert (ok["kind"], ok["outcome"]) == ("check", "passes")
    assert bad["outcome"] == "fails" and bad["reason"].startswith("outside its range: bug")
    assert evaluate(BASE | {"args": {"metric": "idle"}},
                    {"summary": pd.DataFrame({"idle": [0.0]})})["outcome"] == "reproduces"  # fmt: skip


# ------------------------------------------------------------------ the headline's split counts


def _judged() -> pd.DataFrame:
    rows = [("themis", "paper", o) for o in
            ["reproduces", "direction only", "does not reproduce", "does not reproduce",
             "not run: not part of this size"]]  # fmt: skip
    rows += [("themis", "check", o) for o in ["passes", "passes", "fails"]]
    rows += [("pal", "paper", o) for o in ["reproduces", "reproduces", "direction only"]]
    rows += [("pal", "check", "passes")]
    return pd.DataFrame(
        [{"id": f"c{i}", "study": s, "kind": k, "outcome": o} for i, (s, k, o) in enumerate(rows)]
    )


def test_headline_counts_paper_claims_and_package_checks_apart():
    t = _judged()
    assert headline(t) == (
        "THEMIS: paper claims: 1 of 5 reproduce, 1 in direction, 2 do not, 1 not run; "
        "package checks: 2 of 3 pass, 1 fail. "
        "PAL: paper claims: 2 of 3 reproduce, 1 in direction, 0 do not; package checks: 1 of 1 pass. "
        "Total: paper claims: 3 of 8 reproduce, 2 in direction, 2 do not, 1 not run; "
        "package checks: 3 of 4 pass, 1 fail"
    )
    c = headline_counts(t)
    assert list(c) == ["themis", "pal", "total"]
    assert c["total"]["paper"] == {"n": 8, "reproduces": 3, "direction only": 2,
                                   "does not reproduce": 2, "not run": 1}  # fmt: skip
    assert c["total"]["check"] == {"n": 4, "passes": 3, "fails": 1, "not run": 0}
    one = t[t["study"] == "pal"]
    assert headline(one) == (
        "PAL: paper claims: 2 of 3 reproduce, 1 in direction, 0 do not; package checks: 1 of 1 pass"
    )  # one paper: no separate total
    assert headline(one.drop(columns="study").iloc[:3]).endswith("package checks: none")


def test_counts_refuse_a_table_that_mixes_kinds_or_outcomes():
    t = _judged()
    with pytest.raises(DataError, match="kind"):
        claim_counts(t.drop(columns="kind"))
    with pytest.raises(DataError, match="outcome"):
        claim_counts(t.assign(outcome=t["outcome"].where(t["kind"] == "paper", "reproduces")))
    names = [n for n, _ in claims_tables(t)]
    assert names == ["Paper claims (the paper's own words)", "Package checks (ours)"]
    assert all("kind" not in v for _, v in claims_tables(t))


# ------------------------------------------------------------------ Fig. 14 as the paper says it

FIG14 = {"scheduler": "themis", "baselines": ["las", "srtf"], "where": {"contention": [2.0, 4.0]}}


def _rho(rows) -> dict:
    recs = []
    for trace, contention, rhos in rows:
        for seed in (0, 1):
            recs += [{"trace": trace, "contention": contention, "scheduler": s, "max_rho": r,
                      "seed": seed, "status": "ok"} for s, r in rhos.items()]  # fmt: skip
    recs.append({"trace": "w1", "contention": 1.0, "scheduler": "themis", "max_rho": 9.0,
                 "seed": 0, "status": "ok"})  # x1 is not judged  # fmt: skip
    return {"summary": pd.DataFrame(recs)}


def test_fig14_measure_checks_both_sides_per_trace():
    holds = _rho([("w1", 2.0, {"themis": 0.9, "las": 1.5, "srtf": 1.1}),
                  ("w1", 4.0, {"themis": 1.0, "las": 3.0, "srtf": 1.2})])  # fmt: skip
    value, det = sharing_incentive_only(holds, **FIG14)
    assert value == 100.0 and det.count("holds") == 2
    # THEMIS lowest but above 1 at x4 (its side fails): the lowest max rho is not enough
    themis_over = _rho([("w1", 2.0, {"themis": 0.9, "las": 1.5, "srtf": 1.1}),
                        ("w1", 4.0, {"themis": 1.1, "las": 3.0, "srtf": 1.2})])  # fmt: skip
    assert sharing_incentive_only(themis_over, **FIG14)[0] == 50.0
    # a baseline keeps sharing incentive too (the other side fails)
    baseline_ok = _rho([("w1", 2.0, {"themis": 0.9, "las": 1.5, "srtf": 1.0})])
    value, det = sharing_incentive_only(baseline_ok, **FIG14)
    assert value == 0.0 and "not all > 1" in det and "contention 4.0 not run" in det
    claim = BASE | {"measure": "sharing_incentive_only", "args": FIG14, "paper_range": [100, 100],
                    "experiment": "contention"}  # fmt: skip
    assert evaluate(claim, holds)["outcome"] == "reproduces"
    assert evaluate(claim, themis_over)["outcome"] == "does not reproduce"


# ------------------------------------------------------------------ strategy-proofness rule


def _sp(gains_by_seed: list[float]) -> dict:
    """The liar's completion 1000 s truthful and 1000 * (1 - gain) at X = 10, per seed."""
    rows = []
    for seed, g in enumerate(gains_by_seed):
        rows += [{"seed": seed, "X": 0.0, "liar_completion": 1000.0},
                 {"seed": seed, "X": 10.0, "liar_completion": 1000.0 * (1 - g / 100)}]  # fmt: skip
    return {"strategyproofness": pd.DataFrame(rows)}


SP = BASE | {"measure": "liar_gain_bound", "paper_range": [float("-inf"), 0.0],
             "experiment": "strategyproofness", "args": {}}  # fmt: skip


def test_lying_that_helps_beyond_its_spread_does_not_reproduce():
    value, det = liar_gain_bound(_sp([1.6, 1.7, 1.8, 1.7, 1.7]))  # mean 1.7%, sd 0.07
    assert value == pytest.approx(1.7 - 0.0707 / 5**0.5, abs=1e-3) and "X=10: +1.70%" in det
    assert evaluate(SP, _sp([1.6, 1.7, 1.8, 1.7, 1.7]))["outcome"] == "does not reproduce"


def test_a_gain_within_its_standard_error_reproduces():
    gains = [-1.1, 0.9, -1.0, 0.6, 0.1]  # mean -0.1%, sd ~0.9
    value, _ = liar_gain_bound(_sp(gains))
    assert value < 0
    assert evaluate(SP, _sp(gains))["outcome"] == "reproduces"
    small_positive = [1.5, -1.3, 0.9, -0.6, 0.0]  # mean +0.1% < its se (~0.5): not beyond spread
    assert evaluate(SP, _sp(small_positive))["outcome"] == "reproduces"
    # one seed: no spread, the mean alone decides
    assert liar_gain_bound(_sp([0.5]))[0] == pytest.approx(0.5)


# ------------------------------------------------------------------ the command's table and JSON


def test_reproduce_command_prints_the_split_counts(monkeypatch, capsys, tmp_path):
    import json

    from fairplace.cli import main
    from fairplace.runs import reproduce as rep

    t = _judged().assign(ours="", spread="", paper_range="")
    stub = {"md": tmp_path / "r.md", "html": tmp_path / "r.html", "claims": tmp_path / "c.csv",
            "table": t, "headline": headline(t), "headlines": headline(t).split(". "),
            "counts": headline_counts(t), "seconds": 1.0}  # fmt: skip
    monkeypatch.setattr(rep, "reproduce", lambda *a, **k: stub)
    assert main(["reproduce", "all", "--tiny", "--out", str(tmp_path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "THEMIS package check" in out and "PAL paper claim" in out  # the table's kind column
    lines = out.splitlines()
    assert "THEMIS: paper claims: 1 of 5 reproduce, 1 in direction, 2 do not, 1 not run; " \
        "package checks: 2 of 3 pass, 1 fail" in lines  # fmt: skip
    assert any(x.startswith("Total: paper claims: 3 of 8 reproduce") for x in lines)
    assert main(["reproduce", "all", "--tiny", "--out", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["headline"] == stub["headline"]  # the existing keys stay
    assert {"report", "seconds", "claims"} <= set(doc)
    assert doc["counts"]["total"]["check"] == {"n": 4, "passes": 3, "fails": 1, "not run": 0}
    assert doc["counts"]["pal"]["paper"]["reproduces"] == 2
