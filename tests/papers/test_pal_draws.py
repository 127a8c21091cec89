"""PAL's gain over cluster draws: per-draw geomean gains, the marked (artifact's) draw, where a
paper's number sits among the draws, and the experiment wired into `fairplace reproduce pal`."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

import fairplace
from fairplace.analysis.claims import evaluate
from fairplace.analysis.draws import draw_gain_distribution, draw_gain_predictor
from fairplace.analysis.tables import draw_geomean_gains, share_at_or_above, split_marked
from fairplace.runs.reproduce import load_claims, load_experiments, make_figures, run_experiment

TRACES = ("w1", "w2")
W8 = tuple(f"workload-{k}" for k in range(1, 9))  # what a Sia-Philly claim is over


def _rows(seeds, ratio_of, extra=None, traces=TRACES):
    """Sweep rows: per trace and seed, packed-sticky 100 * (trace k + 1), a policy at ratio_of(...)."""
    rows = []
    for seed in seeds:
        for k, tr in enumerate(traces):
            base = 100.0 * (k + 1)
            for p, r in {"packed-sticky": 1.0, "pal": ratio_of(seed, k)}.items():
                rows.append({"trace": tr, "seed": seed, "placement": p, "avg_jct": base * r,
                             "status": "ok", "draw_slow_A": seed, **(extra or {})})  # fmt: skip
    return rows


def test_per_draw_gain_is_the_geomean_over_workloads_of_that_draw():
    # draw s: PAL at 0.5 and 0.8 of packed-sticky -> geomean ratio sqrt(0.4), gain 1 - 0.632 = 36.8%
    df = pd.DataFrame(_rows([0, 1], lambda s, k: (0.5, 0.8)[k] if s == 0 else 0.9))
    g = draw_geomean_gains(df).set_index(["seed", "placement", "baseline"])
    assert g.loc[(0, "pal", "packed-sticky"), "gain_%"] == pytest.approx(100 * (1 - 0.4**0.5))
    assert g.loc[(1, "pal", "packed-sticky"), "gain_%"] == pytest.approx(10.0)
    assert (g["groups"] == 2).all()
    # a draw missing a workload is left out, not averaged over fewer workloads
    part = df[~((df["seed"] == 1) & (df["trace"] == "w2"))]
    assert set(draw_geomean_gains(part)["seed"]) == {0}
    assert share_at_or_above([10.0, 36.8, np.nan, 5.0], 10.0) == (2, 3)


def test_marked_rows_are_split_off_and_not_averaged_into_the_draws():
    art = _rows([0], lambda s, k: 0.3, extra={"profile": "longhorn-artifact"})
    df = pd.DataFrame(_rows(range(5), lambda s, k: 1 - 0.1 * s) + art)
    rest, marked = split_marked(df, {"profile": "longhorn-artifact"})
    assert len(marked) == 4 and rest["profile"].isna().all()
    assert split_marked(df, {"nope": 1})[1].empty and split_marked(df, None)[1].empty
    axes = draw_gain_distribution(df, paper={"pal": 25.0}, mark={"profile": "longhorn-artifact"})
    labels = axes[0].get_legend_handles_labels()[1]
    # draws gain 0, 10, 20, 30, 40 %: two at or above 25 %; the marked draw gains 70 %
    assert "pal: paper 25%, 2/5 draws at or above" in labels
    assert "pal: the artifact's draw 70.0%, 0/5 draws at or above" in labels
    ax = draw_gain_predictor(df, "draw_slow_A", mark={"profile": "longhorn-artifact"})[0]
    assert any("Spearman +1.00" in lab for lab in ax.get_legend_handles_labels()[1])
    plt.close("all")


def test_claims_say_where_the_paper_sits_among_the_draws():
    df = pd.DataFrame(_rows(range(10), lambda s, k: 1 - 0.05 * s, traces=W8))  # 0, 5, ..., 45 %
    frames = {"summary": df}
    claim = next(c for c in load_claims("pal") if c["id"] == "pal-sia-geomean")
    row = evaluate(claim, frames, draws=frames)
    assert row["draws"].startswith("paper 43%: 1 of 10 draws at or above it (percentile 90)")
    assert evaluate(claim, frames)["draws"].startswith("not run")


def fake_simulate(trace, scheduler, placement, seed=0, profile=None, **kw):
    """Draw s has s mod 4 slow class-A GPUs; PAL gains 10 % per slow GPU (the artifact's: 60 %)."""
    slow = 6 if profile == "longhorn-artifact" else seed % 4
    ratio = {"pal": 1 - 0.1 * slow, "pm-first": 1 - 0.08 * slow}.get(placement, 1.0)
    jct = 1000.0 * ratio * (1 + int(trace[-1])) * (1.1 if placement == "packed-non-sticky" else 1)
    summary = {"avg_jct": jct, "draw_slow_A": slow, "draw_max_A": 1.0 + slow / 2}
    return SimpleNamespace(summary=summary, apps=None, rounds=None, jobs=None)


def test_the_draws_experiment_runs_marks_the_artifact_and_draws_its_figures(tmp_path):
    exp = next(e for e in load_experiments("pal", "quick") if e.key == "sia_philly_draws")
    out = run_experiment(exp, tmp_path, simulate=fake_simulate, progress=False)
    assert out.status == "ok"
    n = 8 * 4 * len(exp.spec["seeds"])  # the 8 workloads x 4 placements per draw
    assert len(out.frames["summary"]) == n and len(out.frames["all"]) == n + 32
    made, failed = make_figures(exp, out)
    assert failed == [] and len(made) == len(exp.figures) == 3
    claim = next(c for c in load_claims("pal") if c["id"] == "pal-sia-geomean")
    # 5 draws: 0, 10, 20, 30, 0 %; none reaches 43 %
    row = evaluate(claim, out.frames, draws=out.frames)
    assert row["draws"].startswith("paper 43%: 0 of 5 draws at or above it (percentile 100)")


def test_the_draws_example_is_the_full_experiment():
    from fairplace.runs.sweep import load_spec

    exp = next(e for e in load_experiments("pal", "full") if e.key == "sia_philly_draws")
    example = load_spec("examples/pal-sia-philly-100-draws.toml")
    assert load_spec(exp.spec) == example and len(example.seeds) >= 100
    assert example.fixed["setup"] == "pal-paper"


def test_the_simulator_records_what_the_draw_offers_to_avoid():
    res = fairplace.simulate("workload-1", "fifo", "packed-sticky", seed=3, progress=False)
    from fairplace.instances.variability import make_cluster

    a = make_cluster("longhorn-runs", 16, 4, seed=3).pm_vector("A")
    assert res.summary["draw_slow_A"] == int((a >= 1.5).sum())
    assert res.summary["draw_max_A"] == a.max()
