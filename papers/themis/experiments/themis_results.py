"""The tables of docs/themis-results.md from a paper-scale THEMIS reproduction.

    fairplace reproduce themis --workers 2 --out OUT        # hours on 2 cores; --resume after a stop
    python papers/themis/experiments/themis_results.py OUT [FIGDIR]              # Markdown from the journals on stdout
    python papers/themis/experiments/themis_results.py OUT --store --commit C [--merge]  # store them in papers/themis/results/
    python papers/themis/experiments/themis_results.py --stored --write docs/themis-results.md [--figdir docs/img]

``--store`` keeps the cells of each experiment's full grid that OUT's journals hold (zstd Parquet:
the summary rows and the per-app rows, with ``meta.json`` naming commit C, the date and the cells
held; with ``--merge`` the stored cells OUT lacks stay beside them) and rewrites
papers/themis/full-size.csv from them; ``--stored`` rebuilds the page's
generated blocks (between ``<!-- generated:NAME -->`` and ``<!-- /generated -->``) from the stored
rows without re-running anything (stdout without ``--write``). Journal mode:

Reads ``OUT/data/themis-<experiment>.jsonl`` (the sweeps' journals: every finished cell, also of a
run still going) and prints, per workload and contention level, max rho mean ± sd over seeds per
scheduler, the best paper baseline / THEMIS ratio per seed (mean, min..max), THEMIS' auction
statistics, idle GPU-hours while jobs wait per scheduler, who sets max rho, the mechanism check
(``themis-norestart``: allocation changes free), the network / sensitivity tables (max rho mean, sd,
min..max over seeds) and the cell wall time per experiment. With FIGDIR it also draws the report's
THEMIS figures there (max rho vs contention, bidders per round, rho CDF; max rho vs the network
fraction and Fig. 19's max rho / GPU time vs f when those journals have rows).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from fairplace.analysis.tables import THEMIS_BASELINES, themis_table
from fairplace.core.errors import DataError
from fairplace.runs import full_size
from fairplace.runs.sweep import journaled, results_paths

sys.path.insert(0, str(Path(__file__).resolve().parent))
import themis_stored  # noqa: E402 - papers/themis/experiments/themis_stored.py, beside this script
from themis_figures import figures, other_figures, stored_figures  # noqa: E402 - beside it too


def journal(out: Path, key: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per finished run, its ``apps`` frame) of ``OUT/data/themis-<key>``: the sweep's
    journals as the sweep reads them (``journaled``: the last run of each cell), also of a run still
    going; failed runs left out."""
    rows, frames = journaled(results_paths(out / "data" / f"themis-{key}"), ["apps"])
    df, apps = pd.DataFrame(rows), pd.DataFrame(frames["apps"])
    return (df[df["status"] == "ok"] if "status" in df else df), apps


def contention(df: pd.DataFrame) -> str:
    parts = []
    for trace, g in df.groupby("trace"):
        t = themis_table(g.drop(columns=["trace"]))
        cols = ["contention", "scheduler", "max_rho", "sd", "median_rho", "idle_gpu_h_waiting"]
        extra = [c for c in ("best_baseline_ratio", "mean_bidders", "single_bidder_share",
                             "mean_offered_fraction") if c in t]  # fmt: skip
        seeds = g.groupby(["contention", "scheduler"])["seed"].nunique().rename("seeds")
        t = t.merge(seeds.reset_index(), how="left")
        parts.append(f"### {trace}\n\n" + t[[*cols, "seeds", *extra]].to_markdown(index=False))
    return "\n\n".join(parts)


def best_baseline(p: pd.DataFrame) -> tuple[pd.Series, pd.Series] | None:
    """(name, max rho) of the best paper baseline per row of a (..., scheduler) max-rho pivot;
    None without THEMIS or a baseline in it."""
    base = [b for b in THEMIS_BASELINES if b in p]
    if "themis" not in p or not base:
        return None
    return p[base].idxmin(axis=1), p[base].min(axis=1)


