"""Paper reproductions: run the experiment specs of ``papers/<paper>/*.toml``, evaluate
``papers/<paper>/claims.toml`` on the results and write ``report.md`` + ``report.html``.

An experiment spec::

    [experiment]
    title = "..."
    kind = "sweep"            # sweep | strategyproofness | solver-gap | placement-time
    sizes = ["tiny", "quick", "full"]
    [[experiment.figure]]     # plot = a function of fairplace.analysis.plots applied to `frame`
    name = "..."; plot = "jct_normalised"; frame = "summary"; args = {...}; where = {...}
    [spec]                    # the kind's spec (a sweep spec for sweeps)
    [size.quick]              # overrides of [spec] for that size (tables merge one level deep)

Each experiment calls one public API (``fairplace.runs.sweep.run_sweep`` -> ``fairplace.simulate``,
``fairplace.runs.strategyproofness``, ``fairplace.runs.batch.solve_task`` -> ``fairplace.solve``).
One whose dependency is missing or fails is reported as ``not run: <reason>``; its claims likewise.
"""

from __future__ import annotations

import itertools
import subprocess
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

import fairplace
from fairplace.analysis.claims import _where, against_full, evaluate
from fairplace.analysis.report import (
    Section,
    closing_failed_figures,
    headline,
    png,
    write_report,
)
from fairplace.analysis.tables import PACKED_BASELINES, draw_gains, ok_rows, themis_table
from fairplace.core.errors import ClusterUnavailable, OptionError
from fairplace.core.progress import ProgressBar, progress_bar
from fairplace.instances import generators, io
from fairplace.instances.generators import random_placement
from fairplace.papers import PAPERS
from fairplace.runs import batch, full_size
from fairplace.runs import strategyproofness as sp
from fairplace.runs.sweep import load_spec, results_paths, run_sweep

SIZES = ("tiny", "quick", "full")


@dataclass(frozen=True)
class Experiment:
    """One experiment of a paper at one size (the [spec] with the size's overrides applied)."""

    paper: str
    key: str
    title: str
    kind: str
    spec: dict[str, Any]
    figures: tuple[dict, ...] = ()
    runs: bool = True
    note: str = ""  # [experiment] <size>_note: how this size differs from the full one, and why


@dataclass
class Outcome:
    """What an experiment produced: result frames by name, a status line, seconds."""

    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    status: str = "ok"
    seconds: float = 0.0

    @property
    def ran(self) -> bool:
        return not self.status.startswith("not run")


def _paper_dir(paper: str):
    return resources.files("fairplace.papers").joinpath(paper)


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = {**out[k], **v} if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load_experiments(paper: str, size: str) -> list[Experiment]:
    """The experiments of ``paper`` (sorted by file name) at ``size``."""
    if paper not in PAPERS:
        raise OptionError("paper", f"unknown paper {paper!r}; known: {', '.join(PAPERS)}")
    if size not in SIZES:
        raise OptionError("size", f"unknown size {size!r}; known: {', '.join(SIZES)}")
    out = []
    for f in sorted(_paper_dir(paper).iterdir(), key=lambda p: p.name):
        if not f.name.endswith(".toml") or f.name == "claims.toml":
            continue
        raw = tomllib.loads(f.read_text())
        meta = raw.get("experiment", {})
        spec = _merge(raw.get("spec", {}), raw.get("size", {}).get(size, {}))
        out.append(
            Experiment(
                paper=paper,
                key=f.name.removesuffix(".toml"),
                title=meta.get("title", f.name),
                kind=meta.get("kind", "sweep"),
                spec=spec,
                figures=tuple(meta.get("figure", [])),
                runs=size in meta.get("sizes", SIZES),
                note=meta.get(f"{size}_note", ""),
            )
        )
    return out


def _full_size(paper: str):
    """The stored full-size results of ``paper`` (``fairplace.runs.full_size``), or None."""
    return full_size.load(str(_paper_dir(paper).joinpath(full_size.FILE)))


def load_claims(paper: str) -> list[dict]:
    return tomllib.loads(_paper_dir(paper).joinpath("claims.toml").read_text()).get("claim", [])


# ------------------------------------------------------------------ runners (one public API each)


