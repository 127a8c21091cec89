"""``SimulationResult`` in notebooks: ``plot(ax=...)`` returns its Axes, ``to_frame()`` is the row a
sweep cell writes, ``_repr_html_`` shows the headline numbers; the package face exports them."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

import fairplace  # noqa: E402
from fairplace.runs.sweep import run_cell  # noqa: E402

CELL = {"scheduler": "fifo", "placement": "pal", "trace": "synergy", "seed": 3}
FIXED = {"n_jobs": 25, "jobs_per_hour": 8.0, "gpus": 16}


@pytest.fixture(scope="module")
def res():
    return fairplace.simulate(
        "synergy", "fifo", "pal", seed=3, gpus=16, trace_options={"n_jobs": 25, "jobs_per_hour": 8.0},
        progress=False,
    )  # fmt: skip


def test_package_face_exports_the_simulator():
    for name in ("simulate", "SimulationResult", "SimulationConfig", "solve", "Solution"):
        assert name in fairplace.__all__ and name in dir(fairplace)
    assert fairplace.simulate is fairplace.sim.simulate
    assert fairplace.SimulationResult is fairplace.sim.SimulationResult
    with pytest.raises(AttributeError, match="no_such_name"):
        fairplace.no_such_name  # noqa: B018


def test_plot_draws_on_given_axes_and_returns_them(res):
    fig, axes = plt.subplots(2, 3)
    got = res.plot(ax=axes[1])
    assert list(got) == list(axes[1])
    assert all(a.has_data() for a in axes[1]) and not any(a.has_data() for a in axes[0])
    assert got[0].get_xlabel() == "JCT (h)" and got[2].get_xlabel().startswith("rho_")
    plt.close(fig)
    new = res.plot()  # a new 1 x 3 figure
    assert len(new) == 3 and len(new[0].figure.axes) == 3
    assert res.plot(axes=new)[0] is new[0]  # the former keyword still works
    plt.close(new[0].figure)
    fig, one = plt.subplots()
    with pytest.raises(fairplace.OptionError, match="expected 3 Axes"):
        res.plot(ax=one)
    plt.close(fig)


def test_to_frame_is_the_sweep_row(res):
    row = res.to_frame()
    assert len(row) == 1
    assert row.loc[0, "placement"] == "pal" and row.loc[0, "seed"] == 3
    assert row.loc[0, "avg_jct"] == pytest.approx(res.summary["avg_jct"], rel=1e-12)
    sweep_row, _ = run_cell(CELL, FIXED)
    for key in ("avg_jct", "p99_jct", "makespan", "max_rho", "jobs", "gpus"):
        assert row.loc[0, key] == pytest.approx(sweep_row[key], rel=1e-9)
    both = pd.concat([row, row], ignore_index=True)
    assert both["avg_jct"].nunique() == 1


def test_html_summary(res):
    html = res._repr_html_()
    assert "<table" in html and "average JCT" in html and "synergy" in html
    assert f"{res.summary['avg_jct']:.4g}" in html or f"{res.summary['avg_jct']:.0f}" in html