def per_seed_ratio(df: pd.DataFrame) -> str:
    """Best paper baseline's max rho / THEMIS' per (workload, contention, seed)."""
    p = df.pivot_table(index=["trace", "contention", "seed"], columns="scheduler", values="max_rho")
    base = [b for b in THEMIS_BASELINES if b in p]
    if "themis" not in p or not base:
        return "(no THEMIS and baseline pairs yet)"
    if len(base) < len(THEMIS_BASELINES):
        return "(not every paper baseline has run yet)"
    p = p[p["themis"].notna() & p[base].notna().all(axis=1)]  # seeds where every one ran
    if p.empty:
        return "(no seed has THEMIS and every paper baseline yet)"
    name, value = best_baseline(p)
    r = (value / p["themis"]).rename("best_baseline / themis")
    best = name.rename("best baseline")
    cols = [r.round(2), best]
    four = [
        b for b in base if b != "srtf"
    ]  # the four systems §6 names (Tiresias/LAS, Gandiva, ...)
    if four and p[four].notna().any(axis=1).all():
        r4 = (p[four].min(axis=1) / p["themis"]).rename("without srtf")
        cols += [r4.round(2), p[four].idxmin(axis=1).rename("its best")]
    t = pd.concat(cols, axis=1)
    return t.reset_index().to_markdown(index=False)


def worst_apps(apps: pd.DataFrame, schedulers: tuple[str, str] = ("themis", "srtf")) -> str:
    """Who sets max rho: per (workload, contention, seed) and scheduler, the app with the largest
    rho, its GPU-seconds per job as a percentile of the apps of that workload and seed (0 = the
    shortest; an app's GPU-seconds per job is the median over the schedulers of the same workload,
    contention and seed: restarts and placement move it a little), its migrations per job under
    that scheduler, and its rho under the other scheduler of the pair."""
    out = []
    for (tr, cont, seed), g in apps.groupby(["trace", "contention", "seed"]):
        per_job = (g["gpu_time"] / g["jobs"]).groupby(g["app_id"]).median()
        rank = per_job.rank(pct=True)
        rho = g.pivot_table(index="app_id", columns="scheduler", values="rho_themis")
        for s in schedulers:
            if s not in rho:
                continue
            a = rho[s].idxmax()
            other = schedulers[1] if s == schedulers[0] else schedulers[0]
            row = g[(g["scheduler"] == s) & (g["app_id"] == a)].iloc[0]
            out.append({
                "trace": tr, "contention": cont, "seed": seed, "scheduler": s, "app": a,
                "rho": rho.at[a, s], "work_pct": round(100 * rank[a]),
                "gpu_h_per_job": per_job[a] / 3600, "migrations_per_job": row["migrations"] / row["jobs"],
                "rho_under_other": rho.at[a, other] if other in rho else None,
            })  # fmt: skip
    return pd.DataFrame(out).round(2).to_markdown(index=False) if out else "(no per-app rows yet)"


def single_job_apps(
    apps: pd.DataFrame, schedulers: tuple[str, ...] = ("themis", "gavel-ftf")
) -> str:
    """Single-job apps (~10% of each workload) against the others, per (workload, contention) and
    scheduler: max rho of each kind (mean over seeds), median rho of each kind (mean over seeds),
    how many of the 5 apps with the largest rho are single-job apps (min..max over seeds), and among
    the others the rank correlation of rho with their number of jobs (Spearman, mean over seeds)."""
    a = apps[apps["scheduler"].isin(schedulers)].assign(single=apps["jobs"] == 1)
    rows = []
    for (tr, cont, s), g in a.groupby(["trace", "contention", "scheduler"]):
        per = [
            (x[x.single].rho_themis.max(), x[~x.single].rho_themis.max(),
             x[x.single].rho_themis.median(), x[~x.single].rho_themis.median(),
             int(x.nlargest(5, "rho_themis").single.sum()),
             x[~x.single][["rho_themis", "jobs"]].corr(method="spearman").iat[0, 1])
            for _, x in g.groupby("seed")
        ]  # fmt: skip
        m = np.asarray(per, float)
        rows.append({
            "trace": tr, "contention": cont, "scheduler": s, "seeds": len(per),
            "max rho, single-job": m[:, 0].mean(), "max rho, others": m[:, 1].mean(),
            "median rho, single-job": m[:, 2].mean(), "median rho, others": m[:, 3].mean(),
            "single-job in top 5": f"{int(m[:, 4].min())}..{int(m[:, 4].max())}",
            "others: rho vs jobs (Spearman)": m[:, 5].mean(),
        })  # fmt: skip
    return pd.DataFrame(rows).round(2).to_markdown(index=False) if rows else "(no per-app rows yet)"


