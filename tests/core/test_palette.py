"""Figures a reader can read: one colour per scheduler / placement in every figure (the
palette keyed by name), the rho CDF on a log axis, the GPU-busy panel to the makespan, units."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402

from fairplace.analysis import plots  # noqa: E402
from fairplace.core.errors import DataError  # noqa: E402
from fairplace.core.palette import PALETTE, colour  # noqa: E402
from fairplace.sim.result import SimulationResult  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def legend_colours(ax) -> dict[str, str]:
    """{legend label: colour} of an Axes' legend (lines, markers or patches)."""
    leg = ax.get_legend()
    out = {}
    for text, h in zip(leg.texts, leg.legend_handles, strict=True):
        c = h.get_facecolor() if hasattr(h, "get_facecolor") and not hasattr(h, "get_xdata") else (
            h.get_color()
        )  # fmt: skip
        out[text.get_text()] = to_hex(np.ravel(c)[:4] if not isinstance(c, str) else c)
    return out


def _apps(schedulers) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = [{"scheduler": s, "rho": float(r)} for s in schedulers for r in rng.uniform(0.5, 90, 20)]
    return pd.DataFrame(rows)


def _summary(placements, schedulers=("fifo",)) -> pd.DataFrame:
    rows = [
        {"placement": p, "scheduler": s, "trace": t, "jobs_per_hour": x, "seed": 0,
         "avg_jct": 3600.0 * (1 + k) * x, "max_rho": 1.0 + k, "contention": c}
        for k, p in enumerate(placements) for s in schedulers for t in ("w1", "w2")
        for x in (4.0, 8.0) for c in (1, 2)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_one_scheduler_has_one_colour_in_two_figures():
    # two figures that meet the schedulers in other orders and other company
    a = plots.rho_cdf(_apps(["themis", "las", "gandiva"]))
    summ = _summary(["packed-sticky"], schedulers=("gandiva", "slaq", "themis"))
    b = plots.max_rho_vs_contention(summ)
    ca, cb = legend_colours(a), legend_colours(b)
    assert ca["themis"] == cb["themis"] == PALETTE["themis"]
    assert ca["gandiva"] == cb["gandiva"] == PALETTE["gandiva"]
    assert len(set(ca.values())) == 3  # distinct names, distinct colours


def test_one_placement_has_one_colour_in_two_figures():
    a = plots.jct_normalised(_summary(["packed-sticky", "pal", "pm-first"]))
    b = plots.jct_vs_load(_summary(["pal", "packed-non-sticky"]))
    ca, cb = legend_colours(a), legend_colours(b)
    assert ca["pal"] == cb["pal"] == PALETTE["pal"]
    assert colour("a-new-policy") == colour("a-new-policy")  # unknown names: stable, by hash


def test_rho_cdf_is_on_a_log_axis_and_leaves_out_what_it_cannot_place():
    apps = pd.concat([_apps(["themis", "gandiva"]), pd.DataFrame({"scheduler": ["las"],
                                                                 "rho": [np.inf]})])  # fmt: skip
    ax = plots.rho_cdf(apps)
    assert ax.get_xscale() == "log" and "log" in ax.get_xlabel()
    assert "1 apps without a finite ρ left out" in ax.get_title()


def test_axis_labels_carry_units():
    ax = plots.jct_vs_load(_summary(["pal", "packed-sticky"]))
    assert ax.get_ylabel() == "average JCT (h)"
    # the plotted values are hours (3600 s x load 4 -> 4 h for the first placement)
    ys = np.concatenate([ln.get_ydata() for ln in ax.get_lines() if len(ln.get_ydata())])
    assert ys.min() == pytest.approx(4.0)
    assert plots.label("gpu_time") == "GPU time (GPU-h)"
    one = _summary(["pal"]).query("jobs_per_hour == 4.0")  # one load: no curve over load
    with pytest.raises(DataError, match="one jobs_per_hour value"):
        plots.jct_vs_load(one)


def test_gpu_busy_panel_reaches_the_makespan():
    # decisions stop at 10 h, the last job finishes at 30 h (jobs submitted from 1 h)
    jobs = pd.DataFrame({"jct": [3600.0, 7200.0], "submit": [3600.0, 3600.0],
                         "finish": [7200.0, 30 * 3600.0]})  # fmt: skip
    rounds = pd.DataFrame({"t": [3600.0, 5 * 3600.0, 10 * 3600.0], "busy": [4, 8, 2]})
    apps = pd.DataFrame({"rho_themis": [0.8, 1.5, 40.0]})
    summary = {"makespan": 29 * 3600.0, "rho_variant": "themis"}
    res = SimulationResult(jobs, apps, rounds, summary, {"scheduler": "themis"})
    ax = res.plot()
    assert ax[1].get_xlim()[1] == pytest.approx(30.0)
    x = ax[1].get_lines()[0].get_xdata()
    assert x[-1] == pytest.approx(30.0)  # the step is drawn to the end, not to the last decision
    assert ax[2].get_xscale() == "log"
    assert to_hex(ax[1].get_lines()[0].get_color()) == PALETTE["themis"]
