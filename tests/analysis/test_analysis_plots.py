"""Plot functions on synthetic frames draw on ``ax=`` and return the Axes; table detection;
`fairplace plot` (closes its figures)."""

from __future__ import annotations

import subprocess
import sys

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from matplotlib.axes import Axes

from fairplace.analysis import plots
from fairplace.analysis.auto import figures_for
from fairplace.analysis.claims import evaluate, geomean_gain, max_rho_ratio, tipping_point
from fairplace.analysis.tables import detect, fixed, geomean_improvement, normalise_to, with_units
from fairplace.cli import main
from fairplace.core.errors import DataError

RNG = np.random.default_rng(0)


def _sweep():
    rows = []
    for tr in ("workload-1", "workload-2"):
        for pl, g in (("packed-sticky", 1.0), ("pm-first", 0.7), ("pal", 0.6)):
            for L in (1.0, 3.0):
                for seed in (0, 1):
                    rows.append(
                        dict(
                            scheduler="fifo",
                            placement=pl,
                            trace=tr,
                            seed=seed,
                            status="ok",
                            locality_penalty=L,
                            load=8.0 + seed,
                            avg_jct=1e3 * g * L,
                            max_rho=2.0,
                            gpu_time=5.0,
                        )
                    )
    return pd.DataFrame(rows)


def _themis():
    rows = [
        dict(
            scheduler=s,
            placement="packed-sticky",
            trace="t",
            seed=0,
            status="ok",
            contention=c,
            max_rho=r * c,
            gpu_time=10.0 * c,
            f=f,
            lease=600.0,
        )
        for s, r in (("themis", 1.0), ("las", 2.5), ("gavel-ftf", 3.0))
        for c in (1, 2)
        for f in (0.5, 0.8)
    ]
    return pd.DataFrame(rows)


def _apps():
    return pd.DataFrame(
        {
            "scheduler": np.repeat(["themis", "las"], 20),
            "rho": RNG.uniform(0.5, 3, 40),
            "placement_score": RNG.uniform(0.5, 1, 40),
        }
    )


def _batch():
    rows = []
    for i in range(6):
        opt = -RNG.uniform(1, 5)
        for s, d in (("exact", 0.0), ("greedy-rho", 0.5), ("relaxation", -0.3)):
            rows.append(
                dict(
                    instance=f"i{i}",
                    kind="auction",
                    gpus=16 * (1 + i % 3),
                    solver=s,
                    status="optimal",
                    objective=opt - d,
                    seconds=0.01 * (i + 1),
                )
            )
    return pd.DataFrame(rows)


PLOTS = [
    (plots.jct_normalised, _sweep),
    (plots.locality_sweep, _sweep),
    (plots.jct_vs_load, _sweep),
    (plots.max_rho_vs_contention, _themis),
    (plots.gpu_time, _themis),
    (lambda d, **kw: plots.sensitivity(d, "f", **kw), _themis),
    (plots.rho_cdf, _apps),
    (plots.placement_score, _apps),
    (plots.heuristic_gap, _batch),
    (plots.solve_time_vs_size, _batch),
    (plots.integrality_gap, _batch),
    (plots.gpus_in_use, lambda: pd.DataFrame({"time": [0, 300, 600], "gpus_busy": [1, 5, 3]})),
    (
        plots.placement_time,
        lambda: pd.DataFrame(
            {
                "gpus": [64, 64, 256, 256],
                "policy": ["pal"] * 4,
                "seconds": [1e-3, 2e-3, 5e-3, 4e-3],
            }
        ),
    ),
    (
        plots.strategyproofness_curve,
        lambda: pd.DataFrame(
            {"X": [0, 20, 40], "liar_jct": [10, 10, 20], "truthful_avg_jct": [10, 9, 8]}
        ),
    ),
]


