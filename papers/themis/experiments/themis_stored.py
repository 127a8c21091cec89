"""The stored THEMIS full-size results (papers/themis/results/) and the generated blocks of
docs/themis-results.md (used by ``python papers/themis/experiments/themis_results.py``; see there).

``store`` reads a reproduction's journals (``OUT/data/themis-<experiment>.jsonl`` and
``.apps.jsonl``; the non-sweep experiments' ``OUT/data/themis-<experiment>.csv`` tables), keeps the
cells of each experiment's full grid journaled under the spec's ``[fixed]`` arguments, and writes
them with their provenance (``fairplace.runs.full_size.store_results``), then
papers/themis/full-size.csv from the same stored rows. ``blocks`` turns the stored rows into the
page's Markdown blocks; ``replace_blocks`` puts each between its markers
``<!-- generated:NAME -->`` and ``<!-- /generated -->``. A cell of the grid that no stored row holds
is printed 'not run' and judged by nothing.
"""

from __future__ import annotations

import itertools
import re
import time
from pathlib import Path

import pandas as pd

from fairplace.analysis.tables import THEMIS_BASELINES
from fairplace.core.errors import DataError
from fairplace.runs import full_size
from fairplace.runs.batch_results import read_journal
from fairplace.runs.sweep import (
    SWEEP_KEYS,
    cell_id,
    journaled,
    load_spec,
    results_paths,
    resumable_cells,
)

PAPER = Path(__file__).resolve().parents[1]  # papers/themis
RESULTS = PAPER / full_size.RESULTS
#: the non-sweep experiments' tables in ``OUT/data`` and the frame the claims read from each
TABLES = {"strategyproofness": "strategyproofness", "solver_gap": "batch"}
CELL = ("scheduler", "placement", "trace", "seed")
NOT_RUN = "not run"


def _sweep_specs() -> dict:
    """{key: spec} of the full reproduction's sweeps (papers/themis/<key>.toml at the full size)."""
    from fairplace.runs.experiments import load_experiments

    return {
        e.key: load_spec(e.spec) for e in load_experiments("themis", "full") if e.kind == "sweep"
    }


def _keys(rows: pd.DataFrame) -> list[str]:
    """The cell keys of a sweep's rows (the names in its ``cell_id``s)."""
    return [p.split("=", 1)[0] for p in str(rows["cell_id"].iloc[0]).split("|")]