def mechanism(free: pd.DataFrame, paid: pd.DataFrame) -> str:
    """Max rho per seed with allocation changes paid (checkpoint 10 s + restart 35 s, §6.2.3) and
    free (0 s + 1 s), for the schedulers of the check, on the same workloads."""
    keys = ["trace", "contention", "seed", "scheduler"]
    a = free.set_index(keys)["max_rho"].rename("free")
    b = paid.set_index(keys)["max_rho"].rename("paid")
    t = pd.concat([b, a], axis=1, join="inner").unstack("scheduler")
    t.columns = [f"{s} ({cost})" for cost, s in t.columns]
    return t.round(2).reset_index().to_markdown(index=False)


def control(
    ctrl: pd.DataFrame, base: pd.DataFrame, keys: list[str], labels: tuple[str, str]
) -> str:
    """THEMIS' max rho and auctions per ``keys`` in the sensitivity runs ``base`` (restricted to
    the rows ``ctrl`` has) and in a control run ``ctrl``, side by side (``labels``: the two)."""
    cols = {"max_rho": "max rho", "auctions": "auctions"}
    a = base.set_index(keys)[list(cols)].rename(columns=lambda c: f"{cols[c]} ({labels[0]})")
    b = ctrl.set_index(keys)[list(cols)].rename(columns=lambda c: f"{cols[c]} ({labels[1]})")
    t = pd.concat([a, b], axis=1, join="inner").sort_index()
    return t.round(2).reset_index().to_markdown(index=False)


def rack_control(racks: pd.DataFrame, one: pd.DataFrame) -> str:
    """THEMIS' max rho, the best paper baseline's and their ratio per (fraction, seed), in one rack
    (the reproduction's network runs ``one``, restricted to the rows ``racks`` has) and in racks
    of 8 machines (the control ``racks``)."""
    parts = []
    for label, df in (("one rack", one), ("racks of 8", racks)):
        p = df.pivot_table(
            index=["network_fraction", "seed"], columns="scheduler", values="max_rho"
        )
        if (bb := best_baseline(p)) is None:
            continue
        name, best = bb
        parts.append(pd.DataFrame({
            f"THEMIS ({label})": p["themis"],
            f"best baseline ({label})": name + " " + best.round(2).astype(str),
            f"ratio ({label})": (best / p["themis"]).round(2),
        }))  # fmt: skip
    if len(parts) < 2:
        return "(no THEMIS and baseline pairs in both set-ups yet)"
    t = pd.concat(parts, axis=1, join="inner")
    return t.round(2).reset_index().to_markdown(index=False)


def grid(df: pd.DataFrame, by: list[str]) -> str:
    """Max rho mean, sd, min..max over seeds and mean GPU time (GPU-hours) per ``by`` group."""
    g = df.groupby(by)
    t = pd.DataFrame({
        "max_rho": g["max_rho"].mean(),
        "sd": g["max_rho"].std(),
        "min..max": g["max_rho"].agg(lambda x: f"{x.min():.2f}..{x.max():.2f}"),
        "gpu_time_h": g["gpu_time"].mean() / 3600.0,
        "seeds": g["seed"].nunique(),
    })  # fmt: skip
    if "mean_bidders" in df and df["scheduler"].eq("themis").all():
        t["mean_bidders"] = g["mean_bidders"].mean()
    return t.round(3).reset_index().to_markdown(index=False)


def _sweeps():
    """The sweep experiments of the full ``fairplace reproduce themis`` (the other journals on
    this page are checks of the docs)."""
    from fairplace.runs.experiments import load_experiments

    return [e for e in load_experiments("themis", "full") if e.kind == "sweep"]


def cell_hours(runs: dict[str, pd.DataFrame]) -> str:
    """Runs and summed cell wall time per experiment (what a reproduction of them costs), with
    the sum over the reproduction's sweeps and over every run on this page."""
    rows = [(k, len(df), df["wall_seconds"].sum() / 3600.0, df["wall_seconds"].min(),
             df["wall_seconds"].max()) for k, df in runs.items() if len(df)]  # fmt: skip
    t = pd.DataFrame(rows, columns=["experiment", "runs", "cell_hours", "min_s", "max_s"])
    sweeps = [e.key for e in _sweeps()]
    parts = (("reproduction", t[t["experiment"].isin(sweeps)]), ("all", t.copy()))
    for name, part in parts:
        t.loc[len(t)] = [
            name, part["runs"].sum(), part["cell_hours"].sum(), part["min_s"].min(), part["max_s"].max()
        ]  # fmt: skip
    return t.round(2).to_markdown(index=False)