@pytest.mark.parametrize("fn,frame", PLOTS)
def test_plot_functions_return_axes(fn, frame):
    ax = fn(frame())
    assert isinstance(ax, Axes) and ax.has_data()
    plt.close(ax.figure)


@pytest.mark.parametrize("fn,frame", PLOTS)
def test_plot_functions_draw_on_the_given_axes(fn, frame):
    fig, (left, right) = plt.subplots(1, 2)
    n_figs = len(plt.get_fignums())
    assert fn(frame(), ax=right) is right
    assert right.has_data() and not left.has_data()
    assert len(plt.get_fignums()) == n_figs  # no new figure
    plt.close(fig)


def test_importing_plots_leaves_the_backend_alone():
    code = (
        "import matplotlib; matplotlib.use('svg'); "
        "import fairplace.analysis.plots; print(matplotlib.get_backend())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "svg"


def test_normalisation_and_geomean():
    n = normalise_to(_sweep(), "avg_jct", "packed-sticky", by=["trace"])
    assert np.allclose(n.set_index("placement").loc["pal", "avg_jct_norm"], 0.6)
    g, _ = geomean_gain({"summary": _sweep()}, "pal", "packed-sticky")
    assert g == pytest.approx(40.0)
    assert geomean_improvement(pd.Series([0.5, 0.0])) == pytest.approx(1 - np.sqrt(0.5))


def test_claim_measures_and_rules():
    r, _ = max_rho_ratio({"summary": _themis()}, "themis", ["las", "gavel-ftf"])
    assert r == pytest.approx(2.5)
    sp = pd.DataFrame({"X": [0, 20, 40, 60], "liar_jct": [10, 10, 18, 19]})
    assert tipping_point({"strategyproofness": sp})[0] == 40
    claim = dict(
        id="c",
        text="t",
        experiment="contention",
        measure="max_rho_ratio",
        paper_range=[2.2, 3.25],
        direction="higher",
        null_value=1.0,
        args={"scheduler": "themis", "baselines": ["las"]},
    )
    assert evaluate(claim, {"summary": _themis()})["outcome"] == "reproduces"
    far = claim | {"paper_range": [3.0, 4.0]}
    assert evaluate(far, {"summary": _themis()})["outcome"] == "direction only"
    wrong = far | {"null_value": 2.6}
    assert evaluate(wrong, {"summary": _themis()})["outcome"] == "does not reproduce"
    assert evaluate(claim, None, "not run: x")["outcome"] == "not run"


def test_detect_table_kinds():
    assert detect(_sweep()) == "sweep"
    assert detect(_batch()) == "batch"
    assert detect(_apps()) == "apps"
    with pytest.raises(DataError):
        detect(pd.DataFrame({"foo": [1]}))
    kind, made, skipped = figures_for(_sweep())
    names = {n for n, _ in made}
    assert {"jct-normalised", "locality-sweep", "jct-vs-load"} <= names
    assert "max-rho-vs-contention" in {n for n, _ in skipped}


def test_plot_command(tmp_path, capsys):
    f = tmp_path / "r.parquet"
    _batch().to_parquet(f)
    open_before = set(plt.get_fignums())
    assert main(["plot", str(f), "--out", str(tmp_path / "o")]) == 0
    assert set(plt.get_fignums()) == open_before  # the command closed every figure it made
    assert (tmp_path / "o" / "heuristic-gap.png").stat().st_size > 1000
    assert main(["plot", str(tmp_path / "missing.csv")]) == 2
    assert "missing.csv" in capsys.readouterr().err


def test_failed_reference_solves_are_not_counted_as_violations():
    b = _batch()
    b.loc[b["solver"] == "exact", ["status", "objective"]] = ["error", np.nan]
    claim = dict(
        id="c",
        text="t",
        experiment="solver_gap",
        measure="order_fraction",
        paper_range=[100.0, 100.0],
        args={"better": "exact", "worse": "greedy-rho"},
    )
    row = evaluate(claim, {"batch": b})
    assert row["outcome"] == "not run" and "no instance solved by both" in row["reason"]


@given(st.floats(min_value=1e-4, max_value=1e12) | st.floats(min_value=-1e12, max_value=-1e-4))
def test_fixed_notation_keeps_four_significant_digits(v):
    text = fixed(v)
    assert "e" not in text.lower()
    assert abs(float(text) - v) <= 5e-4 * abs(v) + 1e-12


def test_report_tables_show_units_and_no_scientific_notation():
    df = pd.DataFrame({"placement": ["pal"], "avg_jct": [12345.678], "max_rho": [1.5e-5], "n": [3]})
    shown = with_units(df)
    assert list(shown.columns) == ["placement", "avg_jct (s)", "max_rho", "n"]
    assert shown.iloc[0].tolist() == ["pal", "12346", "0.00001500", "3"]
    assert fixed(float("nan")) == "" and fixed(float("inf")) == "∞" and fixed(0.0) == "0"


def test_sweep_over_jobs_per_hour_draws_its_load_figures():
    """A Synergy-style sweep varies jobs_per_hour, not `load`: the load figures use that axis and
    the normalised JCT is drawn per load (not pooled over the loads)."""
    rows = [
        dict(
            scheduler="fifo", placement=pl, trace="synergy", seed=s, status="ok",
            jobs_per_hour=r, avg_jct=1e3 * r * g, max_rho=2.0, gpu_time=5.0 * r, cell_id="c",
        )
        for pl, g in (("packed-sticky", 1.0), ("pal", 0.9)) for r in (2.0, 8.0) for s in (0, 1)
    ]  # fmt: skip
    kind, made, skipped = figures_for(pd.DataFrame(rows))
    figs = dict(made)
    assert kind == "sweep" and {"jct-vs-load", "jct-normalised", "gpu-time"} <= set(figs)
    assert figs["jct-vs-load"].get_xlabel() == "load (jobs/hour)"
    assert figs["jct-normalised"].get_xlabel() == "jobs_per_hour"
    assert [t.get_text() for t in figs["jct-normalised"].get_xticklabels()] == ["2.0", "8.0"]
    assert figs["gpu-time"].get_xlabel() == "placement"
    plt.close("all")
    one_load = pd.DataFrame([r for r in rows if r["jobs_per_hour"] == 2.0])
    _, made, skipped = figures_for(one_load)
    assert "jct-vs-load" in dict(skipped) and "'jobs_per_hour'" in dict(skipped)["jct-vs-load"]
    plt.close("all")


def test_max_rho_ratio_compares_only_levels_where_both_ran():
    """A partial grid (a baseline run at one contention level only) is judged where all ran and
    says which levels it left out; with no common level it is a DataError (claim: not run)."""
    df = _themis()
    partial = df[~((df["scheduler"] == "gavel-ftf") & (df["contention"] != df["contention"].min()))]
    r, det = max_rho_ratio({"summary": partial}, "themis", ["gavel-ftf"])
    assert r == pytest.approx(3.0)
    assert "not all run" in det
    # a level where one of two baselines ran is not judged against the other alone
    r, det = max_rho_ratio({"summary": partial}, "themis", ["las", "gavel-ftf"])
    assert r == pytest.approx(2.5) and "contention 2: not all run" in det
    # seeds: only those where every scheduler ran are averaged
    extra = df[df["scheduler"] == "themis"].assign(seed=1, max_rho=100.0)
    r, _ = max_rho_ratio({"summary": pd.concat([df, extra])}, "themis", ["las"])
    assert r == pytest.approx(2.5)
    apart = df.assign(contention=np.where(df["scheduler"] == "themis", 99, df["contention"]))
    with pytest.raises(DataError):  # THEMIS only at a level no baseline ran
        max_rho_ratio({"summary": apart}, "themis", ["gavel-ftf"])