def read_sweep(out: Path, key: str, spec=None) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(summary rows, per-app rows, provenance) of ``OUT/data/themis-<key>``: the finished cells
    (with ``spec``: only the cells of its grid journaled under its ``[fixed]``)."""
    paths = results_paths(out / "data" / f"themis-{key}")
    rows, frames = journaled(paths, ["apps"])
    df = pd.DataFrame(rows)
    if df.empty:
        return df, pd.DataFrame(), {}
    df = df[df["status"] == "ok"] if "status" in df else df
    info = {"source": f"OUT/data/themis-{key}.jsonl"}
    if spec is not None:
        held, _ = resumable_cells(read_journal(paths["jsonl"], SWEEP_KEYS), spec.fixed)
        df = df[df["cell_id"].isin(held & {cell_id(c) for c in spec.cells()})]
        info |= {"cells": len(df), "grid_cells": len(spec), "grid": {
            "schedulers": list(spec.schedulers), "placements": list(spec.placements),
            "traces": list(spec.traces), "seeds": list(spec.seeds),
            "params": {k: list(v) for k, v in spec.params.items()}}}  # fmt: skip
    else:
        info["cells"] = len(df)
    apps = pd.DataFrame(frames["apps"])
    keys = _keys(df) if len(df) else list(CELL)
    if len(apps) and len(df):
        apps = apps.merge(df[keys], on=keys, how="inner")  # the kept cells' apps only
        apps = full_size.trim("apps", apps, tuple(keys))
    return full_size.trim("summary", df, tuple(keys)), apps, info


def store(
    out: str | Path,
    commit: str,
    keys,
    folder: Path = RESULTS,
    date: str | None = None,
    specs: dict | None = None,
    merge: bool = False,
) -> list[Path]:
    """Store the experiments ``keys`` that ``OUT/data`` has journals of (and the non-sweep tables)
    in ``folder``, then rewrite papers/themis/full-size.csv beside it from everything stored
    there (``specs``: {key: SweepSpec} of the full grids, default the reproduction's); returns the
    files written. ``merge``: an experiment's stored cells that OUT does not hold are kept beside
    OUT's (a grid run piece by piece; ``commit`` then names every piece), else they are replaced."""
    out, date = Path(out), date or time.strftime("%Y-%m-%d", time.gmtime())
    specs = _sweep_specs() if specs is None else specs
    stored = full_size.load_results(folder) if merge else None
    frames, meta = {}, {}
    for key in keys:
        df, apps, info = read_sweep(out, key, specs.get(key))
        if len(df) and stored is not None and key in stored[0]:
            df, apps = _merged(stored[0][key], df, apps, info)
            info["cells"] = len(df)
        if len(df):
            frames[key] = {"summary": df, **({"apps": apps} if len(apps) else {})}
            meta[key] = {"commit": commit, "date": date, **info}
    for key, frame in TABLES.items():
        if (f := out / "data" / f"themis-{key}.csv").is_file():
            frames[key] = {frame: pd.read_csv(f)}
            meta[key] = {"commit": commit, "date": date, "source": f"OUT/data/{f.name}"}
    if not frames:
        raise DataError(str(out / "data"), "no THEMIS journals or tables to store")
    written = full_size.store_results(frames, folder, meta)
    return [*written, write_full_size(folder, folder.parent / full_size.FILE)]


def _merged(old: dict, df: pd.DataFrame, apps: pd.DataFrame, info: dict):
    """``df`` / ``apps`` with the stored rows (``old``: {frame: rows}) of the cells ``df`` does not
    hold (cells: scheduler, placement, trace, seed and the grid's parameters)."""
    s = old["summary"]
    keys = [k for k in (*CELL, *info.get("grid", {}).get("params", {})) if k in s and k in df]
    new = df[keys].drop_duplicates().assign(_new=True)
    kept = s.merge(new, on=keys, how="left")
    kept = kept[kept["_new"].isna()].drop(columns="_new")
    out = pd.concat([kept, df], ignore_index=True)
    a = old.get("apps", pd.DataFrame())
    if len(a):
        a = a.merge(kept[keys], on=keys, how="inner")
        apps = pd.concat([a, apps], ignore_index=True) if len(apps) else a
    return out, apps


def write_full_size(folder: Path, path: Path) -> Path:
    """papers/themis/full-size.csv from the stored results in ``folder`` (the claims' frames)."""
    frames, meta = full_size.load_results(folder)
    made = sorted({f"{m.get('commit', '?')} ({m.get('date', '?')})" for m in meta.values()})
    source = (f"THEMIS at the full size: the rows in papers/themis/results/ behind "
              f"docs/themis-results.md (made at {', '.join(made)}; `python papers/themis/experiments/themis_results.py "
              f"OUT --store --commit C`)")  # fmt: skip
    claims = {k: {f: df for f, df in fr.items() if f != "apps"} for k, fr in frames.items()}
    return full_size.store(claims, path, source)


# --- the generated blocks -------------------------------------------------------------------


def _label(trace: str, contention) -> str:
    w = f"W{trace.rsplit('-', 1)[-1]}" if trace.startswith("themis-") else trace
    return f"{w} x{contention:g}" if isinstance(contention, (int, float)) else w


def _cells(grid: dict) -> pd.DataFrame:
    """The full grid as rows of (scheduler, trace, seed, params...)."""
    params = grid.get("params", {})
    axes = [grid["schedulers"], grid["traces"], grid["seeds"], *params.values()]
    return pd.DataFrame(itertools.product(*axes), columns=["scheduler", "trace", "seed", *params])


def _groups(grid: dict) -> list[tuple[str, float]]:
    return [(t, c) for t in grid["traces"] for c in grid.get("params", {}).get("contention", [1])]


def _pm(x: pd.Series, fmt: str) -> str:
    if x.empty:
        return NOT_RUN
    sd = f" ± {x.std():{fmt}}" if len(x) > 1 else ""
    return f"{x.mean():{fmt}}{sd} ({len(x)})"


def per_scheduler(df: pd.DataFrame, grid: dict, metric: str, fmt: str, scale: float = 1.0) -> str:
    """One row per scheduler, one column per (workload, contention): ``metric`` (times ``scale``)
    mean ± sd over the seeds run (their number in brackets), 'not run' where no seed is."""
    rows = []
    for s in grid["schedulers"]:
        row = {"scheduler": s}
        for t, c in _groups(grid):
            x = df[(df["scheduler"] == s) & (df["trace"] == t) & (df["contention"] == c)]
            row[_label(t, c)] = _pm(scale * x[metric].dropna(), fmt) if metric in x else NOT_RUN
        rows.append(row)
    return pd.DataFrame(rows).to_markdown(index=False)


def ratios(df: pd.DataFrame, grid: dict) -> pd.DataFrame:
    """Best paper baseline's max rho / THEMIS' per (trace, contention, seed), with the baseline's
    name; only where THEMIS and every paper baseline of the grid ran (else no row)."""
    base = [b for b in THEMIS_BASELINES if b in grid["schedulers"]]
    p = df.pivot_table(index=["trace", "contention", "seed"], columns="scheduler", values="max_rho")
    if "themis" not in p or not base or not set(base) <= set(p):
        return pd.DataFrame(columns=["trace", "contention", "seed", "ratio", "best"])
    p = p[p[["themis", *base]].notna().all(axis=1)]
    r = pd.DataFrame({"ratio": p[base].min(axis=1) / p["themis"], "best": p[base].idxmin(axis=1)})
    return r.reset_index()


def coverage(df: pd.DataFrame, grid: dict) -> str:
    """Per (workload, contention): cells held of the grid's, best paper baseline / THEMIS (mean,
    min..max over the seeds where all ran), THEMIS' auctions (means over seeds)."""
    r, per = ratios(df, grid), len(grid["schedulers"]) * len(grid["seeds"])
    rows = []
    for t, c in _groups(grid):
        g = df[(df["trace"] == t) & (df["contention"] == c)]
        x = r[(r["trace"] == t) & (r["contention"] == c)]["ratio"]
        th = g[g["scheduler"] == "themis"]
        stat = {k: NOT_RUN if th.empty else f"{th[k].mean():{f}}" if k in th else ""
                for k, f in (("mean_bidders", ".2f"), ("single_bidder_share", ".2f"),
                             ("mean_offered_fraction", ".2f"), ("auctions", ",.0f"))}  # fmt: skip
        rows.append({
            "workload": _label(t, c), "cells": f"{len(g)} of {per}",
            "best paper baseline / THEMIS": f"{x.mean():.2f} ({x.min():.2f}..{x.max():.2f}; "
            f"{len(x)} seeds)" if len(x) else NOT_RUN,
            "THEMIS auctions": stat["auctions"],
            "bidders per auction": stat["mean_bidders"],
            "single-bidder share": stat["single_bidder_share"],
            "share of the cluster offered": stat["mean_offered_fraction"],
        })  # fmt: skip
    return pd.DataFrame(rows).to_markdown(index=False)


def per_seed(df: pd.DataFrame, grid: dict) -> str:
    """Best paper baseline / THEMIS max rho per seed (its name), 'not run' where a side is missing."""
    r = ratios(df, grid).set_index(["trace", "contention", "seed"])
    rows = []
    for t, c in _groups(grid):
        row = {"workload": _label(t, c)}
        for s in grid["seeds"]:
            k = (t, c, s)
            row[f"seed {s}"] = (f"{r.at[k, 'ratio']:.2f} ({r.at[k, 'best']})" if k in r.index
                                else NOT_RUN)  # fmt: skip
        rows.append(row)
    return pd.DataFrame(rows).to_markdown(index=False)


def rho_column(summary: pd.DataFrame, apps: pd.DataFrame) -> str:
    """The per-app rho column of the summary's headline variant (``rho_variant``)."""
    variant = summary["rho_variant"].dropna() if "rho_variant" in summary else pd.Series()
    col = f"rho_{variant.iloc[0]}" if len(variant) else "rho_themis"
    return col if col in apps else "rho_themis"


def who_sets(summary: pd.DataFrame, apps: pd.DataFrame, grid: dict) -> str:
    """Who sets max rho, per (workload, contention) and scheduler (THEMIS, SRTF): over the seeds
    run, the worst app's rho, its GPU-hours per job as a percentile of its workload's apps (0 = the
    shortest), its GPU-hours per job and its migrations per job (min..max over seeds)."""
    if apps.empty:
        return NOT_RUN + ": no per-app rows stored"
    rho, rows = rho_column(summary, apps), []
    pair = [s for s in ("themis", "srtf", "las") if s in grid["schedulers"]][:2]
    for (t, c), s in itertools.product(_groups(grid), pair):
        got = []
        for _, g in apps[(apps["trace"] == t) & (apps["contention"] == c)].groupby("seed"):
            per_job = (g["gpu_time"] / g["jobs"]).groupby(g["app_id"]).median()
            mine = g[g["scheduler"] == s]
            if mine.empty:
                continue
            w = mine.loc[mine[rho].idxmax()]
            got.append((w[rho], 100 * per_job.rank(pct=True)[w["app_id"]],
                        per_job[w["app_id"]] / 3600, w["migrations"] / w["jobs"]))  # fmt: skip
        names = (("max rho", ".2f"), ("work percentile", ".0f"), ("GPU-h per job", ".2f"),
                 ("migrations per job", ".1f"))  # fmt: skip
        spans = {n: _span([x[i] for x in got], f) for i, (n, f) in enumerate(names)}
        rows.append({"workload": _label(t, c), "scheduler": s, "seeds": len(got)}
                    | (spans if got else {"max rho": NOT_RUN}))  # fmt: skip
    return pd.DataFrame(rows).fillna("").to_markdown(index=False)


def _span(x: list, fmt: str) -> str:
    return f"{min(x):{fmt}}..{max(x):{fmt}}" if x else ""


def provenance(meta: dict) -> str:
    """Per stored experiment: rows, cells of its full grid, the commit and date that made them."""
    rows = [{"experiment": k, "rows": ", ".join(f"{f} {n}" for f, n in m.get("rows", {}).items()),
             "cells of the full grid": f"{m['cells']} of {m['grid_cells']}" if m.get("grid_cells")
             else str(m.get("cells", "")),
             "commit": m.get("commit", ""), "date": m.get("date", ""), "note": m.get("note", "")}
            for k, m in meta.items()]  # fmt: skip
    return pd.DataFrame(rows).to_markdown(index=False)


def contention_block(frames: dict, meta: dict) -> str:
    """The contention experiment's tables (Figs. 9-14) from the stored rows."""
    if "contention" not in frames or not meta["contention"].get("grid"):
        return f"{NOT_RUN}: no contention rows stored"
    c = frames["contention"]
    df, apps, grid = c["summary"], c.get("apps", pd.DataFrame()), meta["contention"]["grid"]
    m = meta["contention"]
    head = (f"{m['cells']} of the full grid's {m['grid_cells']} cells (commit {m['commit']}, "
            f"{m['date']}). Each cell is (mean ± sd over seeds) with the number of seeds in "
            "brackets; a cell no seed ran is 'not run', and the ratios use only the seeds where "
            "THEMIS and every paper baseline ran.")  # fmt: skip
    parts = [head, "**Coverage, best paper baseline / THEMIS, THEMIS' auctions**",
             coverage(df, grid), "**Max rho** (T_id: " + ", ".join(
                 sorted(df["rho_variant"].dropna().unique()) if "rho_variant" in df else ["?"])
             + ")", per_scheduler(df, grid, "max_rho", ".2f"),
             "**Best paper baseline / THEMIS max rho per seed** (> 1: THEMIS fairer)",
             per_seed(df, grid),
             "**Paid restarts per job**", per_scheduler(df, grid, "restarts_per_job", ".2f"),
             "**Share of GPU time held while paying checkpoint + restart** (%)",
             per_scheduler(df, grid, "restart_gpu_share", ".1f", 100.0),
             "**Idle GPU-hours while jobs wait**",
             per_scheduler(df, grid, "idle_gpu_hours_while_waiting", ",.0f"),
             "**Who sets max rho** (min..max over seeds)", who_sets(df, apps, grid)]  # fmt: skip
    return "\n\n".join(parts)


def _claim_cells(claim: dict, df: pd.DataFrame, grid: dict | None) -> str:
    """Cells of the full grid that the claim reads, held / in the grid ('' without a grid)."""
    if not grid or "scheduler" not in df:
        return ""
    cells, args = _cells(grid), claim.get("args", {})
    for k, v in args.get("where", {}).items():
        if k in cells:
            cells = cells[cells[k].isin(v if isinstance(v, list) else [v])]
    names = {args.get("scheduler"), *args.get("baselines", ())}
    if args.get("key") == "scheduler":
        names |= {args.get("policy"), args.get("baseline")}
    if names - {None}:
        cells = cells[cells["scheduler"].isin(names)]
    keys = [k for k in cells if k in df]
    held = cells.merge(df[keys].drop_duplicates(), on=keys, how="inner")
    return f"{len(held)} of {len(cells)}"


def claims_block(frames: dict, meta: dict) -> str:
    """The THEMIS claims judged on the stored rows (``fairplace.analysis.claims.evaluate``, as the
    report), with the cells each reads and the commit of its rows; 'not run' without rows."""
    from fairplace.analysis.claims import evaluate
    from fairplace.runs.reproduce import load_claims

    rows = []
    for c in load_claims("themis"):
        k = c.get("experiment")
        fr = {f: df for f, df in frames.get(k, {}).items() if f != "apps"} or None
        r = evaluate(c, fr, None if fr else "no stored rows")
        m = meta.get(k, {})
        r["cells"] = _claim_cells(c, fr["summary"], m.get("grid")) if fr and "summary" in fr else ""
        r["rows from"] = f"{m['commit']} {m.get('note', '')}".strip() if m else ""
        rows.append(r)
    cols = ["id", "kind", "paper_range", "ours", "spread", "cells", "rows from", "outcome"]
    return pd.DataFrame(rows)[cols].to_markdown(index=False)


def blocks(frames: dict, meta: dict) -> dict[str, str]:
    """{marker name: Markdown} of every generated block of docs/themis-results.md."""
    return {"provenance": provenance(meta), "contention": contention_block(frames, meta),
            "claims": claims_block(frames, meta)}  # fmt: skip


MARKER = re.compile(r"(<!-- generated:([\w-]+) -->\n).*?(<!-- /generated -->)", re.S)


def replace_blocks(text: str, made: dict[str, str]) -> str:
    """``text`` with each ``<!-- generated:NAME -->`` ... ``<!-- /generated -->`` block's body
    replaced by ``made[NAME]``; a marker without a block, or a block without a marker, is an error."""
    names = MARKER.findall(text)
    if missing := sorted(set(made) - {n for _, n, _ in names}):
        raise DataError("markers", f"no <!-- generated:NAME --> marker for {', '.join(missing)}")
    if unknown := sorted({n for _, n, _ in names} - set(made)):
        raise DataError("markers", f"no generated block named {', '.join(unknown)}")
    return MARKER.sub(lambda m: m.group(1) + made[m.group(2)].rstrip() + "\n" + m.group(3), text)