def claims(frames: dict[str, dict[str, pd.DataFrame]]) -> str:
    """The THEMIS claims of papers/themis/claims.toml judged on the journals (as the report does:
    ``fairplace.analysis.claims.evaluate``), for the experiments that have rows."""
    from fairplace.analysis.claims import evaluate
    from fairplace.runs.reproduce import load_claims

    rows = [evaluate(c, frames[c["experiment"]]) for c in load_claims("themis")
            if c.get("experiment") in frames]  # fmt: skip
    cols = ["id", "paper_range", "ours", "spread", "outcome"]
    return pd.DataFrame(rows)[cols].to_markdown(index=False) if rows else "(no claims to judge)"


def backfill_effect(c: pd.DataFrame, nb: pd.DataFrame) -> str:
    """The queue baselines with backfilling (the reproduction's default: a job that does not fit
    is skipped) against the same runs without (``themis-nobackfill``: head-of-line blocking): max
    rho and idle GPU-hours while jobs wait, means over the seeds both hold."""
    keys = ["trace", "contention", "scheduler", "seed"]
    both = c.merge(nb, on=keys, suffixes=("", "_hol"))
    if both.empty:
        return "(no runs without backfilling)"
    g = both.groupby(keys[:3])
    t = pd.DataFrame({
        "max_rho": g["max_rho"].mean(), "max_rho_hol": g["max_rho_hol"].mean(),
        "idle_gpu_h": g["idle_gpu_hours_while_waiting"].mean(),
        "idle_gpu_h_hol": g["idle_gpu_hours_while_waiting_hol"].mean(), "seeds": g.size(),
    })  # fmt: skip
    return t.round(2).reset_index().to_markdown(index=False)


def still_to_run(out: Path) -> str:
    """The cells of the full ``fairplace reproduce themis`` grid that no journal in ``OUT/data``
    holds yet, or holds under other ``[fixed]`` arguments (what ``fairplace reproduce themis --resume
    --out OUT`` would still run), counted per experiment, scheduler, trace and contention."""
    from fairplace.runs.batch_results import read_journal
    from fairplace.runs.sweep import SWEEP_KEYS, cell_id, load_spec, resumable_cells

    rows = []
    for exp in _sweeps():
        spec = load_spec(exp.spec)
        path = results_paths(out / "data" / f"themis-{exp.key}")["jsonl"]
        have, _ = resumable_cells(read_journal(path, SWEEP_KEYS), spec.fixed)
        for c in spec.cells():
            if cell_id(c) not in have:
                rows.append({"experiment": exp.key, **c})
    if not rows:
        return "None: every cell of the full grid is journaled."
    df = pd.DataFrame(rows)
    keys = [k for k in ("experiment", "scheduler", "trace", "contention") if k in df]
    t = df.groupby(keys, dropna=False)["seed"].agg(
        cells="size", seeds=lambda x: ", ".join(map(str, sorted(x)))
    )
    return f"{len(df)} cells:\n\n" + t.reset_index().to_markdown(index=False)


#: the sweeps this page reads (``OUT/data/themis-<key>``): the reproduction's and the page's checks
JOURNALS = ("contention", "network", "sensitivity", "estimation", "overheads", "testbed",
            "norestart", "nobackfill", "lease-norestart", "nopayments", "network-racks")  # fmt: skip


