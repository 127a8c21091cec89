"""The report: built from its Jinja2 templates (prose as Markdown, tables through pandas' Styler),
and every figure it saves keeps its legends inside the image (tight bounding box; every figure of
a reproduction: ``tests/e2e/test_reproduce.py``, which checks them with :func:`legend_problems`)."""

from __future__ import annotations

import io
import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from fairplace.analysis import plots, report  # noqa: E402
from fairplace.analysis.auto import figures_for  # noqa: E402

#: pure colours no seaborn palette uses: one per legend of a figure
MARKS = ((1.0, 0.0, 1.0), (0.0, 1.0, 1.0), (1.0, 1.0, 0.0))
DPI = 110


def figure_of(obj):
    while not isinstance(obj, matplotlib.figure.Figure):
        obj = np.ravel(obj)[0] if isinstance(obj, (list, tuple, np.ndarray)) else obj.figure
    return obj


def legend_problems(obj, name: str) -> tuple[bytes, list[str]]:
    """Save ``obj``'s figure with ``report.png`` after painting each legend's frame a pure colour;
    a legend is inside the image when all of its painted box is there, away from the image's
    edges. Returns the PNG and the problems found."""
    fig = figure_of(obj)
    legends = [a.get_legend() for a in fig.axes if a.get_legend() is not None] + list(fig.legends)
    assert len(legends) <= len(MARKS), name
    fig.set_dpi(DPI)  # measured at the dpi the image is saved with
    fig.canvas.draw()
    expected = []
    for leg, colour in zip(legends, MARKS, strict=False):
        leg.set_frame_on(True)
        frame = leg.get_frame()
        frame.set_facecolor(colour)
        frame.set_edgecolor(colour)
        frame.set_alpha(1.0)
        box = leg.get_window_extent()
        expected.append((box.width, box.height))
    data = report.png(fig, dpi=DPI)
    img = mpimg.imread(io.BytesIO(data))[..., :3]
    problems = []
    for (w, h), colour in zip(expected, MARKS, strict=False):
        mask = np.all(np.abs(img - np.asarray(colour)) < 0.02, axis=-1)
        if not mask.any():
            problems.append(f"{name}: legend not in the image")
            continue
        rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
        seen_w, seen_h = cols[-1] - cols[0] + 1, rows[-1] - rows[0] + 1
        if seen_w < w - 4 or seen_h < h - 4:
            problems.append(f"{name}: legend cut ({seen_w}x{seen_h} of {w:.0f}x{h:.0f} px)")
        if rows[0] == 0 or cols[0] == 0 or rows[-1] == mask.shape[0] - 1:
            problems.append(f"{name}: legend touches the image's edge")
        elif cols[-1] == mask.shape[1] - 1:
            problems.append(f"{name}: legend touches the image's right edge")
    return data, problems


def test_the_check_finds_a_cut_legend(monkeypatch):
    """Saved without a tight bounding box, a legend beside the axes is cut: the check says so."""
    ax = plots.jct_normalised(_pal_summary(), by="trace")
    fig = ax.figure
    fig.set_layout_engine("none")
    monkeypatch.setattr(
        fig, "savefig", lambda buf, **kw: type(fig).savefig(fig, buf, format="png", dpi=DPI)
    )
    _, problems = legend_problems(ax, "untight")
    assert problems and ("cut" in problems[0] or "edge" in problems[0])


def _pal_summary():
    rows = [
        dict(scheduler="fifo", placement=pl, trace=tr, seed=s, status="ok", avg_jct=1e3 * g + s,
             max_rho=2.0, gpu_time=5.0, jobs_per_hour=r, locality_penalty=L, cell_id="c")
        for tr in ("workload-1", "workload-2")
        for pl, g in (("packed-sticky", 1.0), ("packed-non-sticky", 1.05), ("pm-first", 0.7), ("pal", 0.6))
        for r in (4.0, 8.0) for L in (1.0, 3.0) for s in (0,)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_every_plot_command_figure_keeps_its_legends():
    tables = {
        "sweep": _pal_summary(),
        "apps": pd.DataFrame({"app_id": range(8), "rho_themis": np.linspace(0.5, 2, 8),
                              "scheduler": ["themis", "las"] * 4, "placement_score": 0.9}),
    }  # fmt: skip
    problems, n = [], 0
    open_before = set(plt.get_fignums())
    for kind, df in tables.items():
        _, made, _ = figures_for(df, kind)
        for name, ax in made:
            problems += legend_problems(ax, f"{kind}/{name}")[1]
            n += 1
    assert n >= 5 and problems == []
    assert set(plt.get_fignums()) == open_before  # png() closed every figure it saved


def test_report_is_rendered_from_templates(tmp_path):
    claims = pd.DataFrame(
        {"id": ["a", "b"], "claim": ["x `code` <b>bold</b>", "y"], "ours": [1.5, None],
         "outcome": ["reproduces", "not run: no data"], "reason": ["fine", "an unpaired ` tick"]}
    )  # fmt: skip
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="line")
    ax.legend()
    sec = report.Section(
        title="PAL — *one* `experiment`",
        status="ok (1/2 cells failed: `boom`)",
        lines=["Experiment `pal/x`, 1.0 s.", "a list:\n\n* first\n* second"],
        figures=[("fig <1>", report.png(fig))],
        tables=[("Mean over seeds", pd.DataFrame({"placement": ["pal"], "avg_jct": [12345.678]}))],
    )
    paths = report.write_report(tmp_path, "T & title", claims, [sec], ["Command: `x`."])
    html = paths["html"].read_text()
    md = paths["md"].read_text()
    assert "`" not in html and "&#96;" in html  # code spans are <code>; a lone backtick escaped
    assert "<code>code</code>" in html and "&lt;b&gt;bold&lt;/b&gt;" in html  # no raw HTML
    assert "<title>T &amp; title</title>" in html
    assert "<em>one</em>" in html and "<li>first</li>" in html  # prose is Markdown
    assert re.search(r'<td [^>]*class="[^"]*\byes\b[^"]*"', html)  # outcome classes on cells
    assert re.search(r'<td [^>]*class="[^"]*\bnr\b[^"]*"', html)
    assert "avg_jct (s)" in html and "12346" in html  # units and fixed notation
    assert 'alt="fig &lt;1&gt;"' in html and "data:image/png;base64," in html
    assert len(set(re.findall(r'<table id="(T_[^"]+)"', html))) == 2  # unique table ids
    assert (
        md.startswith("# T & title\n")
        and "| id " in md
        and "![fig <1>](figures/01-fig--1.png)" in md
    )
    assert (tmp_path / "figures" / "01-fig--1.png").stat().st_size > 1000
    assert "Status: ok (1/2 cells failed: `boom`)" in md
