"""papers/themis/experiments/themis_results.py (the tables and figures of docs/themis-results.md) runs on a real THEMIS
reproduction's journals: the tiny size, real simulator."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from fairplace.runs.reproduce import reproduce

DOC = (
    Path(__file__).resolve().parents[2] / "papers" / "themis" / "experiments" / "themis_results.py"
)


@pytest.mark.slow
def test_themis_results_reads_the_reproduction_journals(tmp_path, capsys):
    reproduce("themis", size="tiny", out=tmp_path, progress=False)
    spec = importlib.util.spec_from_file_location("themis_results", DOC)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.main(str(tmp_path), str(tmp_path / "img"))
    md = capsys.readouterr().out
    runs = len(mod.journal(tmp_path, "contention")[0])
    assert runs > 0 and f"## Contention ({runs} runs)" in md
    assert "### Best paper baseline / THEMIS per seed" in md  # THEMIS and LAS at every seed
    assert "### Who sets max rho" in md and "## Claims judged on these runs" in md
    assert "themis-max-rho-under-contention" in md
    assert "## Cell wall time" in md and f"| contention   |    {runs:>3} |" in md
    assert sorted(p.name for p in (tmp_path / "img").iterdir()) == [
        "themis-bidders-per-round.png",
        "themis-max-rho-vs-contention.png",
        "themis-rho-cdf-w2-x1.png",
    ]


def _load():
    spec = importlib.util.spec_from_file_location("themis_results", DOC)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_grid_reports_the_spread_over_seeds():
    import pandas as pd

    df = pd.DataFrame({
        "scheduler": ["themis"] * 4, "seed": [0, 1, 0, 1], "network_fraction": [0.0, 0.0, 1.0, 1.0],
        "max_rho": [2.0, 4.0, 3.0, 3.0], "gpu_time": [3600.0, 7200.0, 3600.0, 3600.0],
        "mean_bidders": [2.0, 3.0, 4.0, 4.0],
    })  # fmt: skip
    md = _load().grid(df, ["network_fraction", "scheduler"])
    lines = [line for line in md.splitlines() if "themis" in line]
    assert [c.strip() for c in lines[0].split("|")[1:-1]] == [
        "0", "themis", "3", "1.414", "2.00..4.00", "1.5", "2", "2.5"
    ]  # fmt: skip
    assert [c.strip() for c in lines[1].split("|")[1:-1]][2:5] == ["3", "0", "3.00..3.00"]


def test_rack_control_puts_both_set_ups_side_by_side():
    import pandas as pd

    def runs(themis, srtf, las):
        return pd.DataFrame({
            "scheduler": ["themis", "srtf", "las"], "seed": [0] * 3, "network_fraction": [1.0] * 3,
            "max_rho": [themis, srtf, las],
        })  # fmt: skip

    one = pd.concat([runs(2.0, 2.5, 9.0), runs(3.0, 3.3, 4.0).assign(network_fraction=0.0)])
    md = _load().rack_control(runs(2.0, 5.0, 4.0), one)
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in md.splitlines()[2:]]
    # only the rows the control has (fraction 1, seed 0); best baseline per set-up and the ratio
    assert rows == [["1", "0", "2", "srtf 2.5", "1.25", "2", "las 4.0", "2"]]


def test_stored_figures_draw_fig19_and_the_testbed_from_the_stored_rows(tmp_path):
    """--stored --figdir draws Fig. 19 (f, lease) and Figs. 9-10 over load from the stored rows;
    an experiment with no stored rows, or one value of its parameter, draws nothing."""
    import pandas as pd

    _load()  # puts the script's folder on sys.path
    from themis_figures import stored_figures

    sens = pd.DataFrame({
        "scheduler": "themis", "seed": [0, 1, 0, 0], "max_rho": [1.4, 1.3, 1.7, 1.5],
        "scheduler_options.f": [0.8, 0.8, 0.95, 0.8], "round_length": [600.0, 600.0, 600.0, 300.0],
    })  # fmt: skip
    tb = pd.DataFrame({
        "scheduler": ["themis", "srtf"] * 2, "seed": 0, "trace": "themis-2", "base_gpus": 64,
        "load": [0.5, 0.5, 1.0, 1.0], "max_rho": [1.3, 1.8, 1.4, 2.9],
    })  # fmt: skip
    stored_figures({"sensitivity": {"summary": sens}, "testbed": {"summary": tb}}, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "themis-fig19-f.png", "themis-fig19-lease.png", "themis-testbed-ratio-vs-load.png",
    ]  # fmt: skip
    one = tmp_path / "one"
    stored_figures({"sensitivity": {"summary": sens[sens["round_length"] == 600.0]}}, one)
    assert sorted(p.name for p in one.iterdir()) == ["themis-fig19-f.png"]
