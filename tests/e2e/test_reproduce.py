"""A tiny reproduction end to end: specs -> (fake or real) runs -> claims table -> report.md/.html."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from fairplace.analysis.claims import CHECK_OUTCOMES, OUTCOMES, check_claim, evaluate
from fairplace.cli import main
from fairplace.runs.reproduce import load_claims, load_experiments, reproduce

GAIN = {"pal": 0.6, "pm-first": 0.7, "packed-sticky": 1.0, "packed-non-sticky": 1.1}
RHO = {"themis": 1.2, "las": 3.0, "gavel-ftf": 2.8}


def fake_simulate(trace, scheduler, placement, seed=0, locality_penalty=1.7, contention=1, **kw):
    """Deterministic stand-in for fairplace.simulate with the documented result shape."""
    rng = np.random.default_rng(seed)
    jct = (
        1000.0 * GAIN.get(placement, 1.0) * (1 + 0.1 * locality_penalty) * (1 + rng.random() / 100)
    )
    rho = RHO.get(scheduler, 2.0) * contention
    apps = pd.DataFrame(
        {"app": range(5), "rho": rho * np.linspace(0.5, 1, 5), "placement_score": 1.0}
    )
    rounds = pd.DataFrame({"time": [0.0, 300.0, 600.0], "gpus_busy": [4, 8, 2]})
    summary = {"avg_jct": jct, "p99_jct": 2 * jct, "makespan": 5 * jct, "max_rho": rho}
    summary |= {"gpu_time": 10.0 * contention, "utilization": 0.5, "median_rho": rho / 2}
    return SimpleNamespace(summary=summary, apps=apps, rounds=rounds, jobs=None)


def test_specs_and_claims_are_consistent():
    for paper in ("themis", "pal"):
        keys = {e.key for e in load_experiments(paper, "full")}
        for c in load_claims(paper):
            assert c["experiment"] in keys, c["id"]
            assert {"id", "kind", "text", "paper", "measure", "paper_range"} <= set(c)
            check_claim(c)  # the schema: paper_range = [lo, hi], tolerance, direction
            if paper == "themis" and c["kind"] == "paper":  # the paper's words and section
                assert c["section"].startswith("§") and len(c["paper"]) > 30, c["id"]


@pytest.mark.slow
def test_tiny_reproduce_writes_report_with_claims_and_figures(tmp_path, monkeypatch):
    from test_report import figure_of, legend_problems

    from fairplace.runs import reproduce as rep

    problems, panels = [], []

    def checked_png(ax):  # every figure the report saves keeps its legends inside the image
        panels.append(len(figure_of(ax).axes))
        data, found = legend_problems(ax, f"figure {len(panels)}")
        problems.extend(found)
        return data

    monkeypatch.setattr(rep, "png", checked_png)
    res = reproduce("all", size="tiny", out=tmp_path, simulate=fake_simulate, progress=False)
    assert problems == [] and len(panels) >= 3 and max(panels) >= 2  # two-panel figures too
    md = (tmp_path / "report.md").read_text()
    html = (tmp_path / "report.html").read_text()
    header = re.search(r"^\| id .*\|$", md, re.M).group(0)
    shown = [c.strip() for c in header.strip("|").split("|")]
    order = (
        "id", "study", "claim", "figure", "section", "paper", "paper_range", "full size",
        "tiny outcome", "tiny ours", "tiny spread", "reason",
    )  # fmt: skip
    # empty columns are dropped: the fake simulator has one seed, so no spread over seeds; the
    # size that can judge (the stored full size) leads, this run's size is named in its headers
    expected = [c for c in order if c != "tiny spread" or c in shown]
    assert shown[: len(expected)] == expected
    assert "`" not in html  # inline code is <code>, never a raw backtick
    # paper claims and package checks counted apart, per paper and in total; never one mixed count
    # the headline counts the full-size outcome where one is stored, this run's otherwise; this
    # run's own outcomes are counted apart (this_run)
    tab = res["table"]
    judged = tab["full_outcome"].where(tab["full_outcome"] != "", tab["outcome"])
    for study, part in [*tab.groupby("study"), ("total", tab)]:
        paper, check = part["kind"] == "paper", part["kind"] == "check"
        counts = res["counts"][study]
        assert counts["paper"]["n"] == paper.sum() and counts["check"]["n"] == check.sum()
        assert counts["paper"]["reproduces"] == judged[paper.index][paper].eq("reproduces").sum()
        assert counts["check"]["passes"] == judged[check.index][check].eq("passes").sum()
        own = counts["this_run"]
        assert own["paper"]["reproduces"] == part.loc[paper, "outcome"].eq("reproduces").sum()
        full = part["full_outcome"] != ""
        assert counts["at_full_size"]["paper"] == (full & paper).sum()
    assert res["counts"]["pal"]["at_full_size"] == {"paper": 0, "check": 0}
    assert res["counts"]["themis"]["at_full_size"]["paper"] > 0
    n, m = res["counts"]["themis"]["paper"]["reproduces"], res["counts"]["themis"]["paper"]["n"]
    assert res["headline"].startswith(f"THEMIS: paper claims: {n} of {m} reproduce, ")
    k = res["counts"]["themis"]["at_full_size"]["paper"]
    assert f"(judged at full size: {k} of {m} paper claims" in res["headline"]
    assert "PAL: paper claims: " in res["headline"] and "(none judged at full size: all at tiny)" \
        in res["headline"]  # fmt: skip
    assert (
        ". PAL: paper claims: " in res["headline"] and ". Total: paper claims: " in res["headline"]
    )
    assert "claims reproduce" not in res["headline"]
    assert res["headline"] in md and "### Paper claims" in md and "### Package checks" in md
    assert len(re.findall(r"data:image/png;base64,[A-Za-z0-9+/]{100}", html)) >= 3
    for link in re.findall(r"\]\((figures/[^)]+\.png)\)", md):
        assert (tmp_path / link).stat().st_size > 1000
    t = res["table"].set_index("id")
    # the fake simulator makes PAL 40% better than Packed-Sticky and THEMIS 2.5x fairer than LAS;
    # a Sia-Philly claim is over the 8 workloads: the tiny size's two cannot judge it
    assert t.loc["pal-sia-geomean", "outcome"] == "not run"
    assert t.loc["pal-sia-geomean", "reason"].startswith("not run at this size: trace: 6 of the 8")
    assert t.loc["themis-max-rho-better", "outcome"] == "not run" or t.loc[
        "themis-max-rho-better", "reason"
    ].startswith("not run")  # gavel-ftf is not in the tiny grid: reported, not hidden
    # experiments outside the tiny size are reported as not run, with a reason
    assert t.loc["synergy-fifo-min", "outcome"] == "not run"
    assert t.loc["synergy-fifo-min", "reason"] == "needs the full size"
    # the real solvers ran: exact is never below greedy-rho, the relaxation never below exact
    assert t.loc["exact-ge-greedy-rho", "outcome"] in ("passes", "not run")
    assert set(t.loc[t["kind"] == "paper", "outcome"]) <= set(OUTCOMES)
    assert set(t.loc[t["kind"] == "check", "outcome"]) <= set(CHECK_OUTCOMES)
    # THEMIS claims sit next to the stored full-size outcome (papers/themis/full-size.csv); where
    # the outcomes differ the reason says why in one line (the tiny size's note)
    assert "The full size column leads: each claim judged on the stored full-size results" in md
    assert "THEMIS: papers/themis/full-size.csv (" in md
    assert "PAL: none stored (no papers/pal/full-size.csv)" in md
    full, _ = rep._full_size("themis")
    for c in rep.load_claims("themis"):
        if c["experiment"] in full:
            ref = evaluate(c, full[c["experiment"]])["outcome"]
            if ref.startswith("not run"):  # rows the stored runs predate (f, lease: rounding)
                assert t.loc[c["id"], "full_size"] == "not judged at full size", c["id"]
                continue
            assert t.loc[c["id"], "full_size"].startswith(ref), c["id"]
            differs = t.loc[c["id"], "outcome"] not in (ref, "not run")
            assert ("this size differs:" in t.loc[c["id"], "reason"]) == differs, c["id"]
    pal = t.loc[[i for i in t.index if i.startswith("pal-")], "full_size"]
    assert pal.eq("not judged at full size").all()
    # every section says its size in the same words, PAL's too
    for sec in re.split(r"^## ", md, flags=re.M)[2:]:
        assert re.search(r"^Tiny size: ", sec, re.M), sec[:80]


def test_failing_simulator_is_reported_not_faked(tmp_path):
    def broken(**kw):
        raise RuntimeError("simulator exploded")

    res = reproduce("pal", size="tiny", out=tmp_path, simulate=broken, progress=False)
    t = res["table"].set_index("id")
    assert t.loc["pal-sia-geomean", "outcome"] == "not run"
    assert "simulator exploded" in t.loc["pal-sia-geomean", "reason"]
    assert "not run: the experiment failed: all" in (tmp_path / "report.md").read_text()


def test_unknown_paper_exits_2(capsys):
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "nope"])
    assert e.value.code == 2


@pytest.mark.slow
def test_cli_tiny_pal_with_the_real_simulator(tmp_path, capsys):
    """`fairplace reproduce pal --tiny` end to end on the real simulator and policies."""
    assert main(["reproduce", "pal", "--tiny", "--out", str(tmp_path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "pal-sia-geomean" in out and "report:" in out
    # the headline: paper claims and package checks counted apart
    assert re.search(
        r"^PAL: paper claims: \d+ of \d+ reproduce, \d+ in direction, \d+ do not(, \d+ not run)?; "
        r"package checks: \d+ of 1 pass", out, re.M
    )  # fmt: skip
    assert "package check" in out and "claims reproduce" not in out
    claims = pd.read_csv(tmp_path / "claims.csv").set_index("id")
    # the Sia-Philly experiment ran, on fewer workloads than its claims are over: not judged
    assert claims.loc["pal-sia-geomean", "outcome"] == "not run"
    assert claims.loc["pal-sia-geomean", "reason"].startswith("not run at this size")
    assert claims.loc["exact-placement-le-pal", "outcome"] == "passes"
    html = (tmp_path / "report.html").read_text()
    assert "data:image/png;base64," in html and "<table" in html and "`" not in html
    assert any((tmp_path / "figures").glob("*.png"))
    assert (tmp_path / "data" / "pal-sia_philly.parquet").exists()


def test_resume_keeps_journaled_cells(tmp_path):
    """``reproduce(..., resume=True)`` runs no cell its sweeps already journaled (a killed run, or
    journals appended from another machine), and writes the same claims."""
    calls = []

    def counting(*args, **kw):
        calls.append(1)
        return fake_simulate(*args, **kw)

    first = reproduce("themis", size="tiny", out=tmp_path, simulate=counting, progress=False)
    n = len(calls)
    again = reproduce(
        "themis", size="tiny", out=tmp_path, simulate=counting, progress=False, resume=True
    )
    assert n > 0 and len(calls) == n  # nothing simulated again
    pd.testing.assert_frame_equal(first["table"], again["table"])
