"""The THEMIS figures of docs/themis-results.md (PNGs), from the journals of a reproduction or
from the stored rows (:func:`stored_figures`). Used by ``themis_results.py`` beside it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import themis_stored  # papers/themis/experiments/themis_stored.py, beside this script

F, LEASE = "scheduler_options.f", "round_length"


def figures(c: pd.DataFrame, apps: pd.DataFrame, figdir: Path) -> None:
    """The report's THEMIS figures from the journals (or the stored rows), as PNGs in ``figdir``;
    a figure whose rows are not there yet (a partial grid) is left as it is."""

    from fairplace.analysis import plots

    w2 = c[c["trace"] == "themis-2"]
    cdf = apps[(apps["trace"] == "themis-2") & (apps["contention"] == 1)] if len(apps) else apps
    draw = {}
    if w2["scheduler"].nunique() > 1:
        draw["themis-max-rho-vs-contention"] = lambda ax: plots.max_rho_vs_contention(w2, ax=ax)
    if "mean_bidders" in c and c["scheduler"].eq("themis").any():
        draw["themis-bidders-per-round"] = lambda ax: plots.bidders_per_round(c, ax=ax)
    if len(cdf):
        rho = themis_stored.rho_column(c, apps)
        draw["themis-rho-cdf-w2-x1"] = lambda ax: plots.rho_cdf(cdf, rho=rho, ax=ax)
    _save(draw, figdir)


def _save(draw: dict, figdir: Path) -> None:
    import matplotlib.pyplot as plt  # heavy: imported on use

    figdir.mkdir(parents=True, exist_ok=True)
    for name, fn in draw.items():
        fig, ax = plt.subplots(figsize=(7, 4))
        fn(ax)
        if name.endswith("cdf-w2-x1"):
            ax.set_xscale("log")
        elif name.endswith(("contention", "network-fraction", "ratio-vs-load")):  # decades apart
            ax.set_yscale("log")
        fig.savefig(figdir / f"{name}.png", dpi=110, bbox_inches="tight")
        plt.close(fig)


def other_figures(n: pd.DataFrame, s: pd.DataFrame, figdir: Path) -> None:
    """Figs. 15 and 19 from the network and sensitivity journals (points: mean, bars: spread)."""
    from fairplace.analysis import plots

    f, lease = "scheduler_options.f", "round_length"
    draw = {}
    if len(n) and n["network_fraction"].nunique() > 1:
        draw["themis-network-fraction"] = lambda ax: plots.sensitivity(
            n, param="network_fraction", metric="max_rho", ax=ax
        )
    if len(s):
        draw["themis-sensitivity-f"] = lambda ax: plots.sensitivity(
            s, param=f, metric="max_rho", ax=ax
        )
        draw["themis-sensitivity-f-gpu-time"] = lambda ax: plots.sensitivity(
            s[s[lease] == 600.0], param=f, metric="gpu_time", ax=ax
        )
    _save(draw, figdir)


def stored_figures(frames: dict, figdir: Path) -> None:
    """The page's figures from the stored rows (``frames``: {experiment: {frame: rows}}): the
    contention figures, Fig. 19's max rho vs f (10-minute leases) and vs the lease (f = 0.8), one
    line per rounding, and Figs. 9-10 over load (best baseline / THEMIS per seed, testbed)."""
    from fairplace.analysis import plots

    if "contention" in frames:
        c = frames["contention"]
        figures(c["summary"], c.get("apps", pd.DataFrame()), figdir)
    draw = {}
    if "sensitivity" in frames:
        s = frames["sensitivity"]["summary"]
        f_rows, lease_rows = s[s[LEASE] == 600.0], s[s[F] == 0.8]
        if f_rows[F].nunique() > 1:
            draw["themis-fig19-f"] = lambda ax: plots.sensitivity(f_rows, param=F, ax=ax)
        if lease_rows[LEASE].nunique() > 1:
            draw["themis-fig19-lease"] = lambda ax: plots.sensitivity(
                lease_rows, param=LEASE, ax=ax
            )
    if "testbed" in frames:
        t = frames["testbed"]["summary"]
        if t["scheduler"].nunique() > 1:
            draw["themis-testbed-ratio-vs-load"] = lambda ax: plots.max_rho_ratio_vs_load(t, ax=ax)
    _save(draw, figdir)