def run_sweep_experiment(
    exp: Experiment, data_dir: Path, simulate=None, progress=True, workers: int = 1,
    scheduler_address: str | None = None, resume: bool = False,
) -> Outcome:  # fmt: skip
    spec = load_spec(exp.spec, check_names=simulate is None)
    out = data_dir / f"{exp.paper}-{exp.key}"
    df = run_sweep(
        spec, out, progress=progress, simulate=simulate, workers=workers,
        scheduler_address=scheduler_address, resume=resume,
    )  # fmt: skip
    frames = {"summary": df}
    if spec.extra:  # [[extra]] cells (PAL: the artifact's own draw) only in "all", not the tables
        cols = [k for _, over in spec.extra for k in over if k in df.columns]
        frames = {"summary": df[df[cols].isna().all(axis=1)], "all": df}
    paths = results_paths(out)
    for f in spec.frames:
        if paths[f"{f}.parquet"].exists():
            frames[f] = pd.read_parquet(paths[f"{f}.parquet"])
    bad = df[df["status"] != "ok"]
    if len(bad) == len(df):
        msg = bad["message"].iloc[0] if len(bad) else "empty grid"
        return Outcome(frames, f"not run: all {len(df)} simulations failed ({msg})")
    status = (
        "ok" if bad.empty else f"ok ({len(bad)}/{len(df)} cells failed: {bad['message'].iloc[0]})"
    )
    return Outcome(frames, status)


def run_strategyproofness(exp: Experiment, data_dir: Path, **_) -> Outcome:
    """THEMIS §6.3 via ``fairplace.runs.strategyproofness``: one row per misreport X."""
    df = sp.strategyproofness(**exp.spec)
    df = df if isinstance(df, pd.DataFrame) else pd.DataFrame(df)
    df.to_csv(data_dir / f"{exp.paper}-{exp.key}.csv", index=False)
    return Outcome({"strategyproofness": df})


def run_solver_gap(exp: Experiment, data_dir: Path, **_) -> Outcome:
    """Generated instances solved by each solver through ``fairplace.runs.batch.solve_task`` (sequential,
    in process); the batch results table with gaps to the exact optimum."""
    s = exp.spec
    gen = getattr(generators, s["generator"])
    grid = s.get("grid", {})
    rows = []
    for values in itertools.product(*grid.values()):
        for seed in s.get("seeds", [0]):
            kw = dict(zip(grid, values, strict=True)) | s.get("fixed", {}) | {"seed": seed}
            inst = gen(**kw)
            payload = io.to_dict(inst)
            for solver in s["solvers"]:
                rows.append(batch.solve_task(inst.name, solver, payload, s.get("time_limit")))
    df = batch.to_frame(rows)
    batch.write_table(df, data_dir / f"{exp.paper}-{exp.key}.csv")
    skipped = df[df["status"].isin(["skipped", "error"])]
    status = "ok"
    if len(skipped):
        status = (
            f"ok ({len(skipped)}/{len(df)} solves skipped or failed: {skipped['message'].iloc[0]})"
        )
    return Outcome({"batch": df}, status)