def main(out: str, figdir: str | None = None) -> None:
    """Print the Markdown of the journals in ``OUT/data``; with ``figdir`` draw the figures."""
    out = Path(out)
    journals = {k: journal(out, k) for k in JOURNALS}
    runs = {k: df for k, (df, _) in journals.items()}
    apps = journals["contention"][1]
    c, n, s = runs["contention"], runs["network"], runs["sensitivity"]
    m, nb, nr = runs["norestart"], runs["nobackfill"], runs["network-racks"]
    lf, npay = runs["lease-norestart"], runs["nopayments"]
    print(f"## Contention ({len(c)} runs)\n")
    if len(c):
        print(contention(c), "\n\n### Best paper baseline / THEMIS per seed\n")
        print(per_seed_ratio(c))
        if len(apps):
            print("\n### Who sets max rho (THEMIS and SRTF)\n\n" + worst_apps(apps))
            print("\n### Single-job apps against the others (THEMIS and gavel-ftf)\n")
            print(single_job_apps(apps))
        if figdir:
            figures(c, apps, Path(figdir))
    frames = {k: {"summary": df} for k, df in runs.items() if len(df)}
    for key, frame in (("strategyproofness", "strategyproofness"), ("solver_gap", "batch")):
        f = out / "data" / f"themis-{key}.csv"  # the non-sweep experiments' tables
        if f.is_file():
            frames[key] = {frame: pd.read_csv(f)}
    print("\n## Claims judged on these runs\n\n" + claims(frames))
    if len(m):
        print(f"\n## Mechanism check: allocation changes free ({len(m)} runs)\n")
        print(mechanism(m, c))
    if len(nb) and len(c):
        print(f"\n## Queue baselines without backfilling ({len(nb)} runs)\n")
        print(backfill_effect(c, nb))
    if len(n):
        print(f"\n## Network-intensive fraction ({len(n)} runs)\n")
        print(grid(n, ["network_fraction", "scheduler"]))
    if len(nr) and len(n):
        print(f"\n## Network control: racks of 8 machines ({len(nr)} runs)\n")
        print(rack_control(nr, n))
    if len(s):
        print(f"\n## Sensitivity ({len(s)} runs)\n")
        print(grid(s, ["scheduler_options.f", "round_length"]))
    if len(lf) and len(s):
        print(f"\n## Lease control: allocation changes free, f = 0.8 ({len(lf)} runs)\n")
        paid = s[s["scheduler_options.f"] == 0.8]
        print(control(lf, paid, ["seed", "round_length"], ("paid", "free")))
    if len(npay) and len(s):
        print(f"\n## f control: no hidden payments, 10-minute lease ({len(npay)} runs)\n")
        pa = s[s["round_length"] == 600.0]
        print(control(npay, pa, ["seed", "scheduler_options.f"], ("PA", "no payments")))
    if figdir:
        other_figures(n, s, Path(figdir))
    print("\n## Cell wall time\n\n" + cell_hours(runs))
    print("\n## Cells of the full reproduction not yet run\n\n" + still_to_run(out))


def stored(write: str | None = None, figdir: str | None = None) -> str:
    """The generated blocks from papers/themis/results/: into the page ``write`` (its blocks
    replaced), else returned as Markdown; with ``figdir`` the page's figures from them."""
    got = full_size.load_results(themis_stored.RESULTS)
    if got is None:
        raise DataError(str(themis_stored.RESULTS), "no stored results (run --store first)")
    frames, meta = got
    made = themis_stored.blocks(frames, meta)
    if figdir:
        stored_figures(frames, Path(figdir))
    if write is None:
        return "\n\n".join(
            f"<!-- generated:{k} -->\n{v}\n<!-- /generated -->" for k, v in made.items()
        )
    path = Path(write)
    path.write_text(themis_stored.replace_blocks(path.read_text(), made))
    return f"(wrote the generated blocks of {path})"


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?", help="a reproduction's folder (its data/ journals)")
    ap.add_argument("figdir", nargs="?", help="journal mode: draw the figures here")
    ap.add_argument("--store", action="store_true", help="store OUT in papers/themis/results/")
    ap.add_argument("--commit", help="with --store: the commit the journals were made at")
    ap.add_argument(
        "--merge",
        action="store_true",
        help="with --store: keep the stored cells OUT does not hold (a grid run in pieces)",
    )
    ap.add_argument("--stored", action="store_true", help="the blocks from the stored results")
    ap.add_argument("--write", help="with --stored: the page whose generated blocks to replace")
    ap.add_argument("--figdir", dest="figs", help="with --stored: draw the figures here")
    a = ap.parse_args()
    try:
        if a.stored:
            print(stored(a.write, a.figs))
        elif a.out is None:
            ap.error("name OUT (a reproduction's folder) or --stored")
        elif a.store:
            if not a.commit:
                ap.error("--store needs --commit C: the commit the journals were made at")
            for p in themis_stored.store(a.out, a.commit, JOURNALS, merge=a.merge):
                print(f"stored {p}", file=sys.stderr)
        else:
            main(a.out, a.figdir)
    except (DataError, OSError) as exc:
        ap.exit(2, f"error: {exc}\n")