def run_placement_time(exp: Experiment, data_dir: Path, **_) -> Outcome:
    """Seconds of one ``fairplace.solve`` placement round per policy and cluster size (PAL Fig. 18)."""
    s = exp.spec
    rows = []
    for gpus in s["gpus"]:
        machines = gpus // s.get("gpus_per_machine", 4)
        inst = random_placement(
            jobs=max(1, gpus // s.get("gpus_per_job", 4)),
            machines=machines,
            gpus_per_machine=s.get("gpus_per_machine", 4),
            seed=0,
            max_demand=s.get("max_demand", 4),
        )
        for policy in s["policies"]:
            for rep in range(s.get("repeats", 3)):
                sol = fairplace.solve(inst, solver=policy, seed=rep)
                rows.append({"gpus": gpus, "policy": policy, "rep": rep, "seconds": sol.seconds})
    df = pd.DataFrame(rows)
    df.to_csv(data_dir / f"{exp.paper}-{exp.key}.csv", index=False)
    return Outcome({"placement_time": df})


RUNNERS: dict[str, Callable[..., Outcome]] = {
    "sweep": run_sweep_experiment,
    "strategyproofness": run_strategyproofness,
    "solver-gap": run_solver_gap,
    "placement-time": run_placement_time,
}


def run_experiment(
    exp: Experiment, data_dir: Path, simulate=None, progress=True, workers: int = 1,
    scheduler_address: str | None = None, resume: bool = False,
) -> Outcome:  # fmt: skip
    """Run one experiment; never raises — a missing dependency or a failure is ``not run: ...``,
    except a scheduler that cannot be reached (:class:`OptionError`, the same for every
    experiment) or a cluster left without workers (``ClusterUnavailable``)."""
    t0 = time.perf_counter()
    if not exp.runs:
        return Outcome(status="not run: not part of this size (run without --quick)")
    try:
        runner = RUNNERS[exp.kind]
        kw = (
            dict(workers=workers, scheduler_address=scheduler_address, resume=resume)
            if exp.kind == "sweep"
            else {}
        )
        out = runner(exp, data_dir, simulate=simulate, progress=progress, **kw)
    except (OptionError, ClusterUnavailable):  # the cluster, not the experiment: stop the run
        raise
    except ImportError as exc:
        out = Outcome(status=f"not run: dependency missing ({exc})")
    except Exception as exc:  # noqa: BLE001 - reported, never hidden
        out = Outcome(status=f"not run: {type(exc).__name__}: {exc}")
    out.seconds = time.perf_counter() - t0
    return out


# ------------------------------------------------------------------ figures, claims, report


def make_figures(exp: Experiment, outcome: Outcome):
    """[(name, PNG bytes)] and [(name, reason)] of figures that could not be drawn."""
    from fairplace.analysis import plots  # heavy (matplotlib, seaborn): imported on use

    made, failed = [], []
    for f in exp.figures:
        try:
            df = ok_rows(outcome.frames[f.get("frame", "summary")])
            if f.get("where"):
                df = _where(df, f["where"])
            with closing_failed_figures():
                ax = getattr(plots, f["plot"])(df, **f.get("args", {}))
            made.append((f["name"], png(ax)))  # png() closes the figure
        except Exception as exc:  # noqa: BLE001 - a figure that cannot be drawn is reported
            failed.append((f["name"], f"{type(exc).__name__}: {exc}"))
    return made, failed


def _summary_table(exp: Experiment, outcome: Outcome) -> tuple[str, pd.DataFrame] | None:
    """Mean of the headline metrics per (scheduler, placement, grid params) — over seeds, and over
    traces when the grid has params — or per (scheduler, placement, trace) otherwise."""
    if "batch" in outcome.frames:
        b = outcome.frames["batch"]
        b = b[~b["status"].isin(["error", "skipped"])]
        agg = b.groupby("solver").agg(
            instances=("instance", "nunique"),
            median_gap=("gap", "median"),
            max_gap=("gap", "max"),
            mean_seconds=("seconds", "mean"),
        )
        return "Per solver (gap: relative to the exact optimum, >= 0 = worse)", agg.reset_index()
    if "strategyproofness" in outcome.frames:
        frame = outcome.frames["strategyproofness"]
        frame = frame.drop(columns=["seed"], errors="ignore").groupby("X", as_index=False).mean()
        return "Completion times (s) vs misreport X (mean over seeds)", frame.round(3)
    if "placement_time" in outcome.frames:
        t = outcome.frames["placement_time"].groupby(["gpus", "policy"])["seconds"]
        per_round = t.agg(median_seconds="median", max_seconds="max")
        return "Seconds per placement round", per_round.reset_index()
    df = outcome.frames.get("summary")
    if df is None or df.empty or "status" not in df:
        return None
    df = df[df["status"] == "ok"]
    metrics = [
        c
        for c in (
            "avg_jct",
            "p99_jct",
            "makespan",
            "utilization",
            "offered_load",
            "max_rho",
            "median_rho",
        )  # fmt: skip
        if c in df
    ]
    params = [p for p in exp.spec.get("params", {}) if p in df]
    keys = ["scheduler", "placement", *(params or ["trace"])]
    keys = [k for k in keys if k in df and (df[k].nunique() > 1 or k in params)]
    if not metrics or not keys or df.empty:
        return None
    label = "Mean over seeds" + (" and traces" if params and df["trace"].nunique() > 1 else "")
    return label, df.groupby(keys, as_index=False)[metrics].mean().round(3)


def _draws_table(exp: Experiment, outcome: Outcome) -> tuple[str, pd.DataFrame] | None:
    """Average-JCT reduction of every policy vs both packed baselines, paired by cluster draw (seed):
    median and interquartile range over draws, per workload (and per grid params / scheduler)."""
    df = outcome.frames.get("summary")
    if df is None or df.empty or "avg_jct" not in df or "seed" not in df:
        return None
    df = df[df["status"] == "ok"]
    if not set(PACKED_BASELINES) & set(df["placement"]):
        return None
    by = [k for k in ("scheduler", *exp.spec.get("params", {}), "trace") if k in df]
    by = [k for k in by if df[k].nunique() > 1 or k == "trace"]
    t = draw_gains(df, "avg_jct", by=tuple(by))
    n = int(df["seed"].nunique())
    label = (
        f"Average-JCT reduction vs each packed baseline, paired by cluster draw: median and "
        f"interquartile range over {n} draw{'s' if n != 1 else ''} (seeds), % (> 0 = better)"
    )
    return label, t


def _git_commit() -> str:
    try:
        here = Path(__file__).resolve().parent
        r = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True
        )
        return r.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def reproduce(
    which: str = "all",
    size: str = "quick",
    out: str | Path = "fairplace-report",
    simulate: Callable | None = None,
    progress: bool | ProgressBar = True,
    log: Callable[[str], None] | None = None,
    workers: int = 1,
    scheduler_address: str | None = None,
    resume: bool = False,
) -> dict[str, Any]:
    """Run the experiments of ``which`` (themis | pal | all) at ``size`` and write the report.

    Returns ``{"md", "html", "claims" (paths), "table" (the claims DataFrame), "headline"
    ("N of M claims reproduce ..."), "seconds"}``.
    ``simulate`` replaces ``fairplace.simulate`` (tests); ``workers > 1`` runs sweep cells on a
    loopback Dask cluster, ``scheduler_address`` on an existing one (sequential by default); each
    sweep journals its cells (``data/<paper>-<experiment>.jsonl``) as they finish; ``resume``
    keeps the cells already journaled there (``run_sweep(resume=True)``)."""
    if which not in (*PAPERS, "all"):
        raise OptionError("paper", f"unknown paper {which!r}; use themis, pal or all")
    papers = PAPERS if which == "all" else (which,)
    exps = [e for p in papers for e in load_experiments(p, size)]
    out = Path(out)
    data_dir = out / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    outcomes: dict[tuple[str, str], Outcome] = {}
    sections, rows = [], []
    with progress_bar(len(exps), f"reproduce {which}", progress) as bar:
        for e in exps:
            if log:
                log(f"[{e.paper}] {e.key}: {e.title}")
            o = run_experiment(
                e, data_dir, simulate=simulate, progress=bar, workers=workers,
                scheduler_address=scheduler_address, resume=resume,
            )  # fmt: skip
            outcomes[(e.paper, e.key)] = o
            if log:
                log(f"[{e.paper}] {e.key}: {o.status} ({o.seconds:.1f} s)")
            sec = Section(title=f"{e.paper.upper()} — {e.title}", status=o.status)
            sec.lines.append(f"Experiment `{e.paper}/{e.key}` ({e.kind}), {o.seconds:.1f} s.")
            if e.note:
                sec.lines.append(f"{size.capitalize()} size: {e.note}")
            if o.ran:
                sec.figures, failed = make_figures(e, o)
                sec.lines += [f"Figure '{n}' not drawn: {why}" for n, why in failed]
                tab = _summary_table(e, o)
                if tab is not None:
                    sec.tables.append(tab)
                if e.paper == "pal":
                    draws = _draws_table(e, o)
                    if draws is not None:
                        sec.tables.append(draws)
                summ = o.frames.get("summary")
                if e.paper == "themis" and summ is not None and "max_rho" in summ:
                    sec.tables.append(
                        ("Max rho per scheduler: mean ± sd over seeds (best baseline / THEMIS "
                         "per seed: mean, min..max); idle GPU-hours while jobs wait; THEMIS' "
                         "auction statistics", themis_table(summ))
                    )  # fmt: skip
            sections.append(sec)
            bar.advance()
    stored: list[str] = []  # where the full-size outcomes come from, per paper
    for p in papers:
        full = _full_size(p) if size != "full" else None
        notes = {e.key: e.note for e in exps if e.paper == p}
        for c in load_claims(p):
            o = outcomes.get((p, c["experiment"]))
            if o is None:
                row = evaluate(c, None, f"not run: no experiment {c['experiment']!r}")
            elif not o.ran:
                row = evaluate(c, None, o.status)
            else:
                d = outcomes.get((p, c.get("draws", "")))
                row = evaluate(c, o.frames, draws=d.frames if d and d.ran else None)
            if full is not None:
                where = f"papers/{p}/{full_size.FILE}"
                ref = full[0].get(c["experiment"])
                row = against_full(row, c, ref, notes.get(c["experiment"], ""), where)
            rows.append(row)
        if full is not None:
            stored.append(f"{p.upper()}: papers/{p}/{full_size.FILE} ({full[1]})")
    table = pd.DataFrame(rows)
    seconds = time.perf_counter() - t0
    preamble = [
        f"Command: fairplace reproduce {which}{' --quick' if size == 'quick' else ''}"
        f"{' (size ' + size + ')' if size == 'tiny' else ''}; fairplace commit {_git_commit()}; "
        f"generated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {seconds:.0f} s.",
        f"{headline(table)}. 'reproduces' = ours (mean over seeds) inside the paper's range (or "
        "its stated tolerance); 'direction only' = outside it but on the paper's side of no "
        "effect; the spread is min..max over seeds. Raw results are in data/.",
    ]
    if stored:
        preamble.append("The full_size column: each claim judged on the stored full-size results "
                        "(where it differs, the reason says why this size differs): "
                        + "; ".join(stored) + ".")  # fmt: skip
    paths = write_report(out, "fairplace reproduction report", table, sections, preamble)
    return {**paths, "table": table, "headline": headline(table), "seconds": seconds}
